"""`ironlaw serve` options beyond the plain estimate: --speculative, --prefix-hit, --disaggregate, --slo,
--sweep-concurrency (with --plot), and the energy, cost and carbon of a token (--price-per-gpu-hour,
--grid-gco2-per-kwh). Each gives its JSON part and its text lines; ``run`` gathers them around the estimate in a
``Serving``, ``frontier`` in a ``Frontier`` (the results of ``ironlaw.serve``)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ....core.units import counted, fmt_num, fmt_time


@dataclass
class Features:
    speculative: str | None = None
    prefix_hit: float | None = None
    disaggregate: str | None = None
    slo: str | None = None
    sweep_concurrency: bool = False
    plot: str | None = None
    price_per_gpu_hour: float | None = None
    grid_gco2_per_kwh: float | None = None


def checked(*options) -> Features:
    """The Features of the serve options (in Features' order), refused before any work when bad."""
    f = Features(*options)
    check(f)
    return f


def check(f: Features) -> None:
    """Refuse bad options before any work."""
    from ....core.errors import IronlawError
    from ....law import power
    from . import disaggregate, goodput, speculative
    if f.speculative is not None:
        speculative.parse(f.speculative)
    if f.disaggregate is not None:
        disaggregate.parse(f.disaggregate)
    if f.slo is not None:
        goodput.parse_slo(f.slo)
    if f.prefix_hit is not None:
        from .prefix import new_tokens
        new_tokens(1, f.prefix_hit)
    if f.plot and not f.sweep_concurrency:
        raise IronlawError("--plot draws the concurrency frontier; add --sweep-concurrency")
    if f.plot:
        from ....core.files import check_plot
        check_plot(f.plot, (".svg", ".png"))
    power.grid(f.grid_gco2_per_kwh)
    if f.price_per_gpu_hour is not None:
        power.price(None, f.price_per_gpu_hour)


def _energy(est, f: Features, devices: int) -> dict | None:
    from ....law import power
    if not power.has_power(est.hw):
        return None
    return {"devices": devices, "usd_per_device_hour": f.price_per_gpu_hour, "gco2_per_kwh": f.grid_gco2_per_kwh}


@dataclass
class Serving:
    """``ironlaw serve``'s result: the ServeEstimate, the JSON part of every feature asked for (energy,
    speculative, prefix, goodput, disaggregate) and one text line each."""
    estimate: object                                  # ServeEstimate
    features: dict = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    engine: object = None                             # frameworks.Engine: the framework serving it (--engine)

    def to_dict(self) -> dict:
        d = {**self.estimate.to_dict(), **self.features}
        if self.engine is not None:
            d["engine"] = self.engine.to_dict(offline=False)
        return d


@dataclass
class Frontier:
    """``ironlaw serve --sweep-concurrency``'s result: tokens/s per device against tokens/s per user over
    concurrency (schema ironlaw.serve-frontier/1), with goodput under an SLO."""
    doc: dict

    @property
    def points(self) -> list[dict]:
        return self.doc["points"]

    def lines(self, md: bool = False) -> list[str]:
        return frontier_lines(self.doc, md)

    def to_dict(self) -> dict:
        return self.doc


def run(est, kw: dict, f: Features) -> Serving:
    """The Serving of every feature asked for, around the ServeEstimate ``est`` made with ``kw``."""
    from . import common, energy, prefix
    s = common.Setup(kw.get("dtype"), kw.get("kv_dtype"), kw.get("tp", 1), kw.get("chunk"))
    devices = s.tp
    en = _energy(est, f, devices)
    doc: dict = {"energy": energy.of_serving(est, **en) if en else None}
    lines = [_energy_line(doc["energy"], est)]
    if f.speculative is not None:
        from . import speculative as sp
        doc["speculative"] = d = sp.estimate(est, sp.parse(f.speculative), s, en)
        lines.append(f"speculative ({d['method']}, K {d['tokens']}, acceptance {d['acceptance']:g}): "
                     f"{d['expected_tokens_per_step']:.2f} tokens per verify step · ITL {fmt_time(d['itl_s'])} "
                     f"({100 * d['itl_change']:+.0f}%) · {fmt_num(d['tokens_per_s'])} tokens/s "
                     f"({100 * d['throughput_change']:+.0f}%){_joules(d, doc)}: {d['why']}")
    if f.prefix_hit is not None:
        doc["prefix"] = d = prefix.estimate(est, f.prefix_hit, s, en)
        lines.append(f"prefix cache hit {f.prefix_hit:g}: prefill {d['new_tokens']} of {est.prompt} tokens in "
                     f"{fmt_time(d['prefill_s'])} (was {fmt_time(d['baseline_prefill_s'])}"
                     f"{'; host-bound: the step launches as many kernels' if d['prefill_bottleneck'] == 'host' else ''}"
                     f") · TTFT "
                     f"{fmt_time(d['ttft_s'])} · {fmt_num(d['tokens_per_s'])} tokens/s (was {fmt_num(est.tokens_per_s)})"
                     f"{_joules(d, doc)}")
    at = _at(est, kw)
    slo = None
    if f.slo is not None:
        from . import goodput
        slo = goodput.parse_slo(f.slo)
        doc["goodput"] = d = goodput.goodput(at, slo, devices)
        lines.append(_goodput_line(d))
    if f.disaggregate is not None:
        doc["disaggregate"], more = _disaggregate(est, at, s, f, slo)
        lines += more
    return Serving(est, doc, lines)


def _joules(d: dict, doc: dict) -> str:
    if "energy" not in d or doc.get("energy") is None:
        return ""
    return (f" · {fmt_num(doc['energy']['joules_per_output_token'])} → {fmt_num(d['energy']['joules_per_output_token'])} "
            f"J per output token")


def _at(est, kw: dict):
    from .. import online as serving
    return lambda c: serving.estimate(est.spec, est.hw, est.prompt, est.output, c, **kw)


def _energy_line(e: dict | None, est) -> str:
    if e is None:
        return f"energy: {est.hw.name} states no power (tdp_w and idle_w in its hardware file); no energy, cost or carbon"
    usd = e["usd_per_million_output_tokens"]
    return (f"energy: {fmt_num(e['joules_per_output_token'])} J per output token (mean {e['mean_power_w_per_device']:.0f} W "
            f"per device at utilization {e['utilization']:.2f}) · "
            + (f"${fmt_num(usd)} per million output tokens at ${e['usd_per_gpu_hour']:g}/GPU-hour · " if usd is not None
               else f"{e['price_source']} · ")
            + f"{fmt_num(e['gco2_per_million_output_tokens'])} gCO2 per million at {e['grid_gco2_per_kwh']:g} gCO2/kWh")


def _goodput_line(d: dict) -> str:
    if not d["met"]:
        return f"goodput: {d['why']}"
    a = d["at"]
    return (f"goodput: concurrency {d['concurrency']} ({fmt_num(d['requests_per_s'])} requests/s, "
            f"{fmt_num(a['tokens_per_s'])} tokens/s) is the most that meets the SLO (TTFT {fmt_time(a['ttft_s'])}, ITL {fmt_time(a['itl_s'])}); "
            f"beyond it {d['limited_by']} binds")


def _disaggregate(est, at, s, f: Features, slo) -> tuple[dict, list[str]]:
    from . import disaggregate as dg
    p, d = dg.parse(f.disaggregate)
    given = dg.split(est, p, d, s, (slo or {}).get("ttft_s"))
    best = dg.best_split(at, p + d, s, slo)
    lines = [f"disaggregated prefill={p}, decode={d}: TTFT {fmt_time(given['ttft_s'])} (prefill "
             f"{fmt_time(given['prefill_s'])} + KV {given['kv_bytes_per_prompt'] / 1e6:.1f} MB over {given['link']} "
             f"in {fmt_time(given['transfer_s'])}{_wait(given)}) · ITL {fmt_time(given['itl_s'])} · "
             f"{fmt_num(given['tokens_per_s'])} tokens/s ({given['bound']} binds; a closed loop of "
             f"{counted(given['sequences_in_flight'], 'request')} in flight)"]
    if best["met"]:
        b = best["best"]
        lines.append(f"best split of {p + d} devices{' for the SLO' if slo else ''}: prefill={b['prefill_devices']}, "
                     f"decode={b['decode_devices']} at concurrency {best['decode_concurrency']} per decode instance: "
                     f"{fmt_num(b['tokens_per_s'])} tokens/s ({fmt_num(b['tokens_per_s_per_device'])} per device)")
    else:
        lines.append(f"best split of {p + d} devices: none meets the SLO — {best['why']}")
    return {"given": given, **best}, lines


def _wait(given: dict) -> str:
    w = given["prefill_wait_s"]
    return f" + {fmt_time(w)} waiting for a prefill instance" if w > 0 else ""


def frontier(est, kw: dict, f: Features) -> Frontier:
    """The --sweep-concurrency Frontier (schema ironlaw.serve-frontier/1), with goodput when --slo is given; the
    caller draws it (--plot, ``ironlaw.report.frontier.save``)."""
    from . import goodput
    tp = kw.get("tp", 1)
    slo = goodput.parse_slo(f.slo) if f.slo else None
    at = _at(est, kw)
    doc = goodput.frontier(at, tp, slo, _energy(est, f, tp))
    if slo:
        doc["goodput"] = goodput.goodput(at, slo, tp)
    if est.lengths is not None:                  # every point priced at a --lengths file's mix
        doc["lengths"] = est.lengths
    return Frontier(doc)


def frontier_lines(doc: dict, md: bool = False) -> list[str]:
    """The frontier as text lines: a head, the table (padded columns; ``md``: one Markdown table, its rows joined
    by newlines so that paragraphs do not split it), the goodput."""
    dtypes = f", {doc['dtype']}, KV {doc['kv_dtype']}" if "dtype" in doc else ""
    mix = f", the means of {doc['lengths']['source']}" if doc.get("lengths") else ""
    lines = [f"{doc['workload']} on {doc['hardware']}: concurrency frontier (prompt {doc['prompt_tokens']}, output "
             f"{doc['output_tokens']}{mix}{dtypes}; tokens/s per device against tokens/s per user)"]
    energy = any("joules_per_output_token" in p for p in doc["points"])
    slo = any("meets_slo" in p for p in doc["points"])
    head = (["concurrency", "tokens/s/device", "tokens/s/user", "TTFT", "ITL"] + (["J/token"] if energy else [])
            + (["SLO"] if slo else []))
    rows = []
    for p in doc["points"]:
        rows.append([fmt_num(p["concurrency"]), fmt_num(p["tokens_per_s_per_device"]),
                     fmt_num(p["tokens_per_s_per_user"]), fmt_time(p["ttft_s"]), fmt_time(p["itl_s"])]
                    + ([fmt_num(p["joules_per_output_token"]) if "joules_per_output_token" in p else ""] if energy
                       else [])
                    + (["" if "meets_slo" not in p else ("met" if p["meets_slo"] else "missed")] if slo else []))
    if md:
        table = [head, ["---:"] * (len(head) - slo) + ["---"] * slo] + rows
        lines.append("\n".join("| " + " | ".join(r) + " |" for r in table))
    else:
        width = [11, 15, 13, 9, 9] + ([8] if energy else [])
        lines += [" ".join(c.rjust(w) for c, w in zip(r, width)) + (f" {r[-1]}" if slo and r[-1] else "")
                  for r in [head] + rows]
    cmax = doc.get("max_concurrency")
    if doc["points"] and doc["points"][-1]["concurrency"] == cmax:
        lines.append(f"the frontier ends at concurrency {fmt_num(cmax)}: the most sequences in flight the KV cache and "
                     f"the scheduler hold (`serve --concurrency {cmax}` prints the capacity line)")
    if "goodput" in doc:
        lines.append(_goodput_line(doc["goodput"]))
    return lines
