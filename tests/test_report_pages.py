"""`--html FILE` on serve (online and --max-throughput), analyze --phase train with parallel options, and
search: one self-contained page each, its key numbers equal to the JSON document the same command prints,
checked in headless Chromium as the analyze report is (tests/test_report_html.py: no console message, no
request, the script ran; here also: ids unique, every internal reference resolves)."""
import html as htmllib
import json
import math
import re

import pytest

from conftest import run_cli
from ironlaw.core import schemas, units
from test_report_html import MAX_BYTES, _browse, chromium  # noqa: F401  (chromium: the browser fixture)

TRAIN = ("analyze", "llama3-8b", "--on", "h100", "--phase", "train", "--gpus", "16", "--tp", "2", "--pp", "2",
         "--seq", "4096", "--global-batch", "64", "--train-tokens", "1T")
PAGES = {
    "serve": (("serve", "llama3-8b", "--on", "h100", "--concurrency", "8"),
              ("summary", "capacity", "energy", "step-decode", "step-prefill", "roofline-decode", "roofline-prefill",
               "frontier", "sources")),
    "serve-max": (("serve", "llama3-8b", "--on", "h100", "--max-throughput"),
                  ("summary", "memory", "steps", "step-1", "roofline-step-1", "frontier", "constants", "sources")),
    "train": (TRAIN, ("summary", "plan", "timeline", "collectives", "memory", "energy", "run", "terms", "roofline", "by-kind",
                      "top-ops", "sources")),
    "search-train": (("search", "llama3-8b", "--phase", "train", "--on", "h100", "--gpus", "16", "--global-batch",
                      "256"), ("summary", "setup", "ranked", "why", "why-parts")),
    "search-serve": (("search", "llama3-8b", "--phase", "serve", "--on", "h100", "--gpus", "4", "--slo",
                      "ttft=1s,itl=50ms"), ("summary", "setup", "ranked", "why")),
}
CELL = re.compile(r'data-json="([^"]+)" data-unit="([^"]+)" data-v="([^"]+)">([^<]*)<')


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """name -> (html text, the JSON document the same command printed, path)."""
    d = tmp_path_factory.mktemp("pages")
    out = {}
    for name, (args, _) in PAGES.items():
        p = d / f"{name}.html"
        r = run_cli(*args, "--html", str(p), "--format", "json")
        assert r.rc == 0, r.err
        out[name] = (p.read_text(encoding="utf-8"), r.json(), p)
    return out


def _embedded(text: str) -> dict:
    m = re.search(r'<script type="application/json" id="document">(.*?)</script>', text, re.S)
    assert m, "the page embeds its JSON document"
    return json.loads(m.group(1))


def _at(doc, path: str):
    for k in path.split("."):
        doc = doc[int(k)] if isinstance(doc, list) else doc[k]
    return doc


def _reads(text: str, unit: str) -> float:
    """The number a reader sees, in SI units."""
    t = htmllib.unescape(text).replace(",", "").replace("$", "").strip()
    if unit == "%":
        return float(t.rstrip("%")) / 100
    if unit == "s":
        return units.parse(t, "s")
    if unit == "B":
        return units.parse(t, "bytes")
    if unit == "FLOP":
        return units.parse(t + "/s", "flops")
    return float(t.split()[0])


def _key_numbers(text: str, doc: dict, min_cells: int) -> int:
    """Every key number on the page: its exact value equals the JSON document's at its path, and the text
    shown reads as that value to the digits shown."""
    cells = CELL.findall(text)
    assert len(cells) >= min_cells
    for path, unit, v, shown in cells:
        want = float(_at(doc, path))
        assert float(v) == want, path
        assert math.isclose(_reads(shown, unit), want, rel_tol=6e-3, abs_tol=6e-4), (path, shown, want)
    return len(cells)


def _self_contained(text: str) -> None:
    low = text.lower()
    assert "http://" not in low and "https://" not in low and "@import" not in low
    refs = re.findall(r"\b(?:src|href)\s*=\s*[\"']?([^\"'\s>]*)", low)
    assert all(u.startswith("#") for u in refs), "no attribute may point outside the page"
    assert len(text.encode()) <= MAX_BYTES


def _references_resolve(dom: str) -> None:
    ids = re.findall(r'\sid="([^"]+)"', dom)
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, f"ids used more than once: {sorted(dupes)[:5]}"
    refs = set(re.findall(r'href="#([^"]+)"', dom)) | set(re.findall(r"url\(#([^)]+)\)", dom))
    assert refs, "the page links its sections"
    missing = refs - set(ids)
    assert not missing, f"references to nothing: {sorted(missing)[:5]}"


# ------------------------------------------------------------------------------------ content

@pytest.mark.parametrize("name", list(PAGES))
def test_page_is_complete_and_its_numbers_are_the_json_documents(pages, name):
    text, doc, _ = pages[name]
    _self_contained(text)
    for sid in PAGES[name][1]:
        assert f'id="{sid}"' in text, sid
    emb = _embedded(text)
    key = {"serve": "estimate", "serve-max": "estimate", "train": "step"}.get(name)
    assert (emb[key] if key else emb) == doc            # the page carries the document the command printed
    schemas.validate(emb)                                # ironlaw.serve-report/1, train-report/1, search/1
    _key_numbers(text, emb, 5)
    _references_resolve(text)


def test_serve_page_says_what_ttft_and_itl_add_up_from(pages):
    """`serve --html` showed neither account the text and the JSON carry (``ttft_why``, ``itl_why``)."""
    text, doc, _ = pages["serve"]
    shown = re.sub(r"<script.*?</script>", "", text, flags=re.S)             # the page, not its embedded document
    assert doc["ttft_why"].startswith("TTFT ") and doc["itl_why"].startswith("inter-token ")
    assert htmllib.escape(doc["ttft_why"]) in shown and htmllib.escape(doc["itl_why"]) in shown


def test_serve_frontier_is_the_sweeps(pages):
    """The online report's frontier is `serve --sweep-concurrency`'s document; the current point is on it."""
    emb = _embedded(pages["serve"][0])
    args = PAGES["serve"][0]
    assert args[-2:] == ("--concurrency", "8")              # the sweep covers every concurrency: no --concurrency
    r = run_cli(*args[:-2], "--sweep-concurrency", "--format", "json")
    assert r.rc == 0, r.err
    assert emb["frontier"] == r.json()
    point = next(p for p in emb["frontier"]["points"] if p["concurrency"] == 8)
    assert point["itl_s"] == emb["estimate"]["itl_s"] and point["ttft_s"] == emb["estimate"]["ttft_s"]


def test_max_throughput_frontier_caps_the_batch(pages):
    """One point per max batch size 1, 2, 4, … up to the run's batch; a point is the run with that cap."""
    text, doc, _ = pages["serve-max"]
    f = _embedded(text)["frontier"]
    assert f["schema"] == "ironlaw.serve-batch-frontier/1"
    caps = [p["max_batch"] for p in f["points"]]
    assert caps[0] == 1 and caps[-1] == doc["batch_per_engine"] and caps == sorted(caps)
    last = f["points"][-1]
    assert last["tokens_per_s_per_device"] == doc["output_tokens_per_s_per_gpu"]
    p = f["points"][3]
    r = run_cli(*PAGES["serve-max"][0], "--max-batch", str(p["max_batch"]), "--max-num-tokens",
                str(doc["engine"]["max_num_tokens"]), "--requests", str(doc["requests"]), "--format", "json")
    assert r.rc == 0, r.err
    assert r.json()["output_tokens_per_s_per_gpu"] == pytest.approx(p["tokens_per_s_per_device"], rel=1e-12)
    rates = [q["tokens_per_s_per_device"] for q in f["points"]]
    users = [q["tokens_per_s_per_user"] for q in f["points"]]
    assert rates[-1] > rates[0] and users[-1] < users[0]           # the trade the frontier shows


def test_train_timeline_adds_up_to_the_step(pages):
    text, doc, _ = pages["train"]
    t = _embedded(text)["timeline"]
    b = doc["breakdown"]
    parts = {p["part"]: p["seconds"] for p in t}
    assert sum(parts.values()) == pytest.approx(doc["step_s"], rel=1e-12)
    assert all(s >= 0 for s in parts.values())
    assert parts["pipeline bubble"] == b["pipeline_bubble_s"] > 0            # pp 2
    assert parts["DP gradients, exposed"] == b["dp_grad_exposed_s"] > 0     # dp 4
    assert parts["TP/EP collectives"] == b["tp_ep_network_s"] > 0           # tp 2
    assert parts["optimizer"] == b["optimizer_s"] > 0
    assert parts["kernels"] + parts["per-op latency"] + parts["TP/EP collectives"] == \
        pytest.approx(b["compute_and_tp_s"], rel=1e-12)                       # no all-to-all without a partner
    assert parts["per-op latency"] > 0


def test_search_says_why_the_best_wins(pages):
    for name in ("search-train", "search-serve"):
        text, doc, _ = pages[name]
        a, b = doc["top"][0], doc["top"][1]
        why = text[text.index('id="why"'):]
        gain = 100 * (a["tokens_per_s_per_gpu"] / b["tokens_per_s_per_gpu"] - 1)
        assert f"gives {gain:.1f}% more tokens/s per GPU than #2" in why
        assert "From #2 to #1: " in why and "the same layout settings" not in why
        assert text.count('<tr id="rank-') == len(doc["top"])


def test_train_search_compares_the_step_part_by_part(pages):
    text, doc, _ = pages["search-train"]
    a, b = doc["top"][0]["breakdown"], doc["top"][1]["breakdown"]
    table = text[text.index('id="why-parts"'):]
    table = table[:table.index("</table>")]
    paths = re.findall(r'data-json="top\.0\.breakdown\.([a-z_]+)"', table)
    assert paths[-1] == "step_s"
    diffs = [abs(a.get(k, 0) - b.get(k, 0)) for k in paths[:-1]]
    assert diffs == sorted(diffs, reverse=True) and diffs[0] > 0      # the largest difference first


def test_plain_analyze_writes_the_analyze_report(tmp_path):
    out = tmp_path / "a.html"
    r = run_cli("analyze", "gpt2", "--on", "h100", "--html", str(out))
    assert r.rc == 0, r.err
    assert 'id="roofline"' in out.read_text() and 'id="top-ops"' in out.read_text()


# ------------------------------------------------------------------------------------ bad output paths

@pytest.mark.parametrize("args", [PAGES["serve"][0], PAGES["serve-max"][0], TRAIN, PAGES["search-train"][0]],
                         ids=["serve", "serve-max", "train", "search"])
@pytest.mark.parametrize("target,needle", [("{tmp}/afile/r.html", "is not a directory"), ("{tmp}", "is a directory")])
def test_unwritable_html_is_one_line_exit_2_before_any_work(tmp_path, args, target, needle):
    (tmp_path / "afile").write_text("x")
    r = run_cli(*args, "--html", target.format(tmp=tmp_path))
    assert r.rc == 2 and r.out == ""                          # refused before anything was predicted or printed
    assert r.err.count("\n") == 1 and needle in r.err and "--html" in r.err and "Traceback" not in r.err
    assert [p.name for p in tmp_path.iterdir()] == ["afile"]


# ------------------------------------------------------------------------------------ in a real browser

@pytest.mark.parametrize("name", list(PAGES))
def test_page_opens_in_chromium_with_its_numbers(chromium, pages, tmp_path, name):  # noqa: F811
    text, doc, path = pages[name]
    dom, console, requests = _browse(chromium, tmp_path, path.as_uri(), size=(1200, 1600))
    assert console == [], console
    assert requests == [], requests
    assert 'data-ready="1"' in dom.split(">", 2)[1], "the page's script did not run to its end"
    for sid in PAGES[name][1]:
        assert f'id="{sid}"' in dom, sid
    _references_resolve(dom)
    emb = _embedded(dom)
    key = {"serve": "estimate", "serve-max": "estimate", "train": "step"}.get(name)
    assert (emb[key] if key else emb) == doc
    n = _key_numbers(dom, emb, 5)
    assert n == len(CELL.findall(text))                       # every key number survived the browser


def test_the_checks_can_fail():
    """Negative controls: a duplicate id, a link to nothing, a number shown wrong, a value not the document's."""
    with pytest.raises(AssertionError, match="more than once"):
        _references_resolve('<p id="a"></p><p id="a"></p><a href="#a">a</a>')
    with pytest.raises(AssertionError, match="references to nothing"):
        _references_resolve('<p id="a"></p><a href="#b">b</a>')
    cell = '<td data-json="x.t" data-unit="s" data-v="0.0309">{}</td>'
    assert _key_numbers(cell.format("30.9 ms"), {"x": {"t": 0.0309}}, 1) == 1
    with pytest.raises(AssertionError):
        _key_numbers(cell.format("31.9 ms"), {"x": {"t": 0.0309}}, 1)
    with pytest.raises(AssertionError):
        _key_numbers(cell.format("30.9 ms"), {"x": {"t": 0.031}}, 1)


def test_the_python_api_writes_the_same_pages(tmp_path):
    import ironlaw
    res = ironlaw.search("llama3-8b", phase="serve", on="h100", gpus=4, slo="ttft=1s,itl=50ms", html=tmp_path / "s.html")
    assert _embedded((tmp_path / "s.html").read_text()) == json.loads(json.dumps(res.to_dict()))
    step = ironlaw.train("llama3-8b", on="h100", gpus=16, tp=2, pp=2, seq=4096, global_batch=64, html=tmp_path / "t.html")
    emb = _embedded((tmp_path / "t.html").read_text())
    assert emb["step"] == json.loads(json.dumps(step.to_dict()))
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ironlaw.IronlawError, match="is not a directory"):
        ironlaw.serve("llama3-8b", on="h100", html=tmp_path / "afile" / "s.html")
