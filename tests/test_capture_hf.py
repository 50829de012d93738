"""Captured transformers models agree with the analytic builders (and with the published params).

The analytic builder (workloads/transformer.py) and the capture count the same model two independent
ways: one from the config's arithmetic, the other from the aten ops transformers really runs.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ironlaw import IronlawError  # noqa: E402
from ironlaw.models import workloads
from ironlaw.models.capture import hf  # noqa: E402

DATA = Path(__file__).parent / "data"
REF = json.loads((DATA / "transformer_reference.json").read_text())


def totals(g) -> dict[str, float]:
    d: dict[str, float] = defaultdict(float)
    for op in g.ops:
        d["flops"] += op.flops * op.count
        d["bytes"] += op.total_bytes * op.count
        d["weight_bytes"] += op.bytes.get("weights", 0.0) * op.count
        d["kv_bytes"] += op.bytes.get("kv_cache", 0.0) * op.count
        if op.kind == "matmul":
            d["matmul_bytes"] += op.total_bytes * op.count
    return d


def pair(config: Path, phase: str, seq: int, batch: int = 1):
    req = dict(seq=seq, phase=phase, batch=batch)
    analytic = workloads.resolve(workloads.Request(f"hf:{config}", **req))
    captured = hf.build(str(config), workloads.Request(f"hf:{config}", **req))
    assert analytic.meta.get("captured") is not True and captured.meta["captured"] is True
    return totals(analytic), totals(captured), analytic, captured


@pytest.fixture(scope="module")
def llama2(tmp_path_factory) -> Path:
    """Llama-3-8B's config with 2 of its 32 layers (every layer is the same; keeps the test fast)."""
    cfg = json.loads((DATA / "llama3_8b_config.json").read_text())
    cfg["num_hidden_layers"] = 2
    p = tmp_path_factory.mktemp("llama") / "config.json"
    p.write_text(json.dumps(cfg))
    return p


@pytest.mark.parametrize("phase", ["prefill", "infer", "decode", "train"])
def test_gpt2_flops_within_2pct_of_the_analytic_builder(phase):
    a, c, _, g = pair(DATA / "gpt2_config.json", phase, seq=128, batch=2)
    assert c["flops"] == pytest.approx(a["flops"], rel=0.02)
    assert g.uncounted_ops == {}


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_llama_flops_within_2pct_of_the_analytic_builder(llama2, phase):
    a, c, _, g = pair(llama2, phase, seq=256)
    assert c["flops"] == pytest.approx(a["flops"], rel=0.02)
    assert g.uncounted_ops == {}


@pytest.mark.parametrize("config,phase", [("gpt2", "decode"), ("llama", "decode")])
def test_decode_bytes_within_2pct(llama2, config, phase):
    path = llama2 if config == "llama" else DATA / "gpt2_config.json"
    a, c, _, _ = pair(path, phase, seq=256)
    for key in ("bytes", "weight_bytes", "kv_bytes"):
        assert c[key] == pytest.approx(a[key], rel=0.02), key


@pytest.mark.parametrize("config,phase", [("gpt2", "prefill"), ("gpt2", "infer"), ("llama", "prefill")])
def test_prefill_weight_and_matmul_bytes_within_2pct(llama2, config, phase):
    # Total bytes differ on purpose: eager transformers runs norms, RoPE and activations as separate
    # unfused aten ops (fp32 upcasts, cat, mul …), each reading and writing whole tensors, while the
    # analytic builder models fused kernels. The GEMMs and the weight stream are the same work.
    path = llama2 if config == "llama" else DATA / "gpt2_config.json"
    a, c, _, _ = pair(path, phase, seq=256)
    assert c["weight_bytes"] == pytest.approx(a["weight_bytes"], rel=0.02)
    assert c["matmul_bytes"] == pytest.approx(a["matmul_bytes"], rel=0.02)
    assert c["bytes"] >= a["bytes"]          # unfused eager ops never move less


def test_llama3_8b_params_equal_the_published_config():
    g = hf.build(str(DATA / "llama3_8b_config.json"), workloads.Request("hf:x", seq=16, phase="decode"))
    assert g.meta["params"] == REF["params"]["llama3-8b"]["value"]   # the HF Hub's safetensors total
    assert g.footprint["weights"] == pytest.approx(2 * 8030261248, abs=1024)   # bf16 (+ RoPE's inv_freq buffers)
    assert g.footprint["kv_cache"] == 2 * 32 * 8 * 128 * 17 * 2  # K and V, 32 layers, 8 kv heads × 128, 16+1 slots


def test_bad_configs_are_one_line_errors(tmp_path):
    bad = tmp_path / "config.json"
    for text, words in (("{", "JSON"), ('{"hidden_size": 4}', "model_type"), ('{"model_type": "llamma"}', "llama"),
                        ('{"model_type": "llama", "hidden_size": 100, "num_attention_heads": 7}', "cannot build")):
        bad.write_text(text)
        with pytest.raises(IronlawError, match=words) as e:
            hf.build(str(bad), workloads.Request("hf:x", seq=8))
        assert "\n" not in str(e.value)
    with pytest.raises(IronlawError, match="no such config"):
        hf.build(str(tmp_path / "missing.json"), workloads.Request("hf:x", seq=8))


def test_transformers_warnings_become_the_graphs_notes(capsys):
    """Capturing Qwen3-Next without flash-linear-attention, transformers warns once per kernel it runs as reference
    PyTorch code (lines of over 200 columns); they are one note (the graph holds that code's ops), any other warning
    a note as said, and nothing reaches stderr."""
    import logging
    said = "`{}` is falling back to its reference PyTorch implementation because `{}` is either not installed or " \
           "doesn't support the device of the inputs. This is correct but much slower."
    log = logging.getLogger("transformers.integrations.hub_kernels")
    with hf.transformers_said() as notes:
        log.warning(said.format("causal_conv1d_fn", "causal_conv1d"))
        log.warning(said.format("chunk_gated_delta_rule", "flash-linear-attention"))
        logging.getLogger("transformers.modeling_utils").warning("another warning")
    assert notes == ["another warning",
                     "transformers ran the reference PyTorch code of causal_conv1d_fn, chunk_gated_delta_rule "
                     "(causal_conv1d, flash-linear-attention not installed or not for this device): the graph holds "
                     "that code's ops, not the fused kernels'"]
    assert capsys.readouterr().err == ""
