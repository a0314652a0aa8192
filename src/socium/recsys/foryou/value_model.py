"""The value model: per (user, candidate), the probability of each action X's weights multiply.

X's ranker multiplies *predicted* action probabilities by published weights (``ranking_scorer.rs``:
"the weights do not multiply raw engagement counts"); its predictions come from a transformer over
the user's engagement history, which socium does not have. socium states its own model instead:
one logistic regression per action head over features socium knows at serving time (:data:`FEATURES`),
with documented default coefficients (:data:`DEFAULT_COEF`) and :func:`fit` to calibrate them to a
run's own agents (``recsys.params.value_model: fitted.json``; see ``trace/queries/foryou.py`` for the
rows and ``socium.recsys.foryou.fit`` for the file). Fitting uses only actions already recorded in a
finished trace, so an LLM agent's decision is never read before it is made.

Heads and the socium action each predicts: favorite (like_post), reply (create_comment), retweet
(repost), quote (quote_post), follow_author (follow), not_interested, block_author (block),
mute_author (mute), report (report_post).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from socium.core import actions as A
from socium.errors import ConfigError
from socium.recsys.foryou.params import ForYouParams

FEATURES = (
    "bias",
    "follows",  # the user follows the author (in-network)
    "mutual",  # ... and the author follows the user back
    "similarity",  # cosine of the user's interest vector and the post's embedding
    "post_engagement",  # log1p(likes + reposts + comments - dislikes) of the post's root so far
    "author_engagement",  # log1p(engagement the author's posts have received so far)
    "age_hours",  # simulated hours since the post appeared
    "affinity",  # log1p(the user's own past likes, reposts, quotes and comments of this author)
    "activity",  # log1p(the user's own past likes, reposts, quotes and comments overall)
)
HEADS = (
    "favorite",
    "reply",
    "retweet",
    "quote",
    "follow_author",
    "not_interested",
    "block_author",
    "mute_author",
    "report",
)
#: socium action type each head predicts (the fit's labels).
HEAD_ACTIONS = {
    "favorite": A.LikePost.type_name,
    "reply": A.CreateComment.type_name,
    "retweet": A.Repost.type_name,
    "quote": A.QuotePost.type_name,
    "follow_author": A.Follow.type_name,
    "not_interested": A.NotInterested.type_name,
    "block_author": A.Block.type_name,
    "mute_author": A.Mute.type_name,
    "report": A.ReportPost.type_name,
}

# Default coefficients (logit scale), one row per head, columns in FEATURES order. Chosen by socium,
# not published: base rates of a few percent for likes down to ~1e-4 for reports (X's code notes a
# report is >1000x rarer than a like), similarity and affinity raising positive actions and lowering
# negative ones, older posts less likely to be engaged with, following an author already followed
# impossible. Calibrate to a run with fit().
_D = {
    #                  bias  follows mutual  sim  post_eng auth_eng age_h  affin  activ
    "favorite": (-3.0, 0.5, 0.5, 3.0, 0.3, 0.1, -0.05, 0.5, 0.2),
    "reply": (-4.5, 0.5, 1.0, 2.0, 0.2, 0.05, -0.05, 0.5, 0.2),
    "retweet": (-4.0, 0.3, 0.3, 2.5, 0.3, 0.1, -0.05, 0.5, 0.2),
    "quote": (-5.5, 0.2, 0.3, 2.0, 0.3, 0.05, -0.05, 0.3, 0.2),
    "follow_author": (-5.0, -20.0, 0.0, 2.0, 0.2, 0.2, -0.02, 0.3, 0.1),
    "not_interested": (-7.0, -1.0, -1.0, -3.0, 0.0, 0.0, 0.0, -0.5, 0.0),
    "block_author": (-8.0, -2.0, -2.0, -3.0, 0.0, 0.0, 0.0, -0.5, 0.0),
    "mute_author": (-8.0, -0.5, -1.0, -3.0, 0.0, 0.0, 0.0, -0.5, 0.0),
    "report": (-9.0, -1.0, -1.0, -3.0, 0.0, 0.0, 0.0, -0.5, 0.0),
}
DEFAULT_COEF = np.array([_D[h] for h in HEADS], dtype=np.float64)


@dataclass(frozen=True)
class ValueModel:
    """Logistic heads: ``p[h] = sigmoid(features @ coef[h])``."""

    coef: np.ndarray  # (len(HEADS), len(FEATURES))
    source: str = "default"

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """(n, len(HEADS)) action probabilities for feature rows ``x`` (n, len(FEATURES))."""
        z = x @ self.coef.T
        np.clip(z, -50.0, 50.0, out=z)  # in place: the same operations as 1 / (1 + exp(-clip(z))), no temporaries
        np.negative(z, out=z)
        np.exp(z, out=z)
        z += 1.0
        return np.divide(1.0, z, out=z)

    @staticmethod
    def load(spec: str | dict[str, Any] | None) -> ValueModel:
        """None: the defaults; a dict or a JSON file ``{"features": [...], "heads": {head: [coef...]}}``."""
        if spec is None:
            return ValueModel(DEFAULT_COEF.copy())
        where = "recsys.params.value_model"
        if isinstance(spec, str):
            path = Path(spec)
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"{where}: cannot read {path}: {exc}") from None
            where = f"{where} ({path})"
        else:
            data = spec
        if not isinstance(data, dict) or list(data.get("features", [])) != list(FEATURES):
            raise ConfigError(f"{where}: 'features' must be exactly {list(FEATURES)}")
        heads = data.get("heads")
        if not isinstance(heads, dict) or set(heads) != set(HEADS):
            raise ConfigError(f"{where}: 'heads' must hold one coefficient list for each of {list(HEADS)}")
        try:
            coef = np.array([[float(v) for v in heads[h]] for h in HEADS], dtype=np.float64)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: every coefficient must be a number") from None
        if coef.shape != (len(HEADS), len(FEATURES)) or not np.isfinite(coef).all():
            raise ConfigError(f"{where}: each head needs {len(FEATURES)} finite coefficients")
        return ValueModel(coef, source=str(spec) if isinstance(spec, str) else "inline")

    def to_json(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "heads": {h: self.coef[i].tolist() for i, h in enumerate(HEADS)}}


def head_weights(p: ForYouParams) -> np.ndarray:
    """The published weight of each head (HEADS order)."""
    return np.array(
        [
            p.weight_favorite,
            p.weight_reply,
            p.weight_retweet,
            p.weight_quote,
            p.weight_follow_author,
            p.weight_not_interested,
            p.weight_block_author,
            p.weight_mute_author,
            p.weight_report,
        ]
    )


def weighted_score(probs: np.ndarray, mutual_eligible: np.ndarray, p: ForYouParams) -> np.ndarray:
    """X's weighted score: sum of probability x weight, split into positive and negative parts, then offset.

    The reply weight gains ``mutual_follow_reply_boost`` (added, as ``reply_weight_for`` does) where the
    author is a mutual follow and the candidate is not a repost. Scores >= 0 are shifted up by
    ``negative_scores_offset``; negative ones are squeezed into [0, offset) by ``(s + neg_sum) / total_sum``,
    so every score is positive and order is kept (``offset_score`` in ranking_scorer.rs).
    """
    w = head_weights(p)
    terms = probs * w
    reply = HEADS.index("reply")
    terms[:, reply] += probs[:, reply] * np.where(mutual_eligible, p.mutual_follow_reply_boost, 0.0)
    pos = np.where(terms > 0, terms, 0.0).sum(axis=1)
    neg = -np.where(terms < 0, terms, 0.0).sum(axis=1)
    combined = pos - neg
    negative_sum = -w[w < 0].sum()
    total_sum = w[w > 0].sum() + negative_sum
    off = p.negative_scores_offset
    if total_sum == 0:
        return np.maximum(combined, 0.0)
    return np.where(combined < 0, (combined + negative_sum) / total_sum * off, combined + off)


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 30, prior: np.ndarray | None = None) -> ValueModel:
    """Fit each head by damped Newton steps on the L2-penalised logistic likelihood, shrunk toward ``prior``.

    ``x``: (n, len(FEATURES)) feature rows of served candidates; ``y``: (n, len(HEADS)) 0/1, whether the
    user took that action on the post. The penalty pulls coefficients toward the defaults (not zero), so
    they stay finite and a coefficient the rows cannot inform (a feature constant in the run) keeps its
    default. A head the run never shows is not kept at its default: with many rows and no such action its
    intercept is pulled toward the run's zero rate (quickstart's favorite head: mean predicted
    probability 0.23 -> under 1e-4; docs/recsys.md, "Fitting"), which is the calibrated answer for that run.
    Hand-rolled because it is ~20 lines of numpy and scikit-learn is not a dependency.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != len(FEATURES) or y.shape != (len(x), len(HEADS)):
        raise ValueError(f"fit: x must be (n, {len(FEATURES)}) and y (n, {len(HEADS)})")
    base = DEFAULT_COEF if prior is None else prior
    coef = base.copy()
    eye = np.eye(len(FEATURES)) * l2
    for h in range(len(HEADS)):
        yh, b0 = y[:, h], base[h]

        def loss(b: np.ndarray, yh: np.ndarray = yh, b0: np.ndarray = b0) -> float:
            z = x @ b
            return float(np.sum(np.logaddexp(0.0, z) - yh * z) + 0.5 * l2 * np.sum((b - b0) ** 2))

        b = b0.copy()
        cur = loss(b)
        for _ in range(iters):
            pr = 1.0 / (1.0 + np.exp(-np.clip(x @ b, -50, 50)))
            grad = x.T @ (pr - yh) + l2 * (b - b0)
            hess = (x * (pr * (1 - pr))[:, None]).T @ x + eye
            delta = np.linalg.solve(hess, grad)
            t = 1.0
            while t > 1e-4 and loss(b - t * delta) > cur:  # damped Newton: never a step that loses likelihood
                t *= 0.5
            b = b - t * delta
            cur = loss(b)
            if np.abs(t * delta).max() < 1e-8:
                break
        coef[h] = b
    return ValueModel(coef, source="fitted")
