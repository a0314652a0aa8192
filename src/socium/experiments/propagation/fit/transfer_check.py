"""Does a fit transfer to these cascades? Compare the cascades themselves, not their labels.

Why: transfer scoring used to compare one-word population kinds ("oasis" vs "tree files") and warned on a
matched population that transferred well (issue 37: an OASIS fit on 64 other Twitter15 trees forecast as
well as in cross-validation). What the forecast's error depends on is the cascades' size, depth and how
much of a cascade its first minutes show, so those distributions (recorded in the fit file,
:func:`~socium.experiments.propagation.fit.fit_file.population_stats`) are compared with the scored cascades'
by two-sample Kolmogorov-Smirnov tests. A warning needs both a large difference (``D > KS_D_WARN``) and one
that is not noise (``p < KS_P_WARN``): with thousands of cascades a negligible difference is significant.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scipy import stats

from socium.experiments.propagation.data.realcascades import CascadeTree
from socium.experiments.propagation.fit.fit_file import Fit, population_stats

KS_D_WARN = 0.2
"""A KS distance above this (a fifth of the cascades on the wrong side of some threshold) is a different population."""
KS_P_WARN = 0.01
STAT_WORDS = {"size": "size at minute 150", "depth": "depth at minute 150", "early_share": "share reached by minute 10"}


def ks_table(train: Mapping[str, list[float]], scored: Mapping[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Per statistic: KS distance and p-value, and the two samples' sizes and medians."""
    out: dict[str, dict[str, Any]] = {}
    for k in STAT_WORDS:
        a, b = train.get(k) or [], scored.get(k) or []
        if len(a) < 2 or len(b) < 2:
            out[k] = {"D": None, "p": None, "n_train": len(a), "n_scored": len(b)}
            continue
        r = stats.ks_2samp(a, b)
        out[k] = {
            "D": float(r.statistic),
            "p": float(r.pvalue),
            "n_train": len(a),
            "n_scored": len(b),
            "median_train": float(sorted(a)[len(a) // 2]),
            "median_scored": float(sorted(b)[len(b) // 2]),
        }
    return out


def ks_warning(table: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Why the scored cascades may not be the fit's population (None: no large, significant difference)."""
    bad = [
        f"{STAT_WORDS[k]} (KS D = {v['D']:.2f}, p = {v['p']:.2g}; median {v['median_train']:.3g} trained vs "
        f"{v['median_scored']:.3g} scored)"
        for k, v in table.items()
        if v.get("D") is not None and v["D"] > KS_D_WARN and v["p"] < KS_P_WARN
    ]
    if not bad:
        return None
    return "the scored cascades differ from the fit's training cascades in " + "; ".join(bad)


def compare_populations(fit: Fit, trees: Mapping[str, CascadeTree]) -> dict[str, Any]:
    """The transfer check of ``socium forecast``: KS per statistic, overlap with training, one warning."""
    scored = population_stats(trees)
    overlap = sorted(set(fit.training_ids) & set(trees))
    if fit.training_stats:
        table = ks_table(fit.training_stats, scored)
        warning = ks_warning(table)
    else:
        table = {}
        warning = (
            "the fit file does not record its training cascades (written before format 2): whether it transfers "
            "cannot be checked; refit with `socium fit propagation`"
        )
    if overlap:  # scoring a fit on its own training cascades is not transfer: say so, loudly
        warning = f"{len(overlap)} scored cascades were in the fit's training cascades (e.g. {overlap[0]}); " + (
            warning or "these scores are in-sample"
        )
    return {"ks": table, "in_training": overlap, "warning": warning, "thresholds": {"D": KS_D_WARN, "p": KS_P_WARN}}
