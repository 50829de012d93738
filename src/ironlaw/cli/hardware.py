"""`ironlaw hardware list|show`."""
from __future__ import annotations

import typer

from .common import check_format, console, emit_json, hardware_app
from .options import Format


@hardware_app.command("list")
def list_(fmt: Format = "text"):
    """All devices in the catalog, with their headline numbers."""
    from ..machine import hardware
    from ..core.units import fmt as f, fmt_size

    check_format(fmt)
    devices = hardware.catalog()
    if fmt == "json":
        emit_json({"schema": "ironlaw.hardware-list/1", "devices": [d.to_dict() for d in devices]})
        return
    from rich.table import Table
    from ..report.table import print_fitted
    t = Table(title="hardware catalog (dense peaks; `ironlaw hardware show NAME` for sources)")
    for c in ("name", "device", "bf16 peak", "fp32 peak", "memory", "bandwidth", "TDP"):
        t.add_column(c, justify="left" if c in ("name", "device") else "right", no_wrap=c != "device")
    for d in devices:
        dev = d.memory[d.device_tier]
        t.add_row(d.name, d.title,
                  f(d.peak_flops["bf16"], "FLOP/s") if "bf16" in d.peak_flops else "—",
                  f(d.peak_flops["fp32"], "FLOP/s") if "fp32" in d.peak_flops else "—",
                  fmt_size(dev.capacity_bytes), f(dev.bw_Bps, "B/s"), f"{d.tdp_w:g} W" if d.tdp_w else "—")
    if fmt == "md":
        from ..report.table import markdown
        print(markdown(t))
        return
    print_fitted(t, console(), ("device", "TDP", "fp32 peak"))


@hardware_app.command("show")
def show(name: str = typer.Argument(..., help="catalog name, alias, 'local', or a .toml file"),
         fmt: Format = "text"):
    """Every number of one device, with its source."""
    from ..machine import hardware

    check_format(fmt)
    d = hardware.get(name)
    if fmt == "json":
        emit_json(d.to_dict())
        return
    parts = _parts(d)
    if fmt == "md":
        from ..report.table import markdown
        print("\n\n".join(p if isinstance(p, str) else markdown(p) for p in parts))
        return
    c = console()
    c.print(parts[0], style="bold", markup=False)
    for p in parts[1:]:
        c.print(p, markup=False) if isinstance(p, str) else c.print(p)


def _parts(d) -> list:
    """The device's title line, its tables (rich Tables, cells without markup) and its sourced lines, in order."""
    from rich.table import Table
    from rich.text import Text
    from ..core.units import fmt as f, fmt_capacity, fmt_time
    from ..machine.network.topology import node_size
    T = Text                                    # sources may hold [brackets] ("the [calibration] table")
    fold = {"source": "fold"}                   # a word longer than the column folds onto the next line, never cut
    parts: list = [f"{d.name} — {d.title} ({d.kind})  {d.path}"]
    t = Table(title="compute (dense)", show_lines=False)
    for col in ("dtype", "peak", "source"):
        t.add_column(col, no_wrap=col != "source", overflow=fold.get(col, "ellipsis"))
    for dt, v in d.peak_flops.items():
        t.add_row(dt, f(v, "FLOP/s"), T(d.sources[f"compute.{dt}"]))
    t.add_row("vector", f(d.vector_flops, "FLOP/s"), T(d.sources["vector"]))
    parts.append(t)
    t = Table(title="memory tiers (fastest first)")
    for col in ("tier", "role", "capacity", "bandwidth", "source"):
        t.add_column(col, no_wrap=col != "source", overflow=fold.get(col, "ellipsis"))
    for m in d.memory:
        t.add_row(m.name, m.role, fmt_capacity(m.capacity_bytes, m.capacity_binary), f(m.bw_Bps, "B/s"),
                  T(m.source))
    parts += [t, f"per-op latency: {fmt_time(d.op_latency_s)} — {d.sources['latency']}"]
    if d.links:
        t = Table(title="links")
        for col in ("link", "kind", "bandwidth", "latency", "source"):
            t.add_column(col, no_wrap=col in ("bandwidth", "latency"), overflow=fold.get(col, "ellipsis"))
        node = node_size(d)
        for l in d.links:
            kind = l.kind + (f" × {l.ports_per_node} per node" if l.ports_per_node else "") + \
                (f", ≤ {l.max_devices} devices per {'node' if l.max_devices >= node else 'bridge'}"
                 if l.max_devices else "")
            t.add_row(l.name, kind, f(l.bw_Bps, "B/s"), fmt_time(l.latency_s), T(l.source))
        net = d.network_calibration()
        parts += [t, f"collectives: calibration '{net['calibration']}' — {net['source']}"]
    eff = ", ".join(f"{k} {v:g}" for k, v in d.efficiency.items())
    parts.append(f"efficiency: {eff} — {d.sources['efficiency']}")
    if d.extra.get("host") is not None:
        h = d.extra["host"]
        parts.append(f"host: {h.cpu}; {fmt_time(h.op_s)} per eager op, {fmt_time(h.module_s)} more per Transformer "
                     f"Engine module, {fmt_time(h.sync_s)} per device→host sync — {h.source}")
    for w, label, key in ((d.tdp_w, "TDP", "power"), (d.idle_w, "idle", "power.idle"),
                          (d.memory_w, "device memory flat out", "power.memory"),
                          (d.compute_w, "compute units flat out", "power.compute")):
        if w is not None and (w or key != "power"):
            parts.append(f"{label}: {w:g} W — {d.sources[key]}")
    return parts
