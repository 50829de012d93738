"""`ironlaw calibrate --kernels DIR [--gpu NAME] [--out FILE.toml]`: fit a GPU's GEMM and attention terms on
measured kernel tables (aiconfigurator-core's layout and columns, or a user's own in the same columns), score
the held-out rows, and write a calibrated hardware profile that ``--on FILE.toml`` then uses."""
from __future__ import annotations

from typing import Optional

import typer

from .common import app, check_format, console, emit_json


@app.command("calibrate")
def calibrate_cmd(
    kernels: str = typer.Option(..., "--kernels", help="a folder of kernel tables (<gpu>/<family>/<framework>/"
                                "<version>/<op>_perf.parquet|.csv, aiconfigurator-core's layout, or <op>_perf.csv "
                                "files at any depth of your own folder) or one such file"),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="catalog GPU or hardware .toml: whose tables to fit and "
                                      "the profile to start from (needed where the tables name a GPU the catalog lacks)"),
    framework: str = typer.Option("trtllm", "--framework", 
                                   help="the framework whose kernels to fit: trtllm | sglang | vllm | aiter (AMD)"),
    out: Optional[str] = typer.Option(None, "--out", help="write the calibrated hardware profile to this .toml "
                                      "(the default engine's kernels: --framework trtllm, or aiter on AMD)"),
    fmt: str = typer.Option("text", "--format", help="text | json"),
):
    """Fit GEMM η per dtype and attention per phase and KV dtype on measured kernel latencies."""
    check_format(fmt, ("text", "json"))
    from .. import api

    res = api.calibrate(kernels, gpu=gpu, framework=framework, out=out)
    if fmt == "json":
        emit_json(res.to_dict())
        return
    con = console()
    con.print(f"{res.hardware}: fitted on the even rows of {res.groups} kernel classes ({framework}); held-out rows:")
    for s in res.held_out:
        con.print(f"  {s.group:<40} {s.rows:>6} rows  median |err| {100 * s.median_abs_err:5.1f}%  "
                      f"p90 {100 * s.p90_abs_err:5.1f}%")
    if res.gemm_forms:
        con.print("GEMM form per class (the lower held-out p90 kept), median / p90 |err|:")
    for c in res.gemm_forms:
        scores = ", ".join(f"{f} {100 * c[f]['median_abs_err']:.1f}% / {100 * c[f]['p90_abs_err']:.1f}%"
                           for f in ("half", "stream") if f in c)
        con.print(f"  {c['group']}: {c['form']} form ({scores})")
    if res.saved:
        con.print(f"wrote {res.saved} (use it with --on {res.saved})")
