"""benchmarks/serving_moe_versions.py's table reading: the older aiconfigurator tables (ms, one CSV per release)
read at the served shape only, and no extrapolation beyond a table's measured token range."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import serving_moe_versions as smv  # noqa: E402

HEADER = ("framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,"
          "num_experts,moe_tp_size,moe_ep_size,distribution,latency\n")


def row(tokens, ms, dtype="fp8", dist="uniform", hidden=4096, ep=8, source="moe_torch_flow"):
    return (f"TRTLLM,0.20.0,NVIDIA H100 80GB HBM3,moe,{source},{dtype},{tokens},{hidden},1536,8,128,1,{ep},"
            f"{dist},{ms}\n")


def test_old_table_keeps_the_served_shape_and_converts_ms(tmp_path):
    d = tmp_path / "h100_sxm" / "trtllm" / "0.20.0"
    d.mkdir(parents=True)
    (d / "moe_perf.txt").write_text(HEADER + row(256, 0.2) + row(256, 0.4) + row(256, 0.3) + row(1024, 0.5) +
                                    row(1024, 9.0, dtype="bfloat16") + row(1024, 9.0, dist="power_law_1.01") +
                                    row(1024, 9.0, hidden=7168) + row(1024, 9.0, ep=4) +
                                    row(1024, 9.0, source="moe_torch_flow_min_latency"))
    n, s = smv.old_curve(tmp_path, "h100", "0.20.0", "uniform", "fp8")
    assert list(n) == [256, 1024]
    assert s == pytest.approx([0.3e-3, 0.5e-3])          # the median of the three 256-token rows, in seconds
    assert smv.old_curve(tmp_path, "h100", "1.0.0rc3", "uniform", "fp8") is None      # no such release
    assert smv.old_curve(tmp_path, "h100", "0.20.0", "balanced", "fp8") is None       # no such routing


def test_interpolation_in_log_tokens_and_none_outside_the_range():
    curve = (np.array([256.0, 1024.0]), np.array([1e-4, 4e-4]))
    assert smv.at(curve, 512.0) == pytest.approx(2e-4)   # halfway in log tokens: the geometric mean
    assert smv.at(curve, 256.0) == pytest.approx(1e-4)
    assert smv.at(curve, 2048.0) is None and smv.at(curve, 128.0) is None
