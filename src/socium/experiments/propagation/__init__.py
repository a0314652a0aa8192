"""socium.experiments.propagation: simulated against real retweet cascades, and forecasting them.

Rooms by role, each importing only those below it (the ``propagation rooms`` contract in pyproject.toml):
``study`` on top; ``cv/`` and ``forecast_run``; ``fit/``, ``sim/``, ``counterfactual``, ``report/``;
``spec`` and ``forecast/``; ``data/`` at the ground (docs/architecture.md).
"""
