"""A transformer's training step on one device that exceeds its memory: `sweep` and `compare` answer it as `analyze`
does (it does not run; not priced as spilled to host DRAM), while a recommender's host-held tables stay priced."""
import json

import pytest

from conftest import run_cli


def test_a_sweep_point_that_does_not_fit_is_marked_not_priced():
    """`sweep llama3-8b --phase train --on h100` priced each batch as spilled (2.28 s at batch 1, capacity:host-dram)
    where `analyze` refuses it; each point is now 'does not fit' with its reason, b200's priced as before."""
    import ironlaw
    res = ironlaw.sweep("llama3-8b", on="h100,b200", batch="1,4", seq="2048", phase="train")
    rows = {(r["hardware"], r["batch"]): r for r in res.rows()}
    for b in (1, 4):
        h = rows[("h100", b)]
        assert h["time_s"] is None and h["throughput"] == 0 and h["bottleneck"] == "does not fit", h
        assert "more than h100's" in h["does_not_fit"] and h["joules_per_unit"] is None and h["power_w"] is None
        ok = rows[("b200", b)]
        assert ok["time_s"] > 0 and ok["does_not_fit"] is None and ok["bottleneck"] != "does not fit"


def test_the_sweep_flips_to_does_not_fit_at_the_batch_analyze_first_refuses():
    """gpt2 training at seq 1024 on an H100: analyze prices batch 195 and refuses 196; the sweep's ridge is 196."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    ironlaw.analyze("gpt2", on="h100", phase="train", batch=195, seq=1024)
    with pytest.raises(IronlawError):
        ironlaw.analyze("gpt2", on="h100", phase="train", batch=196, seq=1024)
    res = ironlaw.sweep("gpt2", on="h100", batch="64,256", seq="1024", phase="train")
    assert [(r["to"], r["batch"]) for r in res.ridges] == [("does not fit", 196)], res.ridges


def test_the_sweeps_text_marks_the_row_and_its_json_states_why():
    args = ("sweep", "llama3-8b", "--phase", "train", "--batch", "1,2", "--seq", "2048", "--on", "h100")
    t = run_cli(*args, env={"COLUMNS": "200"})
    assert t.rc == 0 and t.out.count("does not fit") >= 4, t.out
    assert "does not fit on h100 at batch 1, 2: training step needs" in " ".join(t.out.split()), t.out
    j = run_cli(*args, "--format", "json")
    doc = json.loads(j.out)
    from ironlaw.core import schemas
    schemas.validate(doc)
    assert all(p["does_not_fit"] and p["time_s"] is None for p in doc["points"]), doc["points"]


@pytest.mark.parametrize("on,vs,case", [("h100", "b200", "before"), ("b200", "h100", "after hardware=h100")])
def test_compare_refuses_a_case_that_does_not_fit_naming_it(on, vs, case):
    """`compare` set a step priced as spilled (3.88 s on h100) against one that runs; it refuses in one line, naming
    the case (before, or after its what-ifs) that does not fit."""
    r = run_cli("compare", "llama3-8b", "--phase", "train", "--batch", "4", "--seq", "2048", "--on", on,
                "--vs-hardware", vs)
    assert r.rc == 2 and r.out == "" and len(r.err.strip().splitlines()) == 1, (r.rc, r.out, r.err)
    assert f"error: {case}: llama3-8b train (batch 4, seq 2048) does not fit on h100" in r.err, r.err


def test_a_recommenders_host_tables_stay_priced_in_sweep_and_compare():
    import ironlaw
    res = ironlaw.sweep("dlrm-dcnv2", on="h100", batch="2048", phase="train")
    (row,) = res.rows()
    assert row["time_s"] > 0 and row["does_not_fit"] is None and row["bottleneck"].startswith("capacity:")
    c = ironlaw.compare("dlrm-dcnv2", on="h100", vs_hardware="b200", batch=2048, phase="train")
    assert c.cp_before.time_s > 0 and c.cp_after.time_s > 0
