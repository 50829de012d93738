"""`ironlaw calibrate --kernels DIR [--gpu NAME] [--out FILE.toml]`: fit a GPU's GEMM and attention terms on
measured kernel tables (aiconfigurator-core's layout and columns, or a user's own in the same columns), score
the held-out rows, and write a calibrated hardware profile that ``--on FILE.toml`` then uses."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .common import app, check_format, console, emit_json


@app.command("calibrate")
def calibrate_cmd(
    kernels: str = typer.Option(..., "--kernels", help="a folder of kernel tables (<gpu>/<family>/<framework>/"
                                "<version>/<op>_perf.parquet|.csv, aiconfigurator-core's layout) or one such file"),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="catalog GPU or hardware .toml: whose tables to fit and "
                                      "the profile to start from (needed where the tables name a GPU the catalog lacks)"),
    framework: str = typer.Option("trtllm", "--framework", 
                                   help="the framework whose kernels to fit: trtllm | sglang | vllm | aiter (AMD)"),
    out: Optional[str] = typer.Option(None, "--out", help="write the calibrated hardware profile to this .toml"),
    fmt: str = typer.Option("text", "--format", help="text | json"),
):
    """Fit GEMM η per dtype and attention per phase and KV dtype on measured kernel latencies."""
    check_format(fmt, ("text", "json"))
    from ..core.errors import IronlawError
    from ..machine import hardware
    from ..measure.calibrate import kernelfit, kerneltable

    if out is not None and not out.endswith(".toml"):
        raise IronlawError(f"--out {out}: a hardware profile's file name must end in .toml")
    if framework not in kernelfit.FRAMEWORKS:
        raise IronlawError(f"--framework must be one of {', '.join(kernelfit.FRAMEWORKS)}, got '{framework}'")
    tables = kerneltable.read(kernels, ops=kernelfit.OPS, gpu=gpu, framework=framework)
    gpus = sorted({t.gpu for t in tables})
    if len(gpus) > 1:
        raise IronlawError(f"{kernels}: tables of {len(gpus)} GPUs ({', '.join(gpus)}); name one with --gpu")
    base = hardware.get(gpu if gpu is not None else gpus[0])
    origin, license = kernelfit.origin_of(kernels)
    gs = kernelfit.groups(tables)
    new = kernelfit.fit(base, gs, origin=origin, license=license)
    table = kernelfit.merged(base.calibration.table() if base.calibration is not None else None, new)
    scores = kernelfit.score(base, table, gs)
    saved = _write(base, table, out) if out else None
    doc = {"schema": "ironlaw.calibrate-kernels/1", "hardware": base.name, "framework": framework,
           "held_out": [s.__dict__ for s in scores], "calibration": table, "saved": saved}
    if fmt == "json":
        emit_json(doc)
        return
    con = console()
    con.print(f"{base.name}: fitted on the even rows of {len(gs)} kernel classes ({framework}); held-out rows:")
    for s in scores:
        con.print(f"  {s.group:<40} {s.rows:>6} rows  median |err| {100 * s.median_abs_err:5.1f}%  "
                      f"p90 {100 * s.p90_abs_err:5.1f}%")
    if saved:
        con.print(f"wrote {saved} (use it with --on {saved})")


def _write(base, table: dict, out: str) -> str:
    """The base profile's TOML with its [calibration] replaced by ``table``, written to ``out``."""
    from ..core.errors import IronlawError
    from ..machine.profile import replace_table, write_atomic
    src = Path(base.path) if base.path else None
    if src is None or not src.is_file():
        raise IronlawError(f"{base.name}: no hardware file to start the profile from; give --gpu FILE.toml")
    target = Path(out)
    if target.resolve() != src.resolve():
        write_atomic(target, src.read_text(encoding="utf-8"))
    return str(replace_table(target, "calibration", table))
