"""Many devices: tensor, pipeline, context, data and expert parallelism and ZeRO/FSDP sharding (Megatron-LM's
knobs), one concept per module, each importing only the ones below it (pyproject.toml's contract):

    step        ``train_step``: one optimizer step on the slowest pipeline stage, m micro-batches of
                forward+backward and every part that adds to them or hides under them (``StepEstimate``);
                MFU = model FLOPs / (step time × the dtype's peak × gpus) (``MODEL_FLOPS``)
    optimizer   the optimizer step on the device's shard and the low-precision weight copies it leaves
    gradsync    the data-parallel gradient reduction, overlapped with the backward of the last micro-batch on
                ``ironlaw.law.critical_path``'s network stream; ZeRO's parameter gather
    fsdp        FSDP's (``--zero 3``) per-layer gathers and reduce-scatters (``fsdp_exposed_s``)
    pipeline    the ops each stage runs (recomputation included), the bubble ((pp−1)/v micro-batch times) and
                the stage-to-stage sends (1/tp of the activation per rank: Megatron's scatter/gather)
    flops       model FLOPs, hardware FLOPs, Megatron-LM's count
    memory      bytes per device (Korthikanti et al. 2022 for the activations) and the check that they fit
    shards      who shares a parameter: the dense parameters' data-parallel group (dp·cp) and the routed
                experts' expert-data-parallel group (dp·cp·tp/(ep·etp)), read by the memory, the optimizer
                step, the gradient reduction and the parameter gathers
    kvheads     TP past the key/value heads: each rank one KV head, replicated over tp / kv_heads ranks
    tp          ``tp_shard``: each op split over the TP group by the rule of its role (``SHARDING``), the TP
                collectives where Megatron puts them; ``shard_inference``
    cp          ``cp_shard``: seq/cp tokens per rank, the K/V ring (``cp_ring_exposed``), the merge of its steps
    overlap     what TP comm overlap and the expert all-to-all overlap hide
    experts     the expert all-to-alls, the hottest rank's load (``expert_load``), redundant expert slots
    results     ``StepBreakdown``, ``DeviceMemory``, ``StepFlops``, ``StepEstimate``
    layout      ranks laid out as Megatron does (TP fastest, then CP, DP, PP) → the groups of each kind and the
                nodes they span
    plan        ``Plan`` and ``make_plan``: the options and their checks; gpus = tp × pp × cp × dp
    stages      how the layers split over the pipeline's model chunks (``stage_layers``)
    roles       what an op is to parallelism: its role, pass and sublayer
    recompute   partial recomputation: the share of a stage's layers re-run (Megatron's block / uniform)

The names below are the package's front: callers may import them from here or from their modules.
"""
from __future__ import annotations

from .cp import (CP_MERGE_BYTES, cp_merge, cp_ring_exposed, cp_ring_send_bytes, cp_ring_send_s, cp_ring_step_exposed,
                 cp_shard, ring_passes)
from .experts import expert_all_to_alls, expert_load, expert_slots
from .flops import megatron_flops, recompute_flops, step_flops
from .fsdp import fsdp_comm_s, fsdp_exposed, fsdp_exposed_s
from .gradsync import dp_grad_sync, grad_sync_exposed
from .layout import (collective_op, expert_dp_group, group, group_shapes, group_topology, groups, pp_group,
                     shared_network_notes)
from .memory import ACT_SPLIT_FRACTION, check_fits, grad_bytes, memory_bytes, plan_memory, plan_shards
from .optimizer import optimizer_s, param_quantize_s, plan_optimizer_s, step_optimizer_s
from .overlap import TP_OVERLAP, ep_overlap_hidden, ep_overlap_hidden_s, tp_overlap_add, tp_overlap_hidden, \
    tp_overlap_hidden_s
from .pipeline import bubble_s, first_stage, p2p_transfer_s, pipeline_p2p_s, plan_pipeline_p2p_s, stage_ops, \
    with_recompute
from .plan import (MAX_IMBALANCE, RECOMPUTE, Plan, check_model, check_redundant, check_redundant_slots, graph_scopes,
                   make_plan)
from .results import MODEL_FLOPS, DeviceMemory, StepBreakdown, StepEstimate, StepFlops
from .shards import (ParamShards, expert_dp_ranks, expert_param, experts_apart, param_shards, params_split,
                     shard_groups)
from .roles import base_name, compute_s_by_pass, is_backward, role, sublayer
from .stages import stage_layers, stage_layers_of, uneven, uneven_note
from .step import NO_HOST_NOTE, REDUNDANT_NOTE, lowered, microbatch_s, shard, step_s, train_step, training_graph
from .kvheads import kv_head_replicas, kv_tp_choices, replicated_kv_weight_bytes, tp_fits_kv_heads
from .tp import COLUMN_ROLES, SHARDING, TpSplit, kv_cache_split, shard_inference, sharding, tp_shard

__all__ = [
    "CP_MERGE_BYTES", "cp_merge", "cp_ring_exposed", "cp_ring_send_bytes", "cp_ring_send_s", "cp_ring_step_exposed",
    "cp_shard", "ring_passes",
    "expert_all_to_alls", "expert_load", "expert_slots",
    "megatron_flops", "recompute_flops", "step_flops",
    "fsdp_comm_s", "fsdp_exposed", "fsdp_exposed_s",
    "dp_grad_sync", "grad_sync_exposed",
    "collective_op", "expert_dp_group", "group", "group_shapes", "group_topology", "groups", "pp_group",
    "shared_network_notes",
    "ACT_SPLIT_FRACTION", "check_fits", "grad_bytes", "memory_bytes", "plan_memory", "plan_shards",
    "optimizer_s", "param_quantize_s", "plan_optimizer_s", "step_optimizer_s",
    "TP_OVERLAP", "ep_overlap_hidden", "ep_overlap_hidden_s", "tp_overlap_add", "tp_overlap_hidden",
    "tp_overlap_hidden_s",
    "bubble_s", "first_stage", "p2p_transfer_s", "pipeline_p2p_s", "plan_pipeline_p2p_s", "stage_ops",
    "with_recompute",
    "MAX_IMBALANCE", "RECOMPUTE", "Plan", "check_model", "check_redundant", "check_redundant_slots", "graph_scopes",
    "make_plan",
    "MODEL_FLOPS", "DeviceMemory", "StepBreakdown", "StepEstimate", "StepFlops",
    "ParamShards", "expert_dp_ranks", "expert_param", "experts_apart", "param_shards", "params_split",
    "shard_groups",
    "base_name", "compute_s_by_pass", "is_backward", "role", "sublayer",
    "stage_layers", "stage_layers_of", "uneven", "uneven_note",
    "NO_HOST_NOTE", "REDUNDANT_NOTE", "lowered", "microbatch_s", "shard", "step_s", "train_step", "training_graph",
    "kv_head_replicas", "kv_tp_choices", "replicated_kv_weight_bytes", "tp_fits_kv_heads",
    "COLUMN_ROLES", "SHARDING", "TpSplit", "kv_cache_split", "shard_inference", "sharding", "tp_shard",
]
