"""Recompute docs/results.md's intervals under the one interval policy (issue 29).

    python benchmarks/results_intervals.py            # a Markdown table, one row per number
    python benchmarks/results_intervals.py --json     # the same as JSON (Interval.as_dict)
    python benchmarks/results_intervals.py --check docs/results.md   # is every one quoted there?

Why: docs/results.md was written before ``socium.core.intervals`` and printed t intervals whatever
the quantity: below-0 bounds on shares and counts, per-seed proportions with Wald-like t intervals
such as ``[-0.07, 0.19]``, zero-width "CIs". The run folders behind those sections were not kept, so
the only raw values left are the per-seed counts and values quoted in the text itself. This script
holds exactly those (each with a comment naming the section it is quoted from), recomputes each
interval with the policy (Wilson for k of n, bootstrap for means of non-negative per-seed values, t
from n >= 3 for signed ones) and prints them, so every replaced number in the doc can be re-derived.
Nothing here is estimated from anything not written in the doc: numbers whose raw values are gone
are marked in the doc instead.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from socium.core.intervals import (
    Interval,
    mean_interval,
    nonnegative_interval,
    proportion_interval,
)


@dataclass(frozen=True)
class Row:
    """One recomputed number: where in docs/results.md it stands, what it is, and its interval."""

    section: str
    quantity: str
    interval: Interval
    digits: int = 2


def _pooled(counts: Sequence[tuple[int, int]]) -> Interval:
    """Wilson interval of the pooled k/n over seeds (treats the pooled units as independent)."""
    return proportion_interval(sum(k for k, _ in counts), sum(n for _, n in counts))


def _per_seed_share(counts: Sequence[tuple[int, int]]) -> Interval:
    """Mean of the per-seed shares, bootstrap over seeds (a share is non-negative)."""
    return nonnegative_interval([k / n for k, n in counts])


def rows() -> list[Row]:
    """Every number recomputed from raw values quoted in docs/results.md, in the doc's order."""
    out: list[Row] = []

    # "Dyadic episodes", **Reading (honest)**: per-seed counts (seeds 0 / 1 / 2).
    dy = "Dyadic episodes: reading"
    shared = [(1, 32), (1, 34), (2, 34)]  # mutual-friend answers naming the shared friend
    own = [(9, 32), (11, 34), (7, 34)]  # answers naming one of the two characters
    wrong = [(3, 3), (4, 4), (4, 4)]  # mutual-friend agreements on a wrong name
    deals = [(1, 15), (3, 15), (0, 15)]  # bargaining episodes with a deal
    out += [
        Row(dy, "shared friend named, pooled", _pooled(shared)),
        Row(dy, "shared friend named, mean of seeds", _per_seed_share(shared)),
        Row(dy, "own character named, pooled", _pooled(own)),
        Row(dy, "own character named, mean of seeds", _per_seed_share(own)),
        Row(dy, "agreements on a wrong name, pooled", _pooled(wrong)),
        Row(dy, "deals, pooled", _pooled(deals)),
        Row(dy, "deals, mean of seeds", _per_seed_share(deals)),
        # "of the 82 turns in the 30 scripts, 4 were 'speak'"
        Row(dy, "script turns that were 'speak'", proportion_interval(4, 82)),
    ]

    # "Dyadic episodes", **The judge on the same model**: per-seed counts and errors.
    jd = "Dyadic episodes: judge"
    valid = [(7, 7), (6, 7), (6, 7)]
    out += [
        Row(jd, "valid judgements, pooled", _pooled(valid)),
        Row(jd, "valid judgements, mean of seeds", _per_seed_share(valid)),
        Row(jd, "failed judgements, pooled", proportion_interval(2, 21)),
        Row(jd, "judge goal MAE, mean of seeds", nonnegative_interval([0.43, 0.75, 1.08])),
    ]

    # "Propagation against real cascades: superseded": the IC baseline's pooled p = 82 / 102.
    # "LLM propagation re-run": 49 invalid of 1,076 actions; 257 reposts of 1,027 valid actions.
    pr = "Propagation"
    out += [
        Row(pr, "IC pooled p (82 reshares in 102 fresh exposures)", proportion_interval(82, 102), 3),
        Row(pr, "LLM re-run: invalid actions (49 of 1,076)", proportion_interval(49, 1076), 3),
        Row(pr, "LLM re-run: reposts among valid actions (257 of 1,027)", proportion_interval(257, 1027)),
    ]

    # "Herd effect": LLM calls per seed 79 / 90 / 98 / 99; 11 up-votes against 302 down-votes.
    hd = "Herd effect"
    out += [
        Row(hd, "LLM calls per seed", nonnegative_interval([79, 90, 98, 99]), 0),
        Row(hd, "share of crowd votes that were up (pooled over 4 seeds)", proportion_interval(11, 313)),
    ]

    # "Group polarisation": LLM calls per seed; usable answers at the last survey per seed.
    pl = "Group polarisation"
    usable = [(10, 13), (10, 15), (14, 15), (9, 12), (13, 18)]
    out += [
        Row(pl, "LLM calls per seed", nonnegative_interval([84, 98, 112, 102, 96]), 0),
        Row(pl, "usable answers at the last survey, pooled", _pooled(usable)),
        Row(pl, "usable answers at the last survey, mean of seeds", _per_seed_share(usable)),
    ]

    # "Interventions against misinformation": null's fitted p, invalid actions, one effect's seeds.
    iv = "Interventions"
    out += [
        Row(iv, "IC null reshare p (8 of 78 fresh exposures)", proportion_interval(8, 78), 3),
        Row(iv, "invalid actions, local (pooled over 3 seeds x 5 conditions)", proportion_interval(29, 261), 3),
        Row(iv, "invalid actions, omniscient (pooled)", proportion_interval(25, 261), 3),
        Row(iv, "prebunk - none, omniscient false engagement (seeds +1, +2, +2)", mean_interval([1, 2, 2])),
    ]

    # "Forecasting a real cascade": counts of cascades.
    fc = "Forecasting from 10 minutes"
    out += [
        Row(fc, "cascades where the forecast is worse than the null", proportion_interval(29, 134)),
        Row(fc, "of the null's 10 worst cascades, brought down", proportion_interval(9, 10)),
    ]
    return out


def missing_from(text: str, table: Sequence[Row]) -> list[Row]:
    """Rows whose recomputed bounds are not written in ``text``: the doc and this script disagree.
    Whitespace is collapsed first, since the doc wraps its lines inside intervals."""
    flat = " ".join(text.split())
    return [r for r in table if r.interval.bounds(r.digits) not in flat]


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table (or JSON) of every recomputed interval."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table")
    ap.add_argument(
        "--check",
        type=Path,
        metavar="RESULTS_MD",
        help="exit 1 unless every recomputed interval appears in this file (e.g. docs/results.md)",
    )
    args = ap.parse_args(argv)
    table = rows()
    if args.check is not None:
        missing = missing_from(args.check.read_text(encoding="utf-8"), table)
        for r in missing:
            print(f"not in {args.check}: {r.section}: {r.quantity} {r.interval.format(r.digits)}")
        if missing:
            raise SystemExit(1)
        print(f"all {len(table)} recomputed intervals appear in {args.check}")
        return
    if args.json:
        print(
            json.dumps(
                [{"section": r.section, "quantity": r.quantity, **r.interval.as_dict()} for r in table], indent=1
            )
        )
        return
    print("| section | quantity | estimate [95% interval] (n, method) |")
    print("|---|---|---|")
    for r in table:
        print(f"| {r.section} | {r.quantity} | {r.interval.format(r.digits)} |")


if __name__ == "__main__":
    main()
