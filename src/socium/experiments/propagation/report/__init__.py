"""Propagation reports: the study, its cross-validation and transfer, the forecast tool, counterfactuals."""
