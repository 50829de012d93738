"""A new user's first hour: the command line's printed lines and the catalog's memory sizes."""
import re
import tomllib

import pytest

from ironlaw.machine import hardware


def test_a_printed_line_holding_brackets_prints_as_written(capsys):
    """emit_lines prints markup off: "[calibration]" or "[bold]" is text, not a rich style."""
    from ironlaw.cli.common import emit_lines
    lines = ["store it in [calibration] of my.toml", "x [bold]y[/bold] [kv_cache]"]
    emit_lines(lines, "text")
    assert capsys.readouterr().out.splitlines() == lines


def test_every_memory_tier_but_storage_is_stored_binary():
    """DRAM, HBM and SRAM sizes are binary (JEDEC JESD100B.01); GB300's and GB200's Grace shares, from the same
    spec table, are both 236 GiB."""
    decimal = []
    for path in sorted(hardware.CATALOG_DIR.glob("*.toml")):
        for m in tomllib.loads(path.read_text()).get("memory", []):
            if m.get("role") != "storage" and not re.fullmatch(r"[\d.]+ [KMGT]iB", m["capacity_bytes"]):
                decimal.append(f"{path.stem}.{m['name']}: {m['capacity_bytes']}")
    assert not decimal
    host = {n: next(t for t in hardware.get(n).memory if t.role == "host").capacity_bytes for n in ("gb200", "gb300")}
    assert host["gb300"] == host["gb200"] == 236 * 2**30


@pytest.mark.parametrize("name,total_bytes,cited", [("l4", 23034 * 2**20, "23,034 MiB"),
                                                    ("l40s", 46068 * 2**20, "46,068 MiB"),
                                                    ("t4", 15360 * 2**20, "15,360 MiB"),
                                                    ("h100-nvl", 99961274368, "99,961,274,368 B")])
def test_cited_driver_totals_are_the_device_memory(name, total_bytes, cited):
    """L4, L40S, T4 and H100 NVL hold the totals their drivers report, the memory the part hands out, not the
    datasheet's binary size; H100 and H200 hold theirs."""
    hw = hardware.get(name)
    dev = hw.memory[hw.device_tier]
    assert dev.capacity_bytes == total_bytes
    assert dev.source.startswith("measured") and cited in dev.source


def test_hardware_show_cuts_no_source_at_80_columns(cli):
    """GB300's host tier source holds words longer than its column ("cpu_offloading_num_layers"): they fold onto
    the next line, every character kept."""
    r = cli("hardware", "show", "gb300", env={"COLUMNS": "80"})
    assert r.rc == 0, r.err
    assert "…" not in r.out and max(len(line) for line in r.out.splitlines()) <= 80
    cells = "".join(line.split("│")[-2].strip() for line in r.out.splitlines() if line.count("│") >= 6)
    assert "cpu_offloading_num_layers" in cells


def test_fit_keeps_a_long_case_name_whole_at_80_columns(cli, tmp_path):
    """A validate run of py:/a/long/path/model.py keeps its whole case name in fit's table at 80 columns."""
    import json
    from pathlib import Path
    name = "py:/home/someone/projects/vision/models/resnet_variant.py:resnet18"
    ops = [{"index": i, "name": "aten::mm", "kind": "matmul", "dtype": "fp32", "count": 1, "flops": 2.0 * n ** 3,
            "bytes": {"weights": 4.0 * n * n, "activations": 8.0 * n * n}, "median_s": 1e-5 * n, "min_s": 1e-5 * n,
            "measured_cv": 0.0, "spread_s": 0.0} for i, n in enumerate((64, 256, 1024))]
    total = sum(o["median_s"] for o in ops)
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"schema": "ironlaw.validate/1", "workload": {"name": name, "phase": "infer",
                                                                          "batch": 8}, "ops": ops,
                               "spread": {"median_s": total, "min_s": total, "spread_s": 0.0, "cv": 0.0},
                               "total": {"views": 0}}))
    profile = Path(__file__).parent / "data" / "validate-cpu.toml"
    r = cli("fit", str(run), "--on", str(profile), env={"COLUMNS": "80"})
    assert r.rc == 0, r.err
    assert "…" not in r.out
    cells = "".join(line.split("│")[1].strip() for line in r.out.splitlines() if line.startswith("│"))
    assert name in cells


def test_a_step_that_cannot_fit_suggests_no_micro_batch_below_one(cli):
    """Llama 3 8B training at batch 1 on one H100 is not told to use "a smaller --micro-batch"; at 8 it is."""
    one = cli("analyze", "llama3-8b", "--on", "h100", "--phase", "train", "--batch", "1", "--seq", "2048")
    eight = cli("analyze", "llama3-8b", "--on", "h100", "--phase", "train", "--batch", "8", "--seq", "2048")
    assert one.rc == eight.rc == 2
    assert "even fully sharded" in one.err and "micro-batch" not in one.err
    assert one.err.strip().endswith("use more devices, or larger --tp/--pp/--cp")
    assert eight.err.strip().endswith("use more devices, larger --tp/--pp/--cp, or a smaller --micro-batch")


def test_compare_against_a_calibrated_copy_of_the_same_device(tmp_path):
    """`calibrate --kernels … --gpu h100 --out my.toml` writes a profile named h100; `compare --on h100
    --vs-hardware my.toml` compares the two: another file is another device; an alias of the same entry is
    refused."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    mine = tmp_path / "my.toml"
    text = (hardware.CATALOG_DIR / "h100.toml").read_text()
    mine.write_text(text.replace('peak_flops = "989', 'peak_flops = "900', 1))
    cmp = ironlaw.compare("llama3-8b", on="h100", phase="decode", vs_hardware=str(mine))
    assert cmp.after.time_s != cmp.before.time_s
    with pytest.raises(IronlawError, match="already names"):
        ironlaw.compare("llama3-8b", on="h100", phase="decode", vs_hardware="h100-sxm")


def test_sweep_over_a_device_and_its_calibrated_copy_says_what_was_given(cli, tmp_path):
    """`sweep --on h100,my.toml` (a profile of h100) is refused naming the two entries as the user typed them."""
    mine = tmp_path / "my.toml"
    mine.write_text((hardware.CATALOG_DIR / "h100.toml").read_text())
    r = cli("sweep", "llama3-8b", "--phase", "decode", "--on", f"h100,{mine}", "--batch", "1,2")
    assert r.rc == 2 and f"--on h100, {mine}: each is the device h100" in r.err and "--vs-hardware" in r.err
    alias = cli("sweep", "llama3-8b", "--phase", "decode", "--on", "h100,h100-sxm", "--batch", "1,2")
    assert alias.rc == 2 and "--on names h100 (h100, h100-sxm) twice" in alias.err


def test_search_over_a_device_and_its_calibrated_copy_says_what_was_given(cli, tmp_path):
    """`search --phase serve --on h100,my.toml` (a profile of h100) is refused naming what was given, as the sweep
    does; a plain repeat reads "names h100 twice"."""
    mine = tmp_path / "my.toml"
    mine.write_text((hardware.CATALOG_DIR / "h100.toml").read_text())
    r = cli("search", "llama3-8b", "--phase", "serve", "--on", f"h100,{mine}", "--gpus", "8")
    assert r.rc == 2 and f"--on h100, {mine}: each is the device h100, and a search" in r.err
    r = cli("search", "llama3-8b", "--phase", "serve", "--on", "h100,h100", "--gpus", "8")
    assert r.rc == 2 and "--on names h100 twice; give each device once" in r.err


def test_the_command_list_cuts_no_description(cli):
    """`ironlaw --help` at 80 columns lists each verb's own short help whole: none cut to "..." by click."""
    r = cli("--help", env={"COLUMNS": "80"})
    assert r.rc == 0, r.err
    listed = r.out.split("Commands:")[1].splitlines()
    assert len([line for line in listed if line.strip()]) == 13
    assert not [line for line in listed if line.rstrip().endswith("...") or len(line) > 80]


def test_an_unknown_workload_says_how_many_names_it_left_out(cli):
    """`analyze foo` lists 12 names, how many more there are, and where to see them all."""
    r = cli("analyze", "foo", "--on", "h100")
    assert r.rc == 2 and "…" not in r.err
    assert re.search(r"gemv:, and \d+ more \(`ironlaw workloads list` names each\)", r.err), r.err


def test_hardware_list_is_in_name_order(cli):
    """`hardware list` is in name order: a100 before a100-40gb and a100-pcie, h100 before h100-nvl and h100-pcie
    (not the files' order, where '-' sorts before '.')."""
    import json
    r = cli("hardware", "list", "--format", "json")
    names = [d["name"] for d in json.loads(r.out)["devices"]]
    assert names == sorted(names) and names.index("h100") < names.index("h100-nvl")
