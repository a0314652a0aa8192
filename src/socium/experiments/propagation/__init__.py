"""socium.experiments.propagation: simulated against real retweet cascades.

Spec, run, fit, cross-validation and report of the propagation study together.
"""
