"""Pool the seeds of examples/propagation-llm.yaml into one table and one figure (docs/results.md).

Each seed is a full 5-fold CV run (its own fold split and run seed); a cascade's score under a
model is held-out NRMSE. Pooled over seeds, the CI is a percentile bootstrap over (seed, cascade)
pairs resampled by cascade (a cascade's seeds stay together, so repeated seeds do not shrink it).
The paired difference LLM - calibrated null uses the same resampling.

    python examples/propagation_llm_summary.py runs/results/propagation-llm-s0 runs/results/propagation-llm-s1 ...
        [--png docs/img/propagation-llm.png]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

CURVES = ["scale", "depth", "max_breadth"]
LABEL = {"ic_pooled": "IC baseline (pooled p, 5-min clock)", "calibrated": "calibrated null", "llm": "SmolLM2-135M"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--png", default=None)
    ap.add_argument("--boot", type=int, default=2000)
    a = ap.parse_args()
    res = [json.loads((Path(d) / "results.json").read_text()) for d in a.dirs]
    seeds = [r["spec"]["cv"]["seed"] for r in res]
    models = res[0]["spec"]["cv"]["models"]
    cids = sorted({c["id"] for r in res for c in r["cascades"]})
    # score[model][curve] : array (cascade, seed)
    score = {m: {c: np.full((len(cids), len(res)), np.nan) for c in CURVES} for m in models}
    final = {m: np.full((len(cids), len(res)), np.nan) for m in models + ["real"]}
    for j, r in enumerate(res):
        for row in r["cascades"]:
            i = cids.index(row["id"])
            final["real"][i, j] = row["real_final"]["scale"]
            for m in models:
                final[m][i, j] = row["models"][m]["final"]["scale"]
                for c in CURVES:
                    score[m][c][i, j] = row["models"][m]["nrmse"][c]
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(cids), (a.boot, len(cids)))

    def ci(x: np.ndarray) -> tuple[float, float, float]:
        per = np.nanmean(x, axis=1)  # mean over seeds per cascade
        boots = per[idx].mean(1)
        return float(per.mean()), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))

    print(f"seeds {seeds}; cascades n={len(cids)}; agents per cascade: earliest {res[0]['spec']['max_users']} users")
    print("| model | " + " | ".join(f"NRMSE {c} (95% CI)" for c in CURVES) + " | final scale at 150 min |")
    print("|---|" + "---|" * (len(CURVES) + 1))
    table = {}
    for m in models:
        row = [ci(score[m][c]) for c in CURVES]
        table[m] = row
        print(
            f"| {LABEL.get(m, m)} | "
            + " | ".join(f"{v:.3f} ({lo:.3f}-{hi:.3f})" for v, lo, hi in row)
            + f" | {np.nanmean(final[m]):.1f} |"
        )
    print(f"| real | - | - | - | {np.nanmean(final['real']):.1f} |")
    if "llm" in models and "calibrated" in models:
        d = [ci(score["llm"][c] - score["calibrated"][c]) for c in CURVES]
        print("| LLM - calibrated (paired) | " + " | ".join(f"{v:+.3f} ({lo:+.3f} to {hi:+.3f})" for v, lo, hi in d) + " | |")
    if a.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        w = 0.8 / len(models)
        for k, m in enumerate(models):
            v = np.array([t[0] for t in table[m]])
            err = np.array([[t[0] - t[1] for t in table[m]], [t[2] - t[0] for t in table[m]]])
            ax.bar(np.arange(len(CURVES)) + (k - (len(models) - 1) / 2) * w, v, w, yerr=err, capsize=3,
                   label=LABEL.get(m, m))  # fmt: skip
        ax.axhline(0.30, color="grey", ls="--", lw=1, label="OASIS ~0.30 (paper)")
        ax.set_xticks(range(len(CURVES)), ["scale", "depth", "max breadth"])
        ax.set_ylabel("held-out NRMSE over 150 min (lower is better)")
        ax.set_title(
            f"Propagation, {len(cids)} Twitter15 cascades x {res[0]['spec']['max_users']} earliest users, "
            f"5-fold CV, seeds {','.join(map(str, seeds))}\n(bars: mean over cascades; whiskers: 95% bootstrap CI)",
            fontsize=9,
        )
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=8, frameon=False)
        fig.tight_layout()
        Path(a.png).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(a.png, dpi=110)
        print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
