"""Who shares a parameter: the data-parallel group a device's dense parameters are reduced and sharded over and
the expert-data-parallel group of its routed experts, as Megatron-Core builds them.

Megatron-Core (NVIDIA/Megatron-LM d98e8a64, Apache-2.0) lays the dense parameters on a tp·cp·dp·pp grid and the
routed experts on an etp·ep·edp·pp grid of the same ranks (``parallel_state.py``, ``initialize_model_parallel``:
``expert_data_parallel_size = world_size // (expert_tensor_parallel_size · expert_model_parallel_size ·
pipeline_model_parallel_size)``, the expert grid without CP, order tp-ep-dp-pp). So an expert is replicated on
dp·cp·tp / (ep·etp) ranks, not dp·cp: ``DistributedDataParallel.__init__`` (``distributed/
distributed_data_parallel.py``) puts the parameters marked ``allreduce=False`` (the experts' Transformer Engine
modules, ``extensions/transformer_engine.py``, ``_set_expert_parameter_attributes``) in buffers of their own whose
gradients are reduced, and whose distributed-optimizer shards are gathered, over ``intra_expt_dp_group``. At
EP = dp·cp (ETP = TP) each expert lives on one rank: nothing to reduce, its optimizer steps it whole.

``param_shards`` is the one rule: the memory (ZeRO's shards), the optimizer step, the gradient reduction and the
parameter all-gathers read it. ironlaw's experts split over TP as the dense layers do (ETP = TP) unless ``etp``
says otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ParamShards:
    """A device's parameters (counts; floats, or arrays with one layout per element), dense and routed-expert,
    and the ranks each is replicated on: its data-parallel group, whose gradients it reduces and whose ZeRO
    shards it holds one of."""
    dense: object               # dense parameters the device holds (over tp·pp)
    expert: object              # routed-expert parameters it holds (over etp·pp·ep, redundant slots included)
    dense_ranks: object         # the data-parallel group: dp·cp ranks
    expert_ranks: object        # the expert-data-parallel group: dp·cp·tp / (ep·etp) ranks

    @property
    def held(self):
        """Every parameter the device holds."""
        return self.dense + self.expert

    @property
    def shard(self):
        """One ZeRO shard of them: the dense parameters over dp·cp ranks, the experts over the expert-DP ranks."""
        return self.dense / self.dense_ranks + self.expert / self.expert_ranks


def params_split(meta: dict) -> tuple[float, float]:
    """(dense, expert) parameters of the whole model; expert weights inferred as (params − active)·E/(E − k)."""
    params = float(meta["params"])
    expert = 0.0
    if meta.get("experts"):
        e, k = meta["experts"], meta.get("experts_per_token", 1)
        expert = (params - float(meta.get("active_params", params))) * e / max(e - k, 1)
    return params - expert, expert


def expert_dp_ranks(dp, cp, tp, ep, etp=None):
    """The expert-data-parallel group's ranks, dp·cp·tp / (ep·etp) (Megatron-Core's ``expert_data_parallel_size``
    over the pipeline stage's tp·cp·dp ranks); ``etp`` defaults to ``tp``."""
    etp = tp if etp is None else etp
    return np.maximum((np.asarray(dp) * cp * tp) // (np.asarray(ep) * etp), 1)


def param_shards(meta: dict, tp, pp, dp, cp, ep, slots=1.0, etp=None) -> ParamShards:
    """The parameters one device holds and their data-parallel groups (``ParamShards``); ``slots``: expert slots per
    expert (redundant replicas, ``experts.expert_slots``)."""
    etp = tp if etp is None else etp
    dense, expert = params_split(meta)
    ranks = np.asarray(dp) * cp
    e_ranks = expert_dp_ranks(dp, cp, tp, ep, etp)
    if np.ndim(ranks) == 0:
        ranks, e_ranks = int(ranks), int(e_ranks)
    return ParamShards(dense / (tp * pp), expert * slots / (etp * pp * ep), ranks, e_ranks)


def expert_param(op) -> bool:
    """Whether ``op``'s weights are routed experts' (module "experts", as the transformer builder names them; the
    shared experts and the router are dense parameters, reduced over the whole data-parallel group)."""
    return op.module == "experts"


def experts_apart(ep: int) -> bool:
    """Whether the experts' collectives run apart from the dense ones: with EP > 1 their group is not the
    data-parallel group; at EP 1 (ETP = TP) it is the same ranks, and one collective carries both."""
    return ep > 1


def shard_groups(held: ParamShards, grp: dict, ep: int) -> tuple:
    """((parameters, group), ...) a device gathers or reduce-scatters: its dense parameters over the data-parallel
    group and its experts over the expert-data-parallel group (``experts_apart``), or all of them over the
    data-parallel group (EP 1)."""
    return ((held.dense, grp["dp"]), (held.expert, grp["edp"])) if experts_apart(ep) else ((held.held, grp["dp"]),)
