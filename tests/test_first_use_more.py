"""What a new user meets through the library and the command line: each a wrong or raw answer before."""
import numpy as np
import pytest

import ironlaw
from ironlaw.core.errors import IronlawError


def test_batch_and_seq_arrays_that_do_not_broadcast_are_one_line():
    """batch of 3 sizes against seq of 2 raised numpy's "operands could not be broadcast together" from deep in the
    attention builder; a column against a row is the grid, arrays of one shape the pairs."""
    with pytest.raises(IronlawError, match=r"batch \(shape \(3,\)\) and seq \(shape \(2,\)\) do not broadcast"):
        ironlaw.analyze("llama3-8b", phase="decode", batch=np.array([1, 2, 4]), seq=np.array([128, 256]))
    grid = ironlaw.analyze("llama3-8b", phase="decode", batch=np.array([1, 2, 4]), seq=np.array([[128], [256]]))
    assert np.shape(grid.time_s) == (2, 3)


def test_builder_options_not_a_dict_and_the_cli_name_opt_are_one_line():
    """options=["image=288"] (as --opt is typed) raised Python's "dictionary update sequence element #0 has length
    9"; opt= was suggested options= without saying what it takes."""
    with pytest.raises(IronlawError, match=r"options= takes a dict of builder options, \{'image': 288\}.*got list"):
        ironlaw.analyze("resnet50", options=["image=288"])
    with pytest.raises(IronlawError, match="--opt KEY=VALUE is the command line's: here a builder option is a "
                                           "keyword of its own, image=288"):
        ironlaw.analyze("resnet50", opt=["image=288"])


def test_a_hardware_files_efficiency_names_every_missing_field_at_once(tmp_path):
    """[efficiency] without other and memory names both missing fields in one message, not one at a time."""
    from ironlaw.machine import hardware
    path = tmp_path / "mygpu.toml"
    path.write_text('schema = "ironlaw.hardware/1"\nname = "mygpu"\ntitle = "Mine"\nkind = "gpu"\n'
                    '[compute.bf16]\npeak_flops = "500 TFLOP/s"\nsource = "estimate: mine"\n'
                    '[[memory]]\nname = "hbm"\nrole = "device"\ncapacity_bytes = "80 GiB"\nbw_Bps = "3 TB/s"\n'
                    'latency_s = "600 ns"\nsource = "estimate: mine"\n'
                    '[vector]\npeak_flops = "40 TFLOP/s"\nsource = "estimate: mine"\n'
                    '[latency]\nop_s = "5 us"\nsource = "estimate: mine"\n'
                    '[efficiency]\nmatmul = 0.7\nsource = "estimate: mine"\n')
    with pytest.raises(IronlawError, match=r"\.efficiency: missing required fields 'other', 'memory'$"):
        hardware.load_file(str(path))


def test_online_serve_names_the_dtype_it_serves_in(tmp_path):
    """`serve --dtype fp8 --kv-dtype bf16` printed "KV bf16" alone and its JSON no dtype: fp8 weights were not said
    anywhere; a frontier of bf16 serving went into an fp8 report without a word."""
    from conftest import run_cli
    srv = ironlaw.serve("llama3-8b", on="h100", dtype="fp8", kv_dtype="bf16")
    assert srv.to_dict()["dtype"] == "fp8" and srv.to_dict()["kv_dtype"] == "bf16"
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--dtype", "fp8", "--kv-dtype", "bf16")
    assert r.out.splitlines()[0].endswith("concurrency 1, fp8, KV bf16"), r.out
    frontier = tmp_path / "frontier.json"
    frontier.write_text(__import__("json").dumps({"schema": "ironlaw.serve-frontier/1", "workload": "llama3-8b",
                                                  "hardware": "h100", "devices": 1, "dtype": "bf16",
                                                  "kv_dtype": "bf16", "prompt_tokens": 1024, "output_tokens": 256,
                                                  "slo": None, "max_concurrency": 1,
                                                  "points": [{"concurrency": 1, "tokens_per_s_per_device": 169.0,
                                                              "tokens_per_s_per_user": 169.0, "ttft_s": 0.044,
                                                              "itl_s": 0.0059}]}))
    r = run_cli("report", "llama3-8b", "--on", "h100", "--phase", "decode", "--dtype", "fp8", "--html",
                str(tmp_path / "r.html"), "--frontier", str(frontier))
    assert r.rc == 2 and "serves the model in bf16, but the report is in fp8; give --dtype bf16" in r.err, r.err


MY_GPU = ('schema = "ironlaw.hardware/1"\nname = "mygpu"\ntitle = "Mine"\nkind = "gpu"\n'
          '[compute.bf16]\npeak_flops = "400 TFLOP/s"\nsource = "estimate: mine"\n'
          '[[memory]]\nname = "hbm"\nrole = "device"\ncapacity_bytes = "48 GiB"\nbw_Bps = "1.5 TB/s"\n'
          'latency_s = "600 ns"\nsource = "estimate: mine"\n'
          '[vector]\npeak_flops = "40 TFLOP/s"\nsource = "estimate: mine"\n'
          '[latency]\nop_s = "5 us"\nsource = "estimate: mine"\n'
          '[efficiency]\nmatmul = 0.7\nother = 0.5\nmemory = 0.8\nsource = "estimate: mine"\n')


def test_contract_on_a_device_one_case_does_not_fit_keeps_the_others(tmp_path):
    """A device whose memory holds no DLRM-DCNv2 (a probed CPU's DRAM alone, 23.5 GiB; here a 48 GiB card without
    host memory) refused the whole contract; the case's row says it does not fit, the other two stand."""
    from conftest import run_cli
    path = tmp_path / "mygpu.toml"
    path.write_text(MY_GPU)
    doc = ironlaw.contract(on=str(path)).to_dict()
    fits = {w["title"]: ("estimate" in w, w.get("does_not_fit", "")) for w in doc["workloads"]}
    assert fits["ResNet-50 training"][0] and fits["Llama-3-8B decode"][0]
    dlrm = fits["DLRM-DCNv2 inference"]
    assert not dlrm[0] and "exceeds all memory tiers together" in dlrm[1]
    r = run_cli("contract", "--on", str(path))
    assert r.rc == 0, r.err
    assert "DLRM-DCNv2: does not fit, footprint" in r.out and "ResNet-50: " in r.out


def test_a_batch_past_64_bits_is_out_of_range_not_no_whole_number():
    """--batch 99999999999999999999999 (past 64 bits: numpy holds it as an object) is out of range, not "not a
    positive whole number"."""
    from conftest import one_line_error, run_cli
    line = one_line_error(run_cli("analyze", "llama3-8b", "--batch", "99999999999999999999999"))
    assert line.endswith("--batch 99999999999999999999999 is out of range (1 … 16,777,216)")
