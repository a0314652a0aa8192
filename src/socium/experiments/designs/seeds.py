"""Pool replicates of one experiment run under different seeds: mean and 95% interval per metric.

Why: herding, polarisation and perspective-comparison experiments are single runs, and the CIs
their reports print are over the items or cascades *inside* one run; they do not cover what a
different seed (other activations, other sampled items or users, other model samples) would give.
docs/results.md counts the replicate (a seed) as the independent unit, so its numbers come from
several experiment directories of the same spec that differ only in their seeds, pooled here.

Each directory contributes one value per metric (a flat name such as ``model.up.p_next_positive``);
a metric's summary is the mean over replicates (n = replicates that have the value) with its interval
by the one policy of :mod:`socium.core.intervals`: none below 3 replicates ("n too small"), a percentile
bootstrap for a quantity that cannot be negative (shares, NRMSE, sizes, counts: the interval stays in
range), a two-sided 95% t interval otherwise. Paired contrasts are per-replicate differences, e.g.
``model - null`` of the same seed (same world, same items) or ``omniscient - local`` of a perspective
comparison, with their own t interval: the pairing removes the between-seed spread both sides share.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from socium.core.intervals import Interval, interval_from_dict, mean_interval, nonnegative_interval
from socium.errors import ConfigError
from socium.experiments.spec import read_results
from socium.experiments.studies import STUDIES, study
from socium.reporting.card import run_smoke_banner
from socium.reporting.page import ReportTable, counted
from socium.trace.run_facts import read_json_file
from socium.trace.safe_write import own_folder, replace_file

SEED_FIELDS = ("seed", "item_seed", "split_seed", "sample_seed")
"""Spec fields (top level or in ``base``) that make a replicate; every other field must agree."""
IGNORED_FIELDS = ("out", "name")
"""Spec fields that name where a replicate was written, not what it measured."""

Flat = dict[str, float | None]

#: Leaf names of metrics that cannot be negative (shares, error measures, sizes, counts): their interval is
#: a bootstrap that stays in range. Differences (``up-control``, shifts, changes) are signed and get a t.
NONNEGATIVE = re.compile(
    r"^(p_\w+|\w*_share|\w*rate|nrmse_\w+|final_\w+|mean_abs|variance|surveys|llm_calls|tokens\w*|posts"
    r"|reshares|crowd_votes|prompt_tokens)$"
)


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, int | float) and math.isfinite(float(x)):
        return float(x)
    return None


def _usage(prefix: str, use: dict[str, Any]) -> Flat:
    return {
        f"{prefix}.llm_calls": _num(use.get("llm_calls")),
        f"{prefix}.tokens": _num((use.get("prompt_tokens") or 0) + (use.get("completion_tokens") or 0)),
        f"{prefix}.invalid_rate": _num(use.get("invalid_rate")),
    }


def herding_values(res: dict[str, Any]) -> Flat:
    """Per source (model, null): each group's levels and the treated-minus-control differences."""
    out: Flat = {}
    for src, run in res["runs"].items():
        groups = run["metrics"]["groups"]
        for g, d in groups.items():
            for k in ("p_next_positive", "p_positive", "final_mean_score", "crowd_mean_score", "crowd_votes"):
                out[f"{src}.{g}.{k}"] = _num(d.get(k))
        for g in ("up", "down"):
            # crowd votes only (Muchnik et al.): the score with the treatment vote is a level, never an effect
            for k in ("p_next_positive", "p_positive", "crowd_mean_score"):
                a, b = _num(groups[g].get(k)), _num(groups["control"].get(k))
                out[f"{src}.{g}-control.{k}"] = None if a is None or b is None else a - b
        out.update(_usage(src, run.get("usage", {})))
    return out


def polarisation_values(res: dict[str, Any]) -> Flat:
    """Per source: assigned and last-survey stance summaries, and the shifts between them."""
    out: Flat = {}
    for src, run in res["runs"].items():
        m = run["metrics"]
        pts = m["points"]
        first, last = pts[0], pts[-1]
        out[f"{src}.surveys"] = float(len(pts) - 1)
        out[f"{src}.last.answered_share"] = _num(last["answered"] / last["asked"]) if last.get("asked") else None
        for label, pt in (("start", first), ("last", last)):
            for k in ("mean", "mean_abs", "variance", "bimodality", "text_extremity"):
                out[f"{src}.{label}.{k}"] = _num(pt.get(k))
            for g, d in pt["groups"].items():
                out[f"{src}.{label}.{g}_mean"] = _num(d.get("mean"))
        out[f"{src}.mean_abs_shift"] = _num(m.get("mean_abs_shift"))
        for g, v in m["group_extremity_shift"].items():
            out[f"{src}.{g}_extremity_shift"] = _num(v)
        gaps = []
        for pt in (first, last):
            c, p = (_num(pt["groups"].get(g, {}).get("mean")) for g in ("conservative", "progressive"))
            gaps.append(None if c is None or p is None else p - c)
        out[f"{src}.camp_gap_change"] = None if None in gaps else gaps[1] - gaps[0]  # type: ignore[operator]
        out.update(_usage(src, run.get("usage", {})))
    return out


def propagation_cv_values(res: dict[str, Any]) -> Flat:
    """A cross-validated propagation run: each model's mean held-out NRMSE, the prefix forecast's and its
    baselines' (``forecast.nrmse_scale``, ``null.nrmse_scale``, ...) and each counterfactual arm's relative
    change in reach, estimated and on the real future (``counterfactual.remove@10.relative``)."""
    s = res["summary"]
    out: Flat = {}
    for model in (m for m in res["spec"]["cv"]["models"] if m in s):  # forecast_sim sits in the forecast's summary
        for k, v in s[model]["nrmse"].items():
            out[f"{model}.nrmse_{k}"] = _num(v)
    for model, entry in (s.get("forecast") or {}).items():
        if isinstance(entry, dict) and not model.startswith("forecast_minus") and model != "seismic_supercritical":
            for k, iv in entry.items():
                if isinstance(iv, dict):
                    out[f"{model}.nrmse_{k}"] = _num(iv.get("estimate"))
    for key, arm in ((s.get("counterfactual") or {}).get("arms") or {}).items():
        out[f"counterfactual.{key}.relative"] = _num(arm["relative"].get("estimate"))
        if "oracle_relative" in arm:
            out[f"counterfactual.{key}.relative_on_real_future"] = _num(arm["oracle_relative"].get("estimate"))
    return out


def propagation_values(res: dict[str, Any]) -> Flat:
    """Per model: the mean over the run's cascades of NRMSE and final size / depth / breadth (a
    cross-validated run: :func:`propagation_cv_values`)."""
    if res.get("mode") == "cv":
        return propagation_cv_values(res)
    out: Flat = {}
    for src in ("model", "null"):
        have = [c["runs"][src] for c in res["cascades"] if src in c["runs"]]
        if not have:
            continue
        for k in have[0]["nrmse"]:
            out[f"{src}.nrmse_{k}"] = sum(r["nrmse"][k] for r in have) / len(have)
        for k in have[0]["final"]:
            out[f"{src}.final_{k}"] = sum(r["final"][k] for r in have) / len(have)
        use = {
            k: sum(r["usage"].get(k) or 0 for r in have) for k in ("llm_calls", "prompt_tokens", "completion_tokens")
        }
        use["invalid_rate"] = sum(r["usage"].get("invalid_rate") or 0 for r in have) / len(have)
        out.update(_usage(src, use))
    return out


def replicate_values(exp_dir: Path) -> tuple[str, Flat, dict[str, Any]]:
    """(kind, flat metric values, spec) of one experiment directory.

    A ``compare`` directory contributes each perspective's own experiment under the perspective's
    name (``local.model.up.p_next_positive``), read from that perspective's ``results.json``, plus the
    comparison's cost totals (``local.tokens_per_agent_step``).
    """
    res = read_results(exp_dir)
    kind = res["experiment"]
    if kind == "compare":
        out: Flat = {}
        for persp, row in res["perspectives"].items():
            sub = read_results(Path(row["dir"]))
            for k, v in study(res["of"]).values(sub).items():
                out[f"{persp}.{k}"] = v
            for k in ("tokens_per_agent_step", "posts", "reshares", "crowd_votes", "prompt_tokens"):
                out[f"{persp}.{k}"] = _num(row["totals"].get(k))
        return f"compare:{res['of']}", out, res["spec"]
    pooled = [name for name, s in STUDIES.items() if s.seed_values is not None]
    if kind not in pooled:
        raise ConfigError(f"{exp_dir}: seed pooling covers {', '.join(pooled)} and compare, not {kind}")
    return kind, study(kind).values(res), res["spec"]


def _design(spec: dict[str, Any]) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The spec without its seed and location fields, and the replicate's seeds."""
    d = json.loads(json.dumps(spec))
    base = d.get("base") or {}
    cv = d.get("cv") if isinstance(d.get("cv"), dict) else {}
    seeds = tuple(d.get(f) for f in SEED_FIELDS) + (base.get("seed"), cv.get("seed"))
    for f in SEED_FIELDS + IGNORED_FIELDS:
        d.pop(f, None)
    base.pop("seed", None)
    cv.pop("seed", None)  # a cross-validation's fold split is drawn from it: a replicate's seed like base.seed
    return d, seeds


def pool_seeds(dirs: Sequence[Path], contrasts: Sequence[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Mean and 95% interval (core.intervals policy) over replicates for every metric, and paired contrasts.

    ``contrasts``: (a, b) prefixes; every metric present under both gives a per-replicate ``a - b``
    difference. Default: ``model - null`` for one experiment, each other perspective minus ``local``
    for a comparison. Raises ConfigError when the directories are not replicates of one design
    (different kinds, specs that differ in more than their seeds, or two with the same seeds).
    """
    if len(dirs) < 2:
        raise ConfigError("seed pooling needs at least 2 experiment directories (one per seed)")
    kinds, values, designs, seeds = [], [], [], []
    for d in dirs:
        kind, vals, spec = replicate_values(Path(d))
        design, sd = _design(spec)
        kinds.append(kind)
        values.append(vals)
        designs.append(design)
        seeds.append(sd)
    if len(set(kinds)) > 1:
        raise ConfigError(f"not replicates of one experiment: kinds {sorted(set(kinds))}")
    for d, design in zip(dirs[1:], designs[1:]):
        if design != designs[0]:
            diff = sorted(k for k in set(design) | set(designs[0]) if design.get(k) != designs[0].get(k))
            raise ConfigError(f"{d}: spec differs from {dirs[0]} in more than its seeds ({', '.join(diff)})")
    if len(set(seeds)) < len(seeds):
        raise ConfigError("two directories ran with the same seeds: they are repeats, not independent replicates")
    if contrasts is None:
        if any(k.startswith("forecast.") for k in values[0]):
            contrasts = [("forecast", "null")]
        elif kinds[0].startswith("compare"):
            persps = sorted({k.split(".", 1)[0] for v in values for k in v} - {"local"})
            contrasts = [(p, "local") for p in persps]
        else:
            contrasts = [("model", "null")]
    names = list(dict.fromkeys(k for v in values for k in v))
    metrics = {k: _summary([v.get(k) for v in values], _nonnegative(k)) for k in names}
    paired: dict[str, Any] = {}
    for a, b in contrasts:
        for k in names:
            if not k.startswith(f"{a}."):
                continue
            rest = k[len(a) + 1 :]
            other = f"{b}.{rest}"
            if other not in metrics:
                continue
            diffs = [
                None if v.get(k) is None or v.get(other) is None else v[k] - v[other]  # type: ignore[operator]
                for v in values
            ]
            paired[f"{a} - {b}: {rest}"] = _summary(diffs)
    return {
        "kind": kinds[0],
        "dirs": [str(d) for d in dirs],
        "seeds": [dict(zip([*SEED_FIELDS, "base.seed", "cv.seed"], s)) for s in seeds],
        "metrics": metrics,
        "paired": paired,
    }


def _nonnegative(name: str) -> bool:
    """Whether a pooled metric cannot be negative (by its leaf name; a difference ``a-b`` never is)."""
    leaf = name.rsplit(".", 1)[-1]
    return "-control" not in name and bool(NONNEGATIVE.match(leaf))


def _summary(vals: Sequence[float | None], nonnegative: bool = False) -> dict[str, Any] | None:
    """The interval record (``mean``, ``lo``, ``hi``, ``n``, ``method``, ``note``) plus the per-seed values;
    ``lo``/``hi`` are None below 3 seeds. None when no seed has the value."""
    have = [v for v in vals if v is not None]
    if not have:
        return None
    iv: Interval = nonnegative_interval(have) if nonnegative and min(have) >= 0 else mean_interval(have)
    return {**iv.as_dict(), "values": list(vals)}


def markdown(pooled: dict[str, Any], only: Sequence[str] = ()) -> str:
    """The pooled numbers as a Markdown table (``only``: keep metrics whose name contains one of these)."""
    lines = [
        "| metric | n (seeds) | mean | 95% interval over seeds | per seed |",
        "|---|---|---|---|---|",
    ]
    for section in ("metrics", "paired"):
        for name, s in pooled[section].items():
            if s is None or (only and not any(o in name for o in only)):
                continue
            per = ", ".join("-" if v is None else f"{v:.3g}" for v in s["values"])
            iv = interval_from_dict(s)
            ci = "-" if iv is None else iv.bounds(3, signed=True) + (f" ({iv.method})" if iv.has_bounds else "")
            lines.append(f"| {name} | {s['n']} | {s['mean']:+.3f} | {ci} | {per} |")
    return "\n".join(lines) + "\n"


# ---- folder and report (``socium seeds ... --report-dir DIR``, ``socium report DIR``) -------------
SEEDS_FILE = "seeds.json"
#: Metrics drawn in the figure (the table has every one): the paired contrasts first, they are the point.
MAX_FIGURE_METRICS = 12


def _run_dirs(node: Any, depth: int = 0) -> list[Path]:
    """Every run directory (``trace.duckdb``) named by a ``dir`` field of a results file, also those of a
    comparison's per-perspective experiments (their ``results.json``, one level down)."""
    found: list[Path] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "dir" and isinstance(v, str):
                p = Path(v)
                if (p / "trace.duckdb").is_file():
                    found.append(p)
                elif depth < 1 and (p / "results.json").is_file():
                    found += _run_dirs(read_results(p), depth + 1)
            else:
                found += _run_dirs(v, depth)
    elif isinstance(node, list):
        for v in node:
            found += _run_dirs(v, depth)
    return found


def smoke_banners(dirs: Sequence[Path]) -> list[str]:
    """The distinct smoke banners of every run behind the replicates: pooling test-double output (a fake,
    random or scripted backend) must never read as a model's result."""

    out: list[str] = []
    for d in dirs:
        for run in _run_dirs(read_results(Path(d))):
            b = run_smoke_banner(run)
            if b and b not in out:
                out.append(b)
    return out


def write_pooled(pooled: dict[str, Any], folder: str | Path, only: Sequence[str] = ()) -> Path:
    """``folder/seeds.json``: the pooled numbers, the ``--only`` filter and the smoke banners, which
    ``socium report folder`` turns into a page."""
    folder = Path(folder)
    own_folder(folder, named=True)  # a file there is refused by name, a symlink is never written through
    body = {**pooled, "only": list(only), "smoke": smoke_banners([Path(d) for d in pooled["dirs"]])}
    path = folder / SEEDS_FILE
    replace_file(path, json.dumps(body, indent=1))
    return path


def _picked(pooled: dict[str, Any], only: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, s)
        for section in ("paired", "metrics")
        for name, s in pooled[section].items()
        if s is not None and (not only or any(o in name for o in only))
    ]


def seeds_figure(path: Path, items: Sequence[tuple[str, dict[str, Any]]]) -> Path:
    """One panel per metric: each seed's value, then the pooled mean with its interval (none below 3 seeds,
    the one policy of socium.core.intervals; then the panel says so)."""
    from socium.reporting import plots as P  # lazy: matplotlib, for figures only

    ncol = min(3, max(1, len(items)))
    nrow = math.ceil(len(items) / ncol)
    fig, axes = P.plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 2.9 * nrow + 0.6), squeeze=False)
    for ax in list(axes.ravel())[len(items) :]:
        ax.set_visible(False)
    for ax, (name, s) in zip(axes.ravel(), items):
        vals = s["values"]
        xs = [i for i, v in enumerate(vals) if v is not None]
        ax.plot(xs, [vals[i] for i in xs], "o", color="tab:gray", ms=5, label="one seed")
        iv = interval_from_dict(s)
        x = len(vals) + 0.5
        if iv is not None and iv.has_bounds:
            err = [[s["mean"] - iv.low], [iv.high - s["mean"]]]
            ax.errorbar(
                [x], [s["mean"]], yerr=err, fmt="D", color="black", capsize=4, label="pooled mean, 95% interval"
            )
            ends = [iv.low, iv.high, *(vals[i] for i in xs)]
            span = (max(ends) - min(ends)) or 1.0
            ax.set_ylim(min(ends) - 0.08 * span, max(ends) + 0.08 * span)
        else:
            ax.plot([x], [s["mean"]], "D", color="black", label="pooled mean, 95% interval")
            ax.annotate(
                f"n={s['n']}: no interval",
                (x, s["mean"]),
                xytext=(-4, 6),
                textcoords="offset points",
                ha="right",
                fontsize=7,
            )
        if "-" in name.split(":", 1)[0] or "-control" in name:
            ax.axhline(0, color="gray", ls=":", lw=1, label="0 = no difference")
        ax.set_xticks([*range(len(vals)), x], [*(str(i + 1) for i in range(len(vals))), "pooled"])
        ax.set_xlim(-0.5, x + 0.7)
        ax.set_xlabel("seed (replicate)", fontsize=8)
        ax.set_title(name if len(name) <= 48 else name[:45] + "...", fontsize=8)
    fig.suptitle("Per seed and pooled over seeds (95% interval by socium.core.intervals)", fontsize=10)
    return P._save(fig, path, list(axes.ravel()))


def report(rep: Any, path: Path) -> list[Path]:
    """The pooled numbers as a page: smoke banners, the table (``markdown``'s columns) and the figure."""

    pooled = read_json_file(path / SEEDS_FILE, "seeds")
    only = pooled.get("only") or []
    rep.banners += [b for b in pooled.get("smoke") or [] if b not in rep.banners]
    n = len(pooled["dirs"])
    rep.heading(f"Seeds pooled: {pooled['kind']}")
    rep.note(
        f"{counted(n, 'replicate')} ({', '.join(Path(d).name for d in pooled['dirs'])}); each metric: mean over "
        "seeds with a 95% interval (t for signed quantities, bootstrap for non-negative ones; none below 3 seeds). "
        "Paired rows are per-seed differences." + (f" Metrics containing: {', '.join(only)}." if only else "")
    )
    items = _picked(pooled, only)
    rows = []
    for name, s in items:
        iv = interval_from_dict(s)
        ci = "-" if iv is None else iv.bounds(3, signed=True) + (f" ({iv.method})" if iv.has_bounds else "")
        per = ", ".join("-" if v is None else f"{v:.3g}" for v in s["values"])
        rows.append([name, str(s["n"]), f"{s['mean']:+.3f}", ci, per])
    rep.table(
        ReportTable(
            "Pooled over seeds", ["metric", "n (seeds)", "mean", "95% interval", "per seed"], rows, summary=True
        )
    )
    rep.series["seeds"] = {name: s for name, s in items}
    shown = items[:MAX_FIGURE_METRICS]
    if shown:
        if len(items) > len(shown):
            rep.note(
                f"The figure shows the first {len(shown)} of {len(items)} metrics (paired contrasts first); "
                "`socium seeds --only TEXT` picks others."
            )
        rep.image(seeds_figure(rep.out_dir / "seeds.png", shown), "Each seed's value and the pooled mean")
    return []
