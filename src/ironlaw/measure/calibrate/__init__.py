"""Fitting a ``[calibration]`` table: the shared core (``fitcore``), from measured ops (``calibrate``), from the
probe's rows into a profile (``build``), from published per-op times (``published``), from validate runs
(``fit``) and the probe's self-calibration on its reference runs (``selfcal``)."""
