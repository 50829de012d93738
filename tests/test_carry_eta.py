"""Blackwell's flat GEMM and attention η, carried from H100's by measured kernel ceilings
(ironlaw.measure.calibrate.carry; the catalog values come from benchmarks/carry_eta.py --write)."""
import math
import re

import pandas as pd
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.measure.calibrate import carry

PEAKS = {"bf16": 1e15, "fp8": 2e15}
WRITTEN = ("b200", "b300", "gb200", "gb300")


def _gemm(share: dict, small_share: float = 0.1) -> pd.DataFrame:
    """Rows timed at ``share`` of the peak where compute binds and ``small_share`` on small shapes."""
    rows = []
    for name, dt in carry.GEMM_DTYPES.items():
        for m, n, k, s in ((8192, 4096, 4096, share[dt]), (16384, 8192, 8192, share[dt]),
                           (128, 4096, 4096, small_share), (8192, 1024, 4096, small_share)):
            rows.append({"gemm_dtype": name, "m": m, "n": n, "k": k,
                         "latency_s": 2.0 * m * n * k / (s * PEAKS[dt])})
    return pd.DataFrame(rows)


def _attention(share: float) -> pd.DataFrame:
    base = {"attn_dtype": "bfloat16", "kv_cache_dtype": "bfloat16", "window_size": 0, "head_dim": 128,
            "isl": 8192, "batch_size": 4, "num_heads": 32, "kernel_source": "torch_flow"}
    rows = [dict(base), dict(base, isl=16384, batch_size=1),
            dict(base, window_size=128), dict(base, head_dim=64), dict(base, attn_dtype="fp8"),
            dict(base, isl=1024), dict(base, batch_size=1, num_heads=8), dict(base, kernel_source="torch_flow_flashinfer")]
    for r in rows:
        r["latency_s"] = 2.0 * r["batch_size"] * r["num_heads"] * r["isl"] ** 2 * r["head_dim"] / (share * PEAKS["bf16"])
    for r in rows[2:]:
        r["latency_s"] *= 10.0           # rows outside the compute-bound selection would pull the median down
    return pd.DataFrame(rows)


def test_ceiling_reads_only_compute_bound_rows():
    share, used = carry.gemm_ceiling(_gemm({"bf16": 0.6, "fp8": 0.5}), PEAKS)
    assert share == pytest.approx({"bf16": 0.6, "fp8": 0.5}) and used == {"bf16": 2, "fp8": 2}
    att, n = carry.attention_ceiling(_attention(0.45), PEAKS["bf16"])
    assert att == pytest.approx(0.45) and n == 2


def test_carried_eta_is_the_reference_times_the_ceiling_ratio():
    ref = carry.Ceiling("h100", {"bf16": 0.8, "fp8": 0.6}, {}, 0.5, 0)
    mine = carry.Ceiling("x", {"bf16": 0.64, "fp8": 0.54}, {}, 0.45, 0)
    c = carry.carried(mine, ref, {"matmul": 0.7, "attention": 0.5})
    assert c.matmul_ratio == pytest.approx(math.sqrt(0.8 * 0.9))
    assert c.matmul == pytest.approx(0.7 * math.sqrt(0.72)) and c.attention == pytest.approx(0.45)
    same = carry.carried(ref, ref, {"matmul": 0.7, "attention": 0.5})
    assert (same.matmul, same.attention) == pytest.approx((0.7, 0.5))


def test_a_table_without_compute_bound_rows_is_one_line():
    small = _gemm({"bf16": 0.6, "fp8": 0.5})
    small = small[small["m"] < 8192]
    with pytest.raises(IronlawError) as e:
        carry.gemm_ceiling(small, PEAKS)
    assert "bfloat16" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(IronlawError) as e:
        carry.attention_ceiling(_attention(0.4).iloc[2:], PEAKS["bf16"])
    assert "context attention" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("gpu", WRITTEN)
def test_catalog_values_follow_their_source(gpu):
    """Each written [efficiency] is H100's estimate times the ratios its source quotes (the measured ceilings
    of the GPU and of H100), and the ratios are below 1 where the GPU sustains less of its datasheet."""
    hw, ref = hardware.get(gpu), hardware.get(carry.REFERENCE)
    src = hw.sources["efficiency"]
    assert src.startswith("estimate:") and "carry_eta.py" in src and "aiconfigurator-core 0.12.0" in src
    (b, rb), (f, rf) = [tuple(map(float, re.search(rf"{dt} ([\d.]+) vs ([\d.]+)", src).groups()))
                        for dt in ("bf16", "fp8")]
    a, ra = map(float, re.search(r"tokens: ([\d.]+) vs ([\d.]+)", src).groups())
    assert hw.eta("matmul") == pytest.approx(ref.eta("matmul") * math.sqrt(b / rb * f / rf), abs=2e-3)
    assert hw.eta("attention") == pytest.approx(ref.eta("attention") * a / ra, abs=2e-3)
    for k in ("conv", "other", "memory"):
        assert hw.eta(k) == ref.eta(k)


def test_gb300_trains_faster_than_gb200_at_the_same_datasheet():
    """GB300 and GB200 print the same FP8 peak and HBM bandwidth; their measured GEMM and attention ceilings
    differ, and so do their training steps (published Llama 3 8B FP8: 37,556 vs 31,508 tokens/s/GPU, 1.19×)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    from nemo_ref import BLACKWELL, predict, table
    rows = {r["system"]: r for r in table(BLACKWELL) if (r["model"], r["precision"]) == ("llama3-8b", "fp8")}
    fast, slow = (predict(rows[s], hardware.get(s)).tokens_per_s_per_gpu for s in ("gb300", "gb200"))
    assert 1.08 <= fast / slow <= 1.25
