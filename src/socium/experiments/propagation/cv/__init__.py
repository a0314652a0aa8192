"""Scoring by cross-validation (fit on train folds, score held-out cascades) and transfer of a saved fit."""
