"""Named trace queries: the metrics layer.

Every measure a study, report, the Simulation Card or ``socium validate`` quotes is computed here, as
a named function over a run's DuckDB trace (values only as bound parameters, never formatted into
SQL). Raw SQL against the trace schema lives only in :mod:`socium.trace` and in what a user types
into ``socium query``; everything above reads these functions, so a schema change touches one room.

Convention: each function takes an open DuckDB connection to one run's trace as its first argument
(:func:`socium.trace.queries.runs.open_run` opens one read-only) and returns plain Python, numpy or
Arrow values. Modules are named for what they measure: ``runs`` (run row, steps, totals, activity),
``cascades`` (trees, shapes, per-minute curves, reshare trials), ``curves`` (the curve arithmetic
shared with real cascades), ``posts`` (kinds, votes), ``population`` (stances, surveys, memories),
``calls`` (LLM call log), ``exposures`` (feeds), ``attention`` (out-of-network and cross-stance
exposure, concentration of impressions, cascade size counts: recommender comparisons),
``interventions`` (claims, reach, moderation), ``stylized`` (``socium validate``'s inputs),
``opinions`` (herding, polarisation), ``quality``.
"""
