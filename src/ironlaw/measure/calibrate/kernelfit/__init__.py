"""The law's GEMM and attention terms of one GPU fitted on measured kernel tables, and scored on held-out rows.

    groups = kernelfit.groups(kerneltable.read(DIR, ops=kernelfit.OPS, gpu="h100", framework="trtllm"))
    table = kernelfit.fit(hw, groups)                 # a [calibration] table, provenance included
    scores = kernelfit.score(hw, table, groups)       # per kernel class: held-out rows, median and p90 |error|

A group is one kernel class of the tables: GEMMs of one dtype (``[calibration.matmul.<dtype>]``), or
context / generation attention of one math and KV dtype and regime, or context / generation MLA (DeepSeek-V3's
latent attention) of one KV dtype (``[calibration.kernel."attention_…"]``, the kernel class
``gemmshape.attention_kernel`` names). Each group's rows are sorted by shape and split in
two: the even rows are fitted (at most ``FIT_ROWS`` of them, evenly spaced), the odd rows held out (``score``
runs at most ``SCORE_ROWS`` of them, evenly spaced). Every
row is the op ironlaw itself builds for it — ``gemm:M,N,K`` (``models.workloads.micro``), the analytic
transformer's attention (``models.workloads.attention``, KV dtype as ``serving.online.with_kv_dtype``
sets it) — and the fit runs the law on it (``fitcore.Problem``), so what is fitted is what predicts.

Per group the fitted terms are the shape model η = eta_max · M/(M+m_half) · N/(N+nk_half) · K/(K+k_half)
(attention: M the query rows per sequence and KV head, N the keys per query, K the head dim;
``gemmshape.attention_mnk``), the streamed bytes' η (GEMM weights, attention KV cache) and a fixed
``latency_s``, and then, on all the fit rows, the kernel grid (``fit_grid``, ``gemmshape.grid_factor``): the
measured over the modelled time per node of a log-spaced grid over M, N, K and units. docs/accuracy.md says which
data chose this form over a tile-and-wave one and over the shape model alone. ``fit(gemm_fill="stream")`` fits a
GEMM class's weights at an η that grows with their tiles (``gemmshape.streamed_eta``, ``fit_stream``), the form the
catalog's Hopper and datacenter-Blackwell GEMM classes hold.

One concept a module, each importing only those below it (pyproject.toml's import-linter contract "inside
kernelfit"): ``vocabulary`` (the tables' ops, dtypes, columns; ``Group``, ``Score``); ``rules`` (every class-keyed
rule with its evidence, and the predicates that read them by a group alone), ``collector`` (how aiconfigurator's
collectors ran each row), ``provenance`` (origin and merging); ``rows`` (groups, the rows a class keeps, the split),
``ops`` (rows as ironlaw ops), ``carried`` (a GPU's GEMM terms carried from another's, ``rules.CARRIED_GEMM``);
``shapefit`` (the shape model and its latency terms), ``launches`` (what a class's fit tries beyond it), ``gemv`` (the GEMV rule), ``scoring`` (held-out errors), ``dispatch`` (rows another kernel runs),
``floor`` (rows timed below the law's floor);
``grid`` (the kernel-choice grid); ``classfit`` (one class's table); ``forms`` (a GEMM class's operands and form);
``fitting`` (``fit``, every class of one GPU's tables).
"""
from __future__ import annotations

from . import (carried, classfit, collector, dispatch, fitting, floor, forms, gemv, grid, launches, ops, provenance,
               rows, rules, scoring, shapefit, vocabulary)
from .fitting import fit
from .forms import form_choices
from .ops import observations
from .provenance import KERNEL_SOURCE, merged, merged_source, origin_of, source
from .rows import groups, held_out, skipped, sorted_rows, split
from .scoring import score
from .vocabulary import AUTO_FORMS, FRAMEWORKS, GEMM_FILLS, LICENSE, OPS, Group, Score

__all__ = ["AUTO_FORMS", "FRAMEWORKS", "GEMM_FILLS", "KERNEL_SOURCE", "LICENSE", "OPS", "Group", "Score", "fit",
           "form_choices", "groups", "held_out", "merged", "merged_source", "observations", "origin_of", "score",
           "skipped", "sorted_rows", "source", "split",
           "carried", "classfit", "collector", "dispatch", "fitting", "floor", "forms", "gemv", "grid", "launches", "ops",
           "provenance", "rows", "rules", "scoring", "shapefit", "vocabulary"]
