"""Layer 4, measuring and fitting: the probe's micro-benchmarks (``probe``), real runs (``validate``) and the
fitters that turn measurements into a calibration (``calibrate``). torch is imported only when measuring."""
