"""The device crosses the law in one pass: following ``hw`` (and its calibration) through one ``law.predict``,
the ironlaw modules handed either one, in call order, climb back up to a higher layer at most three times
(the law reads the device when it places the ops, the efficiency table reads it once per graph)."""
import sys

import pytest

import ironlaw
from ironlaw.core.graph import Graph
from ironlaw.law import efficiency, law
from ironlaw.machine import hardware

LAYERS = ("core", "machine", "law", "models", "measure", "report", "api", "cli")
INSIDE_LAW = ("efficiency", "explain", "power", "coverage", "timerange", "fresh", "estimate", "critical_path", "law")


def _rank(module: str) -> tuple[int, int]:
    parts = module.split(".")[1:] + [""]
    top = LAYERS.index(parts[0]) if parts[0] in LAYERS else len(LAYERS)
    return top, (INSIDE_LAW.index(parts[1]) if parts[0] == "law" and parts[1] in INSIDE_LAW else 0)


def _path(graph: Graph, hw) -> list[str]:
    seq: list[str] = []

    def follow(frame, event, arg):
        mod = frame.f_globals.get("__name__", "")
        if mod.startswith("ironlaw.law.efficiency."):       # the efficiency package's modules are one table
            mod = "ironlaw.law.efficiency"
        if event == "call" and mod.startswith("ironlaw."):
            handed = frame.f_locals.values()
            if any(v is hw or (hw.calibration is not None and v is hw.calibration) for v in handed):
                if not seq or seq[-1] != mod:
                    seq.append(mod)

    sys.setprofile(follow)
    try:
        law.predict(graph, hw)
    finally:
        sys.setprofile(None)
    return seq


def _climbs(seq: list[str]) -> int:
    return sum(_rank(b) > _rank(a) for a, b in zip(seq, seq[1:]))


def _decode(name: str):
    """Llama 3 8B decode on a catalog device: GEMMs priced by the device's kernel-fitted [calibration]."""
    a = ironlaw.analyze("llama3-8b", on=name, phase="decode", seq=1024, batch=8)
    return a.graph, hardware.get(name)


@pytest.mark.parametrize("name", ["h100", "b200", "xeon-8480"])
def test_hw_crosses_the_law_in_one_pass(name):
    graph, hw = _decode(name)
    seq = _path(graph, hw)
    assert "ironlaw.law.efficiency" in seq
    assert _climbs(seq) <= 3, " -> ".join(seq)


def test_the_climb_count_sees_a_second_pass():
    """The counter is not blind: an efficiency lookup after the table was built is one more climb."""
    seq = ["ironlaw.law.law", "ironlaw.law.efficiency", "ironlaw.machine.hardware", "ironlaw.law.efficiency",
           "ironlaw.law.law", "ironlaw.law.efficiency", "ironlaw.machine.calibration", "ironlaw.law.efficiency"]
    assert _climbs(seq) == 3
    assert _climbs(seq + ["ironlaw.machine.calibration", "ironlaw.law.efficiency"]) == 4


def test_the_estimate_carries_the_table_it_was_priced_at():
    graph, hw = _decode("h100")
    est = law.predict(graph, hw)
    terms = efficiency.evaluate(est.cols, hw, law.place(graph, hw).resident)
    assert (est.terms.compute_eta == terms.compute_eta).all()
    assert (est.terms.latency_s == terms.latency_s).all()
    assert (est.terms.memory_eta == terms.memory_eta).all()
    assert hw.calibration is not None and (est.terms.serial == terms.serial).all()
