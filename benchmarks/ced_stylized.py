"""The stylized facts of propagation that apply to Weibo's CED cascades, beside Twitter15's, rumour vs non-rumour.

The same measures ``socium validate`` scores a simulated run with (:mod:`socium.experiments.validation.stylized`:
cascade size tail, depth, max breadth / size, structural virality), measured on the real trees, plus the delay
law (reshare times after the source, and parent-to-child gaps), which the propagation study forecasts. CED:
every cascade posted before 2013-07-01 (30-day horizon, as the propagation study reads them); Twitter15: all
1,490 trees. Medians' differences rumour - non-rumour with percentile bootstrap intervals over cascades (2,000),
two-sample KS p-values. Activity facts (burstiness, top-10% share) and graph facts do not apply: CED has no
follow graph, and a user's actions outside the 2,721 cascades are not in it.

Real vs simulated: on Weibo the study simulates only the timing of a known tree's members, so the one fact a
simulation changes is the size reached by the horizon; ``benchmarks/ced_forecast_summary.py`` compares it.

    PYTHONPATH=src python benchmarks/ced_stylized.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from socium.experiments.propagation.data.ced import load_ced
from socium.experiments.propagation.data.realcascades import CascadeTree, load_labels, load_twitter15
from socium.experiments.validation import stylized as S
from socium.experiments.validation.validate import BIG_CASCADE, _fit_tail

BOOT = 2000


def per_cascade(trees: Mapping[str, CascadeTree]) -> dict[str, np.ndarray]:
    """Per cascade: shape measures (stylized.cascade_table) and delay summaries, in ``trees`` order."""
    par, root, off = [], [], 0
    med_delay, by60, by1440, edge_gap, node_delay, depth1 = [], [], [], [], [], []
    for tr in trees.values():
        _, p, d = tr.events()
        par.append(np.where(p >= 0, p + off, -1))
        root.append(np.full(len(p), off))
        off += len(p)
        r = d[1:]
        med_delay.append(float(np.median(r)) if len(r) else np.nan)
        by60.append(float(np.mean(r <= 60)) if len(r) else np.nan)
        by1440.append(float(np.mean(r <= 1440)) if len(r) else np.nan)
        node_delay.append(r)
        edge_gap.append(d[1:] - d[p[1:]])
        depth1.append(float(np.mean(p[1:] == 0)) if len(r) else np.nan)
    c = S.cascade_table(np.concatenate(par), np.concatenate(root))
    return {
        "size": c["size"].astype(float),
        "depth": c["depth"].astype(float),
        "breadth_share": c["breadth"] / c["size"],
        "virality": c["virality"],
        "median_delay": np.array(med_delay),
        "share_by_60": np.array(by60),
        "share_by_1440": np.array(by1440),
        "depth1_share": np.array(depth1),
        "_node_delay": np.concatenate(node_delay),
        "_edge_gap": np.concatenate(edge_gap),
    }


def _q(x: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    x = x[np.isfinite(x)]
    return [round(float(v), 3) for v in np.percentile(x, qs)] if len(x) else []


def facts(m: dict[str, np.ndarray]) -> dict[str, Any]:
    """The facts of one group of cascades."""
    size = m["size"]
    big = size >= BIG_CASCADE
    a200, se200, n200 = S.powerlaw_alpha(size, 200)
    a, se, n_tail, xmin = _fit_tail(size, lowest=2)
    nd, gap = m["_node_delay"], m["_edge_gap"]
    return {
        "n": int(len(size)),
        "size_p5_25_50_75_95": _q(size, (5, 25, 50, 75, 95)),
        "size_max": int(size.max()),
        "size_tail_alpha_xmin200": [round(a200, 3), round(se200, 3), n200],
        "size_tail_alpha_ks": [round(a, 3), round(se, 3), n_tail, xmin],
        "n_big": int(big.sum()),
        "depth_p10_50_90": _q(m["depth"], (10, 50, 90)),
        "depth_p10_50_90_big": _q(m["depth"][big], (10, 50, 90)),
        "breadth_share_p10_50_90_big": _q(m["breadth_share"][big], (10, 50, 90)),
        "virality_p10_50_90_big": _q(m["virality"][big], (10, 50, 90)),
        "depth1_share_p10_50_90": _q(m["depth1_share"], (10, 50, 90)),
        "reshare_delay_min_p25_50_75_90": _q(nd, (25, 50, 75, 90)),
        "log10_delay_sd": round(float(np.std(np.log10(np.maximum(nd, 1 / 60)))), 3),
        "edge_gap_min_p25_50_75_90": _q(gap, (25, 50, 75, 90)),
        "cascade_median_delay_p10_50_90": _q(m["median_delay"], (10, 50, 90)),
        "share_by_60_p10_50_90": _q(m["share_by_60"], (10, 50, 90)),
        "share_by_1440_p10_50_90": _q(m["share_by_1440"], (10, 50, 90)),
    }


COMPARED: dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]] = {
    "size": lambda m: m["size"],
    "depth": lambda m: m["depth"],
    "breadth_share (>= 100)": lambda m: m["breadth_share"][m["size"] >= BIG_CASCADE],
    "virality (>= 100)": lambda m: m["virality"][m["size"] >= BIG_CASCADE],
    "depth1_share": lambda m: m["depth1_share"],
    "median_delay": lambda m: m["median_delay"],
    "share_by_60": lambda m: m["share_by_60"],
    "share_by_1440": lambda m: m["share_by_1440"],
}


def contrast(a: dict[str, np.ndarray], b: dict[str, np.ndarray], seed: int) -> dict[str, Any]:
    """Median of ``a`` minus median of ``b`` per measure, bootstrap 95% CI over cascades, KS p."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, get in COMPARED.items():
        x, y = get(a), get(b)
        x, y = x[np.isfinite(x)], y[np.isfinite(y)]
        if len(x) < 3 or len(y) < 3:
            out[name] = {"n": [len(x), len(y)], "note": "fewer than 3 cascades: no interval"}
            continue
        bx = np.median(x[rng.integers(0, len(x), (BOOT, len(x)))], axis=1)
        by = np.median(y[rng.integers(0, len(y), (BOOT, len(y)))], axis=1)
        ks = stats.ks_2samp(x, y)
        out[name] = {
            "n": [len(x), len(y)],
            "medians": [round(float(np.median(x)), 3), round(float(np.median(y)), 3)],
            "diff": round(float(np.median(x) - np.median(y)), 3),
            "ci95": [round(float(v), 3) for v in np.percentile(bx - by, [2.5, 97.5])],
            "ks_d": round(float(ks.statistic), 3),
            "ks_p": float(f"{ks.pvalue:.3g}"),
        }
    return out


def subset(m: dict[str, np.ndarray], keep: np.ndarray, trees: Mapping[str, CascadeTree]) -> dict[str, np.ndarray]:
    """``m`` restricted to the cascades where ``keep`` (node-level arrays rebuilt from those trees)."""
    ids = [c for c, k in zip(trees, keep, strict=True) if k]
    sub = {k: v[keep] for k, v in m.items() if not k.startswith("_")}
    node = per_cascade({c: trees[c] for c in ids})
    sub["_node_delay"], sub["_edge_gap"] = node["_node_delay"], node["_edge_gap"]
    return sub


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    ced, info, _ = load_ced()
    t15 = load_twitter15(strict=False)
    t15_labels = load_labels()
    t_load = time.perf_counter() - t0
    res: dict[str, Any] = {"facts": {}, "contrasts": {}}
    m_ced, m_t15 = per_cascade(ced), per_cascade(t15)
    rumour_ced = np.array([info[c]["label"] == "rumor" for c in ced])
    rumour_t15 = np.array([t15_labels.get(c, "non-rumor") != "non-rumor" for c in t15])
    groups = {
        "weibo": m_ced,
        "weibo rumour": subset(m_ced, rumour_ced, ced),
        "weibo non-rumour": subset(m_ced, ~rumour_ced, ced),
        "twitter15": m_t15,
        "twitter15 rumour (false/true/unverified)": subset(m_t15, rumour_t15, t15),
        "twitter15 non-rumour": subset(m_t15, ~rumour_t15, t15),
    }
    for name, m in groups.items():
        res["facts"][name] = facts(m)
    res["contrasts"]["weibo: rumour - non-rumour"] = contrast(groups["weibo rumour"], groups["weibo non-rumour"], 0)
    res["contrasts"]["twitter15: rumour - non-rumour"] = contrast(
        groups["twitter15 rumour (false/true/unverified)"], groups["twitter15 non-rumour"], 1
    )
    res["contrasts"]["weibo - twitter15"] = contrast(m_ced, m_t15, 2)
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    res["machine"] = {"cpus": os.cpu_count(), "load": " ".join(load), "read_s": round(t_load, 1)}
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    keys = [k for k in next(iter(res["facts"].values())) if k != "n"]
    print("| fact | " + " | ".join(f"{g} (n = {f['n']})" for g, f in res["facts"].items()) + " |")
    print("|---" * (len(res["facts"]) + 1) + "|")
    for k in keys:
        print(f"| {k} | " + " | ".join(str(f[k]) for f in res["facts"].values()) + " |")
    for name, c in res["contrasts"].items():
        print(f"\n{name} (median difference, bootstrap 95% CI, KS D and p)")
        for k, v in c.items():
            print(f"  {k:24} {v}")
    print(f"\nwall {res['wall_s']} s (read {t_load:.1f} s), load {res['machine']['load']}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
