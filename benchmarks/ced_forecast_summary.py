"""The tables of docs/results.md's "Weibo: calibrated intervals" from a ``socium forecast`` output folder.

Reads ``results.json`` (overall measures, as the tool computed them) and ``cascades.parquet`` (one row per
cascade and model) and prints: the fit's calibration (dispersion chosen in CV on the training cascades, its CV
coverage), the point and distribution measures per model, and the forecast's coverage of the final size at
50 / 80 / 90% with Wilson 95% intervals, overall, per label and by reshares observed in the first hour.
Nothing here is fitted or chosen: it only counts.

    PYTHONPATH=src python benchmarks/ced_forecast_summary.py OUT/forecast [--fit OUT/fit_ced2012.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from scipy import stats

from socium.core.intervals import proportion_interval

LEVELS = ("50", "80", "90")
BINS = ((10, 50), (50, 100), (100, 200), (200, 10**9))


def cover(rows: list[dict[str, Any]]) -> str:
    """``share (low-high)`` per level, in percent, Wilson 95%."""
    out = []
    for lv in LEVELS:
        hits = [r[f"covered{lv}"] for r in rows if r[f"covered{lv}"] is not None]
        iv = proportion_interval(int(sum(hits)), len(hits))
        out.append("-" if iv.estimate is None else f"{100 * iv.estimate:.1f} ({100 * iv.low:.1f}-{100 * iv.high:.1f})")
    return " | ".join(out)


def _fmt(x: Any) -> str:
    if isinstance(x, dict):
        est = x.get("estimate", x.get("mean"))
        lo, hi = x.get("low", x.get("lo")), x.get("high", x.get("hi"))
        if est is None:
            return "-"
        return f"{est:.3f}" + ("" if lo is None or hi is None else f" [{lo:.3f}, {hi:.3f}]")
    return "-" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("forecast", type=Path)
    ap.add_argument("--fit", type=Path, default=None)
    args = ap.parse_args()
    if args.fit:
        fit = json.loads(args.fit.read_text())
        cal = fit.get("dispersion_cv") or {}
        print(
            f"fit: n = {fit['training']['n']}, family {fit['timing']['delay']['family']}, cascade_sigma "
            f"{fit['cascade_sigma']:.3f}, dispersion k = {fit['dispersion']} chosen in {cal.get('folds')}-fold CV "
            f"at m = {cal.get('observe_minutes')}, H = {cal.get('horizon_minutes')} on n = {cal.get('n')}: "
            f"CV coverage {cal.get('coverage')}, undispersed {cal.get('coverage_undispersed')}"
        )
    res = json.loads((args.forecast / "results.json").read_text())
    for m, block in res["by_observe_minutes"].items():
        print(f"\nobserve minute {m}")
        print("| model | NRMSE scale | MSLE | APE q50 / q90 | CRPS log2 | coverage 50 / 80 / 90 |")
        print("|---|---|---|---|---|---|")
        for model, s in block.items():
            if not isinstance(s, dict) or "nrmse" not in s:
                continue
            ape = s.get("ape") or {}
            cov = s.get("coverage") or {}
            covs = " / ".join(_fmt((cov.get(lv) or {}).get("scale")) for lv in LEVELS) if cov else "-"
            print(
                f"| {model} | {_fmt(s['nrmse'].get('scale'))} | {_fmt(s.get('msle'))} | "
                f"{_fmt(ape.get('q50'))} / {_fmt(ape.get('q90'))} | {_fmt(s.get('crps_log'))} | {covs} |"
            )
        for key, d in block.items():
            if key.startswith("forecast_minus_"):
                print(
                    f"  {key}: NRMSE scale {_fmt(d.get('nrmse_scale'))}, squared log error {_fmt(d.get('sle'))}, "
                    f"CRPS log2 {_fmt(d.get('crps_log'))}"
                )
    rows = [r for r in pq.read_table(args.forecast / "cascades.parquet").to_pylist() if r["model"] == "forecast"]
    print(f"\ncoverage of the final size, forecast (% with Wilson 95%), n = {len(rows)}")
    print("| cascades | n | 50% | 80% | 90% |")
    print("|---|---|---|---|---|")
    print(f"| all | {len(rows)} | {cover(rows)} |")
    for lab in sorted({str(r["label"]) for r in rows}):
        sub = [r for r in rows if str(r["label"]) == lab]
        print(f"| {lab} | {len(sub)} | {cover(sub)} |")
    for lo, hi in BINS:
        sub = [r for r in rows if lo <= r["observed"] - 1 < hi]
        name = f"{lo}-{hi - 1} first-hour reshares" if hi < 10**9 else f">= {lo} first-hour reshares"
        print(f"| {name} | {len(sub)} | {cover(sub)} |")
    pit = np.array([r["pit"] for r in rows if r["pit"] is not None], float)
    print("\nPIT histogram (10 bins):", np.histogram(pit, bins=10, range=(0, 1))[0].tolist())
    real = np.array([r["real_scale"] for r in rows], float)
    med = np.array([r["final_q50"] for r in rows], float)
    ks = stats.ks_2samp(real, med)
    print(
        f"final size (real vs the forecast's median, the one stylized fact the study simulates on Weibo): mean "
        f"{real.mean():.1f} vs {med.mean():.1f}; p10/50/90 {np.percentile(real, [10, 50, 90]).round(1).tolist()} "
        f"vs {np.percentile(med, [10, 50, 90]).round(1).tolist()}; KS D {ks.statistic:.3f}, p {ks.pvalue:.3g}; "
        f"median log(real / forecast median) {np.median(np.log(real / np.maximum(med, 1))):+.3f}"
    )
    print(f"wall {res.get('wall_s')} s")


if __name__ == "__main__":
    main()
