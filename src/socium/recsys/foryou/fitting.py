"""Fit foryou's value model to a finished run's own agents (``value_model.fit`` on the trace's rows).

Why from a finished trace: the model must be calibrated to the agents it serves, and an LLM agent's
decision must never reach the recommender before it is made. A run's exposures record the value
model's inputs as they were when each post was served (``exposures.features``), and its actions say
what each agent then did, so a later run can use ``recsys.params.value_model: <file>``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from socium.errors import SociumError
from socium.recsys.foryou.value_model import FEATURES, HEAD_ACTIONS, HEADS, ValueModel, fit
from socium.trace.queries import exposures
from socium.trace.queries.runs import open_run


def fit_run(run_dir: str | Path, l2: float = 1.0) -> ValueModel:
    """A value model fitted to the run in ``run_dir`` (a ``foryou`` run); see the module doc."""
    with open_run(Path(run_dir)) as con:
        x, labels = exposures.explained_with_actions(con, list(HEAD_ACTIONS.values()))
    if not len(x):
        raise SociumError(f"{run_dir}: no explained exposures to fit on (is it a recsys.kind: foryou run?)")
    if x.shape[1] != len(FEATURES):
        raise SociumError(f"{run_dir}: exposures.features has {x.shape[1]} values, this socium expects {len(FEATURES)}")
    y = np.zeros((len(x), len(HEADS)))
    col = {a: HEADS.index(h) for h, a in HEAD_ACTIONS.items()}
    for rid, typ in labels:
        y[rid, col[typ]] = 1.0
    return fit(x, y, l2=l2)
