"""The router's load on the busiest expert-parallel rank (core.routing) and how one serving step's experts take it:
the rows and the experts' weights of the slowest rank, per step at its pooled tokens."""
from __future__ import annotations

import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.core.routing import balanced_local, power_law_local, power_law_ranks, routing_of, slowest_rank
from ironlaw.machine import hardware
from ironlaw.models import workloads
from ironlaw.models.serving import throughput as st
from ironlaw.models.serving.parallel import shard_attention_dp
from ironlaw.models.serving.throughput import Layout

QWEN3_235B = dict(hidden=4096, experts=128, top_k=8, expert_inter=1536)      # Qwen/Qwen3-235B-A22B config.json


def test_power_law_ranks_bound_the_busiest_rank():
    """The rank with the most rows carries more than the mean t·k/ep; the widest rank reaches at least as many
    experts as it, and no rank more than its E/ep; the same seed gives the same expectation."""
    for tokens, experts, k, ep in ((2048, 128, 8, 8), (1024, 128, 1, 8), (300, 16, 1, 4)):
        rows, used, widest = power_law_ranks(tokens, experts, k, ep, 1.2)
        assert rows > tokens * k / ep
        assert used <= widest <= experts // ep
        assert (rows, used) == power_law_local(tokens, experts, k, ep, 1.2)
    r12, _, _ = power_law_ranks(2048, 128, 8, 8, 1.2)
    r101, _, _ = power_law_ranks(2048, 128, 8, 8, 1.01)
    assert r12 > r101                                # the steeper power law loads the busiest rank more


def test_slowest_rank_of_each_routing():
    assert slowest_rank("balanced", 4096.4, 128, 8, 8) == balanced_local(4096, 128, 8, 8) == (4096, 16)
    rows, experts = slowest_rank("power_law_1.2", 1024, 128, 1, 8)
    assert (rows, experts) == (power_law_ranks(1024, 128, 1, 8, 1.2)[0], power_law_ranks(1024, 128, 1, 8, 1.2)[2])
    assert slowest_rank("power_law_1.2", 0.2, 128, 8, 8) == slowest_rank("power_law_1.2", 1, 128, 8, 8)
    for bad in ("uniform", "power_law_x", "power_law_1", "power_law_0.5"):
        assert routing_of(bad) is None
        with pytest.raises(IronlawError, match="unknown MoE routing"):
            slowest_rank(bad, 1024, 128, 8, 8)


def test_attention_dp_rank_takes_the_routings_rows_and_experts():
    """216 sequences per rank × 8 ranks under power_law_1.2: the rank's routed FLOPs are the slowest rank's rows,
    its expert weights the most experts a rank reaches (not the uniform routing's 16 of 16)."""
    c, per_rank, ep = QWEN3_235B, 216, 8
    g = workloads.resolve(workloads.Request("qwen3-235b-a22b", phase="decode", batch=per_rank, seq=1, dtype="fp8",
                                            device="cuda"))
    g.meta["tokens"] = per_rank
    h100 = hardware.get("h100")
    uni = shard_attention_dp(g, h100, Layout(tp=ep, ep=ep, attention_dp=True))
    pl = shard_attention_dp(g, h100, Layout(tp=ep, ep=ep, attention_dp=True, routing="power_law_1.2"))
    rows, experts = slowest_rank("power_law_1.2", per_rank * ep, c["experts"], c["top_k"], ep)
    up = {x.name: x for x in pl.ops}["mlp_up_proj"]
    up0 = {x.name: x for x in uni.ops}["mlp_up_proj"]
    assert up.flops == pytest.approx(2.0 * rows * c["hidden"] * 2 * c["expert_inter"], rel=1e-9)
    assert up.flops > 1.5 * up0.flops
    assert up.bytes["weights"] == pytest.approx(experts * c["hidden"] * 2 * c["expert_inter"], rel=1e-6)


def test_max_throughput_routing_is_checked_and_reported():
    kw = dict(tp=8, ep=8, attention_dp=True, dtype="fp8")
    est = st.max_throughput("qwen3-235b-a22b", "h100", 1000, 1000, routing="power_law_1.2", **kw)
    base = st.max_throughput("qwen3-235b-a22b", "h100", 1000, 1000, **kw)
    assert est.to_dict()["routing"] == "power_law_1.2" and base.to_dict()["routing"] is None
    assert est.batch == base.batch and est.time_s > base.time_s   # the same engine, a busier expert rank
    with pytest.raises(IronlawError, match="unknown MoE routing 'zipf'"):
        st.max_throughput("qwen3-235b-a22b", "h100", 1000, 1000, routing="zipf", **kw)
    with pytest.raises(IronlawError, match="give one"):
        st.max_throughput("qwen3-235b-a22b", "h100", 1000, 1000, routing="power_law_1.2", expert_imbalance=2.0,
                          **kw)


def _rows(latency_of, routing: str) -> dict:
    import numpy as np
    shape = dict(num_tokens=np.array([64, 512, 4096]), hidden_size=np.full(3, 4096), inter_size=np.full(3, 1536),
                 topk=np.full(3, 8), num_experts=np.full(3, 128), moe_tp_size=np.ones(3, int),
                 moe_ep_size=np.full(3, 8))
    shape["latency_s"] = latency_of(shape, routing)
    return shape


def test_kernel_moe_routing_prices_each_row_with_its_routing():
    """benchmarks/kernel_moe_routing.py: a table whose power-law rows take exactly what the stored H100 FP8 classes
    give under that routing scores 0; the same rows priced as balanced would not."""
    import sys
    from pathlib import Path
    import numpy as np
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import kernel_moe as km
    import kernel_moe_routing as kmr
    from ironlaw.measure.calibrate import moefit
    h100 = hardware.get("h100")

    def stored(rows, routing):
        x = moefit.terms(rows, "fp8", h100.peak_flops["fp8"], h100.memory[h100.device_tier].bw_Bps, routing)
        return km.stored_predict(h100.calibration.kernel, "fp8", x)
    rows = _rows(stored, "power_law_1.2")
    assert np.allclose(kmr.scored("h100", "fp8", rows, "power_law_1.2"), 0.0, atol=1e-9)
    off = kmr.scored("h100", "fp8", rows, "balanced")
    assert np.all(off[1:] < -0.05)         # from 512 tokens the busiest rank's extra rows make the layer slower …
    assert off[0] > 0.0                    # … at 64 it reaches fewer than all 16 local experts, and streams less


def test_serve_moe_routing_from_the_front_door(cli):
    """``ironlaw serve --max-throughput --moe-routing``: the library's routing reaches the CLI's JSON and slows the
    busiest expert rank; a dense model, an unknown routing or an online serve is one line, exit 2."""
    args = ("serve", "qwen3-235b-a22b", "--on", "h100", "--tp", "8", "--ep", "8", "--attention-dp", "--dtype", "fp8",
            "--prompt", "1000", "--output", "1000", "--max-throughput", "--format", "json")
    skewed, uniform = cli(*args, "--moe-routing", "power_law_1.2"), cli(*args)
    assert skewed.rc == 0 and uniform.rc == 0
    assert skewed.json()["routing"] == "power_law_1.2" and uniform.json()["routing"] is None
    assert skewed.json()["time_s"] > uniform.json()["time_s"]
    for bad, said in ((("serve", "llama3-8b", "--on", "h100", "--max-throughput", "--moe-routing", "power_law_1.2"),
                       "llama3-8b is dense"),
                      (("serve", "llama3-8b", "--on", "h100", "--max-throughput", "--expert-imbalance", "1.5"),
                       "llama3-8b is dense"),
                      (args[:-2] + ("--moe-routing", "zipf"), "unknown MoE routing 'zipf'"),
                      (("serve", "qwen3-235b-a22b", "--on", "h100", "--moe-routing", "balanced"),
                       "--moe-routing belongs to the offline scenario")):
        r = cli(*bad)
        assert r.rc == 2 and said in r.err and len(r.err.strip().splitlines()) == 1, (bad, r.err)
