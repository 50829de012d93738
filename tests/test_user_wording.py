"""Output and help a new user misreads: each pinned by the test that failed before its fix."""
import ironlaw


def test_critical_path_text_does_not_call_a_bandwidth_bound_path_compute():
    """`compare llama3-8b --phase decode` printed 'bandwidth (hbm3)' as the bottleneck and, under it, 'on the path:
    compute 7.14 ms' and every op 'compute': the stream that runs every kernel was named like the compute term."""
    cmp = ironlaw.compare("llama3-8b", on="h100", phase="decode", what_if="quant=int8,target=weights")
    assert cmp.verdict().startswith("shortens") and "bandwidth" in cmp.verdict()
    text = cmp.cp_before.text()
    assert "on the path: kernel stream" in text and "streams busy: kernel stream" in text
    rows = text.splitlines()[3:]
    assert rows and all("kernel stream" in r and " compute " not in r for r in rows)
    assert cmp.to_dict()["critical_path_before"]["on_path_s"]["compute"] > 0      # the JSON keeps the stream's key


def test_search_dtype_help_says_the_serving_search_tries_fp8_too():
    """`search --help` said '--dtype … (default: the workload's own)'; a serving search without --dtype ranks the
    workload's own dtype and fp8 together (Qwen1.5-MoE, a bf16 checkpoint, came back 'serve · fp8')."""
    import typer
    from ironlaw.cli import app
    (opt,) = [p for p in typer.main.get_command(app).commands["search"].params if "--dtype" in p.opts]
    assert "serve: the workload's own and fp8 where the device computes in it" in opt.help
    ranked = ironlaw.search("llama3-8b", on="h100", phase="serve", gpus=1, top=10).top
    assert {e["dtype"] for e in ranked} == {"bf16", "fp8"}


def test_the_online_capacity_error_names_no_option_the_online_scenario_refuses():
    """`serve llama3-8b --concurrency 100000` said the KV cache is '--kv-fraction 0.95 of the memory left …'; the
    online scenario refuses --kv-fraction ('belongs to the offline scenario'), so the hint led to a second error."""
    from conftest import one_line_error, run_cli
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "h100", "--concurrency", "100000"))
    assert "--concurrency 100000 exceeds the KV-cache capacity of h100: 390 sequences" in line, line
    assert "--kv-fraction" not in line and "0.95 of the memory left after weights" in line, line
    assert "lower --concurrency, use --kv-dtype fp8, or --tp" in line
    again = one_line_error(run_cli("serve", "llama3-8b", "--on", "h100", "--kv-fraction", "0.99"))
    assert "--kv-fraction belongs to the offline scenario" in again


def test_a_hardware_keyword_points_to_on():
    """`ironlaw.analyze("llama3-8b", hardware="h100")` answered "(the builder options of llama3-8b: none)": the
    device is on= (the CLI's --on), which the message did not name."""
    import pytest
    for fn, kw in ((ironlaw.analyze, {"phase": "decode"}), (ironlaw.compare, {"phase": "decode"})):
        with pytest.raises(TypeError, match=r"unexpected keyword argument 'hardware' \(did you mean: on\?\)"):
            fn("llama3-8b", hardware="h100", **kw)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'opt' \(--opt KEY=VALUE is the command line's: "
                                        r".*options=\{'image': 288\}\)"):
        ironlaw.analyze("resnet50", opt={"image": 288})
