"""Built-in moderation strategies: third-party fact-check, community notes, and their hybrid.

All draws are counter-based (``uniform(key, MODERATION, step, post ids)``), so a strategy keeps no
state of its own: what it has done is in the platform's marks, which resume rebuilds from the trace.
"""

from __future__ import annotations

import numpy as np

from socium.config.moderation import VERACITY
from socium.core.rng import uniform
from socium.moderation.base import MODERATION, ModerationContext
from socium.platform.marks import ModerationEvent
from socium.platform.posts import ORIGINAL, QUOTE

FALSE = VERACITY.index("false")
FACT_CHECK_LABEL = "False information. Checked by independent fact-checkers."
NOTE_TEXT = "Readers added context: people who usually disagree rated this post misleading."


def _judgeable(ctx: ModerationContext) -> np.ndarray:
    """Originals and quotes not yet labelled, noted or removed (reposts inherit their root's marks)."""
    p = ctx.state.posts
    n = len(p)
    ids = np.arange(n, dtype=np.int64)
    ok = np.isin(p.col("kind"), (ORIGINAL, QUOTE))
    m = ctx.marks
    done = set(m.labels) | set(m.notes) | m.removed
    if done:
        ok &= ~np.isin(ids, np.fromiter(done, np.int64, count=len(done)))
    return ids[ok]


class NoModeration:
    """The control condition: judges nothing."""

    def moderate(self, ctx: ModerationContext) -> list[ModerationEvent]:
        return []


class FactCheck:
    """Third-party fact-checking: a post enters the queue, and ``delay`` steps later it is labelled.

    Queueing: posts whose engagement reaches ``min_engagement`` (``queue_on: engagement``), or that
    ``min_flags`` users reported (``queue_on: flags``), at most ``capacity`` per step, most engaged
    first. Verdicts have the knobs of a real checker: a false post is labelled with probability
    ``recall``; non-false posts are wrongly labelled at the rate that makes the expected share of
    labels that are right equal ``precision`` (per batch of verdicts).
    """

    name = "fact_check"

    def __init__(
        self,
        delay: int = 2,
        recall: float = 0.9,
        precision: float = 1.0,
        min_engagement: int = 0,
        capacity: int | None = None,
        queue_on: str = "engagement",
        min_flags: int = 2,
        label: str = FACT_CHECK_LABEL,
    ) -> None:
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay}")
        if not (0 <= recall <= 1 and 0 < precision <= 1):
            raise ValueError(f"recall must be in [0, 1] and precision in (0, 1], got {recall}, {precision}")
        if queue_on not in ("engagement", "flags"):
            raise ValueError(f"queue_on must be 'engagement' or 'flags', got {queue_on!r}")
        self.delay, self.recall, self.precision = int(delay), float(recall), float(precision)
        self.min_engagement, self.capacity, self.queue_on = int(min_engagement), capacity, queue_on
        self.min_flags, self.label = int(min_flags), str(label)[:300]

    def moderate(self, ctx: ModerationContext) -> list[ModerationEvent]:
        out: list[ModerationEvent] = []
        p, m, step = ctx.state.posts, ctx.marks, ctx.step
        cand = _judgeable(ctx)
        cand = cand[~np.isin(cand, np.fromiter(m.queued, np.int64, count=len(m.queued)))] if m.queued else cand
        if self.queue_on == "engagement":
            eng = p.col("likes")[cand] + p.col("reposts")[cand] + p.col("comments")[cand]
            cand, eng = cand[eng >= self.min_engagement], eng[eng >= self.min_engagement]
        else:
            eng = p.col("reports")[cand]
            cand, eng = cand[eng >= self.min_flags], eng[eng >= self.min_flags]
        order = np.lexsort((cand, -eng))
        take = cand[order] if self.capacity is None else cand[order][: self.capacity]
        out += [ModerationEvent("queue", int(x), source=self.name) for x in sorted(take.tolist())]
        due = sorted(x for x, s in m.queued.items() if s + self.delay == step and x not in m.labels)
        if self.delay == 0:
            due = sorted(set(due) | set(take.tolist()))
        if not due:
            return out
        ids = np.asarray(due, np.int64)
        is_false = p.col("veracity")[ids] == FALSE
        u = uniform(ctx.key, MODERATION, step, ids)
        n_false, n_other = int(is_false.sum()), int((~is_false).sum())
        fp = 0.0
        if n_other and self.precision < 1:
            fp = min(1.0, self.recall * max(n_false, 1) * (1 - self.precision) / (self.precision * n_other))
        hit = np.where(is_false, u < self.recall, u < fp)
        out += [ModerationEvent("label", int(x), source=self.name, detail=self.label) for x in ids[hit].tolist()]
        return out


def viewpoints(ctx: ModerationContext, raters: np.ndarray) -> np.ndarray:
    """Each rater's side (+1 / -1 / 0 unknown) on the axis along which raters usually disagree.

    With stances, the side is the stance's sign. Without, it is the sign of the rater's score on the
    leading singular vector of the (rater x author) like matrix -- the one-factor version of
    Community Notes' matrix factorisation: raters who like different authors land on opposite sides.
    """
    s = ctx.stance[raters]
    side = np.sign(np.nan_to_num(s, nan=0.0))
    if not np.isnan(s).all():
        return side
    likes = ctx.state.likes
    if not likes:
        return np.zeros(len(raters))
    authors = ctx.state.posts.col("author")
    pos = {int(r): i for i, r in enumerate(raters.tolist())}
    rows, cols = [], []
    for u, post in likes:
        if u in pos:
            rows.append(pos[u])
            cols.append(int(authors[post]))
    if not rows:
        return np.zeros(len(raters))
    a_ids, a_col = np.unique(np.asarray(cols), return_inverse=True)
    mat = np.zeros((len(raters), len(a_ids)))
    np.add.at(mat, (np.asarray(rows), a_col), 1.0)
    mat -= mat.mean(axis=0, keepdims=True)
    if not mat.any():
        return np.zeros(len(raters))
    u_vec = np.linalg.svd(mat, full_matrices=False)[0][:, 0]
    u_vec *= np.sign(u_vec[np.argmax(np.abs(u_vec))])  # fix the SVD's arbitrary sign deterministically
    return np.where(np.abs(u_vec) > 1e-9, np.sign(u_vec), 0.0)


class CommunityNotes:
    """Users flag posts (``report_post``); a note appears when the flaggers *bridge*: at least
    ``min_per_side`` raters on each side of the axis along which they usually disagree (see
    :func:`viewpoints`), and ``min_raters`` in all. Many flags from one side never make a note."""

    name = "community_notes"

    def __init__(self, min_per_side: int = 1, min_raters: int = 2, note: str = NOTE_TEXT) -> None:
        if min_per_side < 1 or min_raters < 1:
            raise ValueError(f"min_per_side and min_raters must be >= 1, got {min_per_side}, {min_raters}")
        self.min_per_side, self.min_raters, self.note = int(min_per_side), int(min_raters), str(note)[:300]

    def moderate(self, ctx: ModerationContext) -> list[ModerationEvent]:
        st = ctx.state
        cand = _judgeable(ctx)
        cand = cand[st.posts.col("reports")[cand] >= max(self.min_raters, 2 * self.min_per_side)]
        if not len(cand):
            return []
        by_post: dict[int, list[int]] = {}
        want = set(cand.tolist())
        for agent, post in st.reported:
            if post in want:
                by_post.setdefault(post, []).append(agent)
        raters = np.asarray(sorted({a for v in by_post.values() for a in v}), np.int64)
        side = dict(zip(raters.tolist(), viewpoints(ctx, raters).tolist()))
        out = []
        for post in sorted(by_post):
            sides = [side[a] for a in by_post[post]]
            if sum(x > 0 for x in sides) >= self.min_per_side and sum(x < 0 for x in sides) >= self.min_per_side:
                out.append(ModerationEvent("note", post, source=self.name, detail=self.note))
        return out


class Hybrid:
    """Community notes, plus user flags escalating posts to third-party fact-checkers (MOSAIC's hybrid):
    a post ``min_flags`` users reported is queued and labelled ``delay`` steps later."""

    name = "hybrid"

    def __init__(
        self,
        delay: int = 2,
        recall: float = 0.9,
        precision: float = 1.0,
        min_flags: int = 2,
        capacity: int | None = None,
        min_per_side: int = 1,
        min_raters: int = 2,
    ) -> None:
        self.fact = FactCheck(delay, recall, precision, capacity=capacity, queue_on="flags", min_flags=min_flags)
        self.notes = CommunityNotes(min_per_side, min_raters)

    def moderate(self, ctx: ModerationContext) -> list[ModerationEvent]:
        return self.fact.moderate(ctx) + self.notes.moderate(ctx)
