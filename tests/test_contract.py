"""`ironlaw contract`, the main job: a table and one why-line per workload in an 80-column terminal."""
from __future__ import annotations

import pytest


@pytest.mark.parametrize("hw", ["h100", "a100", "gb10", "jetson-agx-orin", "epyc-9654"])
def test_contract_fits_an_80_column_terminal_in_30_lines(cli, hw):
    r = cli("contract", "--on", hw, env={"COLUMNS": "80"})
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    assert len(lines) <= 30, r.out
    assert max(len(l) for l in lines) <= 80, r.out
    table = [l for l in lines if l.startswith(("ResNet-50 training", "Llama-3-8B decode", "DLRM-DCNv2 inference"))]
    why = [l for l in lines if l.startswith(("ResNet-50:", "Llama-3-8B:", "DLRM-DCNv2:"))]
    assert len(table) == 3 and len(why) == 3, r.out


def test_contract_rows_say_what_the_json_says(cli):
    text = cli("contract", "--on", "h100", env={"COLUMNS": "80"})
    doc = cli("contract", "--on", "h100", "--format", "json").json()
    binds = {w["title"]: w["estimate"]["bottleneck"]["resource"] for w in doc["workloads"]}
    assert binds == {"ResNet-50 training": "bandwidth", "Llama-3-8B decode": "bandwidth",
                     "DLRM-DCNv2 inference": "capacity"}
    for line in text.out.splitlines():
        for title, res in binds.items():
            if line.startswith(title):
                assert line.split()[-1] == res
    why = [l for l in text.out.splitlines() if l.startswith("DLRM-DCNv2:")][0]
    assert "spill to host-dram" in why


def test_the_library_gives_the_commands_document(cli):
    import json

    import ironlaw
    doc = cli("contract", "--on", "a100", "--format", "json").json()
    lib = json.loads(json.dumps(ironlaw.contract("a100").to_dict(), default=float))
    assert lib == doc
    assert [w["title"] for w in lib["workloads"]] == ["ResNet-50 training", "Llama-3-8B decode",
                                                      "DLRM-DCNv2 inference"]
