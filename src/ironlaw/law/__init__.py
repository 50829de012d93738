"""Layer 2, the law: efficiency and latency per op, the Iron Law evaluated per op, the estimate, its
explanation, the critical path, coverage, time ranges, power and sweeps. Imports ``machine`` and ``core``."""
