"""What a single-configuration prediction prices (``priced``): the graph as built, on the device, as `analyze`,
`compare` and `sweep` price it alike."""
from __future__ import annotations


def priced(graph, hw):
    """(graph, device) as a prediction prices them: the routed experts on the device's own MoE kernels
    (``routed.routed_experts``); a training graph as a training step prices one device's micro-batch
    (``parallel.step.train_step``): without the terms fitted on serving kernels (``calibration.for_training``),
    each GEMM at the η its kernel rows allow (``gemm_rows.with_kernel_rows``), so that `analyze --phase train`
    and the step of `--global-batch` on one device agree."""
    from .routed import routed_experts

    g = routed_experts(graph, hw)
    if g.phase != "train":
        return g, hw
    from ..machine.calibration import for_training
    from .gemm_rows import with_kernel_rows
    t = for_training(hw)
    return with_kernel_rows(g, t), t
