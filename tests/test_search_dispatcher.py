"""``ironlaw search --phase train --moe-dispatcher``: the token dispatcher priced on every layout with EP > 1 as
``analyze`` prices it (ironlaw.models.dispatcher), reported in the JSON, its bad input one line."""
from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import run_cli
from ironlaw import api
from ironlaw.core import schemas

SPEC = "qwen3-30b-a3b"
SPACE = dict(phase="train", on="gb200", gpus=16, global_batch=64, seq=4096, tp=1, pp=1, cp=1, recompute="selective",
             zero=1)


@pytest.fixture(scope="module")
def searches():
    return {d: api.search(SPEC, moe_dispatcher=d, top=3, **SPACE) for d in ("alltoall", "flex")}


def test_flex_finds_a_layout_no_slower_and_skips_the_sorts(searches):
    a2a, flex = searches["alltoall"].top[0], searches["flex"].top[0]
    assert flex["ep"] > 1 and a2a["ep"] > 1                       # the space's best layouts run expert parallelism
    assert flex["time_s"] <= a2a["time_s"]
    # the same layout under the other dispatcher: flex is faster by the alltoall dispatcher's sorts and probabilities
    same = next(e for e in searches["alltoall"].top if all(e[k] == flex[k] for k in ("ep", "dp", "micro_batch")))
    assert flex["time_s"] < same["time_s"]
    assert all(e["moe_dispatcher"] == "flex" for e in searches["flex"].top)
    assert all(e["moe_dispatcher"] == "alltoall" for e in searches["alltoall"].top)
    assert searches["flex"].setup["settings"]["moe_dispatcher"] == "flex"


@pytest.mark.parametrize("name", ["alltoall", "flex"])
def test_top_layout_time_equals_analyze(searches, name):
    e = searches[name].top[0]
    a = api.analyze(SPEC, "gb200", phase="train", seq=4096, gpus=16, global_batch=64, tp=e["tp"], pp=e["pp"],
                    cp=e["cp"], dp=e["dp"], ep=e["ep"], micro_batch=e["micro_batch"], interleave=e["interleave"],
                    recompute=e["recompute"], zero=e["zero"], sequence_parallel=e["sequence_parallel"],
                    tp_comm_overlap=e["tp_comm_overlap"], overlap_p2p=e["overlap_p2p"], moe_dispatcher=name)
    assert a.plan.moe_dispatcher == name
    assert e["time_s"] == pytest.approx(a.step_s, rel=1e-9)


def test_flex_applies_to_expert_parallel_layouts_only():
    r = api.search(SPEC, moe_dispatcher="flex", top=20, **SPACE)
    assert {e["moe_dispatcher"] for e in r.top if e["ep"] > 1} == {"flex"}
    assert all(e["moe_dispatcher"] is None for e in r.top if e["ep"] == 1)
    assert any(e["ep"] == 1 for e in r.top)


def test_cli_json_carries_the_dispatcher():
    r = run_cli("search", SPEC, "--on", "gb200", "--gpus", "16", "--global-batch", "64", "--seq", "4096", "--tp", "1",
                "--pp", "1", "--cp", "1", "--ep", "8", "--recompute", "selective", "--zero", "1", "--top", "1",
                "--moe-dispatcher", "flex", "--format", "json")
    assert r.rc == 0, r.err
    d = json.loads(r.out)
    text = run_cli("search", SPEC, "--on", "gb200", "--gpus", "16", "--global-batch", "64", "--seq", "4096",
                   "--tp", "1", "--pp", "1", "--cp", "1", "--ep", "8", "--recompute", "selective", "--zero", "1",
                   "--top", "1", "--moe-dispatcher", "flex")
    assert text.rc == 0 and "token dispatcher: flex" in text.out, text.err
    assert d["settings"]["moe_dispatcher"] == "flex" and d["top"][0]["moe_dispatcher"] == "flex"
    schemas.validate(d)
    d["top"][0]["moe_dispatcher"] = "hybridep"
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate(d)


BAD = [
    ([SPEC, "--moe-dispatcher", "hybridep"], "got 'hybridep'"),
    ([SPEC, "--ep", "1", "--moe-dispatcher", "flex"], "add --ep > 1"),
    (["llama3-8b", "--moe-dispatcher", "flex"], "llama3-8b has no experts"),
    ([SPEC, "--phase", "serve", "--moe-dispatcher", "flex"], "(--phase train)"),
]


@pytest.mark.parametrize("args,msg", BAD)
def test_cli_bad_input_is_one_line(args, msg):
    r = run_cli("search", *args, "--on", "gb200", "--gpus", "16", "--global-batch", "64", "--seq", "4096")
    assert r.rc == 2 and msg in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert "Traceback" not in r.err
