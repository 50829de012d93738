"""The HTML report: self-contained, complete, opens in a real browser without errors, written atomically.

Browser tests run headless Chromium (Debian packages `chromium` and `chromium-driver`) from the command
line: --dump-dom for the page after its script ran, --screenshot for the picture, --enable-logging for
console messages, --log-net-log for every request the page makes. Each check has a negative control
(a page with an error and an external fetch) so that it is known to be able to fail. When
/usr/bin/chromium is absent those tests skip and say why.
"""
import json
import os
import re
import struct
import subprocess
import warnings
import zlib
from pathlib import Path

import pytest

from conftest import run_cli
from ironlaw.machine import hardware
from ironlaw.law import law
from ironlaw.models import workloads
from ironlaw.core.errors import IronlawError
from ironlaw.report import html as page
from ironlaw.report import inputs, svg

CHROMIUM = "/usr/bin/chromium"
MAX_BYTES = 2 * 1024 * 1024
SECTION_IDS = ("title", "summary", "terms", "terms-table", "owner-bar", "roofline", "roofline-svg", "top-ops",
               "ops-table", "by-kind", "footprint", "footprint-table", "sources")


def _est(spec="resnet50", hw="h100", **kw):
    return law.predict(workloads.resolve(workloads.Request(spec, device="cuda", **kw)), hardware.get(hw))


@pytest.fixture(scope="module")
def resnet():
    return _est()


@pytest.fixture
def fast(monkeypatch):
    """Draw the roofline with svg.roofline (milliseconds) where a test looks at other sections."""
    monkeypatch.setattr(page, "MPL_MAX_OPS", 0)


def _compare_doc(est_before, est_after, **override):
    before, after = est_before, est_after
    b, a = before.to_dict(), after.to_dict()
    s = b["time_s"] / a["time_s"]
    doc = {"schema": "ironlaw.compare/1", "what_if": [f"hardware={after.hw.name}"], "before": b, "after": a,
           "speedup": s, "bottleneck_before": b["bottleneck"], "bottleneck_after": a["bottleneck"],
           "shortens_critical_path": s > 1, "verdict": f"on {after.hw.name}: ×{s:.2f}"}
    doc.update(override)
    return doc


# the shape `ironlaw validate --format json` writes (ironlaw.validate/1; extra fields are ignored by the report)
VALIDATION = {"schema": "ironlaw.validate/1",
              "workload": {"name": "resnet50", "spec": "resnet50", "phase": "infer", "batch": 1},
              "hardware": {"name": "local", "calibrated": True},
              "total": {"predicted_s": 0.054, "measured_s": 0.060, "spread_s": 0.0012, "error": -0.1},
              "by_kind": {"conv": {"ops": 53, "predicted_s": 0.036, "measured_s": 0.040, "spread_s": 0.001},
                          "elementwise": {"ops": 33, "predicted_s": 0.009, "measured_s": 0.006, "spread_s": None},
                          "norm": {"ops": 53, "predicted_s": 0.009, "measured_s": 0.014},
                          "framework": {"ops": 0, "predicted_s": 0.0002, "measured_s": 0.0, "error": None}},
              "ops": [], "score": {"ops_within_25pct_time_share": 0.62, "n_ops": 139}}


def _write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return p


# ------------------------------------------------------------------------------------ content

def test_self_contained_and_small_for_resnet50(tmp_path):
    out = tmp_path / "r50.html"
    for phase in ("infer", "train"):
        r = run_cli("report", "resnet50", "--on", "h100", "--phase", phase, "--batch", "32", "--html", str(out))
        assert r.rc == 0, r.err
        text = out.read_text(encoding="utf-8")
        assert out.stat().st_size <= MAX_BYTES
        low = text.lower()
        assert "http://" not in low and "https://" not in low and "//cdn" not in low
        assert "@import" not in low
        refs = re.findall(r"\b(?:src|href)\s*=\s*[\"']?([^\"'\s>]*)", low)
        assert all(u.startswith("#") for u in refs), "no attribute may point outside the page"
        assert all(u.startswith("#") for u in re.findall(r"url\(\s*['\"]?([^)'\"]*)", low))
        for i in SECTION_IDS:
            assert f'id="{i}"' in text, i
        assert str(out) in r.out and "-bound" in r.out
    assert not [p for p in tmp_path.iterdir() if p.name != "r50.html"], "temporary files left behind"


@pytest.mark.torch
def test_captured_resnet50_training_report_is_small():
    """Per aten op (forward + backward, 354 rows): every op on the roofline, the file still ≤ 2 MB."""
    pytest.importorskip("torch")
    root = Path(__file__).resolve().parents[1]
    est = _est(f"py:{root / 'examples' / 'resnet.py'}:resnet50", phase="train", batch=8)
    text = page.render(est)
    pts, _ = svg.roofline_points(est)
    assert len(est.graph.ops) > 300 and text.count('class="op"') == len(pts)
    assert len(text.encode()) <= MAX_BYTES and "http://" not in text.lower() and "https://" not in text.lower()


def test_summary_states_time_resource_and_why(fast, resnet):
    text = page.render(resnet)
    b = resnet.bottleneck()
    summary = text[text.index('id="summary"'):text.index('id="terms"')]
    assert page.escape(b["why"]) in summary
    assert f"{b['resource']}-bound" in summary
    from ironlaw.core.units import fmt_time
    assert fmt_time(resnet.time_s) in summary


def test_roofline_has_every_op_and_no_point_above_the_roofs():
    est = _est("llama3-8b", phase="decode")
    pts, skipped = svg.roofline_points(est)
    assert len(pts) + len(skipped) == len(est.graph.ops)
    assert [r["name"] for r in skipped] == ["embedding"]            # a gather: bytes but no FLOPs
    text = page.render(est)
    assert text.count('class="op"') == len(pts)
    assert "drawn by ironlaw.report.plot (matplotlib)" in text or "matplotlib is not installed" in text
    assert "embedding (no FLOPs)" in text[text.index('id="roofline-skipped"'):]
    hw = est.hw
    top_bw = max(t.bw_Bps for t in hw.memory)
    for p in pts:                                                    # the roofline is an upper bound
        unit_peak = hw.peak(p["dtype"]) if p["kind"] in ("matmul", "conv", "attention") else hw.vector_flops
        assert p["rate"] <= unit_peak * (1 + 1e-9), p["name"]
        assert p["rate"] <= p["ai"] * top_bw * (1 + 1e-9), p["name"]
    # the bandwidth-bound weight GEMMs of decode sit near the HBM roof: within 2× of bytes / 3.35 TB/s
    gemm = next(p for p in pts if p["name"] == "mlp_up_proj")
    assert gemm["bound"] == "bandwidth"
    assert 0.5 * gemm["ai"] * hw.tier("hbm3").bw_Bps <= gemm["rate"] <= gemm["ai"] * hw.tier("hbm3").bw_Bps


@pytest.mark.parametrize("why", ["many ops", "no labels", "no matplotlib"])
def test_roofline_without_matplotlib_still_has_every_op(monkeypatch, why):
    from ironlaw.report import mplsvg
    if why == "many ops":
        monkeypatch.setattr(page, "MPL_MAX_OPS", 5)
    elif why == "no labels":
        monkeypatch.setattr(mplsvg, "roofline", lambda est, **kw: None)
    else:
        def no_mpl(est, **kw):
            raise ImportError("No module named 'matplotlib'")
        monkeypatch.setattr(mplsvg, "roofline", no_mpl)
    est = _est("gpt2", phase="prefill", seq=128)
    pts, _ = svg.roofline_points(est)
    text = page.render(est)
    assert text.count('<circle class="op"') == len(pts) > 5
    assert "drawn by ironlaw.report.svg (" in text
    assert "http://" not in text.lower()


def test_ops_table_is_sorted_by_time_and_limited_by_top(fast, resnet):
    text = page.render(resnet, top=20)
    table = text[text.index('id="ops-table"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table)[1:]
    assert len(rows) == 20
    times = [float(re.findall(r'data-v="([^"]+)"', r)[7]) for r in rows]     # the time_s column
    assert times == sorted(times, reverse=True)
    assert times[0] == pytest.approx(max(r["time_s"] for r in resnet.rows()), rel=1e-5)


def test_validation_section_shows_errors(fast, resnet, tmp_path):
    v = inputs.load_validation(_write(tmp_path, "v.json", VALIDATION), resnet)
    text = page.render(resnet, validation_doc=v)
    sec = text[text.index('id="validation"'):text.index('id="sources"')]
    assert "-10.0%" in sec          # total: (0.054 - 0.060) / 0.060
    assert "+50.0%" in sec          # elementwise: (0.009 - 0.006) / 0.006
    assert "-35.7%" in sec          # norm: (0.009 - 0.014) / 0.014
    assert "Measured on local; the estimate above is for h100" in sec
    assert "62% of the measured op time" in sec
    framework = re.search(r"<tr><td class=\"l\">framework</td>(.*?)</tr>", sec).group(1)
    assert framework.endswith("<td>—</td>")                      # no error % against a zero measurement


def test_whatif_section_from_a_compare_file(fast, resnet, tmp_path):
    after = _est(hw="h200")
    c = inputs.load_compare(_write(tmp_path, "c.json", _compare_doc(resnet, after)), resnet)
    text = page.render(resnet, compare=c)
    sec = text[text.index('id="whatif"'):text.index('id="sources"')]
    assert "hardware h100 → h200" in sec and 'id="verdict"' in sec
    assert f"×{c['speedup']:.3g}" in sec


# ------------------------------------------------------------------------------------ strict inputs

def _bad(doc_changes=None, drop=None, kind_changes=None):
    d = json.loads(json.dumps(VALIDATION))
    d.update(doc_changes or {})
    for k in drop or ():
        d.pop(k)
    if kind_changes:
        d["by_kind"]["conv"].update(kind_changes)
    return d


@pytest.mark.parametrize("doc,needle", [
    (_bad({"schema": "ironlaw.estimate/1"}), "schema must be 'ironlaw.validate/1'"),
    (_bad(drop=["by_kind"]), "missing required field 'by_kind'"),
    (_bad({"by_kind": {}}), "by_kind: empty"),
    (_bad({"by_kind": []}), "by_kind: expected an object"),
    (_bad({"total": {"predicted_s": 1.0, "measured_s": 0}}), "total.measured_s: must be a finite number > 0"),
    (_bad(kind_changes={"measured_s": -0.5}), "by_kind.conv.measured_s: must be a finite number ≥ 0"),
    (_bad({"score": {"ops_within_25pct_time_share": 62}}), "between 0 and 1"),
    (_bad(kind_changes={"predicted_s": -1.0}), "by_kind.conv.predicted_s: must be a finite number ≥ 0"),
    (_bad(kind_changes={"predicted_s": "12 ms"}), "by_kind.conv.predicted_s: expected a number"),
    (_bad(kind_changes={"predicted_s": True}), "by_kind.conv.predicted_s: expected a number"),
    (_bad(kind_changes={"spread_s": "1 ms"}), "by_kind.conv.spread_s: expected a number"),
    (_bad({"by_kind": {"conv": 0.1}}), "by_kind.conv: expected an object"),
    (_bad(drop=["total"]), "missing required field 'total'"),
    (_bad({"workload": "gpt2"}), "is about workload 'gpt2'"),
    (_bad({"workload": {"name": "gpt2", "spec": "gpt2"}}), "is about workload 'gpt2'"),
    (_bad({"workload": {"spec": "resnet50"}}), "expected a name or an object with a 'name'"),
    ('{"schema": "ironlaw.validate/1", "total": {"predicted_s": NaN}}', "NaN is not a number"),
    ('{"schema": "ironlaw.validate/1", "total": ', "malformed JSON"),
    ("[1, 2]", "expected a JSON object"),
])
def test_validation_file_is_read_strictly(resnet, tmp_path, doc, needle):
    with pytest.raises(IronlawError) as e:
        inputs.load_validation(_write(tmp_path, "v.json", doc), resnet)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_validation_file_missing_or_a_directory(resnet, tmp_path):
    with pytest.raises(IronlawError, match="no such validate JSON file"):
        inputs.load_validation(tmp_path / "nope.json", resnet)
    with pytest.raises(IronlawError, match="is a directory"):
        inputs.load_validation(tmp_path, resnet)


@pytest.mark.parametrize("change,needle", [
    ({"schema": "ironlaw.compare/0"}, "schema must be 'ironlaw.compare/1'"),
    ({"speedup": 3.0}, "disagrees with before.time_s / after.time_s"),
    ({"shortens_critical_path": "yes"}, "expected true or false"),
    ({"verdict": None}, "verdict: expected a sentence"),
    ({"before": {"schema": "ironlaw.estimate/1"}}, "missing required field 'time_s'"),
    ({"time_before_s": 1.0, "time_after_s": 1.0}, "disagrees with time_before_s / time_after_s"),
])
def test_compare_file_is_read_strictly(resnet, tmp_path, change, needle):
    doc = _compare_doc(resnet, _est(hw="h200"))
    doc.update(change)
    with pytest.raises(IronlawError) as e:
        inputs.load_compare(_write(tmp_path, "c.json", doc), resnet)
    assert needle in str(e.value)


def test_compare_file_must_match_the_report(resnet, tmp_path):
    doc = _compare_doc(resnet, _est(hw="a100"))
    assert doc["speedup"] != 1
    with pytest.raises(IronlawError, match="contradicts speedup"):
        inputs.load_compare(_write(tmp_path, "c.json", {**doc, "shortens_critical_path": doc["speedup"] < 1}), resnet)
    with pytest.raises(IronlawError, match="is on hardware 'h100'.*'h200'"):
        inputs.load_compare(_write(tmp_path, "c.json", doc), _est(hw="h200"))
    with pytest.raises(IronlawError, match="is about workload 'resnet50'"):
        inputs.load_compare(_write(tmp_path, "c.json", doc), _est("gemm:64,64,64"))
    with pytest.raises(IronlawError, match=r"before.workload.batch: is 1, but the report is for batch 8"):
        inputs.load_compare(_write(tmp_path, "c.json", doc), _est(batch=8))
    with pytest.raises(IronlawError, match=r"before.workload.phase: is 'infer', but the report is for phase 'train'"):
        inputs.load_compare(_write(tmp_path, "c.json", doc), _est(phase="train"))


def test_validation_file_must_be_the_same_case(tmp_path):
    with pytest.raises(IronlawError, match=r"workload.batch: is 1, but the report is for batch 4"):
        inputs.load_validation(_write(tmp_path, "v.json", VALIDATION), _est(batch=4))


# ------------------------------------------------------------------------------------ bad output paths

@pytest.mark.parametrize("target,needle", [
    ("{tmp}", "is a directory"),
    ("{tmp}/afile/deeper/r.html", "is not a directory"),
    ("{tmp}/afile/r.html", "is not a directory"),
    ("", "empty output path"),
])
def test_unwritable_output_is_one_line_exit_2(tmp_path, target, needle):
    (tmp_path / "afile").write_text("x")
    r = run_cli("report", "gemm:64,64,64", "--html", target.format(tmp=tmp_path))
    assert r.rc == 2
    assert r.err.count("\n") == 1 and needle in r.err and "Traceback" not in r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_failure_keeps_the_old_report_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "r.html"
    out.write_text("OLD")
    bad = _write(tmp_path, "v.json", _bad(kind_changes={"measured_s": -1}))
    r = run_cli("report", "resnet50", "--html", str(out), "--validate", str(bad))
    assert r.rc == 2 and "measured_s" in r.err and r.err.count("\n") == 1
    assert out.read_text() == "OLD"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "v.json"]


@pytest.mark.parametrize("fault", ["fsync", "replace"])
def test_atomic_write_under_a_fault(tmp_path, monkeypatch, fault):
    out = tmp_path / "r.html"
    out.write_text("OLD")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(page.os, fault, boom)
    with pytest.raises(IronlawError, match="cannot write.*No space left on device"):
        page.write(out, "<html>NEW</html>")
    assert out.read_text() == "OLD"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_directory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        r = run_cli("report", "gemm:64,64,64", "--html", str(ro / "r.html"))
        assert r.rc == 2 and "cannot write" in r.err and r.err.count("\n") == 1
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)


def test_written_file_gets_ordinary_permissions(tmp_path):
    out = page.write(tmp_path / "r.html", "<html></html>")
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


# ------------------------------------------------------------------------------------ in a real browser

@pytest.fixture(scope="module")
def chromium():
    exe = CHROMIUM if Path(CHROMIUM).exists() else None
    if exe is None:
        reason = (f"{CHROMIUM} not found: browser checks of the HTML report skipped "
                  f"(install with: apt-get install -y chromium chromium-driver)")
        warnings.warn(reason)
        pytest.skip(reason)
    return exe


def _browse(exe, tmp_path, url, screenshot=None, size=(1200, 1600)):
    """Open ``url`` once: (DOM after scripts ran, console lines, URLs the page requested)."""
    tag = f"{len(list(tmp_path.glob('netlog*')))}"
    netlog = tmp_path / f"netlog{tag}.json"
    args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
            f"--user-data-dir={tmp_path / ('profile' + tag)}", "--host-resolver-rules=MAP * ~NOTFOUND",
            "--hide-scrollbars", "--enable-logging=stderr", "--v=0", f"--log-net-log={netlog}",
            f"--window-size={size[0]},{size[1]}", "--dump-dom"]
    if screenshot:
        args.append(f"--screenshot={screenshot}")
    env = dict(os.environ, HOME=str(tmp_path))
    r = subprocess.run(args + [url], capture_output=True, text=True, timeout=90, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    console = [ln for ln in r.stderr.splitlines() if ":CONSOLE" in ln]
    return r.stdout, console, _page_requests(netlog)


def _page_requests(netlog: Path) -> list[str]:
    """URLs requested on behalf of a file:// page (the browser's own housekeeping is not the page's)."""
    d = json.loads(netlog.read_text())
    start = d["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in d["events"]
            if e["type"] == start and e.get("params", {}).get("network_isolation_key", "").startswith("file://")
            and not e["params"].get("url", "").startswith("file:")]


def _png_facts(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct byte values in the image data) of a PNG, with the standard library."""
    b = path.read_bytes()
    assert b[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", b[16:24])
    i, idat = 8, b""
    while i < len(b):
        n, kind = struct.unpack(">I4s", b[i:i + 8])
        if kind == b"IDAT":
            idat += b[i + 8:i + 8 + n]
        i += 12 + n
    return w, h, len(set(zlib.decompress(idat)))


def test_report_opens_in_chromium_without_errors(chromium, tmp_path):
    out = tmp_path / "report.html"
    cmp = _write(tmp_path, "c.json", _compare_doc(_est(), _est(hw="h200")))
    val = _write(tmp_path, "v.json", VALIDATION)
    r = run_cli("report", "resnet50", "--on", "h100", "--html", str(out), "--compare", str(cmp), "--validate", str(val))
    assert r.rc == 0, r.err
    shot = tmp_path / "shot.png"
    dom, console, requests = _browse(chromium, tmp_path, out.as_uri(), screenshot=shot, size=(1200, 1600))
    assert console == [], console
    assert requests == [], requests
    assert 'data-ready="1"' in dom.split(">", 2)[1], "the page's script did not run to its end"
    for i in SECTION_IDS + ("whatif", "verdict", "validation", "validation-table"):
        assert f'id="{i}"' in dom, i
    n_ops = len(_est().graph.ops)
    assert dom.count('class="op"') == n_ops                          # every ResNet-50 op row is a point
    assert 'aria-sort="none" tabindex="0"' in dom                     # headers became sort buttons
    w, h, distinct = _png_facts(shot)
    assert (w, h) == (1200, 1600)
    assert shot.stat().st_size > 30_000 and distinct > 100, "the screenshot looks blank"


@pytest.mark.parametrize("key,order", [("flops", "asc"), ("bytes", "desc"), ("name", "asc")])
def test_ops_table_sorts_in_the_browser(fast, chromium, tmp_path, key, order):
    out = page.write(tmp_path / "r.html", page.render(_est("gpt2", phase="prefill", seq=128)))
    dom, console, _ = _browse(chromium, tmp_path, out.as_uri() + f"#sort={key}:{order}", size=(800, 600))
    assert console == []
    table = dom[dom.index('id="ops-table"'):]
    table = table[:table.index("</table>")]
    col = [k for k, _ in page.OPS_HEAD].index(key)
    cells = []
    for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]:
        attrs, text = re.findall(r"<td([^>]*)>(.*?)</td>", row)[col]
        cells.append(text.lower() if key == "name" else float(re.search(r'data-v="([^"]+)"', attrs).group(1)))
    assert len(cells) > 5
    assert cells == sorted(cells, reverse=(order == "desc"))
    assert f'data-key="{key}" aria-sort="{"ascending" if order == "asc" else "descending"}"' in table


def test_browser_checks_can_fail(chromium, tmp_path):
    """Negative control: a page with a script error and an external image is caught by both checks."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><img src="http://example.invalid/x.png">'
                   "<script>undefinedFunction();document.documentElement.setAttribute('data-ready','1');"
                   "</script></body></html>")
    dom, console, requests = _browse(chromium, tmp_path, bad.as_uri(), size=(400, 300))
    assert any("Uncaught ReferenceError" in c for c in console)
    assert requests == ["http://example.invalid/x.png"]
    assert 'data-ready="1"' not in dom


def test_whatif_in_process(tmp_path):
    pytest.importorskip("ironlaw.models.whatif.compare", reason="ironlaw.models.whatif not in this build")
    out = tmp_path / "w.html"
    r = run_cli("report", "llama3-8b", "--phase", "decode", "--html", str(out), "--what-if", "quant=int8")
    assert r.rc == 0, r.err
    text = out.read_text()
    sec = text[text.index('id="whatif"'):text.index('id="sources"')]
    assert "quant=int8" in sec and "Computed by ironlaw.models.whatif in this run" in sec
    r = run_cli("report", "llama3-8b", "--html", str(out), "--what-if", "quant=int8", "--compare", str(out))
    assert r.rc == 2 and "not both" in r.err
    # a document written by `ironlaw compare --format json` is accepted as it is
    r = run_cli("compare", "llama3-8b", "--phase", "decode", "--what-if", "quant=int8", "--format", "json")
    assert r.rc == 0, r.err
    saved = _write(tmp_path, "c.json", r.out)
    r = run_cli("report", "llama3-8b", "--phase", "decode", "--html", str(out), "--compare", str(saved))
    assert r.rc == 0, r.err
    assert f"From {saved}" in out.read_text()


def test_html_and_plot_create_a_missing_folder_as_out_does(tmp_path):
    """One rule for every written file (``core.files``): a missing folder is made, and the command says what it
    wrote, as ``calibrate --out`` / ``probe --out`` do."""
    r = run_cli("report", "gemm:64,64,64", "--html", str(tmp_path / "new" / "deeper" / "r.html"))
    assert r.rc == 0 and (tmp_path / "new" / "deeper" / "r.html").is_file()
    assert f"wrote {tmp_path / 'new' / 'deeper' / 'r.html'}" in r.out
    from ironlaw.core.files import check_plot
    assert check_plot(tmp_path / "plots" / "p.svg", (".svg",)) == tmp_path / "plots" / "p.svg"  # --plot's check
