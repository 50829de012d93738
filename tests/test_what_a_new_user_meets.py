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
