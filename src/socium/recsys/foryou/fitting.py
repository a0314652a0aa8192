"""Fit foryou's value model to a finished run's own agents (``value_model.fit`` on the trace's rows),
and say how well a model's probabilities match what the agents then did (:func:`calibration`).

Why from a finished trace: the model must be calibrated to the agents it serves, and an LLM agent's
decision must never reach the recommender before it is made. A run's exposures record the value
model's inputs as they were when each post was served (``exposures.features``), and its actions say
what each agent then did, so a later run can use ``recsys.params.value_model: <file or mapping>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from socium.errors import SociumError
from socium.recsys.foryou.value_model import FEATURES, HEAD_ACTIONS, HEADS, ValueModel, fit
from socium.trace.queries import exposures
from socium.trace.queries.runs import open_run

#: Bin edges of :func:`calibration`'s reliability table: the heads' probabilities span 1e-4 (reports) to
#: ~0.2 (likes), so equal-width bins would put almost every row in the first one.
RELIABILITY_EDGES = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


def training_rows(run_dir: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """A ``foryou`` run's rows: features (n, len(FEATURES)) of each explained exposure and, per head, 0/1
    whether that agent took the head's action on the post (or its author) in that step (n, len(HEADS))."""
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
    return x, y


def fit_run(run_dir: str | Path, l2: float = 1.0) -> ValueModel:
    """A value model fitted to the run in ``run_dir`` (a ``foryou`` run); see the module doc."""
    x, y = training_rows(run_dir)
    return fit(x, y, l2=l2)


@dataclass(frozen=True)
class HeadCalibration:
    """One head's predictions against the actions taken on the same rows.

    ``brier`` is the mean squared error of the probabilities; ``brier_base_rate`` is that of predicting
    the rows' own action rate for every row (a constant that knows the answer's mean: a model whose
    features say nothing cannot beat it). ``bins``: (low, high, rows, actions, mean predicted) per
    :data:`RELIABILITY_EDGES` bin that holds rows.
    """

    head: str
    n: int
    actions: int
    mean_predicted: float
    brier: float
    brier_base_rate: float
    bins: tuple[tuple[float, float, int, int, float], ...]


def calibration(
    model: ValueModel, x: np.ndarray, y: np.ndarray, edges: tuple[float, ...] = RELIABILITY_EDGES
) -> list[HeadCalibration]:
    """Per head (HEADS order), how the model's probabilities on rows ``x`` match the actions ``y``."""
    if len(x) == 0 or y.shape != (len(x), len(HEADS)):
        raise ValueError(f"calibration: need n > 0 rows, x (n, {len(FEATURES)}) and y (n, {len(HEADS)})")
    p = model.probabilities(np.asarray(x, dtype=np.float64))
    which = np.clip(np.searchsorted(np.asarray(edges), p, side="right") - 1, 0, len(edges) - 2)
    out = []
    for h, head in enumerate(HEADS):
        ph, yh = p[:, h], y[:, h]
        rate = float(yh.mean())
        bins = tuple(
            (edges[b], edges[b + 1], int(m.sum()), int(yh[m].sum()), float(ph[m].mean()))
            for b in range(len(edges) - 1)
            if (m := which[:, h] == b).any()
        )
        out.append(
            HeadCalibration(
                head=head,
                n=len(yh),
                actions=int(yh.sum()),
                mean_predicted=float(ph.mean()),
                brier=float(np.mean((ph - yh) ** 2)),
                brier_base_rate=float(np.mean((rate - yh) ** 2)),
                bins=bins,
            )
        )
    return out
