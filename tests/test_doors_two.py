"""Doors that disagreed: a one-device training step that does not fit against the same step as one micro-batch, a
bottleneck reason whose two times read as one, the search's winner without the command that re-runs it, the serve
page without the TTFT and ITL accounts. Each pinned by the test that failed before its fix."""
import pytest

from conftest import run_cli


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_training_step_that_does_not_fit_one_device_is_refused_by_both_doors():
    """`analyze llama3-8b --phase train --batch 4 --seq 2048 --on h100` priced 75.7 GiB of optimizer state in host
    DRAM (3.86 s) where `--micro-batch 4 --global-batch 4` refused the same step; both refuse it with the hint."""
    one = run_cli("analyze", "llama3-8b", "--phase", "train", "--batch", "4", "--seq", "2048", "--on", "h100")
    mb = run_cli("analyze", "llama3-8b", "--phase", "train", "--micro-batch", "4", "--global-batch", "4", "--seq",
                 "2048", "--on", "h100")
    assert one.rc == mb.rc == 2 and one.err == mb.err, (one.err, mb.err)
    assert "cannot fit on 1 × h100 even fully sharded" in one.err and one.out == ""


def test_a_training_step_that_fits_is_one_answer_through_both_doors():
    import ironlaw
    a = ironlaw.analyze("gpt2", on="h100", phase="train", batch=4, seq=1024)
    b = ironlaw.analyze("gpt2", on="h100", phase="train", micro_batch=4, global_batch=4, seq=1024)
    assert float(a.total_s) == pytest.approx(b.time_s, rel=1e-9) and not bool(a.capacity_bound)


def test_a_recommenders_tables_stay_priced_in_host_memory():
    """DLRM's embedding tables held in host DRAM are a design its frameworks run (the one-device door prices them)."""
    import ironlaw
    est = ironlaw.analyze("dlrm-dcnv2", on="h100", batch=2048, phase="train")
    assert bool(est.capacity_bound) and "spill to host-dram" in est.bottleneck()["why"]


def test_the_bandwidth_reason_says_which_time_is_the_share_and_which_the_data_term():
    """`moving data from hbm3e owns 59% of the critical path: about 17.2 GB in 4.92 ms` read as 59% = 4.92 ms; the
    share's time (3.92 ms) and the data term's (4.92 ms) each say what they are."""
    import ironlaw
    from ironlaw.core.units import fmt, fmt_time
    est = ironlaw.analyze("llama3-8b", on="h200", phase="decode", seq=2048, batch=8)
    b = est.bottleneck()
    k = [m.name for m in est.hw.memory].index(b["tier"])
    share_s = float(est.workload_shares_s[int(est.bottleneck_idx)])
    data_s = float((est.data_tier_s[k] * est.cols.count).sum())
    moved = float((est.traffic_bytes[k] * est.cols.count).sum())
    assert fmt_time(share_s) != fmt_time(data_s)
    pct = 100 * share_s / float(est.workload_shares_s.sum())
    assert b["why"].startswith(f"moving data from hbm3e owns {pct:.0f}% of the critical path ({fmt_time(share_s)}): "
                               f"its {fmt(moved, 'B')} take {fmt_time(data_s)} at "), b["why"]


def test_the_compute_reason_says_the_shares_time():
    import ironlaw
    from ironlaw.core.units import fmt_time
    est = ironlaw.analyze("llama3-8b", on="h100", phase="prefill", seq=2048, batch=4)
    share_s = float(est.workload_shares_s[int(est.bottleneck_idx)])
    assert est.bottleneck()["why"].startswith("compute owns 82% of the critical path "
                                              f"({fmt_time(share_s)}): "), est.bottleneck()["why"]


def _rerun(doc: dict) -> dict:
    import shlex
    argv = shlex.split(doc["rerun"])
    assert argv[0] == "ironlaw"
    r = run_cli(*argv[1:], "--format", "json")
    assert r.rc == 0, (doc["rerun"], r.err)
    return r.json()


def test_the_training_searchs_best_layout_reruns_to_its_time():
    """`search` ranked layouts without the command that re-runs its #1: `rerun` carries every flag the layout fixed
    and the search's step options, and `analyze` on it gives the row's step time."""
    r = run_cli("search", "llama3-8b", "--on", "h100", "--gpus", "2", "--global-batch", "16", "--seq", "2048",
                "--top", "1", "--recompute", "full", "--cuda-graph", "attn", "--format", "json")
    doc = r.json()
    assert r.rc == 0 and doc["rerun"].startswith("ironlaw analyze llama3-8b --phase train --on h100 --gpus 2 ")
    for flag in ("--recompute full --recompute-layers", "--cuda-graph attn", "--micro-batch", "--zero", "--dp"):
        assert flag in doc["rerun"], doc["rerun"]
    assert _rerun(doc)["time_s"] == pytest.approx(doc["top"][0]["time_s"], rel=1e-6)


def test_the_serving_searchs_best_layout_reruns_to_its_latencies():
    import ironlaw
    from ironlaw.core import schemas
    doc = ironlaw.search("llama3-8b", phase="serve", on="h100", gpus=1, slo="ttft=1s,itl=50ms", top=1).to_dict()
    schemas.validate(doc)
    row, got = doc["top"][0], _rerun(doc)
    assert "--concurrency" in doc["rerun"] and "--max-throughput" not in doc["rerun"]
    for k, want in (("itl_s", row["itl_s"]), ("ttft_s", row["ttft_s"]), ("tokens_per_s", row["output_tokens_per_s"])):
        assert got[k] == pytest.approx(want, rel=1e-6), k


def test_the_search_prints_the_rerun_of_its_best_layout():
    """The text and the JSON carry one command; the offline search's re-runs the max-throughput scenario."""
    args = ("search", "llama3-8b", "--phase", "serve", "--on", "h100", "--gpus", "1", "--top", "1")
    text, doc = run_cli(*args, env={"COLUMNS": "80"}), run_cli(*args, "--format", "json").json()
    out = text.out.splitlines()
    first = next(i for i, ln in enumerate(out) if ln.startswith("re-run: "))
    last = next(i for i in range(first, len(out)) if not out[i].endswith(" \\"))
    assert last > first and all(len(ln) <= 80 for ln in out[first:last + 1])     # lines a shell joins
    pasted = " ".join(ln.removesuffix(" \\").strip() for ln in out[first:last + 1])
    assert pasted == f"re-run: {doc['rerun']}" and "--max-throughput" in pasted
    assert _rerun(doc)["time_s"] == pytest.approx(doc["top"][0]["time_s"], rel=1e-6)
