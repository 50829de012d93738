"""The silicon contract: three textbook workloads (a convolutional net training, an LLM decoding, a recommender
inferring) predicted on one device, to show which resource each saturates first."""
from __future__ import annotations

from dataclasses import dataclass, field

CASES = (
    ("ResNet-50 training", dict(spec="resnet50", phase="train", batch=256)),
    ("Llama-3-8B decode", dict(spec="llama3-8b", phase="decode", batch=1, seq=1024)),
    ("DLRM-DCNv2 inference", dict(spec="dlrm-dcnv2", phase="infer", batch=2048)),
)


@dataclass
class Contract:
    """``ironlaw contract``'s result: the device and, per case, its title, its request and its estimate; the dtype
    asked for (None: each workload's own); ``unfit``: per title of a case that fits none of the device's memory
    tiers (a probed CPU's DRAM alone, under DLRM-DCNv2's tables), why, its estimate left out of the document."""
    hw: object
    results: list
    dtype: str | None = None
    unfit: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"schema": "ironlaw.contract/1", "hardware": self.hw.name,
                "workloads": [{"title": t, **kw, **({"does_not_fit": self.unfit[t]} if t in self.unfit else
                                                    {"estimate": e.to_dict(top=5)})} for t, kw, e in self.results]}


def run(hw, dtype: str | None = None) -> Contract:
    """The three cases on ``hw`` (a Hardware), each on the device kind's own builder, in ``dtype`` (None: each
    workload's own, bf16 for the two networks)."""
    from ..core.errors import IronlawError
    from ..law import law
    from . import workloads
    results, unfit = [], {}
    for title, kw in CASES:
        req = workloads.Request(kw["spec"], phase=kw["phase"], batch=kw["batch"], seq=kw.get("seq"),
                                dtype=dtype, device="cuda" if hw.kind == "gpu" else "cpu")
        est = law.predict(workloads.resolve(req), hw)
        try:
            law.placed(est, hw)
        except IronlawError as e:                 # its answer is capacity: the row says so, the others stand
            unfit[title] = str(e)
        results.append((title, kw, est))
    if len(unfit) == len(results):
        raise IronlawError(f"no workload of the contract fits on {hw.name}: {next(iter(unfit.values()))}")
    return Contract(hw, results, dtype, unfit)
