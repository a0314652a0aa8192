"""socium.experiments.intervention: what if the platform did X.

Spec, run, content drift and report of the intervention study together.
"""
