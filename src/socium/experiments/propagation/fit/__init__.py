"""Fitting the timing model to real trees, the self-contained fit file, its interval calibration and transfer checks."""
