"""The front door's shared readings of the options: parallel, builder and run-cost options, ``on=``, grids."""
from __future__ import annotations

from typing import Optional

# the names of analyze's parallel options, in the order the CLI passes them on
PARALLEL = ("gpus", "nodes", "tp", "pp", "cp", "dp", "ep", "global_batch", "micro_batch", "interleave", "recompute",
            "zero", "fsdp", "expert_imbalance", "tp_comm_overlap", "overlap_p2p", "grad_fp32", "moe_a2a_overlap",
            "cuda_graph", "redundant_experts", "offload_activations", "sequence_parallel", "param_gather_exposed",
            "moe_dispatcher")


def parallel(given: dict) -> dict:
    """The parallel options given (None and False are not given), in the CLI's order; the plan calls
    ``--offload-activations`` ``offload_layers``."""
    out = {k: given[k] for k in PARALLEL if k in given and given[k] is not None and given[k] is not False}
    return {("offload_layers" if k == "offload_activations" else k): v for k, v in out.items()}


def builder(fn: str, spec: str, options: Optional[dict], named: dict) -> dict:
    """The builder options: ``options`` and the named keywords, these checked against the builder's own."""
    opts = dict(options or {})
    if named:
        from ..models import workloads
        accepted = workloads.builder_options(spec)
        bad = sorted(set(named) - set(accepted))
        if bad:
            takes = ", ".join(accepted) if accepted else "none"
            raise TypeError(f"{fn}() got an unexpected keyword argument '{bad[0]}' (the builder options of "
                            f"{spec}: {takes})")
        opts.update(named)
    return opts


def run_inputs(given: dict, phase: Optional[str]):
    """The run's price, grid, tokens and interruption options (``run_cost.RunInputs``), checked before any work;
    None when none is given (every consumer reads None as no input, so one device's analysis skips the import)."""
    names = ("train_tokens", "price_per_gpu_hour", "grid_gco2_per_kwh", "mtbf_gpu_hours", "checkpoint_s", "restart_s")
    if all(given.get(k) is None for k in names):
        return None
    from ..models.run_cost import RunInputs
    return RunInputs.of_flags(given.get("train_tokens"), given.get("price_per_gpu_hour"),
                              given.get("grid_gco2_per_kwh"), given.get("mtbf_gpu_hours"), given.get("checkpoint_s"),
                              given.get("restart_s"), phase)


def check_on(on, many: bool = False):
    """``on`` as given, refused in one line unless it is a hardware name, a .toml file, a Hardware or (``many``) a
    list of them."""
    from ..core.errors import IronlawError
    from ..machine.hardware import Hardware
    ok = isinstance(on, (str, Hardware)) or (many and isinstance(on, (list, tuple)) and len(on) > 0
                                               and all(isinstance(h, (str, Hardware)) for h in on))
    if not ok:
        lists = " (or a list of them)" if many else ""
        raise IronlawError(f"on= takes a hardware name, a .toml file or a Hardware{lists}, got {on!r}")
    return on


def device(on, network: Optional[str] = None):
    """The hardware ``on`` names (or is), its collectives on the network calibration ``network`` when given."""
    from ..machine import hardware
    hw = hardware.get(on) if isinstance(check_on(on), str) else on
    if network is not None:
        from ..machine.network.calibration import with_network
        hw = with_network(hw, network)
    return hw


def composition(serial: bool) -> str:
    return "serial" if serial else "overlap"


def strings(v) -> list[str]:
    return [v] if isinstance(v, str) else list(v)


def write_json(path: str, doc: dict) -> None:
    """Atomic (see ironlaw.core.files); the folder must exist."""
    import json

    from ..core.files import check_output, write_atomic
    write_atomic(check_output(path, "--out"), json.dumps(doc, indent=1, allow_nan=False), "--out")


def grid(v):
    """A batch or seq grid: the CLI's text (``1,2,4,...,1024``), one int, or a sequence of ints."""
    if v is None or isinstance(v, str):
        return v
    return str(v) if isinstance(v, int) else ",".join(str(x) for x in v)
