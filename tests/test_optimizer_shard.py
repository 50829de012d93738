"""The optimizer step prices the parameters the device's optimizer holds (``DeviceMemory.optimizer_params``):
with ZeRO-1, Megatron-Core's distributed optimizer shards the dense parameters over the data-parallel group
(dp·cp ranks) and the experts over the expert-data-parallel group (dp·cp/ep ranks), as the memory's optimizer
state already did. At EP 64 on 64 GPUs every expert lives on one rank, so each rank steps its experts whole."""
from __future__ import annotations

import numpy as np
import pytest

from ironlaw.machine import hardware
from ironlaw.models import parallel
from ironlaw.models.analysis import training_graph

OPTS = dict(gpus=64, tp=1, pp=1, ep=64, global_batch=1280, micro_batch=1, zero=1)


@pytest.fixture(scope="module")
def gpt_oss():
    hw = hardware.get("gb200")
    g = training_graph("gpt-oss-120b", hw, 8192, "bf16", OPTS)
    return g, hw, parallel.train_step(g, hw, parallel.make_plan(OPTS, g, hw))


def test_the_optimizer_holds_the_experts_whole_when_ep_spans_the_data_parallel_group(gpt_oss):
    g, _, st = gpt_oss
    held = parallel.plan_shards(g, st.plan)
    assert st.plan.dp == 64 and st.plan.ep == 64
    assert st.memory.optimizer_params == pytest.approx(held.dense / 64 + held.expert)
    assert st.memory.optimizer_bytes == pytest.approx(12.0 * st.memory.optimizer_params)


def test_the_step_time_covers_the_experts_the_rank_steps(gpt_oss):
    g, hw, st = gpt_oss
    expert = parallel.plan_shards(g, st.plan).expert
    experts_alone = float(parallel.optimizer_s(g, hw, np.asarray([expert]), "overlap")[0])
    assert experts_alone > 0.0
    assert st.breakdown.optimizer_s >= experts_alone


def test_dense_models_shard_as_before():
    hw = hardware.get("h100")
    opts = dict(gpus=16, tp=2, pp=2, global_batch=64, zero=1)
    g = training_graph("llama3-8b", hw, 8192, "bf16", opts)
    st = parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))
    assert st.memory.optimizer_params == pytest.approx(st.memory.params_per_device / st.plan.dp)
