"""benchmarks/moe_implied_memory.py and trtllm_h100's ``moe_kv_fraction`` what-if: the KV fraction the Hopper MoE
cells imply when the routed experts run at their measured tables."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import moe_implied_memory as mim  # noqa: E402
import trtllm_h100 as h100  # noqa: E402

QWEN3 = {"model": "qwen3-235b-a22b", "spec": "qwen3-235b-a22b", "tp": 8, "isl": 128, "osl": 2048, "gpu": "h100",
         "published": 19658.0}
DENSE = {"model": "llama3.3-70b", "spec": "llama3-70b", "tp": 2, "isl": 1000, "osl": 1000, "published": 4205.0}


pytestmark = pytest.mark.usefixtures("trtllm_defaults")       # conftest: RELEASE back on its defaults


def test_moe_kv_fraction_moves_the_attention_dp_moe_cells_only():
    base_moe, base_dense = h100.predict(QWEN3), h100.predict(DENSE)
    h100.constants_arg("moe_kv_fraction=0.42")
    moe, dense = h100.predict(QWEN3), h100.predict(DENSE)
    assert moe.memory["kv_budget_bytes"] == pytest.approx(base_moe.memory["kv_budget_bytes"] * 0.42 / 0.95,
                                                          rel=0.02)   # the workspace moves with trtllm-bench's limits
    assert moe.batch < base_moe.batch
    assert dense.memory == base_dense.memory and dense.time_s == base_dense.time_s
    h100.constants_arg(None)                          # a new --constants forgets the fraction
    assert h100.predict(QWEN3).batch == base_moe.batch


@pytest.mark.parametrize("bad", ["moe_kv_fraction=0", "moe_kv_fraction=1.5", "moe_kv_fractions=0.4"])
def test_moe_kv_fraction_out_of_range_or_misspelt_is_refused(bad):
    with pytest.raises(SystemExit):
        h100.constants_arg(bad)


def test_the_implied_fraction_is_where_the_tables_on_cell_stops_being_fast():
    """The scan's answer f: the tables-on prediction at f is at or below the published rate, one grid step above
    it is still above (the cell is too fast at the overview's 0.95)."""
    f = mim.implied_fraction(QWEN3, "h100", "power_law_1.2")
    assert f is not None and f < mim.PUBLISHED_FRACTION
    at = mim.predict(QWEN3, "h100", True, "power_law_1.2", f).output_tokens_per_s
    above = mim.predict(QWEN3, "h100", True, "power_law_1.2", round(f + 0.025, 3)).output_tokens_per_s
    assert at <= QWEN3["published"] < above


def test_the_kv_fraction_context_restores_the_module_constant():
    with mim.kv_fraction(0.3):
        assert h100.KV_FRACTION == 0.3
    assert h100.KV_FRACTION == mim.PUBLISHED_FRACTION
