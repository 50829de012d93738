"""Micro-workloads of one collective: ``allreduce:BYTES`` (and ``allgather:``, ``reducescatter:``,
``alltoall:``, ``sendrecv:``) over ``--gpus N [--nodes M]`` devices of the chosen hardware.

BYTES is a number of bytes or a quantity with units (``64MB``, ``2KiB``). ``allreduce:BYTES,ring`` or
``,tree`` fixes the algorithm; plain ``allreduce`` takes the faster, as NCCL's tuner does. See
``ironlaw.machine.network.collectives`` for what BYTES means for each collective.
"""
from __future__ import annotations

from ...core import units
from ...core.errors import IronlawError
from ...core.graph import Graph, Op
from .registry import Request, check_phase, prefix

MAX_BYTES = 1 << 50


def _parse(kind: str, arg: str, req: Request) -> tuple[str, float, int, int]:
    parts = [p.strip() for p in arg.split(",")]
    algo = ""
    if kind == "allreduce" and len(parts) == 2:
        algo = parts.pop()
        if algo not in ("ring", "tree"):
            raise IronlawError(f"allreduce algorithm '{algo}': expected ring or tree (allreduce:BYTES[,ring|tree])")
    if len(parts) != 1 or not parts[0]:
        raise IronlawError(f"'{kind}:{arg}': expected {kind}:BYTES, e.g. {kind}:64MB")
    nbytes = units.positive(units.parse(parts[0], "bytes", f"{kind} message size"), f"{kind} message size", MAX_BYTES,
                            parts[0], units.fmt_size(MAX_BYTES))
    if abs(nbytes - round(nbytes)) > 1e-9 * nbytes:       # 0.1KB reads as 100.00000000000001
        raise IronlawError(f"{kind} message size must be a whole number of bytes, got {parts[0]} "
                           f"({nbytes:.6g} bytes)")
    nbytes = float(round(nbytes))
    check_phase(req, ("infer",), "infer", kind)
    from .micro import unread_sizes
    unread_sizes(req, f"{kind}:{arg}", "its BYTES over --gpus")
    if req.dtype is not None:                    # the time is the bytes' over the links, whatever their elements
        raise IronlawError(f"--dtype does not apply to {kind}:{arg}: its size is BYTES, whatever the elements; "
                           f"drop --dtype (fp8 halves a bf16 message: give half the bytes)")
    opts = req.options or {}
    if opts.get("gpus") is None:
        raise IronlawError(f"{kind}:{arg} needs the number of devices: add --gpus N (and --nodes M across nodes)")
    from ...machine.network.topology import check_count    # imported by a collective's build only
    gpus = check_count(opts["gpus"], "--gpus")
    if gpus == 1:
        raise IronlawError(f"{kind}:{arg} over one device moves nothing; use --gpus 2 or more")
    nodes = check_count(1 if opts.get("nodes") is None else opts["nodes"], "--nodes")
    if gpus % nodes and nodes <= gpus:
        raise IronlawError(f"--gpus {gpus} does not divide evenly over --nodes {nodes}; use a multiple of {nodes}")
    if kind == "sendrecv" and gpus != 2:
        raise IronlawError(f"sendrecv is between two devices: use --gpus 2 (with --nodes 2 for a pair across nodes), "
                           f"got --gpus {gpus}")
    return kind + (f"-{algo}" if algo else ""), nbytes, gpus, nodes


def _graph(kind: str, arg: str, req: Request) -> Graph:
    name, nbytes, gpus, nodes = _parse(kind, arg, req)
    op = Op(f"{name} {units.fmt(nbytes, 'B')}", "collective", network_bytes=nbytes, dtype="bf16",
            collective=name, group=(gpus, nodes), shapes=f"[{nbytes:.0f} B] over {gpus} devices on {nodes} node(s)")
    return Graph(f"{kind}:{arg}", "infer", "bf16", [op],
                 meta={"bytes": nbytes, "gpus": gpus, "nodes": nodes, "collective": name})


def _register(kind: str, what: str) -> None:
    @prefix(kind, f"{kind}:BYTES — {what} over --gpus N [--nodes M] devices (alpha-beta model over the catalog links)")
    def build(arg: str, req: Request, _kind=kind) -> Graph:
        return _graph(_kind, arg, req)


_register("allreduce", "one all-reduce of BYTES (,ring or ,tree to fix the algorithm)")
_register("allgather", "one all-gather whose output is BYTES")
_register("reducescatter", "one reduce-scatter whose input is BYTES")
_register("alltoall", "one all-to-all in which each device sends BYTES in total")
_register("sendrecv", "one point-to-point transfer of BYTES between two devices")
