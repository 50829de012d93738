"""benchmarks/moe_triton_blocks.py: the M block vLLM's and SGLang's Triton fused MoE pads each expert's rows to.

The block is the tuned file's entry of the nearest M key where the extract holds the layer's (local experts,
inter/TP), get_default_config's otherwise; the padding scales the routed rows' FLOPs.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import moe_triton_blocks as blocks  # noqa: E402


def test_the_default_config_blocks_by_tokens_against_local_experts():
    bm, has = blocks.block_size_m("vllm", "bf16", [64, 128, 129, 4096], [128] * 4, [1536] * 4, {})
    assert bm.tolist() == [16, 16, 64, 64] and not has.any()
    bm, _ = blocks.block_size_m("sglang", "fp8", [8, 9], [8, 8], [512, 512], {})
    assert bm.tolist() == [64, 128]                          # SGLang's per-tensor FP8 default
    bm, _ = blocks.block_size_m("vllm", "fp8_block", [1, 4096], [256, 256], [256, 256], {})
    assert bm.tolist() == [64, 64]                           # block-scaled FP8: one block at every M


def test_a_tuned_file_gives_the_block_of_the_nearest_m_key():
    tuned = blocks.tuned_files("vllm", "h200", "bf16")
    assert (128, 768) in tuned and blocks.tuned_files("sglang", "h200", "bf16") == {}
    # E=128,N=768,device_name=NVIDIA_H200.json: 16 up to M 128, 32 at 256, 64 at 512, 128 from 1024
    bm, has = blocks.block_size_m("vllm", "bf16", [100, 200, 2048, 3072, 16384], [128] * 5, [768] * 5, tuned)
    assert bm.tolist() == [16, 32, 128, 128, 128] and has.all()
    bm, has = blocks.block_size_m("vllm", "bf16", [3072], [128], [1536], tuned)    # no file: the default
    assert bm.tolist() == [64] and not has.any()


def test_the_padding_scales_the_rows_to_whole_blocks():
    rows = {"hidden_size": np.array([2048, 2048, 2048]), "inter_size": np.array([768, 768, 768]),
            "moe_tp_size": np.array([1, 1, 1])}
    h, i, bw = 2048.0, 768.0, 4.8e12
    r = np.array([3072 * 8.0, 2048 * 8.0, 0.0])              # 192 and 128 rows on each of 128 experts; none
    x = np.zeros((3, 8))
    x[:, 4] = 2.0 * r * (2 * h + 3 * i) / bw                 # moefit.terms' G column
    x[:, 7] = 128.0                                          # touched experts
    got = blocks.padding(rows, x, bw, np.array([128.0, 128.0, 128.0]))
    np.testing.assert_allclose(got, [256 / 192, 1.0, 1.0])


def test_the_split_form_moves_the_tuned_rows_flops_to_their_own_column():
    x = np.arange(24, dtype=float).reshape(3, 8)
    has = np.array([True, False, True])
    out, split = blocks.form_terms(x, "split+pad", np.array([2.0, 3.0, 1.0]), has)
    assert split and out[:, 5].tolist() == [4.0, 0.0, 18.0] and out[:, 2].tolist() == [0.0, 30.0, 0.0]
    out, split = blocks.form_terms(x, "pad", np.array([2.0, 3.0, 1.0]), has)
    assert not split and out[:, 2].tolist() == [4.0, 30.0, 18.0] and out[:, 5].tolist() == x[:, 5].tolist()


def test_the_waves_count_each_gemms_ctas_over_the_sms():
    """4,096 × 1,536 at 2,048 tokens of 128 experts top-8: 128 rows on each, one 128-row block per expert; N blocks of
    256: 12 gate-up (3,072) and 16 down (4,096) per block: 1,536 and 2,048 CTAs, 12 and 16 waves over 128 SMs."""
    rows = {"hidden_size": np.array([4096]), "inter_size": np.array([1536]), "moe_tp_size": np.array([1])}
    h, i, bw = 4096.0, 1536.0, 4.8e12
    x = np.zeros((1, 8))
    x[:, 4] = 2.0 * 2048 * 8 * (2 * h + 3 * i) / bw
    x[:, 7] = 128.0
    assert blocks.waves(rows, x, bw, np.array([128.0]), np.array([256.0]), 128).tolist() == [12 + 16]
    bn, has = blocks.block_size_m("vllm", "bf16", [64, 3072], [128, 128], [768, 768],
                                  blocks.tuned_files("vllm", "h200", "bf16"), side=2)
    assert bn.tolist() == [256, 256] and has.all()
    assert blocks.block_size_m("vllm", "fp8_block", [1], [8], [512], {}, side=2)[0].tolist() == [128]


def test_a_malformed_shape_is_refused_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["moe_triton_blocks.py", "--data", "/nowhere", "--framework", "vllm",
                                      "--shape", "2048,768,128"])
    assert blocks.main() == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--shape 2048,768,128" in err[0] and "six integers" in err[0]
