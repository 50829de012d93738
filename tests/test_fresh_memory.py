"""Fresh memory: the probe's cost of memory the OS must fault in, checked against the OS's own page-fault
counter, and validate's count of the page faults a run takes (with the allocator remedy it names)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ironlaw import hardware, profile
from ironlaw.errors import IronlawError

DATA = Path(__file__).parent / "data"
PROFILE = DATA / "validate-cpu.toml"
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc and ru_minflt: Linux")


@linux
def test_every_fresh_fill_faults_in_every_page_and_costs_more_than_a_warm_fill():
    torch = pytest.importorskip("torch")
    from ironlaw.probe import pages, timing
    from ironlaw.validate.measure import minor_faults, page_bytes

    nbytes = pages.SIZES[0]
    row = pages.measure(nbytes, timing.Budget(repeat_s=0.01, repeats=3, retries=0))
    assert row["bytes"] == nbytes and row["time_s"] > row["warm_s"] > 0
    cost = pages.cost_s_per_byte({"pages": [row]})
    # Linux maps and zeroes a 4 KiB page in ~0.1–2 µs (0.9 µs on a 2-vCPU KVM VM): 2e-11 … 5e-10 s per byte
    assert 1e-12 < cost < 2e-9
    # the premise, from the OS: a 64 MiB block is above glibc's mmap threshold, so each call faults in
    # all of it again (within 5%), however many times it ran before
    for _ in range(3):
        torch.empty(nbytes // 4).fill_(1.0)
    f0 = minor_faults()
    torch.empty(nbytes // 4).fill_(1.0)
    faulted = (minor_faults() - f0) * page_bytes()
    assert 0.95 * nbytes <= faulted <= 1.05 * nbytes + 2**20


@linux
def test_validate_counts_the_fresh_memory_of_each_run():
    pytest.importorskip("torch")
    from ironlaw import validate
    from ironlaw.cli.validate import fresh_memory_line

    hw = hardware.load_file(PROFILE)
    wide = validate.run(f"py:{DATA / 'validate_models.py'}:wide", batch=1, hw=hw, repeats=3, warmup=1, threads=1)
    tiny = validate.run(f"py:{DATA / 'validate_models.py'}:tiny", batch=2, hw=hw, repeats=3, warmup=1, threads=1)
    t = wide["total"]
    assert t["faulted_bytes_per_run"] >= 0.95 * 64 * 2**20          # its 64 MiB intermediate, every run
    assert tiny["total"]["faulted_bytes_per_run"] < 2**20            # a few KiB of activations: none
    # this profile has no probe 'pages' rows: counted, not priced, and the line says how to get a price
    assert t["fresh_memory_s"] is None
    assert "run `ironlaw probe` again" in fresh_memory_line(t)
    # priced with a probe row of 1 ns per byte (faults + giving back), a repredict recomputes it
    hw.extra["probe"] = {"pages": [{"bytes": 1e8, "time_s": 0.11, "warm_s": 0.01, "cv": 0.01}]}
    again = validate.repredict(wide, hw)["total"]
    assert again["fresh_memory_s"] == pytest.approx(again["faulted_bytes_per_run"] * 1e-9)
    assert again["fresh_memory_share"] == pytest.approx(again["fresh_memory_s"] / again["measured_s"])
    line = fresh_memory_line(again)
    assert "not in the prediction" in line and "MALLOC_TRIM_THRESHOLD_" in line


def test_a_hand_edited_pages_row_is_refused_naming_the_field():
    row = {"bytes": 67108864.0, "time_s": 0.02, "warm_s": 0.002, "cv": 0.01}
    probe = {"date": "2026-12-02", "host": "h", "torch": "2.13.0", "threads": 2, "pages": [row]}
    assert profile.check_probe(probe, "probe")["pages"] == [row]
    with pytest.raises(IronlawError, match=r"probe\.pages\[0\]\.warm_s: must be positive"):
        profile.check_probe({**probe, "pages": [{**row, "warm_s": -1.0}]}, "probe")
    with pytest.raises(IronlawError, match=r"probe\.pages\[0\]: missing required field 'warm_s'"):
        profile.check_probe({**probe, "pages": [{k: v for k, v in row.items() if k != "warm_s"}]}, "probe")
