"""The command that re-runs a search's #1 layout on its own: ``ironlaw analyze … --phase train`` with every flag
the layout fixed and the search's step options (``--redundant-experts`` where the layout holds the slots), or
``ironlaw serve …`` with the serving layout's (its concurrency
where latency targets chose it, ``--max-throughput`` where the search ranked the offline scenario). The command's
time is the row's: the search re-predicts its top through the same step."""
from __future__ import annotations

import shlex


def command(res, given: dict) -> str:
    """The re-run of ``res.top[0]``; ``given``: the search's keywords (``api.search``'s)."""
    row = res.top[0]
    args = _train(res, given, row) if res.phase == "train" else _serve(res, given, row)
    return shlex.join(["ironlaw", *args])


def _flag(name: str, value) -> list[str]:
    """``--name value``; a switch (True) alone; nothing where the value is None, False or empty."""
    if value is None or value is False or value == "" or value == ():
        return []
    return [f"--{name}"] if value is True else [f"--{name}", str(value)]


def _train(res, given: dict, row: dict) -> list[str]:
    s, settings = res.setup, res.setup.get("settings", {})
    moe = row["ep"] > 1
    args = ["analyze", res.spec, "--phase", "train", "--on", res.hardware, "--gpus", str(s["gpus"])]
    args += _flag("nodes", s["nodes"] if s.get("nodes", 1) > 1 else None)
    args += ["--global-batch", str(s["global_batch"]), "--seq", str(s["seq"]), "--dtype", res.dtype]
    for k in ("tp", "pp", "cp", "dp", "ep", "micro_batch", "interleave", "recompute"):
        args += [f"--{k.replace('_', '-')}", str(row[k])]
    args += _flag("recompute-layers", row.get("recompute_layers"))
    args += _flag("recompute-method", row.get("recompute_method"))
    args += ["--zero", str(row["zero"])]
    args += _flag("sequence-parallel", bool(row["sequence_parallel"]))
    args += _flag("tp-comm-overlap", bool(row.get("tp_comm_overlap")))
    args += _flag("overlap-p2p", bool(row.get("overlap_p2p")))
    args += _flag("moe-dispatcher", row.get("moe_dispatcher"))
    args += _flag("redundant-experts", row.get("redundant_experts"))
    args += _flag("grad-fp32", bool(settings.get("grad_fp32")))
    args += _flag("moe-a2a-overlap", moe and bool(settings.get("moe_a2a_overlap")))
    imbalance = settings.get("expert_imbalance", 1.0)
    args += _flag("expert-imbalance", float(imbalance) if imbalance != 1.0 else None)
    args += _flag("cuda-graph", given.get("cuda_graph"))
    args += _flag("fp8-attention", bool(given.get("fp8_attention")))
    args += _flag("lora-rank", given.get("lora_rank")) + _flag("lora-targets", given.get("lora_targets"))
    args += _flag("offload-activations", given.get("offload_activations"))
    args += _flag("param-gather-exposed", bool(given.get("param_gather_exposed")) and row["zero"] == 1)
    args += _flag("serial", bool(given.get("serial"))) + _flag("network", given.get("network"))
    for k, v in (given.get("options") or {}).items():
        args += ["--opt", f"{k}={v}"]
    for k in ("price_per_gpu_hour", "grid_gco2_per_kwh", "train_tokens", "mtbf_gpu_hours", "checkpoint_s",
              "restart_s"):
        args += _flag(k.replace("_", "-"), given.get(k))
    return args


def _serve(res, given: dict, row: dict) -> list[str]:
    s = res.setup
    hw = row["hardware"]
    args = ["serve", res.spec, "--on", hw, "--tp", str(row["tp"]), "--pp", str(row["pp"]), "--ep", str(row["ep"])]
    args += _flag("attention-dp", bool(row.get("attention_dp")))
    args += (["--max-throughput"] if s.get("scenario") == "max-throughput"
             else ["--concurrency", str(row["concurrency"])])
    args += ["--dtype", row["dtype"], "--kv-dtype", row["kv_dtype"], "--prompt", str(s["prompt"]),
             "--output", str(s["output"])]
    settings = s.get("settings", {})
    engine = settings.get("serve_engines", {}).get(hw) if settings.get("serve_engine") == "per-device" \
        else settings.get("serve_engine")
    args += _flag("engine", engine if engine not in (None, "none") else None)
    args += _flag("redundant-experts", row.get("redundant_experts"))
    args += _flag("max-num-tokens", row.get("max_num_tokens"))
    args += _flag("memory-fraction", settings.get("memory_fraction"))
    priced = given.get("price_per_gpu_hour") is not None or given.get("prices")
    args += _flag("price-per-gpu-hour", float(row["usd_per_gpu_hour"]) if priced else None)
    args += _flag("grid-gco2-per-kwh", given.get("grid_gco2_per_kwh"))
    return args
