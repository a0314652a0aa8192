"""Dyadic episodes on SOTOPIA (Zhou et al. 2024, "Is this the real life? Is this just fantasy?").

``sotopia`` reads SOTOPIA's profiles and applies its visibility rules, ``tasks`` generates objective
tasks that need no LLM judge, and ``prompts`` fixes exactly what each simulation mode lets a model see.
"""
