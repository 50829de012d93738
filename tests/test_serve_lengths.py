"""`serve --max-throughput --lengths FILE`: per-request (prompt, output) lengths from a CSV or JSON Lines file
(``ironlaw.models.serving.lengths``, the drain of a mix: ``serving.drain``)."""
import json

import pytest

from conftest import one_line_error, run_cli

SPEC, ON = "llama3.1-8b", "h100"


def _csv(path, pairs, header="prompt,output"):
    path.write_text(header + "\n" + "".join(f"{p},{o}\n" for p, o in pairs))
    return str(path)


def _serve(**kw):
    import ironlaw
    return ironlaw.serve(SPEC, ON, dtype="fp8", max_throughput=True, **kw)


def _same(a, b):
    assert a.time_s == pytest.approx(b.time_s, rel=1e-12)
    assert a.output_tokens_per_s == pytest.approx(b.output_tokens_per_s, rel=1e-12)
    assert a.batch == b.batch and a.memory["kv_bytes_per_sequence"] == pytest.approx(b.memory["kv_bytes_per_sequence"])


@pytest.mark.parametrize("n", [4, 2000])          # one wave (the ramp, then decode), waves of the steady state
def test_a_file_of_identical_requests_prices_as_prompt_and_output(tmp_path, n):
    one = _serve(prompt=1024, output=256, requests=n)
    _same(_serve(lengths=_csv(tmp_path / "same.csv", [(1024, 256)] * n)), one)
    jsonl = tmp_path / "same.jsonl"
    jsonl.write_text("".join(json.dumps({"prompt": 1024, "output": 256}) + "\n" for _ in range(n)))
    _same(_serve(lengths=str(jsonl)), one)


def test_requests_cycle_the_file(tmp_path):
    _same(_serve(lengths=_csv(tmp_path / "one.csv", [(1024, 256)]), requests=2000),
          _serve(prompt=1024, output=256, requests=2000))


def test_fewer_requests_than_the_file_take_its_whole_mix(tmp_path):
    """A file stored in blocks (a dataset's sub-sets one after another: 500 short requests, then 500 long ones):
    ``--requests 100`` draws them evenly over the file, not its first 100 (all short); whole passes stay in order."""
    from ironlaw.models.serving.lengths import read
    mix = read(_csv(tmp_path / "blocks.csv", [(100, 50)] * 500 + [(3000, 900)] * 500))
    part = mix.cycled(100)
    assert part.requests == 100 and part.prompt == mix.prompt and part.output == mix.output
    more = mix.cycled(1100)
    assert more.prompts[:1000] == mix.prompts and more.prompt == mix.prompt


@pytest.mark.parametrize("n", [4, 2000])
def test_a_longer_tail_at_the_same_mean_serves_fewer_tokens(tmp_path, n):
    """The same mean prompt and output (1024, 256): outputs of 64, 64, 64, 832 leave one request decoding alone
    once the others finish (one wave) or a drain of long requests after the queue empties, read longer contexts
    and reserve more KV per sequence in flight; 192, 320 far less so. Identical requests queued by the thousand
    run in waves (``throughput.waves``), a mix as a stream: the two compare within one wave."""
    rates = [_serve(lengths=_csv(tmp_path / f"{i}.csv", pairs * (n // 4))).output_tokens_per_s
             for i, pairs in enumerate(([(1024, 256)] * 4, [(1024, 192), (1024, 320)] * 2,
                                        [(1024, 64)] * 3 + [(1024, 832)]))]
    assert rates[1] > rates[2], rates
    if n == 4:                                     # 1024 tokens over ~832 steps, against 256 steps
        assert rates[0] > rates[1] and rates[2] < 0.4 * rates[0], rates


def test_the_mix_sets_the_context_the_prompt_pairs_and_the_kv_per_sequence(tmp_path):
    from ironlaw.models.serving.lengths import read
    mix = read(_csv(tmp_path / "m.csv", [(100, 10), (300, 30)]))
    assert (mix.prompt, mix.output, mix.requests) == (200, 20, 2)
    assert mix.decode_context == round((10 * 105 + 30 * 315) / 40)           # Σ o (p + o//2) / Σ o
    assert mix.prefill_prompt == round((100 ** 2 + 300 ** 2) / 400)          # Σ p² / Σ p
    assert mix.weighted(float, 32) == pytest.approx((10 * 128 + 30 * 352) / 40)   # whole blocks, by output


def test_the_stream_drain_conserves_the_survivors_work():
    """The stationary drain (``serving.drain.profile``): the batch starts at B and its steps sum to
    B · Σ L² / (2 Σ L) − B / 2 (whole steps), the work a request caught in flight has left."""
    from ironlaw.models.serving.drain import profile
    lives = [10, 10, 10, 90]
    b, ctx = profile([5] * 4, lives, 1, 40.0, stream=True)
    assert len(b) == 90 and b[0] == pytest.approx(40.0)
    assert b.sum() == pytest.approx(40.0 * (sum(x * x for x in lives) / (2 * sum(lives)) + 0.5) / 1.0, rel=0.02)
    assert ctx[-1] > ctx[0]                    # the last survivors are the long requests, deep in their output


def test_text_says_what_was_read(tmp_path):
    f = _csv(tmp_path / "m.csv", [(1000, 100)] * 99 + [(3000, 900)])
    r = run_cli("serve", SPEC, "--on", ON, "--dtype", "fp8", "--max-throughput", "--lengths", f)
    assert r.rc == 0, r.err
    text = " ".join(r.out.split())
    assert f"100 requests from {f}" in text
    assert "prompt mean 1,020.0 (p50 1,000, p99 1,000), output mean 108.0 (p50 100, p99 100)" in text
    assert "token-weighted" in text
    doc = json.loads(run_cli("serve", SPEC, "--on", ON, "--dtype", "fp8", "--max-throughput", "--lengths", f,
                             "--format", "json").out)
    assert doc["lengths"]["requests"] == 100 and doc["lengths"]["output"]["max"] == 900
    assert doc["output_tokens_per_s"] == pytest.approx(100 * 108.0 / doc["time_s"])


BAD = [("missing.csv", None, "no such file"),
       ("cols.csv", "prompt,tokens\n10,10\n", "no 'output' column"),
       ("frac.csv", "prompt,output\n10,10\n10,2.5\n", "line 3: output '2.5' is not a whole number"),
       ("zero.csv", "prompt,output\n0,10\n", "line 2: prompt 0 must be at least 1 token"),
       ("neg.jsonl", '{"prompt": 10, "output": -3}\n', "line 1: output -3 must be at least 1 token"),
       ("key.jsonl", '{"prompt": 10}\n', "line 1: no 'output' key"),
       ("empty.csv", "", "holds no requests"),
       ("header.csv", "# a comment\nprompt,output\n", "holds no requests"),
       ("long.csv", "prompt,output\n10,10\n130000,2000\n", "line 3: prompt 130000 + output 2000 = 132,000 tokens "
                                                         "exceed the 131,072-token context")]


@pytest.mark.parametrize("name,text,says", BAD, ids=[b[0] for b in BAD])
def test_a_bad_file_is_one_line_naming_it(tmp_path, name, text, says):
    f = tmp_path / name
    if text is not None:
        f.write_text(text)
    line = one_line_error(run_cli("serve", SPEC, "--on", ON, "--max-throughput", "--lengths", str(f)))
    assert str(f) in line and says in line, line


@pytest.mark.parametrize("extra,says", [(("--prompt", "512"), "drop --prompt"),
                                        (("--prompt", "512", "--output", "9"), "drop --prompt and --output")])
def test_lengths_beside_prompt_or_output_is_refused(tmp_path, extra, says):
    f = _csv(tmp_path / "m.csv", [(10, 10)])
    line = one_line_error(run_cli("serve", SPEC, "--max-throughput", "--lengths", f, *extra))
    assert says in line


def test_online_identical_file_prices_as_prompt_and_output_and_a_tail_costs(tmp_path):
    """The online steady state (``--concurrency``) of a file: identical requests as --prompt/--output; a long tail
    at the same mean reads longer contexts, so each step is slower."""
    import ironlaw
    one = ironlaw.serve(SPEC, ON, dtype="fp8", prompt=1024, output=256, concurrency=8)
    same = ironlaw.serve(SPEC, ON, dtype="fp8", lengths=_csv(tmp_path / "s.csv", [(1024, 256)] * 4), concurrency=8)
    tail = ironlaw.serve(SPEC, ON, dtype="fp8", concurrency=8,
                         lengths=_csv(tmp_path / "t.csv", [(1024, 64)] * 3 + [(1024, 832)]))
    a, b, c = (x.to_dict() for x in (one, same, tail))
    for k in ("ttft_s", "itl_s", "tokens_per_s"):
        assert b[k] == pytest.approx(a[k], rel=1e-12)
    assert c["tokens_per_s"] < a["tokens_per_s"] and c["itl_s"] > a["itl_s"]
    assert c["lengths"]["decode_context"] == 1368 and "token-weighted over the --lengths mix" in c["itl_why"]
    assert c["capacity"]["tokens_reserved_per_sequence"] > a["capacity"]["tokens_reserved_per_sequence"]


@pytest.mark.parametrize("extra,says", [(("--speculative", "method=ngram,tokens=3,acceptance=0.6"),
                                         "--speculative prices its own steps at one"),
                                        (("--prefix-hit", "0.5"), "--prefix-hit prices its own steps at one"),
                                        (("--on", "xeon-8480"), "serving engine's steps")])
def test_online_lengths_refuse_what_would_price_one_length(tmp_path, extra, says):
    f = _csv(tmp_path / "m.csv", [(10, 10)])
    assert says in one_line_error(run_cli("serve", SPEC, "--lengths", f, *extra))


def test_the_concurrency_sweep_prices_every_point_at_the_mix(tmp_path):
    import ironlaw
    f = _csv(tmp_path / "t.csv", [(1024, 64)] * 3 + [(1024, 832)])
    mix = ironlaw.serve(SPEC, ON, dtype="fp8", lengths=f, sweep_concurrency=True).to_dict()
    at4 = next(p for p in mix["points"] if p["concurrency"] == 4)
    assert mix["lengths"]["source"] == f
    assert at4["itl_s"] == pytest.approx(ironlaw.serve(SPEC, ON, dtype="fp8", lengths=f, concurrency=4).estimate.itl_s)
    assert at4["itl_s"] > ironlaw.serve(SPEC, ON, dtype="fp8", prompt=1024, output=256, concurrency=4).estimate.itl_s


def test_trtllm_bench_budget_holds_the_longest_prompt_of_a_mix(tmp_path):
    """trtllm-bench's unchunked budget (``engine.unchunked``) is its max_isl plus the max batch: a mix's longest
    prompt, not its mean."""
    from ironlaw.models.serving import engine as eng
    lim = eng.engine_limits(8.03e9, 1.0, 65536.0, 80 * eng.GIB, 1, 1, 128, 128, 0.95, longest_prompt=20000)
    assert (lim.max_batch, lim.max_num_tokens) == (4096, 20000 + 4096)
    mix = _serve(lengths=_csv(tmp_path / "m.csv", [(500, 100)] * 7 + [(12000, 100)]))
    assert mix.limits.max_num_tokens >= 12000 + mix.limits.max_batch


def test_energy_per_token_counts_the_files_own_outputs(tmp_path):
    """A mix's mean output is rounded to whole tokens for the steady state; its energy per output token divides by
    the file's own output tokens (100 · 108.5 here, not 100 · 108), as its tokens/s does."""
    est = _serve(lengths=_csv(tmp_path / "m.csv", [(1000, 100)] * 50 + [(1000, 117)] * 50))
    assert est.output == 108 and est.output_total == 10850
    joules = est.energy["joules_per_output_token"] * 10850
    assert joules == pytest.approx(est.energy["mean_power_w_per_device"] * est.time_s, rel=1e-9)


def test_a_spreadsheets_csv_reads(tmp_path):
    """A byte-order mark, CRLF line ends, quoted cells and extra columns, as a spreadsheet writes them."""
    from ironlaw.models.serving.lengths import read
    f = tmp_path / "sheet.csv"
    f.write_bytes(b'\xef\xbb\xbfid,prompt,output\r\n"a","12","7"\r\nb,30,9\r\n')
    mix = read(str(f))
    assert (mix.prompts, mix.outputs, mix.lines) == ((12, 30), (7, 9), (2, 3))
