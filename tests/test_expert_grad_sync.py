"""The routed experts' gradients are reduced, and their ZeRO shards gathered, over Megatron-Core's
expert-data-parallel group (``parallel.shards``: dp·cp·tp / (ep·etp) ranks, Megatron-LM ``parallel_state.py``
``initialize_model_parallel``; ``DistributedDataParallel.__init__`` reduces the ``allreduce=False`` buffers over
``intra_expt_dp_group``), not over the whole data-parallel group. At EP = dp·cp each expert lives on one rank:
its gradients are reduced nowhere."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from ironlaw.core.graph import Graph
from ironlaw.machine import hardware
from ironlaw.machine.network.collectives import collective_time
from ironlaw.models import parallel
from ironlaw.models.analysis import training_graph

# 10 B parameters, 4 B active, 8 experts top-2: (10 − 4)·8/6 = 8 B expert parameters, 2 B dense
META = {"params": 10e9, "active_params": 4e9, "experts": 8, "experts_per_token": 2}


def test_the_expert_data_parallel_group_is_dp_cp_tp_over_ep_etp():
    assert parallel.expert_dp_ranks(64, 1, 1, 64) == 1                # EP = DP: every expert on one rank
    assert parallel.expert_dp_ranks(16, 1, 1, 8) == 2                 # EP < DP
    assert parallel.expert_dp_ranks(8, 2, 4, 8) == 2                  # CP joins the group; ETP = TP
    assert parallel.expert_dp_ranks(8, 2, 4, 8, etp=2) == 4           # ETP < TP: more expert replicas
    assert parallel.expert_dp_ranks(8, 2, 4, 8, etp=1) == 8
    assert list(parallel.expert_dp_ranks(np.array([8, 16]), 1, 2, 4)) == [2, 4]


def test_the_shard_rule_splits_dense_and_experts_and_the_memory_reads_it():
    held = parallel.param_shards(META, tp=2, pp=2, dp=8, cp=1, ep=4)
    assert (held.dense, held.expert) == pytest.approx((2e9 / 4, 8e9 / 16))
    assert (held.dense_ranks, held.expert_ranks) == (8, 2)
    assert held.shard == pytest.approx(2e9 / 4 / 8 + 8e9 / 16 / 2)
    mem = parallel.memory_bytes(META, 2.0, 2.0, 0.0, 0.0, 2, 2, 8, 4, 1, 1, 1, False, False)
    assert float(mem.optimizer_params) == pytest.approx(held.shard)
    assert float(mem.params_per_device) == pytest.approx(held.held)


OPTS = dict(gpus=8, tp=1, pp=1, ep=8, global_batch=8, micro_batch=1)


@pytest.fixture(scope="module")
def qwen_ep8():
    hw = hardware.get("h100")
    g = training_graph("qwen3-30b-a3b", hw, 512, "bf16", OPTS)
    return g, hw


def _without_expert_grads(sg: Graph) -> Graph:
    ops = []
    for op in sg.ops:
        if parallel.expert_param(op) and "gradients" in op.bytes:
            op = copy.copy(op)
            op.bytes = {k: v for k, v in op.bytes.items() if k != "gradients"}
        ops.append(op)
    return Graph(sg.name, sg.phase, sg.dtype, ops, footprint=dict(sg.footprint), meta=dict(sg.meta))


@pytest.mark.parametrize("zero", [1, 2])
def test_an_expert_reduction_at_ep_equal_dp_costs_nothing(qwen_ep8, zero):
    """EP 8 on 8 data-parallel ranks: the reduction and ZeRO-2's gather move the dense parameters alone."""
    g, hw = qwen_ep8
    plan = parallel.make_plan({**OPTS, "zero": zero}, g, hw)
    st = parallel.train_step(g, hw, plan)
    grp = parallel.groups(plan, 8)
    assert grp["edp"][0] == 1
    sg = st.per_microbatch.graph
    assert any(parallel.expert_param(op) and op.bytes.get("gradients", 0.0) > 0 for op in sg.ops)
    kind = "allreduce" if zero == 1 else "reducescatter"
    dense_only, _ = parallel.grad_sync_exposed(_without_expert_grads(sg), hw, kind, grp["dp"], "overlap")
    assert st.breakdown.dp_grad_comm_s == pytest.approx(dense_only, rel=1e-9)
    held = parallel.plan_shards(g, plan)
    gather = sum(collective_time("allgather", held.dense * 2.0, parallel.group_topology(hw, grp["dp"])))
    assert st.breakdown.zero_param_gather_s == pytest.approx(gather if zero == 2 else 0.0, rel=1e-9)
