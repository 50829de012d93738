"""DeepEP's dispatch and combine from measured tables: the curves in the catalog, the collectives that use them, and
``--moe-dispatcher deepep`` (Megatron-Core's flex dispatcher on its DeepEP backend).

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0; tests/data/kernel_tables/LICENSE.aiconfigurator-core),
``<system>/comm/trtllm/1.3.0rc11/moe_a2a_perf.parquet``: TensorRT-LLM's DeepEP high-throughput kernels, bf16, EP 8 on
one node; the extract in tests/data/kernel_tables holds every such row of B200 and H100 (78 per phase).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ironlaw import api
from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.machine.network import build, collective_time
from ironlaw.machine.network.calibration import for_hardware
from ironlaw.machine.network.curves import DEEPEP_COMBINE, DEEPEP_DISPATCH, bus_factor
from ironlaw.models import dispatcher

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import kernel_deepep  # noqa: E402

TRAIN = dict(phase="train", dtype="bf16", seq=4096, global_batch=64, micro_batch=1, gpus=8, tp=1, pp=1, ep=8)


@pytest.fixture(scope="module")
def fitted():
    return kernel_deepep.fits(kernel_deepep.DATA)


def test_the_catalog_holds_exactly_the_fit_of_the_extract(fitted):
    assert {(g, c) for g, c, _ in fitted} == {(g, c) for g in ("b200", "h100") for c in (DEEPEP_DISPATCH, DEEPEP_COMBINE)}
    for (gpu, coll, ep), (lines, k, err, _) in fitted.items():
        assert ep == 8 and k == 39 and len(err) == 39
        assert np.median(err) <= 0.09, (gpu, coll, np.median(err))         # held out: 6.8–8.3% on these two GPUs
        stored = for_hardware(hardware.get(gpu)).curves[(coll, ep)]
        assert np.allclose(np.array(stored), np.array(lines), rtol=1e-3)


def test_deepep_collectives_run_on_their_curve_where_measured_and_as_the_all_to_all_elsewhere():
    n = np.array([1e6, 64e6])
    h200 = hardware.get("h200")
    (a, b), = for_hardware(h200).curves[(DEEPEP_DISPATCH, 8)]
    got = sum(collective_time(DEEPEP_DISPATCH, n, build(h200, 8, 1)))
    assert got == pytest.approx(a + bus_factor(DEEPEP_DISPATCH, 8) * n / b)
    assert not np.allclose(got, sum(collective_time("alltoall", n, build(h200, 8, 1))))
    a100 = hardware.get("a100")                                   # no DeepEP table: the law's all-to-all
    assert np.allclose(sum(collective_time(DEEPEP_COMBINE, n, build(a100, 8, 1))),
                       sum(collective_time("alltoall", n, build(a100, 8, 1))))


def test_deepep_dispatcher_prices_the_exchange_on_deepeps_kernels():
    """On B200 DeepEP moves the exchange's bytes at about half NCCL's all-to-all rate (docs/accuracy.md): the step
    with ``deepep`` is longer than with flex (HybridEP: the all-to-all) and its exchange ops name DeepEP's curves."""
    flex = api.analyze("qwen3-30b-a3b", on="b200", moe_dispatcher="flex", **TRAIN)
    deep = api.analyze("qwen3-30b-a3b", on="b200", moe_dispatcher="deepep", **TRAIN)
    assert deep.time_s > flex.time_s
    assert dispatcher.check("deepep", 8) == "deepep"
    with pytest.raises(IronlawError, match="--ep > 1"):
        dispatcher.check("deepep", 1)
    with pytest.raises(IronlawError, match="alltoall, flex or deepep"):
        dispatcher.check("hybrid", 8)


def test_on_deepep_names_dispatch_and_combine():
    from ironlaw.core.graph import Graph, Op
    ops = [Op("ep.alltoall.dispatch", "collective", network_bytes=1e6, dtype="bf16", module="ep",
              collective="alltoall", group=(8, 1)),
           Op("ep.alltoall.combine.bwd", "collective", network_bytes=1e6, dtype="bf16", module="ep",
              collective="alltoall", group=(8, 1)),
           Op("tp.allreduce", "collective", network_bytes=1e6, dtype="bf16", module="tp", collective="allreduce",
              group=(8, 1))]
    g = dispatcher.on_deepep(Graph("g", "train", "bf16", ops, meta={"ep": 8}))
    assert [op.collective for op in g.ops] == [DEEPEP_DISPATCH, DEEPEP_COMBINE, "allreduce"]
    assert [op.collective for op in ops] == ["alltoall", "alltoall", "allreduce"]     # the input is left as it is


def test_another_network_writer_keeps_the_deepep_curves():
    """benchmarks/kernel_comm.py rewrites [network] whole; the DeepEP curves and their provenance go back in."""
    text = (hardware.CATALOG_DIR / "h200.toml").read_text()
    parts = kernel_deepep.deepep_parts(text)
    assert parts[0].count("[[network.curve]]") == 5 and "moe_a2a_perf" in parts[1] and len(parts[2]) == 4
    bare = kernel_deepep.with_deepep(text, "", "", [])
    assert "alltoall-deepep" not in bare and "moe_a2a_perf" not in bare
    assert kernel_deepep.with_deepep(bare, *parts) == text


def test_deepep_on_a_device_without_its_curves_is_refused_naming_those_that_have_them():
    with pytest.raises(IronlawError, match=r"^--moe-dispatcher deepep: a100 has no measured DeepEP curve \(measured "
                                           r"on b200 \(EP 8\), .*gb200 \(EP 4\), .*h100 \(EP 8\).*\); use alltoall or flex$"):
        api.analyze("qwen3-30b-a3b", on="a100", moe_dispatcher="deepep", **TRAIN)
    api.analyze("qwen3-30b-a3b", on="a100", moe_dispatcher="flex", **dict(TRAIN, zero=3))   # the law's all-to-all
    with pytest.raises(IronlawError, match="a100 has no measured DeepEP curve"):
        api.search("qwen3-30b-a3b", on="a100", gpus=8, global_batch=64, seq=4096, phase="train", dtype="bf16",
                   moe_dispatcher="deepep")


def test_deepep_refusal_through_the_cli_is_one_line_exit_2():
    from conftest import one_line_error, run_cli
    r = run_cli("analyze", "qwen3-30b-a3b", "--on", "l40s", "--phase", "train", "--dtype", "bf16", "--seq", "4096",
                "--global-batch", "64", "--gpus", "8", "--ep", "8", "--moe-dispatcher", "deepep")
    msg = one_line_error(r)
    assert "--moe-dispatcher deepep: l40s has no measured DeepEP curve" in msg and "use alltoall or flex" in msg


def _collective_borrows(r) -> str:
    cov = r.to_dict()["per_microbatch"]["calibration_coverage"]
    return next((b["borrows"] for b in cov["borrowed"] if b["class"] == "collective"), "")


def test_coverage_states_how_deepep_was_carried_to_another_group_or_across_nodes():
    """H100's DeepEP curves are measured at EP 8 on one node: EP 4 runs on them (the coverage says so), EP 16 over
    two nodes runs as the α-β all-to-all (the coverage says so); EP 8 on one node is their own."""
    own = api.analyze("qwen3-30b-a3b", on="h100", moe_dispatcher="deepep", **dict(TRAIN, zero=3))
    assert "DeepEP" not in _collective_borrows(own)
    ep4 = api.analyze("qwen3-30b-a3b", on="h100", moe_dispatcher="deepep", **dict(TRAIN, ep=4, zero=3))
    assert "DeepEP's dispatch curve measured at EP 8, carried to EP 4" in _collective_borrows(ep4)
    assert "DeepEP's combine curve measured at EP 8, carried to EP 4" in _collective_borrows(ep4)
    wide = api.analyze("qwen3-30b-a3b", on="h100", moe_dispatcher="deepep", nodes=2, **dict(TRAIN, gpus=16, ep=16, zero=3))
    assert ("the α-β all-to-all for DeepEP's dispatch over EP 16 on 2 nodes (measured: EP 8 on one node)"
            in _collective_borrows(wide))
