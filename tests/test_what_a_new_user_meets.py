"""What a new user meets following the README: numbers two commands give for the same thing that differ without
saying why, defaults that differ between the spellings of one model, options the run would ignore. Each pinned by
the test that failed before its fix."""
import pytest

from conftest import one_line_error, run_cli  # noqa: F401


def test_serve_says_what_its_inter_token_latency_adds_up_from():
    """`analyze llama3-8b --phase decode --seq 1024 --on h100` said 7.14 ms and `serve llama3-8b --on h100` an
    inter-token 5.92 ms for one sequence, neither saying why: the inter-token latency is the decode step plus the
    new prompt's prefill spread over the output, its step one replayed CUDA graph (no per-kernel launch latency) at
    the mean context; the output says so, in text and JSON."""
    import ironlaw
    from ironlaw.core import schemas
    d = ironlaw.serve("llama3-8b", on="h100", concurrency=1).to_dict()
    assert d["itl_s"] == pytest.approx(d["decode_step_s"] + d["prefill_s"] / d["output_tokens"])
    assert d["itl_why"].startswith("inter-token 5.92 ms = decode step 5.77 ms + a new prompt's prefill (38.7 ms) "
                                   "over the 256 output tokens; the step: 1 sequence at the mean context 1,152 "
                                   "(prompt + output/2) in one replayed CUDA graph, no per-kernel launch latency"), \
        d["itl_why"]
    schemas.validate(d)
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--concurrency", "1")
    assert r.rc == 0 and "inter-token 5.92 ms = decode step 5.77 ms" in " ".join(r.out.split()), r.out


def test_a_chunked_serve_names_its_mixed_steps():
    import ironlaw
    d = ironlaw.serve("llama3-8b", on="h100", concurrency=5, chunk=512).to_dict()
    n_mixed = 10                                                       # ⌈5 · 1024 / 512⌉
    assert d["itl_s"] == pytest.approx((n_mixed * d["mixed_step_s"] + (256 - n_mixed) * d["decode_step_s"]) / 256)
    assert "= 10 mixed steps of 42.2 ms (the decode batch and 512 prompt tokens) and 246 decode steps of 6.16 ms, " \
           "over 256 steps; the step: 5 sequences at the mean context 1,152 (prompt + output/2) in one replayed CUDA " \
           "graph padded to 8," in d["itl_why"], d["itl_why"]


@pytest.fixture(scope="module")
def bf16_without_a_fast_path(tmp_path_factory):
    """A probed CPU profile (``test_probe.fake_probe``, its rows' own fit left out) whose bf16 GEMMs ran at fp16's
    crawl: no fast path."""
    from test_probe import PEAKS, fake_probe
    from ironlaw.machine import profile
    from ironlaw.measure.calibrate import build
    rows = fake_probe()
    rows["capacity"]["dram"] = 128 * 2**30                   # DLRM-DCNv2's 97 GiB of tables fit
    scale = PEAKS["fp16"] / PEAKS["bf16"]
    for r in rows["gemm"]:
        if r["dtype"] == "bf16":
            r["time_s"], r["flops_per_s"] = r["time_s"] / scale, r["flops_per_s"] * scale
    return str(profile.save(build.profile(rows, calibrate_fit=False),
                            tmp_path_factory.mktemp("probe") / "slowbf16.toml"))


@pytest.mark.parametrize("fmt", ["text", "md"])
def test_contract_on_a_cpu_without_bf16_names_the_fast_dtype(bf16_without_a_fast_path, fmt):
    """`contract --on local` on a CPU whose probe found no bf16 fast path ran the three workloads in their own bf16
    and said neither the dtype nor that fp32 runs them fast, where `analyze` says "slow dtype: … --dtype fp32"."""
    path = bf16_without_a_fast_path
    r = run_cli("contract", "--on", path, "--format", fmt)
    assert r.rc == 0, r.err
    out = " ".join(r.out.split())
    assert "in bf16 (their own)" in out and "slow dtype: bf16 has no fast path on" in out, r.out
    assert out.count("slow dtype:") == 1 and out.rstrip().endswith("--dtype fp32"), r.out
    fast = " ".join(run_cli("contract", "--on", path, "--dtype", "fp32", "--format", fmt).out.split())
    assert "slow dtype" not in fast and ", in fp32" in fast


@pytest.mark.parametrize("fmt", ["text", "md"])
def test_a_captured_module_says_the_dtype_it_ran_in(fmt):
    """`analyze py:examples/resnet.py:resnet50 --on h100` ran in fp32 (its parameters') where `analyze resnet50` runs
    bf16, saying only "fp32" in the headline; and the capture's notes ("captured with cpu kernels: …"), in its
    JSON, were never printed. Both are said, as notes."""
    pytest.importorskip("torch")
    import ironlaw
    own = "captured in fp32, its parameters' dtype (the built-in workloads run bf16: --dtype bf16 to compare)"
    assert own in ironlaw.analyze("py:examples/mlp.py:mlp", on="h100").graph.meta["notes"]
    assert not any(n.startswith("captured in") for n in
                   ironlaw.analyze("py:examples/mlp.py:mlp", on="h100", dtype="bf16").graph.meta.get("notes", []))
    r = run_cli("analyze", "py:examples/mlp.py:mlp", "--on", "h100", "--format", fmt)
    assert r.rc == 0 and f"note: {own}" in " ".join(r.out.split()), r.out


def test_validate_names_the_dtype_it_ran():
    """`validate py:examples/resnet.py:resnet18 --batch 8` said "… · infer · batch 8 on local" where analyze says
    "… · infer · fp32 · batch 8": validate runs the model in fp32, and says so."""
    from ironlaw.cli.validate import header
    doc = {"workload": {"name": "py:examples/resnet.py:resnet18", "phase": "infer", "dtype": "fp32", "batch": 8},
           "hardware": {"name": "local"}}
    assert header(doc) == "py:examples/resnet.py:resnet18 · infer · fp32 · batch 8 on local"


def test_a_message_size_out_of_range_names_the_bound_in_bytes():
    """`analyze allreduce:-1MB --gpus 8` said "… and below 1.1259e+15, got -1MB": a number the user never wrote,
    in no unit. The bound is 1 PiB."""
    line = one_line_error(run_cli("analyze", "allreduce:-1MB", "--on", "h100", "--gpus", "8"))
    assert line.endswith("allreduce message size must be a positive finite number and below 1 PiB, got -1MB"), line


def test_the_smallest_footprint_names_every_degree_it_spreads_over():
    """`search llama3-70b --on h100 --gpus 2 --global-batch 2` said "the smallest footprint (tp 1, pp 1, dp 1, …)
    needs 529 GiB" on 2 GPUs: the layout was cp 2, left unsaid. The degrees named multiply to the GPUs."""
    from types import SimpleNamespace
    import numpy as np
    from ironlaw.machine import hardware
    from ironlaw.models.search import space, train
    row = {"tp": 1, "pp": 1, "cp": 2, "dp": 1, "ep": 1, "micro_batch": 1, "interleave": 1, "recompute": 2,
           "zero": 3, "sequence_parallel": 0}
    c = {k: np.array([row[k]]) for k in space.COLUMNS}
    ctx = SimpleNamespace(spec="llama3-70b", gpus=2, hw=hardware.get("h100"))
    line = str(train.nothing_fits(ctx, c, {"memory_per_gpu_bytes": np.array([529.0 * 2**30])}))
    assert "the smallest footprint (tp 1, pp 1, cp 2, dp 1, micro-batch 1, recompute full, ZeRO 3) needs 529 GiB" \
        in line, line


def test_validate_without_torch_says_to_install_it(monkeypatch):
    """`validate resnet18` in an install without PyTorch said "internal error: ModuleNotFoundError: No module named
    'torch'" (exit 1), where probe and a py: spec name the wheel to install."""
    import sys
    monkeypatch.setitem(sys.modules, "torch", None)                    # `import torch` raises ImportError
    line = one_line_error(run_cli("validate", "resnet18"))
    assert line.endswith("ironlaw validate runs the model in PyTorch; install it with `pip install torch==2.13.0`")


@pytest.mark.parametrize("fn,kw,says", [
    ("analyze", {"top": 3}, "(--top is the command line's: the rows its text prints; the result holds every op, an "
                            "estimate's .top_ops(N) the N slowest)"),
    ("analyze", {"overlap": False}, "(--overlap is the command line's default, --serial its other choice: "
                                    "serial=True composes the terms serially)"),
    ("sweep", {"overlap": True}, "serial=True composes the terms serially)"),
])
def test_a_command_line_option_given_to_the_library_names_the_keyword(fn, kw, says):
    """`ironlaw.analyze("llama3-8b", on="h100", top=3)` said "(did you mean: tp, dtype?)" and `overlap=False`
    "(did you mean: overlap_p2p, tp_comm_overlap, moe_a2a_overlap?)": options of the command line with no keyword
    (--top prints rows; --overlap/--serial is serial=) are named as --format is."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError) as e:
        getattr(ironlaw, fn)("llama3-8b", on="h100", **kw)
    assert str(e.value).endswith(says), str(e.value)


def test_a_hint_for_an_option_the_command_lacks_is_not_given():
    import ironlaw
    from ironlaw.core.errors import IronlawError
    for fn, args, kw in (("serve", ("llama3-8b",), {"top": 3}), ("contract", (), {"overlap": True})):
        with pytest.raises(IronlawError) as e:
            getattr(ironlaw, fn)(*args, on="h100", **kw)
        assert "command line's" not in str(e.value), str(e.value)


def test_validate_names_the_workload_first_and_lists_every_one_it_runs():
    """`validate nope` said "unknown workload to run (validate runs models that have a torch equivalent; …) 'nope';
    known: bert-base, … llama3.1-70b, …": the name after a parenthesis, and the list cut before the ResNets its
    help names first. The name comes first; every workload it runs is listed."""
    line = one_line_error(run_cli("validate", "nope"))
    assert line.startswith("ironlaw: error: unknown workload to run 'nope'; known: "), line
    assert "resnet18" in line and "mlp" in line and "…" not in line, line
