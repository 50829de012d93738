"""The roofline plot: files by suffix, written atomically, bad paths refused before any work."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("matplotlib")

import ironlaw  # noqa: E402
from ironlaw import IronlawError  # noqa: E402
from ironlaw.report import plot


@pytest.fixture(scope="module")
def est():
    return ironlaw.analyze("gpt2", on="h100", seq=128)


def test_svg_and_png_by_suffix(est, tmp_path):
    svg, png = tmp_path / "r.svg", tmp_path / "r.png"
    plot.save(est, svg)
    plot.save(est, png)
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()[:2000]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []     # no temp file left


def test_roofline_draws_roofs_ops_and_the_workload(est):
    fig = plot.roofline(est)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("hbm3" in s for s in labels) and any("bf16" in s for s in labels) and "workload" in labels
    # each memory tier is a roof: y = bandwidth × intensity below the compute roof
    hbm = [line for line in ax.get_lines() if line.get_label().startswith("hbm3")][0]
    x, y = hbm.get_data()
    assert y[0] == pytest.approx(3.35e12 * x[0])
    assert fig.axes[0].get_xscale() == "log"
    # the diagonals rise to the workload's dtype's peak (gpt2 runs bf16), not the fp8 one above it
    for t in est.hw.memory:
        line = [line for line in ax.get_lines() if line.get_label().startswith(t.name + " ")][0]
        assert max(line.get_data()[1]) == pytest.approx(est.hw.peak_flops["bf16"])
    bars = plot.terms_by_kind(est)
    assert bars.axes[0].get_legend() is not None


def test_bad_paths(est, tmp_path):
    with pytest.raises(IronlawError, match=r"\.svg or \.png"):
        plot.save(est, tmp_path / "r.pdf")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(IronlawError, match="is not a directory"):
        plot.save(est, tmp_path / "afile" / "r.svg")
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user that can write anywhere")
        with pytest.raises(IronlawError, match="not writable"):
            plot.save(est, ro / "r.svg")
    finally:
        os.chmod(ro, 0o700)


def test_a_sweep_is_refused():
    import numpy as np
    est = ironlaw.analyze("gpt2", on="h100", seq=np.array([128, 256]))
    with pytest.raises(IronlawError, match="one configuration"):
        plot.figure(est)


def test_cli_plot(cli, tmp_path):
    out = tmp_path / "gemm.svg"
    r = cli("analyze", "gemm:4096,4096,4096", "--on", "h100", "--plot", str(out))
    assert r.rc == 0 and out.stat().st_size > 1000
    (tmp_path / "afile").write_text("x")
    r = cli("analyze", "gemm:4096,4096,4096", "--on", "h100", "--plot", str(tmp_path / "afile" / "x.png"))
    assert r.rc == 2 and r.err.count("\n") == 1 and "--plot" in r.err


@pytest.mark.parametrize("call", [
    lambda p: ironlaw.analyze("gemm:64,64,64", on="h100", plot=p),
    lambda p: ironlaw.sweep("gemm:64,64,64", on="h100", batch="1,2", plot=p),
    lambda p: ironlaw.serve("llama3-8b", on="h100", sweep_concurrency=True, plot=p),
], ids=["analyze", "sweep", "serve"])
def test_without_matplotlib_plot_is_one_line_before_any_work(call, tmp_path, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    path = tmp_path / "r.svg"
    with pytest.raises(IronlawError, match=r"needs matplotlib; install it with pip install 'ironlaw\[plot\]'"):
        call(str(path))
    assert not path.exists()


def test_roof_labels_read_in_si_units_not_exponents():
    """The h100's fp8 and int8 roofs were labelled '1.98e+03 TFLOP/s' (and l2 '5,500 GB/s'): the legend speaks the
    units the text output does."""
    labels = [t.get_text() for t in plot.roofline(ironlaw.analyze("gpt2", on="h100", seq=128)).axes[0]
              .get_legend().get_texts()]
    assert "fp8 1.98 PFLOP/s" in labels and "bf16 989 TFLOP/s" in labels and "l2 5.5 TB/s" in labels, labels
    assert not any("e+" in s for s in labels), labels


def test_frontier_labels_of_bunched_points_do_not_overlap():
    """`serve --sweep-concurrency --plot`: where throughput saturates, concurrency 256 and 392 sat on one spot and
    their labels overwrote each other; the highest keeps its label, the point and its tooltip stay."""
    from ironlaw.report import frontier
    conc = [1, 8, 64, 256, 392]
    dev = [150.0, 1100.0, 6500.0, 14100.0, 14250.0]
    user = [150.0, 137.0, 101.0, 55.1, 36.4]
    assert frontier.labelled(user, dev) == [True, True, True, True, True]
    user[3] = 37.0                                     # 256 beside 392
    assert frontier.labelled(user, dev) == [True, True, True, False, True]
    doc = {"schema": frontier.SCHEMA, "points": [{"concurrency": c, "tokens_per_s_per_device": d,
                                                  "tokens_per_s_per_user": u} for c, d, u in zip(conc, dev, user)]}
    out = frontier.svg(doc)
    assert ">392</text>" in out and ">256</text>" not in out and "concurrency 256:" in out
