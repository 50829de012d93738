"""Every command's default text output fits 80 columns, cuts no word, and prints units a reader trusts."""
from __future__ import annotations

import shlex

import pytest

from ironlaw.cli import main

# every command's default text output (and the help of the widest commands)
COMMANDS = [
    "analyze llama3-8b --phase decode --seq 1024 --on h100",
    "analyze dlrm-dcnv2 --batch 2048 --on h100",
    "analyze allreduce:64MB --on a100 --gpus 8",
    "analyze llama3-70b --phase train --on a100 --gpus 64 --nodes 8 --tp 8 --pp 8 --global-batch 64",
    "compare llama3-8b --phase decode --on h100 --what-if quant=int8,target=weights",
    "sweep llama3-8b --phase decode --seq 128 --on h100,b200 --batch 1,2,4,...,1024",
    "serve llama3-8b --on h100 --prompt 1024 --output 256 --concurrency 32 --slo ttft=2s,itl=50ms",
    "serve llama3-8b --on h100 --sweep-concurrency --slo ttft=2s,itl=50ms",
    "serve llama3.1-8b --on h100 --dtype fp8 --prompt 2048 --output 2048 --max-throughput",
    "search llama3-70b --on h100 --gpus 1024 --global-batch 1024 --seq 8192 --top 5",
    "search llama3-70b --phase serve --on h100 --gpus 8 --slo ttft=2s,itl=50ms",
    "search --help", "serve --help", "analyze --help", "--help",
    "workloads list", "hardware list", "hardware show h100", "hardware show gb200",
    "contract --on h100",
]


def run80(monkeypatch, capsys, argv: str) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    try:
        main(shlex.split(argv))
    except SystemExit as e:
        assert e.code in (0, None), f"{argv}: exit {e.code}: {capsys.readouterr().err}"
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", COMMANDS)
def test_default_text_fits_80_columns(monkeypatch, capsys, argv):
    out = run80(monkeypatch, capsys, argv)
    lines = out.splitlines()
    assert len(lines) > 3, out
    wide = [ln for ln in lines if len(ln) > 80]
    assert not wide, f"{argv}: {len(wide)} lines over 80 columns, e.g. {wide[0]!r}"
    cut = [ln for ln in lines if "…" in ln]            # rich's mark of a cell cut short
    assert not cut, f"{argv}: a word cut to fit: {cut[0]!r}"


def test_narrow_top_ops_table_names_what_it_leaves_out_and_a_wide_one_shows_all(monkeypatch, capsys):
    narrow = run80(monkeypatch, capsys, "analyze llama3-8b --phase decode --seq 1024 --on h100")
    assert "not shown at this width: data, compute" in narrow and "mlp_up_proj" in narrow
    monkeypatch.setenv("COLUMNS", "200")
    main(shlex.split("analyze llama3-8b --phase decode --seq 1024 --on h100"))
    wide = capsys.readouterr().out
    assert "not shown at this width" not in wide
    head = next(ln for ln in wide.splitlines() if "┃ op " in ln)
    for col in ("kind", "FLOPs", "bytes", "data", "compute", "latency", "time", "bound"):
        assert f" {col} " in head


def test_search_layouts_carry_a_legend(monkeypatch, capsys):
    out = run80(monkeypatch, capsys, "search llama3-70b --on h100 --gpus 1024 --global-batch 1024 --seq 8192 --top 3")
    flat = " ".join(out.split())
    assert "tp tensor-parallel" in flat and "mb micro-batch" in flat and "ZeRO stage" in flat


def test_memory_prints_in_gib_as_the_vendor_means_it(monkeypatch, capsys):
    # an H100 "80 GB" holds 79.6 GiB as its driver reports: its capacity reads 79.6 GiB, never 85.5 GB
    out = run80(monkeypatch, capsys, "serve llama3-8b --on h100 --prompt 1024 --output 256 --concurrency 32")
    assert "capacity: 79.6 GiB" in out and "85.5 GB" not in out
    out = run80(monkeypatch, capsys, "search llama3-70b --phase serve --on h100 --gpus 8")
    mem = [tok for ln in out.splitlines() if ln.strip()[:1].isdigit() for tok in ln.split() if tok.endswith("GB")]
    assert not mem and "GiB" in out


def test_sweep_names_its_energy_column_per_token(monkeypatch, capsys):
    out = run80(monkeypatch, capsys, "sweep llama3-8b --phase decode --seq 128 --on h100 --batch 1,64,1024")
    head = next(ln for ln in out.splitlines() if "hardware" in ln and "batch" in ln)
    assert "J/token" in head.split() and "J" not in head.split()


def test_one_number_style_in_text(monkeypatch, capsys):
    import re
    out = run80(monkeypatch, capsys, "serve llama3-8b --on h100 --sweep-concurrency")
    assert not re.search(r"\d\.\d+e[+-]\d", out), "no exponent in text"
    assert not re.search(r"\b\d{4,}\.\d", out), "no unseparated thousands with decimals (1568.2)"
    assert re.search(r"\d,\d{3}\b", out), "thousands carry separators"


def test_fit_drops_named_columns_in_order_and_only_as_many_as_needed():
    from rich.console import Console
    from rich.table import Table
    from ironlaw.report.table import fit

    def table():
        t = Table()
        for h in ("name", "a", "b", "c"):
            t.add_column(h, no_wrap=True)
        t.add_row("x" * 20, "1" * 12, "2" * 12, "3" * 12)
        return t

    assert fit(table(), Console(width=200), ("c", "b", "a")) == []
    t = table()
    assert fit(t, Console(width=60), ("c", "b", "a")) == ["c"]          # 4 columns need 69, 3 need 54
    assert [str(c.header) for c in t.columns] == ["name", "a", "b"]
    t = table()
    assert fit(t, Console(width=30), ("c", "b", "a")) == ["c", "b", "a"]
    import io
    out = Console(width=30, record=True, file=io.StringIO())
    out.print(t)
    text = out.export_text()
    assert "x" * 20 in text and "…" not in text and max(map(len, text.splitlines())) <= 30


def test_every_word_of_every_help_prints_whole():
    """At 80 columns each command's --help breaks lines at spaces only: no option name, value or path is split at a
    hyphen ('--kv-' / 'fraction)', 'usd-per-' / 'million-tokens') or cut to the column ('<ver' / 'sion>')."""
    import click
    import typer.main
    from ironlaw.cli import common, load
    load()

    def commands(cmd, parent, name):
        ctx = click.Context(cmd, parent=parent, info_name=name, terminal_width=80, max_content_width=80)
        for sub_name, sub in getattr(cmd, "commands", {}).items():
            yield from commands(sub, ctx, sub_name)
        yield ctx
    for ctx in commands(typer.main.get_command(common.app), None, "ironlaw"):
        text = ctx.get_help()
        assert max(len(ln) for ln in text.splitlines()) <= 80, ctx.command_path
        out = " ".join(text.split())
        cmd = ctx.command
        words = {w for t in [cmd.help or ""] + [p.help or "" for p in cmd.params] for w in t.split()}
        words |= {o for p in cmd.params for o in (*p.opts, *getattr(p, "secondary_opts", ())) if o.startswith("--")}
        cut = sorted(w for w in words if w not in out)
        assert not cut, f"{ctx.command_path} --help: {cut}"
