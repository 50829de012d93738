"""What each serving feature buys, on two models and two devices, with the physics it rests on.

    PYTHONPATH=src python benchmarks/serving_features.py

Rows: speculative decoding (a ~1B draft and an EAGLE head, acceptance 0.8, K = 4) at batch 1 and 256; prefix
caching (half the prompt cached); disaggregated prefill/decode (the best split of 16 devices for TTFT ≤ 1 s,
ITL ≤ 50 ms); goodput (the highest concurrency meeting the same SLO); energy per output token at concurrency 64.
Then the energy comparison: the prediction against ML.ENERGY's measured J/token (Llama 3.1 8B on one H100,
batch 64, vLLM: 0.12 J in leaderboard v3 (vLLM 0.11.1), 0.20 J in v2 (vLLM 0.5.4); ml.energy/blog, 'LLM
Inference Energy: A Longitudinal Analysis'), with the goal that the prediction lands within a factor of 2; and
against the board power and J/token measured on an H200 by benchmarks/gpu_energy.py (tests/data).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench import print_table  # noqa: E402

from ironlaw.models.serving import online as serving  # noqa: E402
from ironlaw.models.serving.features import common, disaggregate, goodput, prefix, speculative  # noqa: E402
from ironlaw.models.serving.features.energy import of_serving  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DRAFT_1B = "hf:" + str(ROOT / "tests" / "data" / "llama3.2-1b-config.json")
MODELS = (("llama3-8b", 1, "eagle", None), ("llama3-70b", 4, "draft", DRAFT_1B))
DEVICES = ("h100", "a100")
PROMPT, OUTPUT = 1024, 256
SLO = {"ttft_s": 1.0, "itl_s": 0.05}


def _at(spec, hw, tp):
    return lambda c: serving.estimate(spec, hw, PROMPT, OUTPUT, c, tp=tp)


def speculative_rows(spec, hw, tp, method, draft):
    s, out = common.Setup(tp=tp), []
    for b in (1, 256):
        base = _at(spec, hw, tp)(b)
        d = speculative.estimate(base, speculative.Speculation(method, 4, 0.8, draft), s)
        out.append((f"speculative {method} K=4 A=0.8, batch {b}",
                    f"ITL {1e3 * base.itl_s:.1f} → {1e3 * d['itl_s']:.1f} ms, tokens/s {d['throughput_change']:+.0%}",
                    f"verify step {d['verify_step_s'] / base.decode_step_s:.2f}× a decode step "
                    f"({d['verify_bottleneck']}-bound), {d['expected_tokens_per_step']:.2f} tokens/step"))
    return out


def other_rows(spec, hw, tp):
    s, at = common.Setup(tp=tp), _at(spec, hw, tp)
    base = at(32)
    p = prefix.estimate(base, 0.5, s)
    rows = [("prefix hit 0.5, concurrency 32",
             f"TTFT {1e3 * base.ttft_s:.0f} → {1e3 * p['ttft_s']:.0f} ms, tokens/s "
             f"{p['tokens_per_s'] / base.tokens_per_s - 1:+.0%}",
             f"projection FLOPs × {p['projection_flops'] / p['baseline_projection_flops']:.2f}; the new queries attend "
             f"the whole prompt; KV held for all {PROMPT}")]
    dg = disaggregate.best_split(at, 16 if tp > 1 else 4, s, SLO)
    if dg["met"]:
        b = dg["best"]
        rows.append((f"disaggregate {b['prefill_devices'] + b['decode_devices']} devices, SLO 1 s / 50 ms",
                     f"prefill={b['prefill_devices']}, decode={b['decode_devices']}: {b['tokens_per_s_per_device']:.0f} "
                     f"tokens/s/device", f"KV {b['kv_bytes_per_prompt'] / 1e6:.0f} MB over {b['link']} in "
                     f"{1e3 * b['transfer_s']:.2f} ms; decode steps without prefill stalls"))
    g = goodput.goodput(at, SLO, tp)
    rows.append(("goodput, SLO TTFT 1 s, ITL 50 ms",
                 f"concurrency {g['concurrency']}: {g['at']['tokens_per_s'] / tp:.0f} tokens/s/device" if g["met"]
                 else "no concurrency meets it", f"bisection on ITL(c) and TTFT(c), both rising with c; "
                 f"{g.get('limited_by', '')} binds beyond"))
    e = of_serving(at(64), devices=tp)
    usd = e["usd_per_million_output_tokens"]
    rows.append(("energy, concurrency 64", f"{e['joules_per_output_token']:.3g} J/token, "
                 + (f"${usd:.3g}/M tokens" if usd is not None else "no sourced price"),
                 f"P = idle + (TDP − idle)·u, u = {e['utilization']:.2f} (busy share of the binding resource)"))
    return rows


def deepseek_mtp() -> None:
    """DeepSeek-V3 (fp8, 8 x H200) with its MTP head, K = 1 at the 85% second-token acceptance its report states
    (DeepSeek-V3 Technical Report, arXiv 2412.19437: 85-90% acceptance, 1.8x tokens/s on their serving setup)."""
    s = common.Setup(dtype="fp8", tp=8)
    print("\ndeepseek-v3 (fp8, tp 8) on h200, MTP K=1 acceptance 0.85 (the report: 1.8x tokens/s):")
    for b in (1, 8, 64):
        base = serving.estimate("deepseek-v3", "h200", PROMPT, OUTPUT, b, tp=8, dtype="fp8")
        d = speculative.estimate(base, speculative.Speculation("mtp", 1, 0.85), s)
        print(f"  batch {b:>3}: tokens/s x{1 + d['throughput_change']:.2f}; verify step "
              f"{d['verify_step_s'] / base.decode_step_s:.2f}x a decode step ({d['verify_bottleneck']}-bound), MTP "
              f"layer {1e3 * d['draft_step_s']:.2f} ms")


def energy_check() -> int:
    """Predicted J/token against ML.ENERGY's measurement (Llama 3.1 8B, one H100, batch 64)."""
    step = serving.decode_tokens_per_s("llama3-8b", "h100", 64, 512 + 717 // 2)
    from ironlaw.law import power
    j_step = float(power.of(step[1])) / step[0]
    cycle = of_serving(serving.estimate("llama3-8b", "h100", 512, 717, 64))["joules_per_output_token"]
    rows = [("J/token, decode step only (batch 64)", f"{j_step:.3f} J vs 0.12 (v3) / 0.20 (v2)",
             "0.06 … 0.24", 0.06 <= j_step <= 0.24),
            ("J/token, serving cycle with prefills", f"{cycle:.3f} J vs 0.12 (v3) / 0.20 (v2)",
             "0.06 … 0.24", 0.06 <= cycle <= 0.24)]
    return print_table(rows, "Energy per output token: ironlaw against ML.ENERGY (Llama 3.1 8B, 1 x H100, batch 64; "
                             "assumed prompt 512, output 717 = v3's mean chat response)")


def h200_check() -> int:
    """Predicted board power, step time and J/token against the H200 measured by benchmarks/gpu_energy.py."""
    from ironlaw.law import power
    m = json.loads((ROOT / "tests" / "data" / "h200_llama8b_energy_measured.json").read_text())
    rows = [("idle W (CUDA context)", f"catalog {power_idle('h200'):.0f} vs measured {m['idle_w']:.0f}", "equal",
             abs(power_idle("h200") - m["idle_w"]) < 1)]
    for r in m["decode"]:
        rate, est = serving.decode_tokens_per_s("llama3-8b", "h200", r["batch"], m["context"])
        t = r["batch"] / rate
        p = float(power.of(est, t))
        j = p * t / r["batch"]
        rows.append((f"decode batch {r['batch']}: J/token", f"{j:.3g} vs {r['joules_per_token']:.3g} "
                     f"({j / r['joules_per_token'] - 1:+.0%}); W {p:.0f} vs {r['power_w']:.0f}, ms "
                     f"{1e3 * t:.2f} vs {1e3 * r['time_s']:.2f}", "within 2x", 0.5 <= j / r["joules_per_token"] <= 2))
    return print_table(rows, "H200, Llama-3.1-8B-shaped decoder (torch + CUDA graph, 1024-token cache): predicted vs "
                             "measured (tests/data/h200_llama8b_energy_measured.json)")


def power_idle(name: str) -> float:
    from ironlaw.machine import hardware
    return hardware.get(name).idle_w


def main() -> int:
    for spec, tp, method, draft in MODELS:
        for hw in DEVICES:
            rows = speculative_rows(spec, hw, tp, method, draft) + other_rows(spec, hw, tp)
            print(f"\n{spec}{f' (tp {tp})' if tp > 1 else ''} on {hw}: prompt {PROMPT}, output {OUTPUT}")
            w = max(len(r[0]) for r in rows)
            for what, result, physics in rows:
                print(f"  {what:<{w}}  {result:<48}  {physics}")
    deepseek_mtp()
    return energy_check() + h200_check()


if __name__ == "__main__":
    raise SystemExit(1 if main() else 0)
