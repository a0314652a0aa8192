"""Random folds and chronological blocks side by side on the same Weibo (CED) cascades, paired per cascade.

Reads two propagation-CV result folders of the same spec (``examples/results/propagation-ced.yaml``: 5 random
folds, every cascade scored; ``propagation-ced-chrono.yaml``: 5 blocks by posting time, blocks 1-4 scored by fits
on the blocks before them) and prints, on the cascades both score, each model's mean scale NRMSE (percentile
bootstrap 95% over cascades) under each split, the paired difference chronological - random (t interval), the
forecast's paired gain over each baseline under each split, and the chronological blocks one by one.

    PYTHONPATH=src python benchmarks/ced_cv_compare.py runs/results/propagation-ced runs/results/propagation-ced-chrono
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from socium.core.intervals import Interval, mean_interval, nonnegative_interval

MODELS = ("forecast", "null", "seismic", "seismic_direct", "hawkes", "hawkes_powerlaw", "hawkes_cv_kernel")


def rows(folder: Path) -> dict[str, dict[str, Any]]:
    res = json.loads((folder / "results.json").read_text())
    return {r["id"]: r for r in res["cascades"]}


def fmt(iv: Interval, sign: bool = False) -> str:
    if iv.estimate is None:
        return "-"
    f = "{:+.3f}" if sign else "{:.3f}"
    if iv.low is None or iv.high is None:
        return f.format(iv.estimate)
    return f"{f.format(iv.estimate)} [{f.format(iv.low)}, {f.format(iv.high)}]"


def nrmse(r: dict[str, Any], model: str, curve: str = "scale") -> float:
    return float(r["forecast"][model][curve])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("random", type=Path)
    ap.add_argument("chrono", type=Path)
    args = ap.parse_args()
    rnd, chro = rows(args.random), rows(args.chrono)
    both = [c for c in chro if c in rnd]
    print(f"random folds: {len(rnd)} scored; chronological blocks: {len(chro)} scored; both: {len(both)}\n")
    print("| model (scale NRMSE, minutes 60-1439) | random folds | chronological blocks | chronological - random |")
    print("|---|---|---|---|")
    for m in MODELS:
        a = [nrmse(rnd[c], m) for c in both]
        b = [nrmse(chro[c], m) for c in both]
        print(
            f"| {m} | {fmt(nonnegative_interval(a))} | {fmt(nonnegative_interval(b))} | "
            f"{fmt(mean_interval([y - x for x, y in zip(a, b, strict=True)]), True)} |"
        )
    for curve in ("depth", "max_breadth"):
        a = [nrmse(rnd[c], "forecast", curve) for c in both]
        b = [nrmse(chro[c], "forecast", curve) for c in both]
        print(
            f"| forecast, {curve} | {fmt(nonnegative_interval(a))} | {fmt(nonnegative_interval(b))} | "
            f"{fmt(mean_interval([y - x for x, y in zip(a, b, strict=True)]), True)} |"
        )
    print("\n| forecast - baseline (paired, scale) | random folds | chronological blocks |")
    print("|---|---|---|")
    for m in MODELS[1:]:
        cells = [
            fmt(mean_interval([nrmse(src[c], "forecast") - nrmse(src[c], m) for c in both]), True)
            for src in (rnd, chro)
        ]
        print(f"| forecast - {m} | {cells[0]} | {cells[1]} |")
    print("\n| chronological block (fit on the blocks before) | n | forecast | null | forecast - null |")
    print("|---|---|---|---|---|")
    for k in sorted({r["fold"] for r in chro.values()}):
        ids = [c for c, r in chro.items() if r["fold"] == k]
        f = [nrmse(chro[c], "forecast") for c in ids]
        z = [nrmse(chro[c], "null") for c in ids]
        d = mean_interval([x - y for x, y in zip(f, z, strict=True)])
        print(
            f"| block {k + 1} | {len(ids)} | {fmt(nonnegative_interval(f))} | "
            f"{fmt(nonnegative_interval(z))} | {fmt(d, True)} |"
        )
    print("\n| label | n | random: forecast | chronological: forecast | chronological - random |")
    print("|---|---|---|---|---|")
    for lab in sorted({str(chro[c].get("label")) for c in both}):
        ids = [c for c in both if str(chro[c].get("label")) == lab]
        a = [nrmse(rnd[c], "forecast") for c in ids]
        b = [nrmse(chro[c], "forecast") for c in ids]
        print(
            f"| {lab} | {len(ids)} | {fmt(nonnegative_interval(a))} | {fmt(nonnegative_interval(b))} | "
            f"{fmt(mean_interval([y - x for x, y in zip(a, b, strict=True)]), True)} |"
        )


if __name__ == "__main__":
    main()
