"""`ironlaw calibrate --kernels DIR [--gpu NAME] [--out FILE.toml]`: fit a GPU's GEMM and attention terms on
measured kernel tables (aiconfigurator-core's layout and columns, or a user's own in the same columns), score
the held-out rows, and write a calibrated hardware profile that ``--on FILE.toml`` then uses."""
from __future__ import annotations

from typing import Optional

import typer

from ..core.units import counted
from .common import app, check_format, console, emit_json
from .options import Format


@app.command("calibrate", short_help="Fit GEMM and attention η on measured kernel tables.")
def calibrate_cmd(
    kernels: str = typer.Option(..., "--kernels", help="a folder of kernel tables (aiconfigurator-core's layout, "
                                "<gpu>/<family>/<framework>/<version>/ holding <op>_perf.parquet or .csv, or "
                                "<op>_perf.csv files at any depth of your own folder) or one such file"),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="catalog GPU or hardware .toml: whose tables to fit and "
                                      "the profile to start from (needed where the tables name a GPU the catalog lacks)"),
    framework: Optional[str] = typer.Option(None, "--framework",
                                             help="the framework whose kernels to fit: trtllm | sglang | vllm | "
                                             "aiter (AMD) (default: trtllm's, else the one framework the folder "
                                             "holds; leave it out for tables of your own that name none, in a column or a folder)"),
    out: Optional[str] = typer.Option(None, "--out", help="write the calibrated hardware profile to this .toml "
                                      "(the default engine's kernels: --framework trtllm, or aiter on AMD)"),
    fmt: Format = "text",
):
    """Fit GEMM η per dtype and attention per phase and KV dtype on measured kernel latencies."""
    check_format(fmt)
    from .. import api

    res = api.calibrate(kernels, gpu=gpu, framework=framework, out=out)
    if fmt == "json":
        emit_json(res.to_dict())
        return
    if fmt == "md":
        print(_markdown(res))
        return
    con = console()
    con.print(f"{res.hardware}: fitted on the even rows of {counted(res.groups, 'kernel class', 'kernel classes')} "
              f"({_framework(res)})")
    con.print("held-out rows, median / p90 |err|:")
    for s in res.held_out:              # a class name past the column (…, one head per KV head) on a line of its own
        scores = (f"{s.rows:>6} row{'s' if s.rows != 1 else ' '}  "
                  f"{100 * s.median_abs_err:5.1f}% / {100 * s.p90_abs_err:5.1f}%")
        con.print(f"  {s.group:<40} {scores}" if len(s.group) <= 40 else f"  {s.group}\n  {'':<40} {scores}")
    for line in fit_notes(res):
        con.print(line)
    for k in res.skipped:
        con.print(f"left out: {_skipped(k)}")
    if res.gemm_forms:
        con.print("GEMM form per class (the lower held-out p90 kept), median / p90 |err|:")
    for c in res.gemm_forms:
        scores = ", ".join(f"{f} {_scores(c, f)}" for f in ("half", "stream") if f in c)
        con.print(f"  {c['group']}: {c['form']} form ({scores})")
    if res.saved:
        con.print(f"wrote {res.saved} (use it with --on {res.saved})")


def _markdown(res) -> str:
    """The held-out scores (and the GEMM form chosen per class) as Markdown tables."""
    from rich.table import Table
    from ..report.table import markdown
    t = Table(title=f"{res.hardware}: fitted on the even rows of {counted(res.groups, 'kernel class', 'kernel classes')} "
              f"({_framework(res)}); held-out rows")
    for col in ("kernel class", "rows", "median |err|", "p90 |err|"):
        t.add_column(col, justify="left" if col == "kernel class" else "right")
    for s in res.held_out:
        t.add_row(s.group, f"{s.rows:,}", f"{100 * s.median_abs_err:.1f}%", f"{100 * s.p90_abs_err:.1f}%")
    parts = [markdown(t)]
    if res.gemm_forms:
        f = Table(title="GEMM form per class (the lower held-out p90 kept)")
        for col in ("kernel class", "form", "half: median / p90", "stream: median / p90"):
            f.add_column(col)
        for c in res.gemm_forms:
            f.add_row(c["group"], c["form"], *(_scores(c, k) if k in c else "—" for k in ("half", "stream")))
        parts.append(markdown(f))
    parts += fit_notes(res) + [f"left out: {_skipped(k)}" for k in res.skipped]
    if res.saved:
        parts.append(f"wrote `{res.saved}` (use it with `--on {res.saved}`)")
    return "\n\n".join(parts)


def _scores(choice: dict, form: str) -> str:
    """"median% / p90%" of one GEMM form of ``choice`` (an entry of ``res.gemm_forms``), as stored (to 0.1 %,
    ``kernelfit.forms.FORM_SCORE_DIGITS``)."""
    return f"{100 * choice[form]['median_abs_err']:.1f}% / {100 * choice[form]['p90_abs_err']:.1f}%"


def fit_notes(res) -> list[str]:
    """What the fit assumed of the tables (``KernelCalibration.assumed``) and the classes split within each head
    dim, each M, N or K, or each value of other shape columns (``kernelfit.rows.split_names``): one line each."""
    held = set(res.calibration["held_out"])
    within: dict[str, list[str]] = {}
    for s in res.held_out:
        head = f"{s.group} (odd rows of each "
        each = next((h[len(head):-1] for h in sorted(held) if h.startswith(head)), None)
        if each:
            within.setdefault(each, []).append(s.group)
    lines = list(res.assumed)
    for each, names in within.items():
        if each == "head dim":
            why = "the even/odd rows held most of one head dim out"
        elif each in ("m", "n", "k"):       # a GEMM class's (``kernelfit.rows.SPREAD_OPS``)
            each = each.upper()
            why = f"the even rows held one {each} alone"
        else:
            why = f"the even rows held one {each.split(' and ')[-1]} alone"
        lines.append(f"split within each {each} ({why}): {'; '.join(names)}")
    return lines


def _framework(res) -> str:
    """'vllm', or what the tables leave unstated: a user's own table names no framework."""
    return "framework unstated: the tables name none" if res.framework == "unstated" else res.framework


def _skipped(k: dict) -> str:
    """One line per left-out dtype of a table: how many rows, where, and why."""
    return f"{counted(k['rows'], 'row')} of gemm_dtype {k['gemm_dtype']} in {k['table']}: {k['why']}"
