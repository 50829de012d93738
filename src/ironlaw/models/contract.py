"""The silicon contract: three textbook workloads (a convolutional net training, an LLM decoding, a recommender
inferring) predicted on one device, to show which resource each saturates first."""
from __future__ import annotations

from dataclasses import dataclass

CASES = (
    ("ResNet-50 training", dict(spec="resnet50", phase="train", batch=256)),
    ("Llama-3-8B decode", dict(spec="llama3-8b", phase="decode", batch=1, seq=1024)),
    ("DLRM-DCNv2 inference", dict(spec="dlrm-dcnv2", phase="infer", batch=2048)),
)


@dataclass
class Contract:
    """``ironlaw contract``'s result: the device and, per case, its title, its request and its estimate; the dtype
    asked for (None: each workload's own)."""
    hw: object
    results: list
    dtype: str | None = None

    def to_dict(self) -> dict:
        return {"schema": "ironlaw.contract/1", "hardware": self.hw.name,
                "workloads": [{"title": t, **kw, "estimate": e.to_dict(top=5)} for t, kw, e in self.results]}


def run(hw, dtype: str | None = None) -> Contract:
    """The three cases on ``hw`` (a Hardware), each on the device kind's own builder, in ``dtype`` (None: each
    workload's own, bf16 for the two networks)."""
    from ..law import law
    from . import workloads
    results = []
    for title, kw in CASES:
        req = workloads.Request(kw["spec"], phase=kw["phase"], batch=kw["batch"], seq=kw.get("seq"),
                                dtype=dtype, device="cuda" if hw.kind == "gpu" else "cpu")
        results.append((title, kw, law.placed(law.predict(workloads.resolve(req), hw), hw)))
    return Contract(hw, results, dtype)
