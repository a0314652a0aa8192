"""Named trace queries: the metrics layer.

Every measure a study, report, the Simulation Card or ``socium validate`` quotes is computed here, as
a named function over a run's DuckDB trace (values only as bound parameters, never formatted into
SQL). Raw SQL against the trace schema lives only in :mod:`socium.trace` and in what a user types
into ``socium query``; everything above reads these functions, so a schema change touches one room.
"""
