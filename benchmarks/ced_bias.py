"""The Weibo (CED) forecast's bias, measured on a propagation CV's held-out cascades, and where it comes from.

Reads a propagation-CV result folder (``examples/results/propagation-ced-chrono.yaml``, optionally run with
``--set cv.bias_calibration=true``) and prints, per model, the signed log error of the final size
``log(forecast / real)`` at the last minute (negative: the forecast is low): its median with a distribution-free
order-statistic 95% interval (binomial ranks, valid for any n >= 3), the share of cascades forecast low (Wilson),
and the same by decile of the real final size and by label (rumour / non-rumour). When the run has
``forecast_bc`` (the bias calibration learnt on each fold's training cascades) it also prints the before / after
table: NRMSE per curve (bootstrap over cascades) and the paired difference (t).

``--decompose`` reads the CED cascades and each fold's saved fit and splits the bias into its candidate causes
on the same folds: the forecast as run; the same with each cascade's *full-information* speed (the posterior of
its log-delay shift from all its edges: what a perfect read of the first hour could give); the same model on the
fold's *training* cascades (in-sample); the unseen members by whether their parent was seen by minute m; the
posting hour (Beijing) and a constant log-delay shift of the future.

    PYTHONPATH=src python benchmarks/ced_bias.py runs/results/propagation-ced-chrono [--decompose]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from socium.core.intervals import mean_interval, nonnegative_interval, proportion_interval
from socium.experiments.propagation.forecast.predictive import LEVELS, quantile_interval

MODELS = (
    "forecast",
    "forecast_bc",
    "null",
    "seismic",
    "seismic_direct",
    "hawkes",
    "hawkes_powerlaw",
    "hawkes_cv_kernel",
)
CURVES = ("scale", "depth", "max_breadth")


def log_errors(rows: Sequence[dict[str, Any]], model: str) -> np.ndarray:
    """``log(forecast final size / real final size)`` per cascade (forecast floored at 1 node)."""
    return np.array(
        [
            math.log(max(float(r["forecast"][model]["final_scale"]), 1.0) / max(float(r["real_final"]["scale"]), 1.0))
            for r in rows
        ]
    )


def median_cell(e: np.ndarray) -> str:
    q = quantile_interval(e.tolist(), 0.5)
    if q["estimate"] is None:
        return "-"
    lo = "-" if q["low"] is None else f"{q['low']:+.3f}"
    hi = "-" if q["high"] is None else f"{q['high']:+.3f}"
    low = proportion_interval(int(np.sum(e < 0)), len(e))
    return (
        f"{q['estimate']:+.3f} [{lo}, {hi}]; low {100 * low.estimate:.0f}% [{100 * low.low:.0f}, {100 * low.high:.0f}]"  # type: ignore[operator]
    )


def bias_tables(rows: list[dict[str, Any]], info: dict[str, dict[str, Any]] | None = None) -> None:
    models = [m for m in MODELS if all(m in r["forecast"] for r in rows)]
    print(f"n = {len(rows)} held-out cascades; signed log error of the final size, median [order-statistic 95%];")
    print("share forecast low [Wilson 95%]\n")
    print("| model | median log(forecast / real) ; share low | mean |")
    print("|---|---|---|")
    for m in models:
        e = log_errors(rows, m)
        print(f"| {m} | {median_cell(e)} | {e.mean():+.3f} |")
    real = np.array([r["real_final"]["scale"] for r in rows], float)
    edges = np.quantile(real, np.linspace(0, 1, 11))
    dec = np.clip(np.searchsorted(edges[1:-1], real, side="right"), 0, 9)
    show = [m for m in ("forecast", "forecast_bc", "null", "seismic_direct", "hawkes") if m in models]
    print("\nBy decile of the real final size (median [95%]):\n")
    print("| decile (real size) | n | " + " | ".join(show) + " |")
    print("|---|---|" + "---|" * len(show))
    for d in range(10):
        sel = [r for r, k in zip(rows, dec, strict=True) if k == d]
        lo, hi = int(edges[d]), int(edges[d + 1])
        cells = [median_cell(log_errors(sel, m)).split(";")[0] for m in show]
        print(f"| {d + 1} ({lo}-{hi}) | {len(sel)} | " + " | ".join(cells) + " |")
    labels = sorted({str(r.get("label")) for r in rows})
    print("\nBy label:\n")
    print("| label | n | " + " | ".join(show) + " |")
    print("|---|---|" + "---|" * len(show))
    for lab in labels:
        sel = [r for r in rows if str(r.get("label")) == lab]
        print(f"| {lab} | {len(sel)} | " + " | ".join(median_cell(log_errors(sel, m)) for m in show) + " |")
    if "forecast_bc" in models:
        print("\nBefore / after the bias calibration (same replicas; NRMSE bootstrap 95%, paired t):\n")
        print("| curve | forecast | forecast_bc | bc - forecast (paired) |")
        print("|---|---|---|---|")
        for c in CURVES:
            a = [float(r["forecast"]["forecast"][c]) for r in rows]
            b = [float(r["forecast"]["forecast_bc"][c]) for r in rows]
            d = mean_interval([y - x for x, y in zip(a, b, strict=True)])
            ia, ib = nonnegative_interval(a), nonnegative_interval(b)
            print(
                f"| {c} | {ia.estimate:.4f} [{ia.low:.4f}, {ia.high:.4f}] | {ib.estimate:.4f} [{ib.low:.4f}, "
                f"{ib.high:.4f}] | {d.estimate:+.4f} [{d.low:+.4f}, {d.high:+.4f}] |"
            )
    if info:
        hour = np.array([(dt.datetime.fromisoformat(info[r["id"]]["posted_at"]).hour + 8) % 24 for r in rows])
        e = log_errors(rows, "forecast")
        print("\nBy posting hour, Beijing time (forecast):\n")
        print("| hours | n | median log(forecast / real) ; share low |")
        print("|---|---|---|")
        for name, sel in (
            ("23", hour == 23),
            ("0-7", hour < 8),
            ("8-17", (hour >= 8) & (hour < 18)),
            ("18-22", (hour >= 18) & (hour < 23)),
        ):
            if sel.sum():
                print(f"| {name} | {int(sel.sum())} | {median_cell(e[sel])} |")


def decompose(folder: Path, res: dict[str, Any], info: dict[str, dict[str, Any]], trees: dict[str, Any]) -> None:
    """The bias with the cascade's full-information speed, in-sample, by where the unseen members hang, and
    under a constant shift of the future's log delays (module docstring)."""
    from socium.experiments.propagation.data.realcascades import earliest_users  # lazy: --decompose only
    from socium.experiments.propagation.forecast import forecast as F  # lazy: --decompose only
    from socium.simulator.timing import TimingParams  # lazy: --decompose only

    spec = res["spec"]
    m, minutes, runs = int(spec["observe_minutes"]), int(spec["minutes"]), int(spec["cv"]["runs"])
    last = minutes - 1
    out: dict[str, dict[str, list[float]]] = {}

    def add(group: str, key: str, v: float) -> None:
        out.setdefault(group, {}).setdefault(key, []).append(v)

    for fold in res["folds"]:
        fit = json.loads((folder / "cv" / f"fold{fold['fold']}" / "timing.json").read_text())
        tp = TimingParams.from_dict(fit["timing"])
        sd = float(fit["estimates"]["cascade_sigma"])
        picked = np.random.default_rng(fold["fold"]).permutation(fold["train"])[: len(fold["held_out"])].tolist()
        for group, ids in (("held-out", fold["held_out"]), ("training (in-sample)", picked)):
            for cid in ids:
                tree = trees[cid]
                c = F.cascade_arrays(tree, earliest_users(tree, None))
                real = float((c.delay <= last).sum())
                obs = c.delay <= m
                par = np.maximum(c.parent, 0)
                seen_parent = (~obs) & obs[par] & (c.parent >= 0)
                unseen_parent = (~obs) & ~obs[par]
                g_all, w_all = F.speed_posterior(c, tp, sd, 1e12)
                variants: list[tuple[str, float, bool]] = [
                    ("as run", 0.0, False),
                    ("full-information speed", 0.0, True),
                ]
                if group == "held-out":
                    variants += [("future log delays -0.3", -0.3, False), ("future log delays -0.6", -0.6, False)]
                for name, shift, oracle in variants:
                    rng = np.random.default_rng(zlib.crc32(cid.encode()))
                    orig = F.speed_posterior
                    if oracle:
                        F.speed_posterior = lambda *a, g=g_all, w=w_all, **k: (g, w)  # type: ignore[assignment]
                    try:
                        t = F.replica_times(c, tp, sd, m, runs, rng, True, shift)
                    finally:
                        F.speed_posterior = orig
                    fc = float((t <= last).sum(1).mean())
                    add(group, name, math.log(max(fc, 1.0) / real))
                    if name == "as run":
                        add(group, "seen-parent real", float((c.delay[seen_parent] <= last).sum()))
                        add(group, "seen-parent forecast", float((t[:, seen_parent] <= last).sum(1).mean()))
                        add(group, "unseen-parent real", float((c.delay[unseen_parent] <= last).sum()))
                        add(group, "unseen-parent forecast", float((t[:, unseen_parent] <= last).sum(1).mean()))
    print(f"\nDecomposition (forecast from minute {m}, size at minute {last}; median [95%]; share low):\n")
    print("| cascades | variant | n | median log(forecast / real) ; share low |")
    print("|---|---|---|---|")
    for group, d in out.items():
        for name in ("as run", "full-information speed", "future log delays -0.3", "future log delays -0.6"):
            if name in d:
                print(f"| {group} | {name} | {len(d[name])} | {median_cell(np.array(d[name]))} |")
    print("\nUnseen members at minute m that arrive by the last minute, summed over cascades (forecast / real):\n")
    print("| cascades | parent seen by m | parent not seen by m |")
    print("|---|---|---|")
    for group, d in out.items():
        a = sum(d["seen-parent forecast"]) / max(sum(d["seen-parent real"]), 1.0)
        b = sum(d["unseen-parent forecast"]) / max(sum(d["unseen-parent real"]), 1.0)
        print(
            f"| {group} | {a:.3f} ({sum(d['seen-parent forecast']):.0f} / {sum(d['seen-parent real']):.0f}) | "
            f"{b:.3f} ({sum(d['unseen-parent forecast']):.0f} / {sum(d['unseen-parent real']):.0f}) |"
        )


def _covered(x: np.ndarray, y: float) -> dict[str, bool]:
    return {
        f"{int(lv * 100)}": bool(np.quantile(x, 0.5 - lv / 2) <= y <= np.quantile(x, 0.5 + lv / 2)) for lv in LEVELS
    }


def coverage(folder: Path, res: dict[str, Any], trees: dict[str, Any], n_train: int) -> None:
    """Coverage of the final scale / depth / max breadth's central intervals on the held-out folds, the
    dispersion ``k`` chosen on each fold's training cascades only (in-sample forecasts by the fold's fit):
    ``k`` chosen on the size and used for every curve (what ``--calibrate-intervals`` does), ``k`` chosen per
    curve, and ``k`` per curve after the growth bias calibration (learnt on the same training cascades)."""
    from socium.experiments.propagation.data.realcascades import earliest_users, subtree_curves  # lazy: --coverage
    from socium.experiments.propagation.fit.dispersion import GRID  # lazy: --coverage only
    from socium.experiments.propagation.forecast.bias import calibrate_curves, learn_bias  # lazy: --coverage only
    from socium.experiments.propagation.forecast.forecast import cascade_arrays  # lazy: --coverage only
    from socium.experiments.propagation.forecast.predictive import predict_cascade, widen  # lazy: --coverage only
    from socium.simulator.timing import TimingParams  # lazy: --coverage only

    spec = res["spec"]
    m, minutes, runs = int(spec["observe_minutes"]), int(spec["minutes"]), int(spec["cv"]["runs"])
    nominal = {f"{int(lv * 100)}": lv for lv in LEVELS}

    def forecast(
        cid: str, tp: TimingParams, sd: float
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, float]]:
        tree = trees[cid]
        users = earliest_users(tree, None)
        real = subtree_curves(tree, users, minutes)
        rng = np.random.default_rng(zlib.crc32(cid.encode()))
        pred = predict_cascade(cascade_arrays(tree, users), tp, sd, m, runs, minutes, rng, baselines=())
        caps = {"scale": float(len(users)), "depth": float(tree.max_depth), "max_breadth": float(tree.max_breadth)}
        return pred.samples["forecast"], real, caps

    def cov(items: list[Any], curve: str, k: float, beta: dict[str, float] | None) -> dict[str, float]:
        hits = {lv: 0 for lv in nominal}
        for sims, real, caps in items:
            x = {curve: sims[curve]}
            if beta is not None:
                x = calibrate_curves(x, real, m, beta, caps)
            w = widen(x, real, m, k, caps)[curve][:, -1]
            for lv, hit in _covered(w, float(real[curve][-1])).items():
                hits[lv] += int(hit)
        return {lv: h / max(len(items), 1) for lv, h in hits.items()}

    def best_k(items: list[Any], curve: str, beta: dict[str, float] | None) -> float:
        gaps = [(sum(abs(c - nominal[lv]) for lv, c in cov(items, curve, k, beta).items()), k) for k in GRID]
        return min(gaps)[1]

    held_hits: dict[str, dict[str, list[bool]]] = {}
    chosen = []
    for fold in res["folds"]:
        fit = json.loads((folder / "cv" / f"fold{fold['fold']}" / "timing.json").read_text())
        tp = TimingParams.from_dict(fit["timing"])
        sd = float(fit["estimates"]["cascade_sigma"])
        train_ids = np.random.default_rng(fold["fold"]).permutation(fold["train"])[:n_train].tolist()
        train = [forecast(c, tp, sd) for c in train_ids]
        beta = learn_bias(
            [{k: (float(s[k].mean(0)[-1]), float(r[k][-1]), float(r[k][m])) for k in CURVES} for s, r, _ in train]
        )
        k_size = best_k(train, "scale", None)
        k_curve = {c: best_k(train, c, None) for c in CURVES}
        k_bc = {c: best_k(train, c, beta) for c in CURVES}
        chosen.append((fold["fold"], len(train), k_size, k_curve, k_bc, {c: round(v, 3) for c, v in beta.items()}))
        for cid in fold["held_out"]:
            sims, real, caps = forecast(cid, tp, sd)
            for c in CURVES:
                for name, k, b in (
                    ("k on size", k_size, None),
                    ("k per curve", k_curve[c], None),
                    ("bias + k per curve", k_bc[c], beta),
                ):
                    x = {c: sims[c]}
                    if b is not None:
                        x = calibrate_curves(x, real, m, b, caps)
                    w = widen(x, real, m, k, caps)[c][:, -1]
                    for lv, hit in _covered(w, float(real[c][-1])).items():
                        held_hits.setdefault(f"{c}|{name}", {}).setdefault(lv, []).append(hit)
    print(
        "\nDispersion chosen on each fold's training cascades (fold, n train, k on size, k per curve, k per curve after"
    )
    print("the bias calibration, beta):\n")
    for row in chosen:
        print(f"- fold {row[0]}: n {row[1]}, k size {row[2]:g}, per curve {row[3]}, after bias {row[4]}, beta {row[5]}")
    print("\nCoverage of the central interval on the held-out folds (Wilson 95%):\n")
    print("| curve | dispersion | n | 50% | 80% | 90% |")
    print("|---|---|---|---|---|---|")
    for key, by in held_hits.items():
        curve, name = key.split("|")
        cells = []
        for lv in ("50", "80", "90"):
            iv = proportion_interval(int(sum(by[lv])), len(by[lv]))
            cells.append(f"{100 * iv.estimate:.1f} ({100 * iv.low:.1f}-{100 * iv.high:.1f})")  # type: ignore[operator]
        print(f"| {curve} | {name} | {len(by['50'])} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--decompose", action="store_true", help="read CED and the fold fits: the bias's causes")
    ap.add_argument("--coverage", action="store_true", help="coverage per curve, k chosen on training folds")
    ap.add_argument("--coverage-train", type=int, default=150, help="training cascades per fold for --coverage")
    args = ap.parse_args()
    res = json.loads((args.folder / "results.json").read_text())
    rows = [r for r in res["cascades"] if "forecast" in r]
    info = None
    trees = None
    if args.decompose or args.coverage:
        from socium.experiments.propagation.data.ced import CUTOFF, load_ced  # lazy: --decompose only

        ids = {r["id"] for r in rows} | {c for f in res["folds"] for c in f["train"]}
        trees, info, _ = load_ced(None, sorted(ids), posted_before=CUTOFF)
    bias_tables(rows, info if args.decompose else None)
    if args.decompose and trees is not None and info is not None:
        decompose(args.folder, res, info, trees)
    if args.coverage and trees is not None:
        coverage(args.folder, res, trees, args.coverage_train)


if __name__ == "__main__":
    main()
