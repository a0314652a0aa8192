"""Pool the seeds of a propagation CV (examples/propagation-llm.yaml, examples/results/propagation-cv.yaml)
into one table and one figure (docs/results.md).

Each seed is a full k-fold CV run (k from its spec's ``cv.folds``; its own fold split and run seed);
a cascade's score under a model is held-out NRMSE. Pooled over seeds, the CI is a percentile bootstrap
over (seed, cascade) pairs resampled by cascade (a cascade's seeds stay together, so repeated seeds do not shrink it).
The paired differences (LLM - calibrated null, calibrated null - IC baseline) use the same
resampling. Each seed's own mean and CI (over its cascades) and the issue-12 targets follow.

    python examples/propagation_llm_summary.py runs/results/propagation-llm-s0 runs/results/propagation-llm-s1 ...
        [--png docs/img/propagation-llm.png]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

CURVES = ["scale", "depth", "max_breadth"]
LABEL = {"ic_pooled": "IC baseline (pooled p, 5-min clock)", "calibrated": "calibrated null", "llm": "SmolLM2-135M"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--png", default=None)
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument(
        "--extra",
        action="append",
        default=[],
        help="LABEL=DIR,DIR,...: another run set's 'calibrated' model as model LABEL (matched by seed and cascade)",
    )
    a = ap.parse_args()
    res = [json.loads((Path(d) / "results.json").read_text()) for d in a.dirs]
    seeds = [r["spec"]["cv"]["seed"] for r in res]
    models = list(res[0]["spec"]["cv"]["models"])
    for item in a.extra:  # e.g. the calibrated null with root effects, run separately on the same folds
        label, _, dirs = item.partition("=")
        by_seed = {}
        for d in dirs.split(","):
            r = json.loads((Path(d) / "results.json").read_text())
            by_seed[r["spec"]["cv"]["seed"]] = {c["id"]: c["models"]["calibrated"] for c in r["cascades"]}
        if set(by_seed) != set(seeds):
            raise SystemExit(f"--extra {label}: seeds {sorted(by_seed)} differ from {seeds}")
        for r in res:
            for row in r["cascades"]:
                row["models"][label] = by_seed[r["spec"]["cv"]["seed"]][row["id"]]
        models.append(label)
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

    folds = sorted({str(r["spec"]["cv"].get("folds", "?")) for r in res})  # as run, not as assumed
    cv_name = "/".join(folds) + "-fold CV" if "?" not in folds else "CV (fold count not recorded)"
    users = res[0]["spec"]["max_users"]
    who = f"earliest {users} users" if users else "all users"
    print(f"seeds {seeds}; cascades n={len(cids)}; agents per cascade: {who}; replicas per prediction "
          f"{res[0]['spec']['cv']['runs']}; bootstrap {a.boot} resamples over cascades")  # fmt: skip
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
    pairs = [("llm", "calibrated", "LLM - calibrated"), ("calibrated", "ic_pooled", "calibrated - IC")]
    pairs += [(m, "calibrated", f"{m} - calibrated") for m in models if m not in LABEL]
    for m1, m0, label in pairs:
        if m1 in models and m0 in models:
            d = [ci(score[m1][c] - score[m0][c]) for c in CURVES]
            print(f"| {label} (paired) | " + " | ".join(f"{v:+.3f} ({x:+.3f} to {y:+.3f})" for v, x, y in d) + " | |")
    print("\nper seed (mean over that seed's cascades, 95% bootstrap CI over them):")
    for j, sd in enumerate(seeds):
        for m in models:
            cells = [ci(score[m][c][:, j : j + 1]) for c in CURVES]
            print(
                f"  seed {sd} {m}: "
                + "  ".join(f"{c} {v:.3f} ({lo:.3f}-{hi:.3f})" for c, (v, lo, hi) in zip(CURVES, cells))
            )
    if "calibrated" in models:  # the root effects live in the fits of the run set that used them
        fit_dirs = [x.partition("=")[2].split(",") for x in a.extra] or [a.dirs]
        by_source(fit_dirs[-1], res, cids, {m: score[m]["scale"] for m in models if m != "ic_pooled"}, final)
    targets = res[0].get("summary", {}).get("reference", {}).get("targets")
    for m in [m for m in models if m not in ("ic_pooled", "llm")] if targets else []:
        for c, (v, lo, hi) in zip(CURVES, table[m]):
            verdict = "met (CI below)" if hi <= targets[c] else "mean met, CI crosses" if v <= targets[c] else "NOT met"
            print(f"target {m} {c} <= {targets[c]}: {v:.3f} ({lo:.3f}-{hi:.3f}) -> {verdict}")
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
        if targets:  # issue 12's per-curve targets for the calibrated null, as short red ticks
            for k, c in enumerate(CURVES):
                ax.hlines(targets[c], k - 0.45, k + 0.45, color="red", lw=1.2, label="target" if k == 0 else None)
        ax.set_xticks(range(len(CURVES)), ["scale", "depth", "max breadth"])
        ax.set_ylabel("held-out NRMSE over 150 min (lower is better)")
        ax.set_title(
            f"Propagation, {len(cids)} Twitter15 cascades x {who}, "
            f"{cv_name}, seeds {','.join(map(str, seeds))}\n(bars: mean over cascades; whiskers: 95% bootstrap CI)",
            fontsize=9,
        )
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=8, frameon=False)
        fig.tight_layout()
        Path(a.png).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(a.png, dpi=110)
        print(f"wrote {a.png}")


def by_source(dirs: list[str], res: list[dict], cids: list[str], scale: dict[str, np.ndarray], final: dict) -> None:
    """Where the calibrated nulls' scale error sits: held-out cascades whose source account was in that
    fold's training set (so a fitted root effect applies) or not, and over- vs under-predicted ones.

    The source account is row 0 of the cascade's population CSV; "seen" means it is a key of the
    fold's fitted ``root_effects`` in ``dirs`` (one dir per seed, in the order of ``res``).
    """
    import csv

    seen = np.zeros((len(cids), len(res)), bool)
    for j, (d, r) in enumerate(zip(dirs, res)):
        if not (Path(d) / "cv").is_dir() or not (Path(d) / "inputs").is_dir():
            return  # a results.json without its run folders (copied alone): no split to show
        for row in r["cascades"]:
            fit = json.loads((Path(d) / "cv" / f"fold{row['fold']}" / "timing.json").read_text())
            with (Path(d) / "inputs" / f"{row['id']}.csv").open(newline="", encoding="utf-8") as fh:
                source = next(csv.DictReader(fh))["user_id"].split("#", 1)[0]
            seen[cids.index(row["id"]), j] = source in fit["timing"].get("root_effects", {})
    for m, sc in scale.items():
        over = final[m] > final["real"]
        print(f"\n{m}: scale NRMSE by held-out (cascade, seed) pair:")
        for name, mask in (("source account seen in the fold's training set", seen), ("source account unseen", ~seen),
                           ("over-predicted at 150 min", over), ("under-predicted at 150 min", ~over)):  # fmt: skip
            print(f"  {name}: n={mask.sum()} pairs, mean {sc[mask].mean():.3f}" if mask.any() else f"  {name}: n=0")
        ratio = np.log(final[m] / final["real"])
        print(f"  log(simulated / real final scale): mean {np.nanmean(ratio):+.3f}, sd {np.nanstd(ratio):.3f}")
        per = np.nanmean(sc, axis=1)
        worst = max(1, math.ceil(len(per) / 10))  # the worst tenth of however many cascades there are
        share = np.sort(per)[-worst:].sum() / per.sum()
        print(f"  the {worst} worst of {len(per)} cascades (a tenth) carry {share:.0%} of the summed scale error")


if __name__ == "__main__":
    main()
