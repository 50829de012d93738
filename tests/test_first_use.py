"""What a demanding first user meets beyond the examples: a small table of their own, a profile of the wrong
kind, a device the defaults do not suit, a hardware file of their own. Each pinned by the test that failed
before its fix."""
import json

import pytest

from conftest import one_line_error, run_cli


# ------------------------------------------------------------------ calibrate --kernels on a tiny table
def test_a_kernel_class_of_one_row_is_refused_naming_it(tmp_path):
    pytest.importorskip("pandas")
    (tmp_path / "gemm_perf.csv").write_text(
        "device,gemm_dtype,m,n,k,latency\n"
        "NVIDIA H100 80GB HBM3,bfloat16,768,5120,4096,0.0457\n"
        "NVIDIA H100 80GB HBM3,fp8,769,3584,768,0.0175\n"
        "NVIDIA H100 80GB HBM3,fp8,4353,768,3584,0.0581\n")
    line = one_line_error(run_cli("calibrate", "--kernels", str(tmp_path)))
    assert "gemm_perf.csv: gemm bf16 has 1 row;" in line and "at least 2 rows" in line


# ------------------------------------------------------------------ fit on a profile of another kind
def test_fit_refuses_a_gpu_profile_for_cpu_runs(tmp_path):
    run = tmp_path / "run.json"        # the fields a validate document's case needs (``validate.cases_of``)
    run.write_text(json.dumps({"schema": "ironlaw.validate/1", "workload": {}, "total": {}, "spread": {},
                               "ops": []}))
    line = one_line_error(run_cli("fit", str(run), "--on", "h100"))
    assert "'h100' is a gpu (h100)" in line and "CPU profile" in line


# ------------------------------------------------------------------ contract on a device without bf16
def test_contract_takes_the_dtype_its_refusal_names():
    import ironlaw
    line = one_line_error(run_cli("contract", "--on", "v100"))
    assert "v100 has no bf16" in line and "--dtype" in line
    r = run_cli("contract", "--on", "v100", "--dtype", "fp16")
    assert r.rc == 0, r.err
    assert r.out.splitlines()[0].endswith(", in fp16")
    doc = run_cli("contract", "--on", "v100", "--dtype", "fp16", "--format", "json").json()
    assert {w["estimate"]["workload"]["dtype"] for w in doc["workloads"]} == {"fp16"}
    lib = ironlaw.contract(on="v100", dtype="fp16").to_dict()
    assert [w["estimate"]["time_s"] for w in lib["workloads"]] == [w["estimate"]["time_s"] for w in doc["workloads"]]


# ------------------------------------------------------------------ notes about experts a dense model lacks
def test_a_dense_model_carries_no_routed_expert_note():
    import ironlaw
    dense = ironlaw.serve("llama3-8b", on="mi300x", max_throughput=True, engine="vllm").to_dict()
    assert not any("routed experts" in n for n in dense.get("notes", []))
    moe = ironlaw.serve("mixtral-8x7b", on="h20", dtype="fp8", max_throughput=True, engine="vllm").to_dict()
    assert any("routed experts' compute η" in n and "h20" in n for n in moe["notes"])    # no measured MoE layer


# ------------------------------------------------------------------ a hand-written hardware file
def test_a_hardware_file_names_every_missing_table_at_once(tmp_path):
    path = tmp_path / "mygpu.toml"
    path.write_text('schema = "ironlaw.hardware/1"\nname = "mygpu"\nkind = "gpu"\n'
                    '[compute.bf16]\npeak_flops = "500 TFLOP/s"\nsource = "estimate: mine"\n'
                    '[[memory]]\nname = "hbm"\nrole = "device"\ncapacity_bytes = "80 GiB"\nbw_Bps = "3 TB/s"\n'
                    'source = "estimate: mine"\n')
    line = one_line_error(run_cli("hardware", "show", str(path)))
    assert line.endswith("missing required fields 'title', 'vector', 'latency', 'efficiency'")


def test_contract_says_a_case_fits_nowhere_as_analyze_refuses_it(tmp_path):
    """The contract was refused whole (a probed CPU's 23.5 GiB holds no DLRM-DCNv2); the case's row now says it does
    not fit, in analyze's words, in the text and in the JSON document (no 'inf s' row), the other cases standing."""
    path = tmp_path / "small.toml"      # 40 GiB and no host tier: DLRM-DCNv2's 97 GiB fits nowhere
    path.write_text('schema = "ironlaw.hardware/1"\nname = "small"\ntitle = "A small GPU"\nkind = "gpu"\n'
                    '[compute.bf16]\npeak_flops = "500 TFLOP/s"\nsource = "estimate: a test device"\n'
                    '[vector]\npeak_flops = "60 TFLOP/s"\nsource = "estimate: a test device"\n'
                    '[[memory]]\nname = "hbm"\nrole = "device"\ncapacity_bytes = "40 GiB"\nbw_Bps = "3 TB/s"\n'
                    'source = "estimate: a test device"\n[latency]\nop_s = "5 us"\nsource = "estimate: a test device"\n'
                    '[efficiency]\nother = 0.8\nmemory = 0.85\nsource = "estimate: a test device"\n')
    want = one_line_error(run_cli("analyze", "dlrm-dcnv2", "--batch", "2048", "--on", str(path)))
    assert want.startswith("ironlaw: error: dlrm-dcnv2 does not fit on small: ")
    text = run_cli("contract", "--on", str(path))
    assert text.rc == 0 and f"DLRM-DCNv2: does not fit, {want.split(': ', 3)[-1]}" in text.out, text.out
    doc = run_cli("contract", "--on", str(path), "--format", "json").json()
    assert [w.get("does_not_fit") for w in doc["workloads"]] == [None, None, want.removeprefix("ironlaw: error: ")]


# ------------------------------------------------------------------ report --frontier from another case
def test_report_refuses_a_frontier_of_another_device_or_workload(tmp_path):
    fr = tmp_path / "fr.json"
    r = run_cli("serve", "llama3-8b", "--on", "h100", "--sweep-concurrency", "--format", "json")
    fr.write_text(r.out)
    html = str(tmp_path / "r.html")
    line = one_line_error(run_cli("report", "llama3-8b", "--on", "b200", "--html", html, "--frontier", str(fr)))
    assert "is on hardware 'h100', but the report is on 'b200'" in line
    line = one_line_error(run_cli("report", "mixtral-8x7b", "--html", html, "--frontier", str(fr)))
    assert "is about workload 'llama3-8b', but the report is about 'mixtral-8x7b'" in line
    assert run_cli("report", "llama3-8b", "--phase", "decode", "--html", html, "--frontier", str(fr)).rc == 0


# ------------------------------------------------------------------ hf: an encoder-decoder config
def test_an_encoder_decoder_config_is_refused_by_name(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    cfg = tmp_path / "t5.json"
    cfg.write_text(json.dumps({"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "d_model": 512,
                               "d_ff": 2048, "d_kv": 64, "num_heads": 8, "num_layers": 6, "num_decoder_layers": 6,
                               "vocab_size": 32128, "is_encoder_decoder": True, "decoder_start_token_id": 0}))
    line = one_line_error(run_cli("analyze", f"hf:{cfg}", "--on", "h100"))
    assert "is an encoder-decoder model (t5)" in line


# ------------------------------------------------------------------ search: one degree that does not divide
def test_search_names_one_degree_once():
    import ironlaw
    with pytest.raises(ironlaw.IronlawError, match=r"^--tp 3 does not divide --gpus 8;"):
        ironlaw.search("llama3-8b", on="h100", gpus=8, tp=3)
    with pytest.raises(ironlaw.IronlawError, match=r"^--tp 2 × --pp 3 = 6 does not divide --gpus 8;"):
        ironlaw.search("llama3-8b", on="h100", gpus=8, tp=2, pp=3)


# ------------------------------------------------------------------ calibrate --gpu past another GPU's table
def test_calibrate_for_one_gpu_is_not_stopped_by_another_gpus_table(tmp_path):
    pytest.importorskip("pandas")
    gemm = tmp_path / "h100_sxm" / "gemm" / "vllm" / "0.24.0" / "gemm_perf.csv"
    gemm.parent.mkdir(parents=True)
    rows = ["device,gemm_dtype,m,n,k,latency"]
    for m in (1, 16, 128, 1024, 4096):
        for n, k in ((4096, 4096), (8192, 4096)):
            t_ms = 0.006 + 2 * m * n * k / 600e12 * 1e3 + 2 * n * k / 2.5e12 * 1e3
            rows.append(f"NVIDIA H100 80GB HBM3,bfloat16,{m},{n},{k},{t_ms:.6f}")
    gemm.write_text("\n".join(rows) + "\n")
    attn = tmp_path / "a100_sxm" / "attention" / "vllm" / "0.14.0" / "context_attention_perf.csv"
    attn.parent.mkdir(parents=True)             # an older table without window_size, as A100's vLLM 0.14.0 ones
    attn.write_text("device,batch_size,isl,num_heads,num_key_value_heads,head_dim,attn_dtype,kv_cache_dtype,step,"
                    "latency\nNVIDIA A100-SXM4-80GB,1,1024,32,8,128,bfloat16,bfloat16,0,0.1\n")
    r = run_cli("calibrate", "--kernels", str(tmp_path), "--gpu", "h100", "--framework", "vllm")
    assert r.rc == 0, r.err
    assert "gemm bf16" in r.out
    r = run_cli("calibrate", "--kernels", str(tmp_path), "--gpu", "a100", "--framework", "vllm")
    assert "missing column" not in r.err     # no window column: global attention, window 0 (kerneltable.NO_WINDOW)


# ------------------------------------------------------------------ probe on a noisy VM
def test_a_probe_whose_dram_outran_its_l3_is_saved_unsteady_without_strict():
    """`ironlaw probe` refused with "dram measured faster than l3 (4.83 GB/s vs 437 MB/s)" though only --strict
    refuses: without it the l3 level is left out, the reason joins the unsteady marks; --strict still refuses."""
    from ironlaw.core.errors import IronlawError
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import build
    from test_probe import fake_probe
    p = fake_probe()
    for r in p["memory"]:
        if r["level"] == "l3":
            r["time_s"] = r["bytes"] / 0.437e9
    with pytest.raises(IronlawError, match="dram measured faster than l3 .*nothing saved"):
        build.profile(p, calibrate_fit=False)
    doc = build.profile(p, calibrate_fit=False, strict=False)
    assert [t["name"] for t in doc["memory"]] == ["l2", "dram"]
    (why,) = doc["probe"]["checks"]["refused"]
    assert "dram measured faster than l3 (33 GB/s vs 437 MB/s)" in why and "l3 is not listed" in why
    assert doc["probe"]["fits"]["l3"]["not_listed"] == "measured slower than dram"
    assert "unsteady: 1 check(s) failed" in doc["title"]
    hardware.parse_hardware(doc, "probe")                       # a valid profile, fastest tier first


# ------------------------------------------------------------------ calibrate --kernels: what it leaves out
FP8_BLOCK_ROWS = ("NVIDIA H100 80GB HBM3,fp8_block,769,3584,768,0.0175\n"
                  "NVIDIA H100 80GB HBM3,fp8_block,4353,768,3584,0.0581\n"
                  "NVIDIA H100 80GB HBM3,fp8_block,4096,4096,4096,0.09\n")


def test_calibrate_says_which_rows_it_left_out_and_counts_in_the_singular(tmp_path, shared_kernel_fits):
    """Block-scaled FP8 rows vanished without a word ("fitted on ... 1 kernel classes", "1 rows"); now the
    result names them (text, md, json, library alike), and a table of nothing else is refused saying why."""
    pytest.importorskip("pandas")
    import ironlaw
    (tmp_path / "gemm_perf.csv").write_text(
        "device,gemm_dtype,m,n,k,latency\n"
        "NVIDIA H100 80GB HBM3,bfloat16,768,5120,4096,0.0457\n"
        "NVIDIA H100 80GB HBM3,bfloat16,4096,4096,4096,0.16\n"
        "NVIDIA H100 80GB HBM3,bfloat16,64,4096,4096,0.03\n" + FP8_BLOCK_ROWS)
    r = run_cli("calibrate", "--kernels", str(tmp_path))
    assert r.rc == 0, r.err
    said = " ".join(r.out.split())
    assert "fitted on the even rows of 1 kernel class (framework unstated: the tables name none)" in said
    assert " 1 row " in said
    assert "left out: 3 rows of gemm_dtype fp8_block in" in said and "block-scaled FP8" in said
    assert "left out: 3 rows of gemm_dtype fp8_block" in run_cli("calibrate", "--kernels", str(tmp_path),
                                                                 "--format", "md").out
    doc = run_cli("calibrate", "--kernels", str(tmp_path), "--format", "json").json()
    from ironlaw.core import schemas
    schemas.validate(doc)
    (k,) = doc["skipped"]
    assert (k["gemm_dtype"], k["rows"]) == ("fp8_block", 3) and "no ironlaw dtype runs it" in k["why"]
    assert ironlaw.calibrate(str(tmp_path)).to_dict()["skipped"] == doc["skipped"]
    only = tmp_path / "only"
    only.mkdir()
    (only / "gemm_perf.csv").write_text("device,gemm_dtype,m,n,k,latency\n" + FP8_BLOCK_ROWS)
    line = one_line_error(run_cli("calibrate", "--kernels", str(only)))
    assert "no rows to fit; left out 3 fp8_block rows (128-element block-scaled FP8" in line


# ------------------------------------------------------------------ a ViT from its config.json
def test_a_vit_config_is_captured_without_a_library_warning(tmp_path):
    """Capturing a Hugging Face ViT printed transformers' "`past_key_values`/`cache_params` are deprecated" on
    stderr: the capture read the deprecated alias on an output that has no cache."""
    pytest.importorskip("transformers")
    cfg = tmp_path / "vit" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps({"architectures": ["ViTForImageClassification"], "model_type": "vit",
                               "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                               "intermediate_size": 128, "image_size": 32, "patch_size": 16, "num_channels": 3}))
    r = run_cli("analyze", f"hf:{cfg}", "--on", "h100", "--format", "json")
    assert r.rc == 0, r.err
    assert r.err.strip() == "" and r.json()["time_s"] > 0
    # --seq was taken and ignored (the same time, no seq in the header): an image model refuses it
    line = one_line_error(run_cli("analyze", f"hf:{cfg}", "--on", "h100", "--seq", "128"))
    assert "--seq does not apply to an image model" in line and "32 pixels a side" in line


# ------------------------------------------------------------------ a one-op workload's table
def test_a_one_op_workload_titles_its_table_in_the_singular():
    """`analyze gemv:4096,4096` titled its table 'all 1 ops by time' (md: 'All 1 ops:')."""
    text = run_cli("analyze", "gemv:4096,4096", "--on", "h100")
    assert text.rc == 0 and "the 1 op by time" in text.out and "1 ops" not in text.out
    md = run_cli("analyze", "gemv:4096,4096", "--on", "h100", "--format", "md")
    assert "The 1 op:" in md.out and "1 ops" not in md.out


# ------------------------------------------------------------------ low-precision training on one device
def test_one_device_fp8_and_fp4_training_lower_the_gemms_as_the_step_does():
    """`analyze llama3-8b --phase train --dtype fp4 --on b200` refused "fp4 training is not modelled … fp4 serves
    inference" though `--gpus 8` runs NVIDIA's NVFP4 recipe; `--dtype fp8` built the whole graph in fp8 (every
    activation and norm in one byte) where the step lowers the linear GEMMs only. Now one device lowers alike, and
    sweep and compare's rebuilt 'after' graph agree with analyze."""
    import ironlaw
    for dt in ("fp8", "fp4"):
        r = run_cli("analyze", "llama3-8b", "--phase", "train", "--dtype", dt, "--on", "b200")
        assert r.rc == 0, r.err
        assert r.out.startswith(f"llama3-8b · train · {dt} GEMMs, bf16 elsewhere · batch 1")
        est = ironlaw.analyze("llama3-8b", on="b200", phase="train", dtype=dt)
        dts = {op.name: op.dtype for op in est.graph.ops}
        assert dts["mlp_up_proj"] == dt and dts["lm_head"] == "bf16"
        two = ironlaw.analyze("llama3-8b", on="b200", phase="train", dtype=dt, batch=2).time_s
        swp = ironlaw.sweep("llama3-8b", on="b200", phase="train", dtype=dt, batch="1,2").to_dict()
        assert swp["dtype"] == dt and swp["points"][1]["time_s"] == pytest.approx(two, rel=1e-9)
        cmp = ironlaw.compare("llama3-8b", on="b200", phase="train", dtype=dt, what_if="batch=2")
        assert cmp.after.time_s == pytest.approx(two, rel=1e-9)
    line = one_line_error(run_cli("analyze", "llama3-8b", "--phase", "train", "--dtype", "fp4", "--on", "h100"))
    assert "NVFP4 recipe" in line and "h100 has no fp4 tensor cores" in line
    line = one_line_error(run_cli("analyze", "resnet50", "--phase", "train", "--dtype", "fp8"))
    assert "fp8 training needs the layers' linears known" in line


# ------------------------------------------------------------------ counts of one
def test_one_micro_batch_and_one_request_are_said_in_the_singular():
    """'global batch 1 = 1 micro-batches of 1 × dp' and a prefill's host line '(1 requests, …)'."""
    step = run_cli("analyze", "gpt2", "--phase", "train", "--on", "h100", "--gpus", "1", "--global-batch", "1")
    assert step.rc == 0 and "= 1 micro-batch of 1 × dp" in " ".join(step.out.split())
    srv = " ".join(run_cli("serve", "llama3-8b", "--on", "h100").out.split())
    assert "(1 request, " in srv and "1 requests" not in srv
    # 'llama3-8b · decode · bf16: 1 points', 'max throughput, 1 requests of', '1 GPUs on 1 node(s)'
    assert run_cli("sweep", "llama3-8b", "--phase", "decode", "--batch", "1").out.startswith(
        "llama3-8b · decode · bf16 · seq 1024: 1 point\n")
    one = " ".join(run_cli("serve", "llama3-8b", "--max-throughput", "--requests", "1").out.split())
    assert "max throughput, 1 request of 1024 + 256 tokens" in one
    found = " ".join(run_cli("search", "gpt2", "--gpus", "1", "--global-batch", "8", "--seq", "1024").out.split())
    assert "on h100: 1 GPU on 1 node, global batch 8" in found
    from ironlaw.core.units import counted
    assert [counted(1, "run"), counted(5, "run"), counted(1500, "request"), counted(2, "kernel class", "kernel classes")] \
        == ["1 run", "5 runs", "1,500 requests", "2 kernel classes"]
