"""Estimate.to_frame() and Estimate._repr_html_(): one row per op, columns that obey the law.

The checks are invariants of the Iron Law per op (overlap: time = max(data, compute) + latency;
serial: the sum), totals that must agree with the estimate's own terms computed another way
(from the per-resource shares), and outside numbers: torchvision's ResNet-50 MACs and the
Llama-3-8B weights a decode step must stream (from its HF config).
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ironlaw.machine import hardware
from ironlaw.law import law
from ironlaw.models import workloads

pd = pytest.importorskip("pandas")
DATA = Path(__file__).with_name("data")

# torchvision 0.29.1 weights metadata, ResNet50_Weights.IMAGENET1K_V1: _ops = 4.089 GMAC at 224x224
# (tests/data/torchvision_resnet_meta.csv; the column says GFLOPS but holds MACs)
RESNET50_GMAC = 4.089


def _est(spec, hw="h100", composition="overlap", **kw):
    g = workloads.resolve(workloads.Request(spec, device="cuda", **kw))
    return law.predict(g, hardware.get(hw), composition)


@pytest.fixture(scope="module")
def resnet():
    return _est("resnet50")


def test_one_row_per_op_with_the_rows_columns(resnet):
    df = resnet.to_frame()
    assert len(df) == len(resnet.graph.ops)
    assert list(df.columns) == list(resnet.rows()[0])
    assert list(df["name"]) == [op.name for op in resnet.graph.ops]
    assert df["count"].sum() == int(resnet.cols.count.sum())
    for c in ("flops", "bytes", "data_s", "compute_s", "latency_s", "network_s", "time_s"):
        assert df[c].dtype == np.float64 and (df[c] >= 0).all(), c


@pytest.mark.parametrize("composition", ["overlap", "serial"])
@pytest.mark.parametrize("spec,kw", [("resnet50", {}), ("llama3-8b", {"phase": "decode"}), ("gpt2", {"phase": "prefill", "seq": 256})])
def test_columns_sum_to_the_terms_and_obey_the_law(spec, kw, composition):
    est = _est(spec, composition=composition, **kw)
    df = est.to_frame()
    # per op: the composition rule of the law
    if composition == "overlap":                 # a GPU GEMM's epilogue (its stores) follows its main loop, and a
        write = df.data_s * np.asarray(est.terms.epilogue).reshape(-1)     # table's serial share of the shorter term
        serial = np.broadcast_to(np.asarray(est.terms.serial), np.shape(est.terms.epilogue)).reshape(-1)
        read = df.data_s - write
        rule = np.maximum(read, df.compute_s) + serial * np.minimum(read, df.compute_s) + write + df.latency_s + \
            df.network_s
    else:
        rule = df.data_s + df.compute_s + df.latency_s + df.network_s
    np.testing.assert_allclose(df.time_s, rule, rtol=1e-12, atol=0)
    # totals: the frame's time column is the estimate's time, and it equals the time the resources own
    assert df.time_s.sum() == pytest.approx(est.time_s, rel=1e-12)
    assert df.time_s.sum() == pytest.approx(float(est.workload_shares_s.sum()), rel=1e-9)
    for term in ("data_s", "compute_s", "latency_s", "network_s"):
        assert df[term].sum() == pytest.approx(est.term(term), rel=1e-12, abs=1e-18)
    # no op moves its bytes faster than the fastest tier, nor computes faster than the fastest unit
    hw = est.hw
    assert (df.data_s >= df.bytes / max(t.bw_Bps for t in hw.memory) * (1 - 1e-12)).all()
    assert (df.compute_s >= df.flops / max([*hw.peak_flops.values(), hw.vector_flops]) * (1 - 1e-12)).all()
    # every op row names what binds it; latency alone would be n × op latency
    assert set(df.bound) <= {"compute", "bandwidth", "latency", "network"}
    from ironlaw.law import efficiency      # per op: the device's, or its calibration's per kind/dtype
    lat = np.broadcast_to(efficiency.evaluate(est.cols, est.hw).latency_s, est.cols.flops.shape).reshape(-1)
    assert df.latency_s.sum() == pytest.approx(float((df["count"] * lat).sum()), rel=1e-9)


def test_resnet50_flops_column_against_torchvision_macs(resnet):
    df = resnet.to_frame()
    mac_flops = df[df.kind.isin(["conv", "matmul"])].flops.sum()
    assert mac_flops == pytest.approx(2 * RESNET50_GMAC * 1e9, rel=0.001)      # FLOPs = 2 × MACs
    assert df.flops.sum() == pytest.approx(float(resnet.graph.flops), rel=1e-12)


def test_llama3_decode_streams_every_linear_weight_once():
    cfg = json.loads((DATA / "llama3_8b_config.json").read_text())   # HF config.json of Meta-Llama-3-8B
    h, f, L, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    kv = cfg["num_key_value_heads"] * cfg["head_dim"]
    linear_params = L * (2 * h * h + 2 * h * kv + 3 * h * f) + v * h            # q,o + k,v + gate,up,down; lm_head
    df = _est("llama3-8b", phase="decode").to_frame()
    matmul_bytes = df[df.kind == "matmul"].bytes.sum()
    assert 2 * linear_params <= matmul_bytes <= 1.01 * 2 * linear_params     # bf16 weights + tiny activations


def test_gemm_row_is_2mnk():
    m, n, k = 512, 768, 1024
    df = _est(f"gemm:{m},{n},{k}").to_frame()
    assert len(df) == 1
    assert df.flops[0] == 2 * m * n * k
    assert df.bytes[0] == 2 * (m * k + k * n + m * n)                          # bf16: read A, B, write C


def test_sweep_is_refused_with_a_clear_message():
    est = _est("llama3-8b", phase="decode", batch=np.array([1, 8]))
    assert est.cols.cfg_shape == (2,)
    with pytest.raises(ValueError, match="one configuration"):
        est.to_frame()
    html = est._repr_html_()
    assert "index one configuration" in html


def test_repr_html_is_a_self_contained_fragment(resnet):
    h = resnet._repr_html_()
    assert resnet.bottleneck()["why"].split(":")[0] in h
    assert 'class="ironlaw-report"' in h and "<svg" in h and "<script" not in h
    assert "http://" not in h and "https://" not in h
    # two displays in one notebook must not share element ids
    h2 = resnet._repr_html_()
    import re
    ids1 = set(re.findall(r'id="([^"]+)"', h))
    ids2 = set(re.findall(r'id="([^"]+)"', h2))
    assert ids1 and not ids1 & ids2
    assert h.count('class="op"') == len([r for r in resnet.rows() if r["flops"] > 0 and r["bytes"] > 0])
    for ref in re.findall(r'(?:url\(#|href="#)([^)"]+)', h):       # every internal reference resolves
        assert ref in ids1, ref


def test_core_import_does_not_pull_pandas_or_matplotlib():
    code = ("import sys, ironlaw\nfrom ironlaw.machine import hardware\nfrom ironlaw.law import law\n"
            "from ironlaw.models import workloads\n"
            "e = law.predict(workloads.resolve(workloads.Request('resnet50')), hardware.get('h100'))\n"
            "e.rows(); e.to_dict()\n"
            "bad = [m for m in ('pandas', 'matplotlib', 'torch') if m in sys.modules]\n"
            "assert not bad, bad\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
