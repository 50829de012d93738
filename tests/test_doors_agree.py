"""One answer through several doors (text, JSON, HTML, the library; serve against its own frontier; a training
step's parts) carries the same numbers and says what each is. Each pinned by the test that failed before its fix."""
import pytest

from conftest import run_cli


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_serve_says_what_its_ttft_adds_up_from():
    """`serve llama3-8b --on h100` printed TTFT 44.4 ms beside a prefill of 38.7 ms and `analyze --phase prefill`'s
    24.6 ms, not saying what the TTFT adds up from: the prompt's prefill alone in its step plus the decode step in
    flight (with chunked prefill, its mixed steps); text and JSON say so."""
    import ironlaw
    from ironlaw.core import schemas
    d = ironlaw.serve("llama3-8b", on="h100", concurrency=1).to_dict()
    assert d["ttft_s"] == pytest.approx(d["prefill_s"] + d["decode_step_s"])
    assert d["ttft_why"] == ("TTFT 44.4 ms = the prompt's prefill 38.7 ms (its 1,024 tokens alone in one step) + the "
                             "decode step in flight 5.77 ms, which the new request waits for"), d["ttft_why"]
    schemas.validate(d)
    c = ironlaw.serve("llama3-8b", on="h100", concurrency=5, chunk=512).to_dict()
    assert c["ttft_s"] == pytest.approx(2 * c["mixed_step_s"])
    assert c["ttft_why"].startswith("TTFT 84.3 ms = 2 mixed steps of 42.2 ms, the prompt's 1,024 tokens in chunks "
                                    "of 512"), c["ttft_why"]
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--concurrency", "1")
    assert r.rc == 0 and d["ttft_why"] in _flat(r.out), r.out


def test_online_serve_on_several_devices_says_its_tokens_per_s_are_theirs_together():
    """`serve llama3-8b --tp 2 --concurrency 4` printed 976 tokens/s where `--sweep-concurrency` printed 488
    tokens/s per device at the same concurrency, with no label saying the first is both devices together; the
    text, the JSON and the HTML say which."""
    import ironlaw
    res = ironlaw.serve("llama3-8b", on="h100", tp=2, concurrency=4)
    d = res.to_dict()
    assert d["devices"] == 2 and d["tokens_per_s_per_device"] == pytest.approx(d["tokens_per_s"] / 2)
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--tp", "2", "--concurrency", "4")
    assert r.rc == 0 and "976 tokens/s (all 2 devices; 488 per device, 244 per sequence)" in _flat(r.out), r.out
    one = ironlaw.serve("llama3-8b", on="h100", concurrency=4).to_dict()
    assert one["devices"] == 1 and one["tokens_per_s_per_device"] == one["tokens_per_s"]


def test_serve_html_says_the_host_binds_the_prefill_and_prints_numbers_as_the_text_does():
    """The HTML's prefill section said 31.4 ms, compute-bound, where the text says prefill 45.6 ms, host-bound;
    its energy table printed 1.28e+03 gCO2 where the text prints 1,285; its tokens/s did not say they are both
    devices' together. (The page itself: ``test_new_user.test_the_reports_count_one_in_the_singular``.)"""
    import ironlaw
    from ironlaw.report import serve_report
    doc = ironlaw.serve("llama3-8b", on="h100", tp=2, concurrency=4).to_dict()
    assert serve_report.host_note(doc, "prefill").startswith(
        "The step takes 45.6 ms, host-bound: 45.6 ms of host work per step")
    assert serve_report.host_note(doc, "decode") == ""                # the graph's launches hide under the device
    labels = {row[0]: row[3] for row in serve_report.key_rows(doc, 2)}
    assert labels["output tokens/s (all 2 devices)"] == "976" and labels["output tokens/s per device"] == "488"
    energy = serve_report.energy_section(dict(doc["energy"], gco2_per_million_output_tokens=1284.6), "energy")
    assert "1,285" in energy and "e+0" not in energy, energy


def test_a_tp_overlap_that_hides_every_collective_leaves_zero_seconds_not_round_off():
    """With --tp-comm-overlap hiding every TP collective the step's table printed 'of which TP/EP collectives
    4.44e-07 ns' (4.4e-16 s, the difference of two equal sums) for the layout `search` ranks first."""
    import ironlaw
    d = ironlaw.analyze("llama3-8b", on="h100", phase="train", gpus=2, tp=2, sequence_parallel=True,
                        tp_comm_overlap=True, global_batch=1, seq=4096).to_dict()
    assert d["breakdown"]["tp_ep_network_s"] == 0.0
    d = ironlaw.analyze("llama3-8b", on="h100", phase="train", gpus=2, tp=2, global_batch=1, seq=4096).to_dict()
    assert d["breakdown"]["tp_ep_network_s"] > 1e-6            # without the overlap the collectives stay


def test_markdown_carries_the_work_line_and_the_uncounted_ops_the_text_prints():
    """`analyze … --format md` left out the text's "work: 15.6 GFLOP, traffic 15.2 GB, 355 op invocations (14
    distinct rows)" and its warning that some ops have no formula (priced at nothing)."""
    import ironlaw
    from ironlaw.report import markdown
    r = run_cli("analyze", "llama3-8b", "--phase", "decode", "--seq", "1024", "--on", "h100", "--format", "md")
    assert r.rc == 0 and "work: 15.6 GFLOP, traffic 15.2 GB, 355 op invocations (14 distinct rows)" in r.out, r.out
    est = ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=1024)
    est.graph.uncounted_ops = {"aten::cumsum": 2}
    assert "**uncounted ops (no formula): aten::cumsum×2**" in markdown.render(est)


def test_a_serving_search_names_the_default_price_it_used_as_the_layouts_own_source():
    """`search llama3-8b --phase serve --on h100` prices each layout's energy at the catalog's AWS rate and names
    that rate as the source in both the layout's price_source and its energy block (no --price-per-gpu-hour given)."""
    import ironlaw
    top = ironlaw.search("llama3-8b", phase="serve", on="h100", gpus=1, top=1).to_dict()["top"][0]
    assert top["energy"]["price_source"] == top["price_source"]
    assert top["price_source"].startswith("vendor: AWS EC2")


def test_a_sharded_analyze_says_its_work_and_footprint_are_one_devices():
    """`analyze llama3-70b --tp 4 --gpus 4` printed "work: 284 GFLOP" and "footprint 33.5 GiB" (one device's
    share: the model's 1.13 TFLOP and 131 GiB over 4) beside an energy line for all 4 devices, no label saying
    which; the HTML printed the footprint in decimal GB (35.3 GB of weights) where the text says GiB."""
    import ironlaw
    from ironlaw.report import html, markdown
    est = ironlaw.analyze("llama3-70b", on="h100", phase="decode", seq=1024, batch=8, tp=4, gpus=4)
    md = markdown.render(est)
    assert "work per device (tp 4): 284 GFLOP, traffic 35.6 GB" in md and "Footprint 33.5 GiB per device (tp 4):" in md
    assert "of work per device (tp 4)" in html.summary(est)
    page = html.footprint(est)
    assert "33.5 GiB resident per device (tp 4)" in page and "weights 32.9 GiB" in page and " GB<" not in page
    r = run_cli("analyze", "llama3-70b", "--phase", "decode", "--seq", "1024", "--batch", "8", "--on", "h100",
                "--tp", "4", "--gpus", "4")
    assert r.rc == 0 and "footprint 33.5 GiB per device (tp 4) against" in _flat(r.out), r.out
    one = markdown.render(ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=1024))
    assert "work: 15.6 GFLOP" in one and "per device" not in one


def test_a_batch_what_if_says_what_it_does_per_sample_as_two_analyze_runs_do():
    """`compare llama3-8b --phase decode -w batch=64` said only "lengthens the critical path by 49% (1.49×
    slower)": the step carries 64× the work, and per sample the two `analyze` runs (7.14 ms at batch 1, 10.6 ms at
    batch 64) give 43× faster; the verdict and the JSON say both."""
    import ironlaw
    c = ironlaw.compare("llama3-8b", on="h100", phase="decode", what_if="batch=64").to_dict()
    one = ironlaw.analyze("llama3-8b", on="h100", phase="decode").time_s
    many = ironlaw.analyze("llama3-8b", on="h100", phase="decode", batch=64).time_s
    assert c["time_before_s"] == pytest.approx(one) and c["time_after_s"] == pytest.approx(many)
    assert c["speedup_per_sample"] == pytest.approx(64 * one / many)
    assert c["verdict"].startswith("lengthens the critical path by 49% (1.49× slower) per step, batch 64 for 1; per "
                                   "sample 43.1× faster (166 µs a sample for 7.14 ms): "), c["verdict"]
    same = ironlaw.compare("llama3-8b", on="h100", phase="decode", what_if="quant=int8,target=weights").to_dict()
    assert same["speedup_per_sample"] == same["speedup"] and "per sample" not in same["verdict"]


def test_a_training_step_says_what_its_micro_batch_estimate_is_to_the_step():
    """`analyze … --phase train --tp 2 --tp-comm-overlap` printed the step's micro-batch row and then a
    per-micro-batch estimate of another time (the law's, op by op, before the overlap hides the TP collectives)
    without a word linking the two; a line says what each is and what the overlap hid."""
    import ironlaw
    from ironlaw.core.units import fmt_time
    kw = dict(on="h100", phase="train", gpus=2, tp=2, sequence_parallel=True, tp_comm_overlap=True,
              global_batch=2, seq=4096)
    step = ironlaw.analyze("llama3-8b", **kw)
    law_s, counted = float(step.per_microbatch.time_s), step.breakdown.compute_and_tp_s / 2
    assert counted < law_s
    r = run_cli("analyze", "llama3-8b", "--on", "h100", "--phase", "train", "--gpus", "2", "--tp", "2",
                "--sequence-parallel", "--tp-comm-overlap", "--global-batch", "2", "--seq", "4096")
    assert r.rc == 0 and (f"one micro-batch on the slowest stage, below: {fmt_time(law_s)} by the law, op by op; "
                          f"the step counts {fmt_time(counted)} for each of its 2 ({fmt_time(law_s - counted)} of "
                          f"TP/EP collectives hidden under their GEMMs)") in _flat(r.out), r.out


def test_compare_markdown_names_the_workload_as_the_text_does():
    """`compare … --format md` headed its page "### llama3-8b: batch=8", dropping the phase, dtype, batch and
    sequence the text's head names."""
    head = "llama3-8b · decode · bf16 · batch 1, seq 1024: batch=8"
    args = ("compare", "llama3-8b", "--phase", "decode", "--on", "h100", "-w", "batch=8")
    md, text = run_cli(*args, "--format", "md"), run_cli(*args)
    assert md.rc == 0 and md.out.startswith(f"### {head}\n"), md.out[:200]
    assert text.rc == 0 and text.out.startswith(head), text.out[:200]


def test_one_devices_training_step_is_the_same_through_either_door():
    """`analyze llama3-8b --phase train --batch 1 --seq 2048 --on b200` said 113 ms and the same step through
    `--global-batch 1` (the training step) 123 ms: the first priced the GEMMs on the serving kernels' tables, which a
    training step leaves out (``calibration.for_training``), and without their kernel rows. Both doors, and
    `compare`'s and `sweep`'s training graphs, price them as the step does."""
    import ironlaw
    kw = dict(on="b200", phase="train", seq=2048)
    one = ironlaw.analyze("llama3-8b", batch=1, **kw).time_s
    step = ironlaw.analyze("llama3-8b", global_batch=1, **kw).time_s
    assert one == pytest.approx(step, rel=1e-3)
    swp = ironlaw.sweep("llama3-8b", batch="1", **kw).to_dict()["points"][0]["time_s"]
    cmp = ironlaw.compare("llama3-8b", what_if="recompute=full", **kw).to_dict()
    full = ironlaw.analyze("llama3-8b", global_batch=1, recompute="full", **kw).time_s
    assert swp == pytest.approx(one) and cmp["time_before_s"] == pytest.approx(one)
    assert cmp["time_after_s"] == pytest.approx(full, rel=1e-3)
