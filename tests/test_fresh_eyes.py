"""What an engineer who runs vLLM, SGLang or TensorRT-LLM benchmarks tries first with ``ironlaw serve`` and
``search``, and what each now gets. Each pinned by the test that failed before its fix."""
import pytest

from conftest import one_line_error, run_cli


@pytest.mark.parametrize("flag", ["--rate", "--request-rate", "--qps"])
def test_an_arrival_rate_is_refused_naming_the_closed_loop_serve_runs(flag):
    """``vllm bench serve --request-rate 5`` is an open arrival rate; ``serve`` runs a closed loop at a set
    concurrency. It said "No such option '--rate'. (Did you mean one of: '--dtype', '--format', '--runtime'?)"."""
    line = one_line_error(run_cli("serve", "llama3.1-8b", "--on", "h100", flag, "5"))
    assert line.startswith(f"ironlaw: error: serve takes no {flag}: it runs a closed loop of --concurrency N")
    assert "an open arrival rate is not modelled" in line and "--slo" in line and "--dtype" not in line


def test_the_benchmark_clients_concurrency_flag_names_serves():
    line = one_line_error(run_cli("serve", "llama3.1-8b", "--on", "h100", "--max-concurrency", "8"))
    assert line.endswith("serve takes no --max-concurrency: requests in flight are --concurrency N")
