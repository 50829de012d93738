"""A new user's first steps with each command, read from the README and --help alone: what a line said that was
wrong or unexplained. Each pinned by the test that failed before its fix."""
import pytest

from conftest import one_line_error, run_cli


# ------------------------------------------------------------------ fit: what the calibration holds, and why not more
def test_fit_says_what_it_fitted_and_why_no_op_class():
    """`fit` on one ResNet run printed "calibration: 0 op classes, framework 0 s per op + 0.0%" although it had
    fitted conv, elementwise, norm, reduction and the fp32 GEMMs; it now names them, and why no op name got a
    class of its own, and why the framework terms are 0."""
    from ironlaw.cli.fit import fitted_line, framework_line
    cal = {"compute": {"conv": 0.3, "elementwise": 0.1}, "latency_s": {"norm": 1e-6},
           "memory": {"kind": {"elementwise": 0.5}, "produced": 0.5}, "matmul": {"fp32": {"eta_max": 0.7}},
           "kernel": {"pool-max": {"compute": 0.1}}, "framework_s": 0.0, "framework_share": 0.0}
    line = fitted_line(cal)
    assert line.startswith("op kinds conv, elementwise, matmul (fp32), norm;")
    assert "kernel classes pool-max" in line and "no op class of its own (an op name gets one where it holds" in line
    assert "0 op classes" not in line
    assert "no longer than their ops timed one by one" in framework_line(cal)
    with_ops = fitted_line({**cal, "op": {"aten::max_pool2d_with_indices": {"compute": 0.2}}})
    assert with_ops.endswith("op classes aten::max_pool2d_with_indices")
    assert "one by one" not in framework_line({"framework_s": 1e-5, "framework_share": 0.0})
