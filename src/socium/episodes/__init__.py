"""Dyadic episodes on SOTOPIA (Zhou et al. 2024, "Is this the real life? Is this just fantasy?").

``sotopia`` reads SOTOPIA's profiles and applies its visibility rules, ``tasks`` generates objective
tasks that need no LLM judge, and ``prompts`` fixes exactly what each simulation mode lets a model see.
``loop`` plays one episode (``structured``: every call validated, one re-ask), ``objective`` turns it
into a rule-based outcome, ``judge`` scores it with SOTOPIA-Eval, ``runner`` runs scenarios x modes
x repeats into ``store`` (``OUT/episodes.duckdb``), ``report`` summarises, ``export`` writes SFT JSONL.
"""
