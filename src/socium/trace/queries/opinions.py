"""Opinion measures: herding over seeded votes, and stance from survey answers (issue 29 items 2 and 3).

Herding follows Muchnik, Aral & Taylor 2013: the effect is what the *crowd* does after the treatment,
so the experimenter's own treatment vote is never inside an effect. Counting it made the old "final
mean lift" positive with no herding at all (a random-voting null, herding-free by construction, got
+0.143 beside the paper's +25%). Effects here are differences to control of crowd votes only, each
with its n and an interval valid for that n (Wilson/Newcombe for proportions, a bootstrap over items
otherwise, none below :data:`~socium.core.intervals.MIN_N` items).

Stance is what agents *answered*: only survey rows whose outcome is ``ok`` enter a mean (inconsistent
or degenerate answers are counted, not averaged; see :mod:`socium.agents.survey_answers`). The
assigned stances (step -1) are the design, kept apart from the answers and never joined to them as
if they were a survey.

Convention of :mod:`socium.trace.queries`: the first argument is an open connection to one run's
trace; values reach SQL only as bound parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from socium.core import actions as A
from socium.core.intervals import MIN_N, N_BOOT, proportion_interval
from socium.core.rng import component_rng
from socium.errors import ConfigError, TraceError

Con = duckdb.DuckDBPyConnection
GROUPS = ("up", "control", "down")
CAMPS = ("conservative", "progressive")
#: Stream purpose of this module's bootstrap resampling (socium.core.rng.component_rng).
OPINIONS_BOOT_PURPOSE = 30
#: The one survey outcome whose value enters a mean.
OK = "ok"
Stat = Callable[..., float]


# ---- intervals --------------------------------------------------------------------------------
def boot_ci(
    groups: Sequence[Sequence[np.ndarray]], stat: Stat, n_boot: int, rng: np.random.Generator
) -> list[float] | None:
    """95% percentile bootstrap interval of ``stat``; each group's units (aligned arrays) are resampled
    on their own, so a difference between two groups keeps each group's n. None when a group has fewer
    than MIN_N units or the statistic is undefined in most resamples (a ratio over zero votes)."""
    if n_boot <= 0 or any(len(g[0]) < MIN_N for g in groups):
        return None
    draws = []
    for _ in range(n_boot):
        args: list[np.ndarray] = []
        for g in groups:
            idx = rng.integers(0, len(g[0]), len(g[0]))
            args.extend(x[idx] for x in g)
        v = stat(*args)
        if math.isfinite(v):
            draws.append(v)
    if len(draws) < n_boot / 2:
        return None
    return [float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))]


def newcombe_diff(k1: int, n1: int, k0: int, n0: int) -> tuple[float | None, list[float] | None]:
    """``k1/n1 - k0/n0`` with Newcombe's hybrid score interval (from the two Wilson intervals; stays in
    [-1, 1] and is sensible at 0 or n successes). No interval unless both n >= MIN_N."""
    a, b = proportion_interval(k1, n1), proportion_interval(k0, n0)
    if a.estimate is None or b.estimate is None:
        return None, None
    d = a.estimate - b.estimate
    if n1 < MIN_N or n0 < MIN_N or not (a.has_bounds and b.has_bounds):
        return d, None
    lo = d - math.sqrt((a.estimate - a.low) ** 2 + (b.high - b.estimate) ** 2)  # type: ignore[operator]
    hi = d + math.sqrt((a.high - a.estimate) ** 2 + (b.estimate - b.low) ** 2)  # type: ignore[operator]
    return d, [max(-1.0, lo), min(1.0, hi)]


def _mean(a: np.ndarray) -> float:
    return float(a.mean()) if len(a) else float("nan")


def _ratio(a: np.ndarray, b: np.ndarray) -> float:
    return float(a.sum() / b.sum()) if b.sum() else float("nan")


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _lift(a: float, b: float) -> float:
    """(a - b) / |b|, NaN where the control level is 0 (a relative change to nothing is undefined)."""
    return (a - b) / abs(b) if math.isfinite(a) and math.isfinite(b) and abs(b) > 1e-9 else float("nan")


# ---- herding ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class HerdingVotes:
    """What a herding run's trace says: seeded items, the treatment on each, the crowd's votes."""

    items: list[int]  # post ids created by seed actions, ascending
    treatment: dict[int, int]  # post id -> net seed vote (+1 up, -1 down; absent: control)
    failed_seed_actions: int
    crowd: list[tuple[int, int, int]]  # (step, post id, +1/-1) of every non-seed vote, in (step, seq) order
    last_step: int


def herding_votes(con: Con) -> HerdingVotes:
    """The seeded items, their treatment and the crowd's votes, from the ``actions`` and ``votes`` tables."""
    items = [
        int(r[0])
        for r in con.execute(
            "SELECT post_id FROM actions WHERE origin = 'seed' AND type = ? AND outcome = 'ok' ORDER BY post_id",
            [A.CreatePost.type_name],
        ).fetchall()
    ]
    treat = {
        int(t): int(d)
        for t, d in con.execute("SELECT target, sum(delta) FROM votes WHERE origin = 'seed' GROUP BY target").fetchall()
    }
    bad = con.execute("SELECT count(*) FROM actions WHERE origin = 'seed' AND outcome != 'ok'").fetchall()[0][0]
    crowd = [
        (int(s), int(t), int(d))
        for s, t, d in con.execute(
            "SELECT step, target, delta FROM votes WHERE origin != 'seed' ORDER BY step, seq"
        ).fetchall()
    ]
    last = con.execute("SELECT max(step) FROM steps").fetchall()[0][0]
    return HerdingVotes(items, treat, int(bad), crowd, -1 if last is None else int(last))


def herding_metrics(con: Con, n_boot: int = N_BOOT, seed: int = 0) -> dict[str, Any]:
    """Per treatment group and per effect (group minus control), crowd votes only, with n and intervals.

    An item's group is the sign of the seed vote on it (none: control). Per group: P(first crowd vote
    is positive) with its Wilson interval over voted items; the crowd's share of up-votes and the
    crowd's final mean score per item (Muchnik et al.'s "final mean rating", treatment excluded), each
    with a bootstrap interval over items. ``final_mean_score`` (treatment vote included) is kept as a
    level only, never as an effect. ``trajectory``: crowd-only mean score after each step.
    """
    hv = herding_votes(con)
    if hv.failed_seed_actions:
        raise TraceError(f"{hv.failed_seed_actions} seed action(s) failed; the treatment was not applied as designed")
    if not hv.items:
        raise ConfigError("no seeded items in the trace: not a herding run")
    pos = {p: i for i, p in enumerate(hv.items)}
    n, steps = len(hv.items), hv.last_step + 1
    first, ups, votes, crowd = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    traj = np.zeros((n, max(steps, 0)))  # column s: crowd score after step s
    for step, target, delta in hv.crowd:
        i = pos.get(target)
        if i is None:
            continue
        if votes[i] == 0:
            first[i] = delta
        votes[i] += 1
        ups[i] += delta > 0
        crowd[i] += delta
        traj[i, step:] += delta
    t0 = np.array([hv.treatment.get(p, 0) for p in hv.items], dtype=float)
    group = np.array(["up" if t > 0 else "down" if t < 0 else "control" for t in t0])
    rng = component_rng(seed, OPINIONS_BOOT_PURPOSE)
    out: dict[str, Any] = {
        "n_items": n,
        "crowd_votes": int(votes.sum()),
        "groups": {},
        "trajectory_steps": list(range(steps)),
        "measure": "crowd votes only: the experimenter's treatment vote is excluded from every effect",
    }
    per: dict[str, dict[str, np.ndarray]] = {}
    for g in GROUPS:
        m = group == g
        voted = m & (votes > 0)
        nf = (first[voted] > 0).astype(float)
        per[g] = {"nf": nf, "ups": ups[voted], "votes": votes[voted], "crowd": crowd[m]}
        p_next = proportion_interval(int(nf.sum()), int(len(nf)))
        out["groups"][g] = {
            "items": int(m.sum()),
            "items_voted": int(voted.sum()),
            "crowd_votes": int(votes[m].sum()),
            "p_next_positive": p_next.estimate if p_next.estimate is not None else float("nan"),
            "p_next_positive_ci": [p_next.low, p_next.high] if p_next.has_bounds else None,
            "p_next_positive_n": p_next.n,
            "p_positive": _ratio(ups[voted], votes[voted]),
            "p_positive_ci": boot_ci([(ups[voted], votes[voted])], _ratio, n_boot, rng),
            "crowd_mean_score": _mean(crowd[m]),
            "crowd_mean_score_ci": boot_ci([(crowd[m],)], _mean, n_boot, rng),
            "final_mean_score": _mean(crowd[m] + t0[m]),
            "final_mean_score_ci": boot_ci([(crowd[m] + t0[m],)], _mean, n_boot, rng),
            "trajectory": traj[m].mean(axis=0).tolist() if m.any() else [],
        }
    out["effects"] = herding_effects(out["groups"], per, n_boot, rng)
    return out


def herding_effects(
    groups: dict[str, dict[str, Any]], per: dict[str, dict[str, np.ndarray]], n_boot: int, rng: np.random.Generator
) -> dict[str, Any]:
    """Up and down against control, crowd votes only: differences (the headline) and relative lifts
    (Muchnik et al.'s terms: +32% next vote positive, +25% final mean rating), each with an interval."""
    c = per["control"]
    out: dict[str, Any] = {}
    for g in ("up", "down"):
        t = per[g]
        d, ci = newcombe_diff(int(t["nf"].sum()), len(t["nf"]), int(c["nf"].sum()), len(c["nf"]))
        out[f"{g}_p_next_positive_diff"], out[f"{g}_p_next_positive_diff_ci"] = d, ci
        out[f"{g}_p_next_positive_n"] = [len(t["nf"]), len(c["nf"])]
        out[f"{g}_p_next_positive_lift"] = _num(_lift(_mean(t["nf"]), _mean(c["nf"])))
        out[f"{g}_p_next_positive_lift_ci"] = boot_ci(
            [(t["nf"],), (c["nf"],)], lambda a, b: _lift(_mean(a), _mean(b)), n_boot, rng
        )
        out[f"{g}_p_positive_diff"] = _num(groups[g]["p_positive"] - groups["control"]["p_positive"])
        out[f"{g}_p_positive_diff_ci"] = boot_ci(
            [(t["ups"], t["votes"]), (c["ups"], c["votes"])],
            lambda a, b, x, y: _ratio(a, b) - _ratio(x, y),
            n_boot,
            rng,
        )
        out[f"{g}_crowd_mean_diff"] = _num(_mean(t["crowd"]) - _mean(c["crowd"]))
        out[f"{g}_crowd_mean_diff_ci"] = boot_ci(
            [(t["crowd"],), (c["crowd"],)], lambda a, b: _mean(a) - _mean(b), n_boot, rng
        )
        out[f"{g}_crowd_mean_n"] = [len(t["crowd"]), len(c["crowd"])]
        out[f"{g}_crowd_mean_lift"] = _num(_lift(_mean(t["crowd"]), _mean(c["crowd"])))
        out[f"{g}_crowd_mean_lift_ci"] = boot_ci(
            [(t["crowd"],), (c["crowd"],)], lambda a, b: _lift(_mean(a), _mean(b)), n_boot, rng
        )
    return out


# ---- surveys ----------------------------------------------------------------------------------
def _columns(con: Con, table: str) -> set[str]:
    return {
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
        ).fetchall()
    }


def survey_rows(con: Con) -> list[tuple[int, int, float | None, str, str, str | None]]:
    """(step, agent, value, answer, outcome, reason) of every survey row, by step and agent.

    Traces written before the ``outcome`` column read as ``ok`` where there is a value and ``no_value``
    where there is none (their answers were never checked against their values)."""
    cols = _columns(con, "surveys")
    outcome = "outcome" if "outcome" in cols else "NULL"
    reason = "reason" if "reason" in cols else "NULL"
    rows = con.execute(
        f"SELECT step, agent_id, value, coalesce(answer, ''), {outcome}, {reason} FROM surveys ORDER BY step, agent_id"
    ).fetchall()
    return [
        (int(s), int(a), v, ans, o if o is not None else (OK if v is not None else "no_value"), r)
        for s, a, v, ans, o, r in rows
    ]


def survey_outcomes(con: Con) -> dict[int, dict[str, int]]:
    """Per survey step, how many answers had each outcome (ok, inconsistent, degenerate, invalid, ...)."""
    out: dict[int, dict[str, int]] = {}
    for step, _a, _v, _ans, outcome, _r in survey_rows(con):
        out.setdefault(step, {})
        out[step][outcome] = out[step].get(outcome, 0) + 1
    return out


def assigned_stances(con: Con) -> np.ndarray:
    """Each agent's assigned (design) stance, NaN where none, indexed by agent id."""
    rows = con.execute("SELECT agent_id, stance FROM agents ORDER BY agent_id").fetchall()
    return np.array([np.nan if s is None else s for _, s in rows], dtype=float)


def bimodality_coefficient(x: Sequence[float] | np.ndarray) -> float:
    """Sarle's b = (g^2 + 1) / (k + 3(n-1)^2 / ((n-2)(n-3))), g and k the bias-corrected sample skewness
    and excess kurtosis; b > 5/9 suggests bimodality (uniform = 5/9). NaN for n < 4 or no variance."""
    a = np.asarray(x, dtype=float)
    n = len(a)
    if n < 4:
        return float("nan")
    d = a - a.mean()
    m2, m3, m4 = (d**2).mean(), (d**3).mean(), (d**4).mean()
    if m2 <= 1e-15:
        return float("nan")
    g = np.sqrt(n * (n - 1)) / (n - 2) * m3 / m2**1.5
    k = (n - 1) / ((n - 2) * (n - 3)) * ((n + 1) * m4 / m2**2 - 3 * (n - 1))
    return float((g**2 + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))))


def stance_summary(values: np.ndarray, side: np.ndarray, n_boot: int, rng: np.random.Generator) -> dict[str, Any]:
    """Mean, extremity, variance, bimodality and each camp's mean (with n and a bootstrap interval over
    agents) of one set of stances; ``side`` is each value's camp (-1 conservative, +1 progressive)."""
    out: dict[str, Any] = {
        "n": int(len(values)),
        "mean": float(values.mean()) if len(values) else None,
        "mean_ci": boot_ci([(values,)], _mean, n_boot, rng),
        "mean_abs": float(np.abs(values).mean()) if len(values) else None,
        "variance": float(values.var(ddof=1)) if len(values) > 1 else None,
        "bimodality": bimodality_coefficient(values),
        "groups": {},
    }
    for g, s in zip(CAMPS, (-1, 1)):
        v = values[side == s]
        out["groups"][g] = {
            "n": int(len(v)),
            "mean": float(v.mean()) if len(v) else None,
            "mean_ci": boot_ci([(v,)], _mean, n_boot, rng),
            "extremity": float((s * v).mean()) if len(v) else None,
        }
    cons, prog = values[side == -1], values[side == 1]
    out["camp_gap"] = _num(_mean(prog) - _mean(cons))  # progressive minus conservative: 0 = persona-blind
    out["camp_gap_ci"] = boot_ci([(prog,), (cons,)], lambda a, b: _mean(a) - _mean(b), n_boot, rng)
    return out


def polarisation_metrics(
    con: Con,
    extremity: Callable[[list[str]], np.ndarray] | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> dict[str, Any]:
    """Assigned stances (step -1, the design) and, per survey step, the ``ok`` answers' statistics, the
    count of every outcome, and per camp the mean shift from the first to the last survey with an interval.

    A camp is the sign of the agent's assigned stance. Shifts compare answers with answers; the shift
    from the assigned stance is reported apart (``shift_from_assigned``), as it compares a design
    number with a measurement."""
    s0 = assigned_stances(con)
    rows = survey_rows(con)
    outcomes = survey_outcomes(con)
    rng = component_rng(seed, OPINIONS_BOOT_PURPOSE, 1)
    side0 = np.sign(np.nan_to_num(s0)).astype(int)
    has = ~np.isnan(s0)
    points: list[dict[str, Any]] = [
        {
            "step": -1,
            "kind": "assigned",
            "values": s0[has].tolist(),
            "answered": int(has.sum()),
            "asked": int(has.sum()),
            "outcomes": {},
            **stance_summary(s0[has], side0[has], n_boot, rng),
        }
    ]
    for step in sorted(outcomes):
        sel = [r for r in rows if r[0] == step and r[4] == OK and r[2] is not None]
        v = np.array([r[2] for r in sel], dtype=float)
        sd = side0[[r[1] for r in sel]] if sel else np.zeros(0, dtype=int)
        pt: dict[str, Any] = {
            "step": step,
            "kind": "survey",
            "values": v.tolist(),
            "answered": len(sel),
            "asked": int(sum(outcomes[step].values())),
            "outcomes": dict(sorted(outcomes[step].items())),
            **stance_summary(v, sd, n_boot, rng),
        }
        if extremity is not None:
            sc = extremity([r[3] for r in sel])
            pt["text_extremity"] = float(np.abs(sc).mean()) if len(sc) else None
            pt["text_score_by_group"] = {
                g: float(sc[sd == s].mean()) if (sd == s).any() else None for g, s in zip(CAMPS, (-1, 1))
            }
        points.append(pt)
    return {"points": points, **_shifts(points, rows, side0, n_boot, rng)}


def _camp_values(
    rows: list[tuple[int, int, float | None, str, str, str | None]], step: int, side0: np.ndarray, s: int
) -> np.ndarray:
    return np.array([r[2] for r in rows if r[0] == step and r[4] == OK and r[2] is not None and side0[r[1]] == s])


def _shifts(
    points: list[dict[str, Any]],
    rows: list[tuple[int, int, float | None, str, str, str | None]],
    side0: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Per camp: mean shift first -> last survey (answers only) with a bootstrap interval, its extremity
    shift (in the camp's own direction), and the last survey's mean against the assigned stance."""
    surveys = [p for p in points if p["kind"] == "survey" and p["answered"]]
    assigned = points[0]
    camp: dict[str, Any] = {}
    ext: dict[str, float | None] = {}
    for g, s in zip(CAMPS, (-1, 1)):
        a0 = assigned["groups"][g]["mean"]
        if len(surveys) < 2:
            last = surveys[-1]["groups"][g]["mean"] if surveys else None
            camp[g] = {"shift": None, "shift_ci": None, "n_first": 0, "n_last": 0, "assigned": a0, "last_mean": last}
            ext[g] = None
            continue
        first = _camp_values(rows, surveys[0]["step"], side0, s)
        last = _camp_values(rows, surveys[-1]["step"], side0, s)
        shift = _num(_mean(last) - _mean(first))
        camp[g] = {
            "shift": shift,
            "shift_ci": boot_ci([(last,), (first,)], lambda a, b: _mean(a) - _mean(b), n_boot, rng),
            "n_first": int(len(first)),
            "n_last": int(len(last)),
            "first_step": surveys[0]["step"],
            "last_step": surveys[-1]["step"],
            "assigned": a0,
            "last_mean": surveys[-1]["groups"][g]["mean"],
            "last_mean_ci": surveys[-1]["groups"][g]["mean_ci"],
        }
        ext[g] = None if shift is None else s * shift
    last_pt = surveys[-1] if surveys else None
    shift_from_assigned = {
        g: None
        if last_pt is None or last_pt["groups"][g]["extremity"] is None or assigned["groups"][g]["extremity"] is None
        else last_pt["groups"][g]["extremity"] - assigned["groups"][g]["extremity"]
        for g in CAMPS
    }
    mean_abs_shift = (
        surveys[-1]["mean_abs"] - surveys[0]["mean_abs"]
        if len(surveys) >= 2 and surveys[-1]["mean_abs"] is not None and surveys[0]["mean_abs"] is not None
        else None
    )
    return {
        "camp_shift": camp,
        "group_extremity_shift": ext,
        "shift_from_assigned": shift_from_assigned,
        "mean_abs_shift": mean_abs_shift,
        "answer_outcomes": _total_outcomes(points),
    }


def _total_outcomes(points: list[dict[str, Any]]) -> dict[str, int]:
    tot: dict[str, int] = {}
    for p in points:
        for k, v in p["outcomes"].items():
            tot[k] = tot.get(k, 0) + v
    return dict(sorted(tot.items()))
