"""FLOPs per element of the non-matmul ops: one convention for every route into a graph.

The analytic built-ins (``workloads``), the torch capture (``capture.formulas``), the ONNX reader
(``capture.onnx``) and the probe's vector and reduction rows all count with these numbers, so a
calibration fitted on captured ops predicts a built-in's ops on the same scale. (Before: the capture
counted an exp as 1 FLOP, a layer norm as 8 and a training batch norm as 8, the built-ins 4, 7 and 5,
so a fitted GELU or norm rate did not carry from ``validate`` to ``analyze``.)

FLOPs are floating-point operations (a multiply-accumulate is 2). Each op counts the arithmetic steps
of its textbook definition per element, an elementary function evaluated in software (exp, log, tanh,
erf, sin, cos …) as TRANSCENDENTAL steps: a CPU evaluates a polynomial of a few FMAs (GPUs have
special-function units; the per-class efficiency absorbs that). sqrt, rsqrt and reciprocal are one
instruction on every target here and count 1.
"""
from __future__ import annotations

TRANSCENDENTAL = 4.0            # one exp / log / tanh / erf / sin / cos
SIGMOID = 3.0 + TRANSCENDENTAL  # −x, exp, +1, ÷
SILU = 3.0 + TRANSCENDENTAL     # x / (1 + exp(−x)): −x, exp, +1, ÷
GELU_ERF = 4.0 + TRANSCENDENTAL     # 0.5·x·(1 + erf(x/√2)): ÷√2, erf, +1, ·x, ·0.5
GELU_TANH = 8.0 + TRANSCENDENTAL    # 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): x³ (2), ·, +x, ·, tanh, +1, ·x, ·0.5
SOFTPLUS = 1.0 + 2.0 * TRANSCENDENTAL   # log(1 + exp(x))
ELU = 3.0 + TRANSCENDENTAL      # x > 0 ? x : α·(exp(x) − 1)
MISH = 2.0 + 3.0 * TRANSCENDENTAL   # x·tanh(log(1 + exp(x)))
BCE_WITH_LOGITS = 7.0 + 2.0 * TRANSCENDENTAL   # max(x, 0) − x·y + log(1 + exp(−|x|)): |x|, −, exp, +1, log, max, ·, −, +
SOFTMAX = 4.0 + TRANSCENDENTAL  # max, −max, exp, sum, ÷
LOG_SOFTMAX = 4.0 + 2.0 * TRANSCENDENTAL    # max, −max, exp, sum, log of the sum, −
SOFTMAX_BACKWARD = 3.0          # Σ dy·y, dy − Σ, ·y
LAYERNORM = 7.0                 # sum, −mean, ², sum, ·rstd, ·gain, +bias (group norm: the same per element)
RMSNORM = 4.0                   # x², sum, ·rsqrt(mean + eps), ·gain
BATCHNORM_TRAIN = 5.0           # sum, x² and sum, then one per-channel scale and shift (γ·rstd, β − mean·γ·rstd)
BATCHNORM_EVAL = 2.0            # running statistics: one per-channel scale and one shift
BACKWARD = 2.0                  # a non-matmul op's backward: twice its forward's FLOPs (``common.backward``)
