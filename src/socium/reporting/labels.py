"""Legend names for reports: real data, the model population and the null, each named for what it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from socium.errors import SociumError
from socium.reporting.card import simulation_card


def short_model(name: str) -> str:
    """'HuggingFaceTB/SmolLM2-135M-Instruct' -> 'SmolLM2-135M-Instruct' (file names lose .gguf)."""
    return name.rsplit("/", 1)[-1].removesuffix(".gguf")


def model_label(run_dir: Path | str) -> str:
    """What a run's agents were, for legends: 'LLM (SmolLM2-135M-Instruct)', 'LLM (random, smoke)', 'IC model'."""
    try:
        card = simulation_card(run_dir)
    except SociumError:
        return "model"
    llm = card.get("llm")
    if not llm:
        return {
            "independent_cascade": "IC model",
            "random": "random-actor model",
            "threshold": "threshold model",
            "bounded_confidence": "bounded-confidence model",
        }.get(card["policy"], f"{card['policy']} model")
    models = llm.get("models_called")
    names = ", ".join(short_model(m) for m in models) if isinstance(models, dict) and models else llm["backend"]
    return f"LLM ({names}{', smoke' if card.get('smoke_run') else ''})"


NULL_LABELS = {"propagation": "IC null", "herding": "random-voting null", "polarisation": "bounded-confidence null"}
"""Each study's null-run legend name: a copy of the study registry's ``null_label`` s (reporting sits below
``socium.experiments``, so it cannot read the registry; ``tests/test_experiments/test_studies.py`` holds them equal)."""


def source_labels(kind: str, model_dir: Path | str | None) -> dict[str, str]:
    """Legend names: real data, the model population and the experiment's null, each named for what it is."""
    labels = {"real": "real (Twitter15)", "null": NULL_LABELS.get(kind, "null model"), "run": "this run"}
    if model_dir is not None:
        labels["model"] = model_label(model_dir)
        labels["run"] = labels["model"]
    return labels


def real_label(res: dict[str, Any]) -> str:
    """'real (Twitter15)', or the user's own tree files when the cascades came from those."""
    own = {Path(f).stem for f in res.get("spec", {}).get("tree_files", [])}
    ids = {c["id"] for c in res.get("cascades", [])}
    if ids and ids <= own:
        return "real (your tree files)"
    if ids & own:
        return "real (Twitter15 and your tree files)"
    return "real (Twitter15)"
