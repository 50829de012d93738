"""A training step's parts and memory are typed records (``parallel.StepBreakdown``, ``parallel.DeviceMemory``):
fields named with their units, frozen, and written into the train-step document under the names and in the order
that document has always used."""
from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import run_cli

import ironlaw
from ironlaw.models import parallel

OPTS = dict(gpus=16, tp=2, pp=2, cp=2, global_batch=64, recompute="selective", zero=1, sequence_parallel=True)
MEMORY_KEYS = ["weights", "gradients", "optimizer", "activations", "params_per_device", "total_bytes"]


@pytest.fixture(scope="module")
def step():
    return ironlaw.train("llama3-8b", on="h100", seq=8192, **OPTS)


def test_the_records_are_dataclasses_with_units_in_their_names(step):
    assert isinstance(step.breakdown, parallel.StepBreakdown) and isinstance(step.memory, parallel.DeviceMemory)
    names = [f.name for f in dataclasses.fields(parallel.StepBreakdown)]
    assert all(n.endswith("_s") for n in names if n != "microbatches")
    assert all(f.name.endswith("_bytes") for f in dataclasses.fields(parallel.DeviceMemory)
               if f.name not in ("params_per_device", "optimizer_params"))


def test_the_document_keeps_its_names_and_order(step):
    doc = step.to_dict()
    assert list(doc["breakdown"]) == [f.name for f in dataclasses.fields(parallel.StepBreakdown)]
    assert doc["breakdown"] == {k: getattr(step.breakdown, k) for k in doc["breakdown"]}
    assert list(doc["memory_per_device"]) == MEMORY_KEYS
    m = step.memory
    assert doc["memory_per_device"] == {"weights": m.weights_bytes, "gradients": m.gradients_bytes,
                                        "optimizer": m.optimizer_bytes, "activations": m.activations_bytes,
                                        "params_per_device": m.params_per_device, "total_bytes": m.total_bytes}
    assert m.total_bytes == m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.activations_bytes
    assert "params_per_device" not in m.footprint()           # a count, not bytes: never in a graph's footprint
    assert "optimizer_params" not in m.footprint() and "optimizer_params" not in doc["memory_per_device"]
    assert step.per_microbatch.graph.footprint == m.footprint()


def test_the_records_are_not_rewritten_in_place(step):
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.breakdown.step_s = 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.memory.weights_bytes = 0.0


def test_plan_memory_is_the_step_memory(step):
    g = parallel.training_graph("llama3-8b", step.hw, 8192, None, OPTS)
    plan = parallel.make_plan(OPTS, g, step.hw)
    assert parallel.plan_memory(g, plan, plan.zero, plan.recompute) == step.memory


def test_the_cli_writes_the_library_document(step):
    r = run_cli("analyze", "llama3-8b", "--on", "h100", "--phase", "train", "--seq", "8192", "--gpus", "16",
                "--tp", "2", "--pp", "2", "--cp", "2", "--global-batch", "64", "--recompute", "selective",
                "--zero", "1", "--sequence-parallel", "--format", "json")
    assert r.rc == 0, r.err
    assert r.json() == json.loads(json.dumps(step.to_dict()))
