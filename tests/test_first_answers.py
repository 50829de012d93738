"""Answers a new user gets on the first commands they try (issue 37): the serving search's text and Markdown, SLO
units, MLA's KV cache under tensor parallelism, the KV dtype of 8- and 4-bit float models, a published training
layout whose groups fill their last node partly, ``--version``, and what-if messages that say their prefix once."""
import pytest

from conftest import one_line_error, run_cli

# DeepSeek-V3's config.json (deepseek-ai/DeepSeek-V3): 61 layers, kv_lora_rank 512, qk_rope_head_dim 64 — the cache
# holds the latent and the shared rotary key per token and layer, one byte each in FP8
DEEPSEEK_V3_LATENT_FP8_BYTES_PER_TOKEN = 61 * (512 + 64) * 1


# ---------------------------------------------------------------------- item 1: search --phase serve, text and md
@pytest.mark.parametrize("fmt", ["text", "md"])
def test_serving_search_without_slo_prints_its_table(fmt):
    r = run_cli("search", "deepseek-v3", "--phase", "serve", "--on", "h200", "--gpus", "8", "--dtype", "fp8",
                "--format", fmt)
    assert r.rc == 0, r.err
    assert "internal error" not in r.err
    assert "MFU" in r.out and "all reqs" in r.out and "KV fp8" in r.out
    assert "fit the targets" not in r.out                       # no --slo: there are no targets


# ---------------------------------------------------------------------- item 2 and 14: --slo units and separators
@pytest.mark.parametrize("slo,keyword", [
    ("ttft=1,itl=50", "ttft=1"),                 # a bare number is never read as seconds
    ("ttft=1s,itl=50", "itl=50"),
    ("ttft=1s;itl=50ms", "','"),                 # one clear line for the wrong separator
    ("tpot=50ms,itl=40ms", "twice"),
    ("ttft=1s,latency=3s", "ttft=TIME"),
])
def test_slo_bad_input_is_one_line(slo, keyword):
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "h100", "--slo", slo))
    assert keyword in line, line
    if "=1," in slo or slo.endswith("=50"):
        assert "unit" in line and "ms" in line, line


def test_slo_takes_tpot_as_the_inter_token_latency():
    from ironlaw.models.serving.online import parse_slo
    assert parse_slo("ttft=2s,tpot=50ms") == pytest.approx({"ttft_s": 2.0, "itl_s": 0.05})
    assert parse_slo("TPOT=40ms") == pytest.approx({"itl_s": 0.04})
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--slo", "ttft=2s,tpot=50ms", "--format", "json")
    assert r.rc == 0, r.err
    assert r.json()["goodput"]["slo"]["itl_s"] == pytest.approx(0.05)


# ---------------------------------------------------------------------- item 3: MLA's latent cache on every TP rank
def test_mla_latent_cache_is_whole_on_every_tp_rank():
    r = run_cli("serve", "deepseek-v3", "--on", "h200", "--tp", "8", "--dtype", "fp8", "--format", "json")
    assert r.rc == 0, r.err
    cap = r.json()["capacity"]
    assert cap["kv_bytes_per_token"] == pytest.approx(DEEPSEEK_V3_LATENT_FP8_BYTES_PER_TOKEN)
    # the capacity line: the KV budget over the whole latent per token, not 8× more sequences
    assert cap["max_concurrency"] == int(cap["kv_budget_bytes"] // (1280 * DEEPSEEK_V3_LATENT_FP8_BYTES_PER_TOKEN))
    r = run_cli("serve", "deepseek-v3", "--on", "h200", "--tp", "8", "--dtype", "fp8", "--max-throughput",
                "--format", "json")
    assert r.rc == 0, r.err
    assert r.json()["memory_per_gpu"]["kv_bytes_per_token"] == pytest.approx(DEEPSEEK_V3_LATENT_FP8_BYTES_PER_TOKEN)


def test_tp_shard_reads_the_whole_latent_but_splits_gqa_heads():
    from ironlaw.machine import hardware
    from ironlaw.models import parallel, workloads
    h200 = hardware.get("h200")

    def kv_read(spec: str, tp: int) -> tuple[float, float]:
        g = workloads.resolve(workloads.Request(spec, phase="decode", batch=4, seq=1024, dtype="fp8"))
        g = parallel.shard_inference(g, h200, {"tp": tp, "gpus": tp}) if tp > 1 else g
        att = sum(float(op.bytes.get("kv_cache", 0.0)) * op.count for op in g.ops if op.kind == "attention")
        return att, float(g.footprint["kv_cache"])

    one, eight = kv_read("deepseek-v3", 1), kv_read("deepseek-v3", 8)
    assert eight == pytest.approx(one)                           # MLA: every rank reads and holds all of it
    one, eight = kv_read("llama3-70b", 1), kv_read("llama3-70b", 8)
    assert eight[0] == pytest.approx(one[0] / 8) and eight[1] == pytest.approx(one[1] / 8)


# ---------------------------------------------------------------------- item 4: an FP4/FP8 model's cache is FP8
def test_fp4_model_kv_cache_defaults_to_fp8_and_is_printed_first():
    r = run_cli("serve", "llama3.1-8b", "--on", "b200", "--dtype", "fp4", "--max-throughput")
    assert r.rc == 0, r.err
    assert "KV fp8" in " ".join(r.out.splitlines()[:2]), r.out
    r = run_cli("serve", "llama3.1-8b", "--on", "b200", "--dtype", "fp4")
    assert r.rc == 0, r.err
    assert "KV fp8" in " ".join(r.out.splitlines()[:2]), r.out
    r = run_cli("serve", "llama3.1-8b", "--on", "b200", "--dtype", "fp4", "--kv-dtype", "bf16", "--format", "json")
    assert r.rc == 0 and r.json()["kv_dtype"] == "bf16"         # a dtype the user names is kept


def test_default_kv_dtype_follows_the_checkpoints():
    from ironlaw.models.serving.online import default_kv_dtype
    assert [default_kv_dtype(d) for d in ("fp4", "mxfp4", "fp8", "mxfp8")] == ["fp8"] * 4
    assert default_kv_dtype("bf16") == "bf16" and default_kv_dtype("int4") == "bf16"


# ---------------------------------------------------------------------- item 5: a published layout
GB200_2496 = ("llama3.1-405b", "--phase", "train", "--on", "gb200", "--gpus", "2496", "--nodes", "39", "--tp", "4",
              "--pp", "8", "--cp", "2", "--interleave", "8", "--global-batch", "2496")


def test_published_layout_of_2496_gb200_is_modelled():
    r = run_cli("analyze", *GB200_2496, "--zero", "1", "--format", "json")
    assert r.rc == 0, r.err
    plan = r.json()["plan"]
    assert (plan["gpus"], plan["nodes"], plan["dp"]) == (2496, 39, 39)
    assert any("78 ranks span 5 nodes unevenly" in n for n in r.json()["notes"]), r.json()["notes"]
    r = run_cli("search", *GB200_2496, "--format", "json")
    assert r.rc == 0, r.err
    assert all((e["tp"], e["pp"], e["cp"], e["dp"]) == (4, 8, 2, 39) for e in r.json()["top"])


def test_a_group_filling_its_last_node_partly():
    from ironlaw.machine import hardware
    from ironlaw.models import parallel
    # dp·cp = 78 ranks spaced tp = 4 apart on nodes of 64: 16 per node on four nodes, 14 on a fifth
    assert parallel.group(4, 78, 64) == (78, 5, 4, 64)
    assert parallel.group(8, 16, 8) == (16, 16, 8, 8)     # as before: one rank per node, 8 groups on each
    assert parallel.group(4, 32, 64) == (32, 2, 4, 64)
    topo = parallel.group_topology(hardware.get("gb200"), (78, 5, 4))
    assert topo.gpus_per_node == 16 and "at most 16" in topo.describe()


def test_uneven_devices_the_user_gives_are_refused_with_their_numbers():
    line = one_line_error(run_cli("analyze", "allreduce:64MB", "--on", "h100", "--gpus", "16", "--nodes", "3"))
    assert "--gpus 16" in line and "--nodes 3" in line


# ---------------------------------------------------------------------- item 8 and 14: version, help, prefixes
def test_version():
    from ironlaw import __version__
    r = run_cli("--version")
    assert r.rc == 0 and r.out.strip() == f"ironlaw {__version__}"


def test_compare_help_shows_2_4_sparsity():
    r = run_cli("compare", "--help")
    assert r.rc == 0 and "sparsity=2:4" in r.out


@pytest.mark.parametrize("what_if", ["sparsity=1.5", "sparsity=abc"])
def test_what_if_errors_say_their_prefix_once(what_if):
    line = one_line_error(run_cli("compare", "llama3-8b", "--what-if", what_if))
    assert "sparsity: sparsity" not in line and line.count("what-if") == 1, line
