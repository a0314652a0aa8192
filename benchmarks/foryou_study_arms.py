"""The fitted arm's calibration record and tables for ``benchmarks/foryou_study.py`` (``--fitted``).

Kept apart so the study script stays about running and measuring. What is measured, per seed: the value
model fitted to the seed's first ``foryou`` run, and the documented default model, each scored on

* the *served* run (the second run of the same world, ranked by the fitted model): rows the fit never saw;
* the *first* run (ranked by the default model): the fitted model's own training rows (in-sample).

A row is one explained exposure; its label per head is whether that agent took the head's action on the
post (or its author) in that step (``fitting.training_rows``). Brier scores are means over rows per seed,
summarised over seeds (the unit: n = seeds, bootstrap interval; paired fitted - default with t). The
reliability table pools every seed's rows per bin; its Wilson intervals treat rows as independent, which
they are not quite (the same agent is shown many posts), so read them as nominal.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from socium.core.intervals import mean_interval, nonnegative_interval, proportion_interval
from socium.recsys.foryou.fitting import calibration, training_rows
from socium.recsys.foryou.value_model import HEADS, ValueModel

ROWS = ("served", "first")
MODELS = ("fitted", "default")


def calibration_record(model: ValueModel, first: Path, served: Path) -> dict[str, Any]:
    """Both models' calibration on both runs' rows (JSON-ready), and the fitted coefficients."""
    default = ValueModel.load(None)
    rec: dict[str, Any] = {"coef": model.coef.tolist()}
    for name, run in (("served", served), ("first", first)):
        x, y = training_rows(run)
        rec[name] = {
            m: [asdict(c) for c in calibration(vm, x, y)] for m, vm in (("fitted", model), ("default", default))
        }
    return rec


def _cells(runs: list[dict[str, Any]], world: str) -> list[dict[str, Any]]:
    return [r for r in runs if r["world"] == world and "calibration" in r["m"]]


def _fmt(iv: Any, digits: int = 4, signed: bool = False) -> str:
    if iv.estimate is None:
        return "n/a"
    f = f"{{:{'+' if signed else ''}.{digits}f}}"
    if not iv.has_bounds:
        return f"{f.format(iv.estimate)} (n={iv.n}, no CI)"
    return f"{f.format(iv.estimate)} [{f.format(iv.low)}, {f.format(iv.high)}]"


def active_heads(cells: list[dict[str, Any]]) -> list[int]:
    """Heads with at least one action in some seed's first or served run."""
    return [
        h
        for h in range(len(HEADS))
        if any(r["m"]["calibration"][w]["fitted"][h]["actions"] for r in cells for w in ROWS)
    ]


def brier_table(cells: list[dict[str, Any]], world: str) -> None:
    heads = active_heads(cells)
    seeds = sorted(r["seed"] for r in cells)
    print(
        f"\n**{world}: calibration of the fitted value model** (n = {len(seeds)} seeds {seeds}; Brier = mean of "
        "(p - action)^2 over a run's rows; mean over seeds [bootstrap]; fitted - default paired by seed [t])\n"
    )
    print(
        "| head | rows | actions per row, first / served run | mean p fitted / default (served) | Brier fitted "
        "(served) | Brier default (served) | fitted - default (served) | Brier of the base rate (served) | "
        "Brier fitted in-sample (first) |"
    )
    print("|---" * 9 + "|")
    for h in heads:

        def per_seed(rows: str, model: str, key: str, h: int = h) -> list[float]:
            return [r["m"]["calibration"][rows][model][h][key] for r in cells]

        n_rows = sum(per_seed("served", "fitted", "n"))
        rate = [
            sum(per_seed(w, "fitted", "actions")) / max(1, sum(per_seed(w, "fitted", "n"))) for w in ("first", "served")
        ]
        mp = [sum(per_seed("served", m, "mean_predicted")) / len(cells) for m in MODELS]
        bf, bd = per_seed("served", "fitted", "brier"), per_seed("served", "default", "brier")
        print(
            f"| {HEADS[h]} | {n_rows} | {rate[0]:.4f} / {rate[1]:.4f} | {mp[0]:.4f} / {mp[1]:.4f} | "
            f"{_fmt(nonnegative_interval(bf))} | {_fmt(nonnegative_interval(bd))} | "
            f"{_fmt(mean_interval([f - d for f, d in zip(bf, bd, strict=True)]), signed=True)} | "
            f"{_fmt(nonnegative_interval(per_seed('served', 'fitted', 'brier_base_rate')))} | "
            f"{_fmt(nonnegative_interval(per_seed('first', 'fitted', 'brier')))} |"
        )
    quiet = [h for h in range(len(HEADS)) if h not in heads]
    if quiet:
        cal = [r["m"]["calibration"]["served"] for r in cells]
        mp = {m: {h: max(c[m][h]["mean_predicted"] for c in cal) for h in quiet} for m in MODELS}
        top = max(quiet, key=lambda h: mp["default"][h])
        print(
            f"\nNo {', '.join(HEADS[h] for h in quiet)} in any run here (these agents never take those actions): "
            f"the fit pushed their probabilities down (e.g. {HEADS[top]}: largest per-seed mean p on the served "
            f"rows {mp['fitted'][top]:.2g} fitted, {mp['default'][top]:.2g} default)."
        )


def pooled_bins(
    cells: list[dict[str, Any]], rows: str, model: str, h: int
) -> list[tuple[float, float, int, int, float]]:
    """(low, high, rows, actions, mean predicted) per reliability bin, every seed's rows pooled."""
    acc: dict[tuple[float, float], list[float]] = {}
    for r in cells:
        for lo, hi, n, k, mp in r["m"]["calibration"][rows][model][h]["bins"]:
            a = acc.setdefault((lo, hi), [0, 0, 0.0])
            a[0], a[1], a[2] = a[0] + n, a[1] + k, a[2] + mp * n
    return [(lo, hi, int(n), int(k), s / n) for (lo, hi), (n, k, s) in sorted(acc.items())]


def reliability_table(cells: list[dict[str, Any]], world: str) -> None:
    for h in active_heads(cells):
        print(
            f"\n{world}, head {HEADS[h]}: reliability on the served runs' rows, {len(cells)} seeds pooled "
            "(observed action rate with a Wilson 95% interval, nominal: rows of one agent are not independent)\n"
        )
        print("| model | predicted p in | rows | actions | mean predicted | observed |")
        print("|---|---|---|---|---|---|")
        for model in MODELS:
            for lo, hi, n, k, mp in pooled_bins(cells, "served", model, h):
                iv = proportion_interval(k, n)
                print(f"| {model} | [{lo:g}, {hi:g}) | {n} | {k} | {mp:.4f} | {_fmt(iv)} |")


def print_arms(study: dict[str, Any]) -> None:
    """The fitted arm's calibration per world (the arms' measures are rows of the study's own tables)."""
    for world in dict.fromkeys(r["world"] for r in study["runs"]):
        cells = _cells(study["runs"], world)
        if not cells:
            continue
        brier_table(cells, world)
        reliability_table(cells, world)
