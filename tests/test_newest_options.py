"""What a new user meets in the newest options: a file written without a word, stacked what-ifs of which only the
last counted, ``--cuda-graph none`` (the default, as its help names it) refused, the notes of a training step
missing from its Markdown. Each pinned by the test that failed before its fix."""
import json
import os

import pytest

from conftest import one_line_error, run_cli

TRAIN = ("analyze", "llama3-8b", "--phase", "train", "--on", "h100", "--gpus", "8", "--tp", "2", "--global-batch", "16")


@pytest.fixture
def quick_writers(monkeypatch):
    """The page and plot writers replaced by one that writes a few bytes to the path: what is tested is the line
    that names the file, not the page (test_report_pages, test_plot draw those)."""
    from pathlib import Path
    from ironlaw.report import frontier, pages, plot, sweep

    def write(path, *_a, **_k):
        Path(path).write_text("<svg/>")
    for name in ("estimate", "train_step", "serve_online", "serve_offline", "search"):
        monkeypatch.setattr(pages, name, write)
    for mod in (plot, sweep, frontier):
        monkeypatch.setattr(mod, "save", lambda res, path: write(path))


@pytest.mark.parametrize("args", [
    ("analyze", "gemm:64,64,64", "--on", "h100", "--html", "{d}/a.html"),
    TRAIN + ("--html", "{d}/t.html"),
    ("serve", "llama3-8b", "--on", "h100", "--html", "{d}/s.html", "--format", "md"),
    ("search", "llama3-8b", "--phase", "serve", "--on", "h100", "--gpus", "1", "--html", "{d}/q.html"),
], ids=["analyze", "analyze-train", "serve-md", "search"])
def test_html_says_what_it_wrote(args, tmp_path, quick_writers):
    """`analyze/serve/search --html F` wrote F in silence, where report and calibrate print "wrote …": the same
    line now ends the output, with the file's size and the option that wrote it."""
    r = run_cli(*(a.format(d=tmp_path) for a in args))
    path = args[args.index("--html") + 1].format(d=tmp_path)
    assert r.rc == 0 and os.path.exists(path), r.err
    assert r.out.rstrip().splitlines()[-1].startswith(f"wrote {path} ("), r.out[-300:]
    assert r.out.rstrip().endswith(", --html)")


def test_plot_says_what_it_wrote_and_json_and_csv_stay_documents(tmp_path, quick_writers):
    """`--plot F` on analyze, sweep and serve: "wrote F (…, --plot)"; with --format json or csv the line goes to
    stderr, so that stdout stays one document."""
    pytest.importorskip("matplotlib")                 # --plot checks for it before any work
    a = run_cli("analyze", "gemm:64,64,64", "--on", "h100", "--plot", str(tmp_path / "a.svg"))
    assert a.rc == 0 and f"wrote {tmp_path / 'a.svg'} (" in a.out, a.out[-300:]
    s = run_cli("sweep", "llama3-8b", "--phase", "decode", "--on", "h100", "--batch", "1,2", "--plot",
                str(tmp_path / "s.svg"), "--format", "csv")
    assert s.rc == 0 and "wrote" not in s.out and f"wrote {tmp_path / 's.svg'} (" in s.err, (s.out, s.err)
    v = run_cli("serve", "llama3-8b", "--on", "h100", "--sweep-concurrency", "--plot", str(tmp_path / "v.svg"),
                "--format", "json")
    assert v.rc == 0 and json.loads(v.out)["schema"] == "ironlaw.serve-frontier/1"
    assert f"wrote {tmp_path / 'v.svg'} (" in v.err, v.err


@pytest.mark.parametrize("what_if, named", [
    (("quant=int8;quant=fp8",), "'quant=int8' and 'quant=fp8' both set the weights dtype (quant)"),
    (("quant=int8", "quant=fp8"), "'quant=int8' and 'quant=fp8' both set the weights dtype (quant)"),
    (("quant=int8,target=all;quant=fp8,target=kv",), "both set the kv dtype (quant)"),
    (("flash-attention;eager-attention",), "both set the attention's form"),
    (("fusion=elementwise;fusion=elementwise",), "both set fusion"),
])
def test_stacked_what_ifs_that_replace_each_other_are_refused(what_if, named):
    """`--what-if "quant=int8;quant=fp8"` ran, and equalled quant=fp8 alone: now one line naming both steps and
    what they both set, and which transforms do compose; the same over two --what-if options."""
    args = [a for w in what_if for a in ("--what-if", w)]
    line = one_line_error(run_cli("compare", "llama3-8b", "--phase", "decode", "--on", "h100", *args))
    assert named in line and "quant composes over disjoint targets" in line, line
    line = one_line_error(run_cli("sweep", "llama3-8b", "--phase", "decode", "--on", "h100", "--batch", "1,2",
                                  *args))
    assert named in line, line


def test_what_ifs_that_compose_still_run():
    """Different transforms, and quant over disjoint targets, compose: each step counts."""
    import ironlaw
    both = ironlaw.compare("llama3-8b", on="h100", phase="decode", what_if="quant=fp8,target=weights;quant=fp8,target=kv")
    one = ironlaw.compare("llama3-8b", on="h100", phase="decode", what_if="quant=fp8,target=weights")
    kv = ironlaw.compare("llama3-8b", on="h100", phase="decode", what_if="quant=fp8,target=kv")
    assert both.after.time_s not in (pytest.approx(one.after.time_s), pytest.approx(kv.after.time_s))
    assert ironlaw.compare("llama3-8b", on="h100", phase="decode", what_if="quant=int8;fusion=elementwise").after


def test_cuda_graph_none_is_the_default_its_help_names():
    """`--cuda-graph none`: the help says "default none: eager", and 'none' was refused; now it is the default
    step, and 'none' with a part, or a part named twice, is one line."""
    import ironlaw
    kw = dict(on="h100", phase="train", gpus=8, tp=2, global_batch=16)
    none = ironlaw.analyze("llama3-8b", cuda_graph="none", **kw).to_dict()
    assert list(none["plan"]["cuda_graph"]) == [] and none["time_s"] == ironlaw.analyze("llama3-8b", **kw).to_dict()["time_s"]
    line = one_line_error(run_cli(*TRAIN, "--cuda-graph", "none,full"))
    assert "--cuda-graph none captures nothing" in line, line
    line = one_line_error(run_cli(*TRAIN, "--cuda-graph", "full,full"))
    assert "--cuda-graph names 'full' twice" in line, line
    with pytest.raises(ironlaw.IronlawError, match="--cuda-graph takes part names.*got 5"):   # was a TypeError
        ironlaw.analyze("llama3-8b", cuda_graph=5, **kw)


def test_a_training_steps_markdown_keeps_its_notes():
    """`analyze --phase train --fp8-attention --format md` dropped the notes the text prints (the FP8 attention's
    speedup, the host's launches): the Markdown keeps them."""
    text = run_cli(*TRAIN, "--fp8-attention")
    md = run_cli(*TRAIN, "--fp8-attention", "--format", "md")
    assert text.rc == md.rc == 0, md.err
    assert "note: attention in FP8 (--fp8-attention" in md.out, md.out[-500:]
    assert md.out.count("note: ") == " ".join(text.out.split()).count("note: ")


@pytest.mark.parametrize("args, where", [
    (("search", "llama3-8b", "--phase", "serve", "--on", "h100", "--gpus", "8", "--kv-fraction", "0.5"),
     "--memory-fraction"),
    (("compare", "llama3-8b", "--what-if", "fusion=elementwise", "--fp8-attention"),
     "ironlaw analyze SPEC --phase train --on HW --gpus N … --fp8-attention … --format json"),
    (("analyze", "llama3-8b", "--memory-fraction", "0.5"), "ironlaw serve SPEC --on HW --memory-fraction F"),
    (("sweep", "llama3-8b", "--memory-fraction", "0.5"), "--memory-fraction F --sweep-concurrency"),
    (("serve", "llama3-8b", "--fp8-attention"), "--kv-dtype"),
])
def test_a_newest_option_on_a_verb_without_it_says_why_and_where(args, where):
    """A newest option on a verb without it (search --kv-fraction; compare --fp8-attention;
    analyze and sweep --memory-fraction; serve --fp8-attention) said only "No such option": now why the verb has
    none (what it assumes instead) and the command that takes it."""
    line = one_line_error(run_cli(*args))
    assert line.startswith(f"ironlaw: error: {args[0]} takes no {args[-1] if args[-1].startswith('--') else args[-2]}: "), line
    assert where in line, line


def test_fp8_attention_says_what_it_saves_and_costs_per_micro_batch():
    """`--fp8-attention` on llama3-8b at seq 1024 (H100, tp 2) made the step slower while its note said only
    "at 1.14× the bf16 attention's rate": the note now says what the faster products save and the quantizes take
    per micro-batch, and the step's change is their difference."""
    import re
    import ironlaw
    from ironlaw.core.units import fmt_time
    kw = dict(on="h100", phase="train", gpus=8, tp=2, global_batch=16)
    bf16, fp8 = ironlaw.analyze("llama3-8b", **kw), ironlaw.analyze("llama3-8b", fp8_attention=True, **kw)
    note = next(n for n in fp8.notes if n.startswith("attention in FP8"))
    m = re.search(r"per micro-batch the faster products save (.+) and the quantizes take (.+): the step loses (.+) "
                  r"per micro-batch \(at this sequence the quantizes outweigh the faster products\)$", note)
    assert m, note
    per_mb = (fp8.breakdown.step_s - bf16.breakdown.step_s) / fp8.breakdown.microbatches
    assert per_mb > 0 and m.group(3) == fmt_time(per_mb), (m.group(3), per_mb)


def test_a_training_steps_plan_line_names_fp8_attention_and_cuda_graphs():
    """The plan line (text and Markdown) named tp, pp, dp, recompute and ZeRO but neither --fp8-attention nor
    --cuda-graph, which the JSON plan holds: it names both now."""
    for fmt in ("text", "md"):
        r = run_cli(*TRAIN, "--fp8-attention", "--cuda-graph", "attn,full", "--format", fmt)
        plan = next(line for line in r.out.split("\n\n" if fmt == "md" else "\nstep:") if "plan: tp 2" in line)
        assert "; FP8 attention; CUDA graphs: attn, full" in " ".join(plan.split()), plan


def test_cuda_graph_on_a_device_without_a_host_says_it_changes_nothing():
    """`--cuda-graph full` on mi325x (no [host]: launches untimed) gave the eager step's time in silence: the note
    now says the option changes nothing there, and why."""
    import ironlaw
    kw = dict(on="mi325x", phase="train", gpus=8, global_batch=16)
    eager, graphed = ironlaw.analyze("llama3-8b", **kw), ironlaw.analyze("llama3-8b", cuda_graph="full", **kw)
    assert graphed.time_s == eager.time_s
    assert any("so --cuda-graph full changes nothing here" in n for n in graphed.notes), graphed.notes
    assert not any("--cuda-graph" in n for n in eager.notes)


def test_serve_says_what_a_given_memory_fraction_reserved():
    """`serve --memory-fraction 0.5` on the default engine (TensorRT-LLM) printed "reserve 32.8 GiB" and nowhere the
    0.5 given (its JSON's capacity.reserve_source says it): the text now says what the reserve holds."""
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--memory-fraction", "0.5")
    text = " ".join(r.out.split())
    assert r.rc == 0 and "reserve: TensorRT-LLM: the activation workspace of one max_num_tokens step (2,048 tokens) " \
        "and 0.50 of the memory left after it (kv_cache_free_gpu_mem_fraction 0.5, given)" in text, text
    assert "reserve: " not in " ".join(run_cli("serve", "llama3-8b", "--on", "h100").out.split())


def test_a_concurrency_frontier_says_where_it_ends():
    """`serve --memory-fraction 0.5 --sweep-concurrency` stopped at concurrency 206 (392 without it) and said
    nothing of why: the last line says it is the most sequences the KV cache and scheduler hold."""
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--memory-fraction", "0.5", "--sweep-concurrency")
    assert r.rc == 0 and "the frontier ends at concurrency 205: the most sequences in flight the KV cache and the " \
        "scheduler hold" in " ".join(r.out.split()), r.out[-400:]


@pytest.mark.parametrize("args, said", [
    (("--max-throughput", "--memory-fraction", "0.5", "--kv-fraction", "0.95"),
     "--memory-fraction 0.5 and --kv-fraction 0.95 both set TensorRT-LLM's free_gpu_memory_fraction: give one"),
    (("--max-throughput", "--engine", "vllm", "--kv-fraction", "0.95"), "--kv-fraction is TensorRT-LLM's"),
    (("--kv-fraction", "0.95"), "--kv-fraction belongs to the offline scenario"),
])
def test_a_kv_fraction_given_at_its_default_value_is_still_given(args, said):
    """`--kv-fraction 0.95` (its default's value) beside `--memory-fraction 0.5` ran at 0.5 in silence, and online
    or on vLLM it was ignored: a given --kv-fraction is now told from an absent one, and refused where it would be
    ignored or overridden."""
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "h100", *args))
    assert said in line, line
    import ironlaw
    with pytest.raises(ironlaw.IronlawError, match="both set TensorRT-LLM's free_gpu_memory_fraction"):
        ironlaw.serve("llama3-8b", on="h100", max_throughput=True, memory_fraction=0.5, kv_fraction=0.95)
