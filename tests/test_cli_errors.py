"""Bad input through the real CLI: one clear line on stderr, exit 2, no traceback, nothing written.

Each case: (argv, keyword expected in the message). Files the cases need are made in tmp_path and
referred to as {tmp}.
"""
import re
import json
import os

import pytest

from conftest import run_cli, run_process

GOOD_TOML = (__import__("pathlib").Path(__import__("ironlaw.machine.hardware", fromlist=["x"]).CATALOG_DIR) / "h100.toml").read_text()

CASES = [
    # names
    (["analyze", "gemm:64,64,64", "--on", "h10"], "did you mean: h100"),
    (["analyze", "gemm:64,64,64", "--on", "tpu-v9"], "unknown hardware"),
    (["analyze", "resnet5O", "--on", "h100"], "unknown workload"),
    (["analyze", "gem:64,64,64", "--on", "h100"], "unknown workload prefix"),
    (["analyze", "", "--on", "h100"], "empty"),
    (["analyze", "gemm:64,64,64", "--on", ""], "empty"),
    (["hardware", "show", "a1000"], "unknown hardware"),
    # sizes
    (["analyze", "gemm:64,64", "--on", "h100"], "M,N,K"),
    (["analyze", "gemm:64,x,64", "--on", "h100"], "whole numbers"),
    (["analyze", "gemm:0,64,64", "--on", "h100"], "positive"),
    (["analyze", "gemm:-5,64,64", "--on", "h100"], "'-5,64,64': M must be a positive whole number, got -5"),
    (["analyze", "gemv:64,0", "--on", "h100"], "'64,0': K must be a positive whole number, got 0"),
    (["analyze", "gemm:99999999999,64,64", "--on", "h100"], "out of range (1 … "),
    (["analyze", "gemv:64", "--on", "h100"], "M,K"),
    (["analyze", "allreduce:-64MB", "--on", "a100", "--gpus", "8"], "got -64MB"),
    (["analyze", "allreduce:0", "--on", "a100", "--gpus", "8"], "got 0"),
    (["analyze", "gemm:64,64,64", "--batch", "0"], "batch"),
    (["analyze", "gemm:64,64,64", "--batch", "-3"], "batch"),
    (["analyze", "gemm:64,64,64", "--batch", "1000000000000"], "out of range (1 … "),
    (["analyze", "gemm:64,64,64", "--batch", "nan"], "batch"),
    (["analyze", "gemm:64,64,64", "--batch", "two"], "batch"),
    (["analyze", "gemm:64,64,64", "--seq", "0"], "seq"),
    # dtypes and phases
    (["analyze", "gemm:64,64,64", "--dtype", "fp9"], "unknown dtype"),
    (["serve", "llama3-8b", "--on", "h100", "--dtype", "fp7"], "unknown dtype 'fp7'"),
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/nofp8.toml", "--dtype", "fp8"], "no fp8"),
    (["analyze", "gemm:64,64,64", "--phase", "decoding"], "unknown phase"),
    (["analyze", "gemm:64,64,64", "--phase", "train"], "no phase"),
    # options
    (["analyze", "gemm:64,64,64", "--format", "yaml"], "--format"),
    (["analyze", "gemm:64,64,64", "--frobnicate"], "no such option"),
    (["analyze", "gemm:64,64,64", "--top", "-1"], "--top must be a positive whole number, got -1"),
    (["compare", "llama3-8b", "--what-if", "fusion=elementwise", "--top", "0"], "--top must be a positive"),
    (["hardware", "list", "--format", "html"], "--format"),
    # hardware files
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/missing.toml"], "no such"),
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/dir.toml"], "directory"),
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/garbage.toml"], "TOML"),
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/truncated.toml"], "TOML"),
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/unknown_field.toml"], "unknown field"),
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/negative.toml"], "positive"),
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/nan.toml"], "finite"),
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/nosource.toml"], "source"),
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/badunit.toml"], "unit"),
    (["analyze", "gemm:64,64,64", "--on", "{tmp}/inverted.toml"], "larger"),
    (["hardware", "show", "{tmp}/garbage.toml"], "TOML"),
    # workloads that cannot be built as asked
    (["analyze", "bert-base", "--phase", "decode"], "no phase"),
    (["analyze", "gpt2", "--seq", "4096"], "position"),
    (["analyze", "resnet50", "--seq", "128"], "seq"),
    (["serve", "resnet50", "--on", "h100"], "serve: resnet50 is no decoder LLM (its phases: infer, train)"),
    (["analyze", "hf:{tmp}/missing.json"], "no such"),
    (["analyze", "hf:{tmp}/bad.json"], "json"),
    (["analyze", "hf:{tmp}/noheads.json"], "num_attention_heads"),
    (["analyze", "llama3-70b", "--on", "rtx-4090", "--phase", "decode", "--batch", "200000", "--seq", "8000"],
     "does not fit"),
    (["analyze", "resnet50", "--opt", "imag=3"], "did you mean: image"),
    (["analyze", "resnet50", "--opt", "image"], "KEY=VALUE"),
    # parallel plans and serving limits
    (["analyze", "llama3-8b", "--phase", "train", "--on", "a100", "--gpus", "8", "--tp", "3"], "divide"),
    (["analyze", "llama3-8b", "--on", "h100", "--tp", "0"], "--tp must be a positive whole number, got 0"),
    (["analyze", "llama3-8b", "--on", "h100", "--pp", "0"], "--pp must be a positive whole number, got 0"),
    (["analyze", "llama3-8b", "--on", "h100", "--gpus", "0"], "--gpus must be a positive whole number, got 0"),
    (["analyze", "llama3-8b", "--on", "h100", "--nodes", "0"], "--nodes must be a positive whole number, got 0"),
    (["search", "llama3-70b", "--on", "h100", "--gpus", "64", "--global-batch", "64", "--tp", "0"],
     "--tp must be a positive whole number, got 0"),
    (["search", "llama3-70b", "--on", "h100", "--gpus", "64", "--global-batch", "64", "--pp", "0"],
     "--pp must be a positive whole number, got 0"),
    (["search", "llama3-70b", "--on", "h100", "--gpus", "64", "--global-batch", "64", "--micro-batch", "-1"],
     "--micro-batch must be a positive whole number, got -1"),
    (["search", "llama3-70b", "--phase", "serve", "--on", "h100", "--gpus", "8", "--ep", "0"],
     "--ep must be a positive whole number, got 0"),
    (["serve", "llama3-8b", "--on", "h100", "--prompt", "4096", "--output", "1024", "--concurrency", "100000"],
     "concurrency"),
    # what-if and sweep
    (["compare", "llama3-8b", "--what-if", "sparsity=1.5"], "density"),
    (["compare", "llama3-8b", "--what-if", "quantise=int8"], "unknown"),
    (["compare", "gemm:64,64,64", "--on", "t4", "--dtype", "fp16", "--what-if", "sparsity=2:4"], "2:4"),
    (["sweep", "llama3-8b", "--batch", "1,2,x"], "batch"),
    # outputs
    (["analyze", "gemm:64,64,64", "--plot", "{tmp}/plots.svg"], "directory"),
    (["analyze", "gemm:64,64,64", "--plot", "{tmp}/afile/p.svg"], "is not a directory"),
    (["report", "gemm:64,64,64", "--html", "{tmp}/dir.toml"], "directory"),
    # an output file whose name says another format than the option writes
    (["analyze", "gemm:64,64,64", "--html", "{tmp}/x.svg"], "x.svg: the file name must end in .html or .htm"),
    (["report", "gemm:64,64,64", "--html", "{tmp}/x.svg"], "must end in .html or .htm"),
    (["serve", "llama3-8b", "--on", "h100", "--html", "{tmp}/x.png"], "must end in .html or .htm"),
    (["search", "llama3-8b", "--on", "h100", "--html", "{tmp}/x.json"], "must end in .html or .htm"),
    (["analyze", "gemm:64,64,64", "--plot", "{tmp}/x.html"], "must end in"),
    (["serve", "llama3-8b", "--on", "h100", "--sweep-concurrency", "--plot", "{tmp}/x.pdf"], "must end in"),
    (["sweep", "llama3-8b", "--plot", "{tmp}/x.html"], "must end in"),
    (["probe", "--quick", "--out", "{tmp}/p.json"], "p.json: a profile file name must end in .toml"),
]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "dir.toml").mkdir()
    (tmp_path / "plots.svg").mkdir()
    (tmp_path / "afile").write_text("x")
    (tmp_path / "bad.json").write_text('{"model_type": "llama", "hidden_size": 64,')
    (tmp_path / "noheads.json").write_text('{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, '
                                           '"num_hidden_layers": 2, "vocab_size": 100}')
    (tmp_path / "garbage.toml").write_bytes(os.urandom(64) + b"\x00[[[")
    (tmp_path / "truncated.toml").write_text(GOOD_TOML[: len(GOOD_TOML) // 3] + '\n[compute.bf16\n')
    (tmp_path / "unknown_field.toml").write_text(GOOD_TOML.replace('kind = "gpu"', 'kind = "gpu"\ncolour = "green"'))
    (tmp_path / "negative.toml").write_text(GOOD_TOML.replace('bw_Bps = "3.35 TB/s"', 'bw_Bps = -3.35e12'))
    (tmp_path / "nan.toml").write_text(GOOD_TOML.replace('bw_Bps = "3.35 TB/s"', 'bw_Bps = nan'))
    (tmp_path / "badunit.toml").write_text(GOOD_TOML.replace('bw_Bps = "3.35 TB/s"', 'bw_Bps = "3.35 TB"'))
    (tmp_path / "inverted.toml").write_text(GOOD_TOML.replace('capacity_bytes = "3.84 TB"', 'capacity_bytes = "3.84 GB"'))
    lines = GOOD_TOML.split("\n")
    i = lines.index("[compute.fp8]")
    (tmp_path / "nofp8.toml").write_text("\n".join(lines[:i] + lines[i + 3:]))
    (tmp_path / "nosource.toml").write_text(re.sub(r'source = "measured and datasheet: NVIDIA H100[^\n]*', "",
                                                   GOOD_TOML, count=1))
    return tmp_path


@pytest.mark.parametrize("argv,keyword", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_input_one_line_exit_2(files, argv, keyword):
    refused_alone(run_cli, files, argv, keyword)


# a name, a usage error (click's), a hardware file and an option's value, each in a process of its own
FRESH = [c for c in CASES if c[0] in (["analyze", "gemm:64,64,64", "--on", "h10"], ["analyze", "gemm:64,64,64",
                                      "--frobnicate"], ["analyze", "gemm:64,64,64", "--on", "{tmp}/garbage.toml"],
                                      ["compare", "llama3-8b", "--what-if", "fusion=elementwise", "--top", "0"])]


@pytest.mark.parametrize("argv,keyword", FRESH, ids=[" ".join(c[0])[:60] for c in FRESH])
def test_bad_input_one_line_exit_2_from_its_own_process(files, argv, keyword):
    """`python -m ironlaw` itself (the entry point, the interpreter's exit): the same refusal as in-process."""
    refused_alone(run_process, files, argv, keyword)


def refused_alone(run, files, argv, keyword):
    """``argv`` run by ``run`` in ``files``: exit 2, one line on stderr naming ``keyword``, no traceback, nothing
    written."""
    argv = [a.replace("{tmp}", str(files)) for a in argv]
    before = sorted(os.listdir(files))
    r = run(*argv, cwd=str(files))
    assert r.rc == 2, (r.rc, r.out, r.err)
    lines = [l for l in r.err.splitlines() if l.strip()]
    assert len(lines) == 1, r.err
    assert "Traceback" not in r.err + r.out
    assert keyword.lower() in lines[0].lower(), lines[0]
    assert sorted(os.listdir(files)) == before          # nothing written


@pytest.mark.parametrize("argv", [["analyze", "gemm:64,64,64", "--on", "h10", "--format", "json"],
                                  ["analyze", "gemm:0,1,1", "--format=json"],
                                  ["hardware", "show", "nope", "--format", "json"]])
def test_json_errors_are_json_on_stdout(argv):
    r = run_cli(*argv)
    assert r.rc == 2
    doc = json.loads(r.out)
    assert doc["exit_code"] == 2 and doc["error"]


def test_json_output_is_valid_json_alone_on_stdout():
    r = run_cli("analyze", "gemm:1024,1024,1024", "--on", "h100", "--format", "json")
    assert r.rc == 0
    doc = r.json()
    assert doc["schema"] == "ironlaw.estimate/1"
    # an outside check: 2·M·N·K FLOPs for a GEMM
    assert doc["totals"]["flops"] == 2 * 1024**3


def test_serve_tp_that_does_not_divide_the_heads_names_the_model(cli):
    """The message names the model the user gave, not the serving step's internal graph."""
    for extra in ((), ("--max-throughput",)):
        r = cli("serve", "llama3-8b", "--on", "h100", "--tp", "3", *extra)
        assert r.rc == 2 and r.err.strip() == ("ironlaw: error: --tp 3 does not divide the 32 attention heads of "
                                               "llama3-8b; use 1, 2, 4, 8, 16 or 32"), r.err


@pytest.mark.parametrize("args", [["analyze", "llama3-8b"], ["analyze", "llama3-8b", "--format", "json"],
                                  ["hardware", "list"]])
def test_a_reader_gone_is_a_quiet_exit(args):
    """`ironlaw … | head -1`: stdout's reader closed before ironlaw writes; ironlaw exits as a Unix tool killed by
    SIGPIPE does (128 + 13) and prints nothing on stderr, no BrokenPipeError at the interpreter's exit."""
    import subprocess
    import sys
    r, w = os.pipe()
    os.close(r)                                   # the reader is gone before the first write: EPIPE every time
    env = dict(os.environ, HF_HUB_OFFLINE="1", COLUMNS="200", NO_COLOR="1")
    try:
        proc = subprocess.run([sys.executable, "-m", "ironlaw", *args], stdout=w, stderr=subprocess.PIPE, env=env,
                              text=True, timeout=120)
    finally:
        os.close(w)
    assert proc.returncode == 141 and proc.stderr == "", proc.stderr
