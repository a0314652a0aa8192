"""The experiment config: one validated pydantic tree, loaded from YAML with a safe loader.

Validation happens before a run directory is touched, so a typo never leaves a half-written run.
Errors name the key path, the bad value and what is allowed.

Each section lives in the module named for what it configures (``agents``, ``world``, ``llm``,
``moderation``, ``executor``; the whole tree in ``experiment``) and loading in ``loading``; import a
name from its module. Sections import only :mod:`socium.core` and :mod:`socium.errors`.
"""
