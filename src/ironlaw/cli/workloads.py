"""`ironlaw workloads list`."""
from __future__ import annotations

from .common import check_format, console, emit_json, workloads_app
from .options import Format


@workloads_app.command("list")
def list_(fmt: Format = "text"):
    """Built-in workloads and the spec prefixes that build others."""
    from ..models import workloads

    check_format(fmt)
    rows = workloads.catalog()
    if fmt == "json":
        emit_json({"schema": "ironlaw.workloads-list/1", "workloads": rows})
        return
    from rich.table import Table
    from rich import box
    t = Table(title="workloads", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("name", "family", "phases", "description"):
        t.add_column(col, no_wrap=col in ("name", "family"), overflow="fold")
    for r in rows:
        t.add_row(r["name"], r["family"], ", ".join(r["phases"]), r["description"])
    if fmt == "md":
        from ..report.table import markdown
        print(markdown(t))
        return
    console().print(t)
