"""``socium validate RUN_OR_EXPERIMENT``: does a simulated society obey known social-network regularities?

A scorecard of stylized facts, each with the simulated value, a reference value and its source, and a
documented pass band. Cascade facts are compared with Twitter15 (Ma et al. 2017), measured by the
same code (:mod:`socium.experiments.validation.stylized`) on all 1,490 cleaned trees; the constants below were
produced by :func:`twitter15_reference` (test_validate.py recomputes them when the data are present).
Twitter15 holds only cascades of >= ~100 users (the collection selected them), so cascade-shape facts
are compared on simulated cascades of >= :data:`BIG_CASCADE` nodes; a run with none gets "n/a".

Facts that have no applicable data in a run (no stances, no follow edges, < 3 events per user) are
reported as "n/a", never as a pass. Everything is one SQL query per trace table into numpy, so a
10^5-agent run is scored in seconds (benchmarks/bench_validate.py).
"""

from __future__ import annotations

import html
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from socium.errors import RunDirError
from socium.experiments.validation import stylized as S
from socium.reporting.card import simulation_card
from socium.reporting.page import counted
from socium.trace.queries.runs import open_run
from socium.trace.queries.stylized import stylized_inputs
from socium.trace.safe_write import own_folder, replace_file

BIG_CASCADE = 100
"""Twitter15's trees are all of roughly this size or more, so shapes are compared at this size."""
TREE_REPLAY = (
    "tree-replay population (each agent follows only the user it reshared from): the follow graph is one "
    "retweet tree and the agents are that tree's resharers, not a social network and its users"
)


class Twitter15Reference(TypedDict):
    """Twitter15's measured shape; typed per key so a figure is unpacked as the tuple it is."""

    n_trees: int
    size_alpha_xmin200: tuple[float, float, int]
    virality_p10_p50_p90: tuple[float, float, float]
    depth_p10_p50_p90: tuple[int, int, int]
    breadth_share_p10_p50_p90: tuple[float, float, float]
    size_quantiles: tuple[float, float, float, float, float]


# Twitter15, all 1,490 trees cleaned by realcascades.parse_tree (30-day horizon), via stylized.py:
T15: Twitter15Reference = {
    "n_trees": 1490,
    "size_alpha_xmin200": (2.191, 0.040, 889),  # MLE tail exponent, standard error, n in the tail
    "virality_p10_p50_p90": (2.072, 2.334, 3.148),  # trees >= 100 nodes
    "depth_p10_p50_p90": (2, 3, 6),
    "breadth_share_p10_p50_p90": (0.524, 0.841, 0.955),  # max breadth / size, trees >= 100 nodes
    "size_quantiles": (106, 148, 258.5, 460, 1204.75),  # p5, p25, p50, p75, p95
}
T15_SOURCE = "Twitter15 (Ma, Gao & Wong 2017), 1,490 trees, measured by socium.experiments.validation.stylized"


@dataclass
class Fact:
    """One row of the scorecard."""

    name: str
    value: float | None
    reference: str
    source: str
    band: tuple[float, float] | None
    status: str  # pass | fail | n/a
    n: int
    detail: str = ""

    @classmethod
    def make(
        cls,
        name: str,
        value: float | None,
        reference: str,
        source: str,
        band: tuple[float, float] | None,
        n: int,
        detail: str = "",
        not_applicable: str = "",
    ) -> Fact:
        """``not_applicable``: why the fact does not apply to this population (status n/a, value kept)."""
        if not_applicable:
            v = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
            return cls(name, v, reference, source, band, "n/a", n, f"does not apply: {not_applicable}")
        if value is None or (isinstance(value, float) and math.isnan(value)) or band is None:
            return cls(
                name, None if value is None or math.isnan(value) else value, reference, source, band, "n/a", n, detail
            )
        ok = band[0] <= value <= band[1]
        return cls(name, float(value), reference, source, band, "pass" if ok else "fail", n, detail)


def _run_dirs(path: Path) -> list[Path]:
    if (path / "trace.duckdb").is_file():
        return [path]
    dirs = sorted(p.parent for p in path.rglob("trace.duckdb")) if path.is_dir() else []
    if dirs:  # an experiment directory, or any folder of runs (e.g. one model's runs of a CV experiment)
        return dirs
    raise RunDirError(f"{path}: neither a run directory (trace.duckdb) nor a folder holding runs")


def _load(run_dir: Path, offset: int) -> dict[str, np.ndarray]:
    """One query per table; post ids become rows offset by ``offset`` so runs can be pooled."""
    with open_run(run_dir) as con:
        got = stylized_inputs(con)
    posts, acts, n, fol, eng = got["posts"], got["acts"], got["n_agents"], got["follows"], got["likes"]
    stance, last = got["stance"], got["last"]
    if len(last["agent_id"]):
        stance[last["agent_id"].astype(np.int64)] = np.asarray(last["s"], float)
    pid = posts["post_id"].astype(np.int64)
    row_of = np.full(int(pid.max(initial=-1)) + 1, -1, np.int64)
    row_of[pid] = np.arange(len(pid))
    kind = np.asarray(posts["kind"]).astype(str)
    share = np.isin(kind, ["repost", "quote"])
    parent_raw = np.asarray(posts["parent_id"], dtype=float)
    parent = np.full(len(pid), -1, np.int64)
    parent[share] = row_of[parent_raw[share].astype(np.int64)] + offset
    root = row_of[posts["root_id"].astype(np.int64)] + offset
    likes = np.zeros(len(pid), np.int64)
    tgt = np.asarray(eng["target"], dtype=np.int64)
    rows = row_of[tgt[(tgt >= 0) & (tgt < len(row_of))]] if len(tgt) else tgt
    cnt = np.asarray(eng["c"], np.int64)[(tgt >= 0) & (tgt < len(row_of))] if len(tgt) else tgt
    likes[rows[rows >= 0]] = cnt[rows >= 0]
    return {
        "parent": parent,
        "root": root,
        "kind": kind,
        "author": posts["author"].astype(np.int64),
        "likes": likes,
        "act_agent": acts["agent_id"].astype(np.int64),
        "act_t": np.asarray(acts["sim_time_s"], float),
        "src": fol["src"].astype(np.int64),
        "dst": fol["dst"].astype(np.int64),
        "n": np.array(n),
        "stance": stance,
        "k": np.array(got["k"]),
    }


def _tail_note(xmin: float, se: float | None = None) -> str:
    """The tail fit's xmin and standard error, or in words why there is none (the scorecard printed
    'xmin=nan, se=nan' where too few values were there to fit)."""
    if xmin is None or math.isnan(float(xmin)):
        return "no tail fit (too few values)"
    return f"xmin={xmin:g}" + ("" if se is None or math.isnan(se) else f", se={se:.3f}")


def _top_note(share: float) -> str:
    return "no engagement yet" if math.isnan(share) else f"top 1% of posts hold {share:.2f} of engagement"


def _fit_tail(x: np.ndarray, min_tail: int = 50, lowest: float = 1) -> tuple[float, float, int, float]:
    """Clauset et al. (2009) tail: xmin minimising the KS distance (among up to 40 candidates).

    Values below ``lowest`` are left out (cascade sizes start at 2: a post nobody shared is not a
    cascade), and a tail needs ``min_tail`` values over at least 3 distinct sizes, otherwise there is
    no exponent to speak of (n/a) -- 50 unshared posts must not "pass" with alpha = 1 + 1/ln 2.
    """
    x = np.asarray(x, float)
    x = x[x >= lowest]
    if len(x) < min_tail or len(np.unique(x)) < 3:
        return float("nan"), float("nan"), int(len(x)), float("nan")
    cands = np.unique(x)
    cands = cands[np.searchsorted(np.sort(x), cands) <= len(x) - min_tail]
    if not len(cands):
        return float("nan"), float("nan"), 0, float("nan")
    if len(cands) > 40:
        cands = np.unique(np.quantile(cands, np.linspace(0, 1, 40), method="nearest"))
    best = (math.inf, float("nan"), float("nan"), 0, float("nan"))
    for xm in cands:
        a, se, n = S.powerlaw_alpha(x, xm)
        if not math.isfinite(a) or len(np.unique(x[x >= xm])) < 3:
            continue
        t = np.sort(x[x >= xm])
        emp = np.arange(1, n + 1) / n
        model = 1 - ((t + 0.5) / (xm - 0.5)) ** (1 - a)  # continuous approximation of the CDF
        ks = float(np.max(np.abs(emp - model)))
        if ks < best[0]:
            best = (ks, a, se, n, float(xm))
    return best[1], best[2], best[3], best[4]


def scorecard(path: str | Path) -> dict[str, Any]:
    """All facts for a run or every run of an experiment (cascades and activity pooled over runs)."""
    path = Path(path)
    t0 = time.perf_counter()
    dirs = _run_dirs(path)
    parts, off = [], 0
    for d in dirs:
        data = _load(d, off)
        off += len(data["parent"])
        parts.append(data)
    parent = np.concatenate([p["parent"] for p in parts])
    root = np.concatenate([p["root"] for p in parts])
    t_load = time.perf_counter() - t0
    facts: list[Fact] = []
    replay = S.is_tree_replay(parts[0]["src"], parts[0]["dst"], int(parts[0]["n"]))
    # graph and activity facts describe a social network and its users; a replayed retweet tree has neither
    graph_na = TREE_REPLAY if replay else ("" if len(parts[0]["src"]) else "the run has no follow graph")
    act_na = TREE_REPLAY if replay else ""
    casc = S.cascade_table(parent, root)
    multi = casc["size"] >= 2
    big = casc["size"] >= BIG_CASCADE
    sizes = casc["size"]
    a, se, n_tail, xmin = _fit_tail(sizes, lowest=2)
    facts.append(
        Fact.make(
            "cascade size tail exponent (MLE)",
            a,
            f"Twitter15 {T15['size_alpha_xmin200'][0]} +- {T15['size_alpha_xmin200'][1]} (xmin 200); "
            "heavy tails with alpha ~ 2 are typical of online diffusion",
            T15_SOURCE + "; Goel, Watts & Goldstein 2012",
            (1.5, 3.0),
            n_tail,
            f"{_tail_note(xmin, se)} (Clauset et al. 2009 KS choice)",
        )
    )
    ks = S.ks_distance(sizes[big], _t15_size_sample()) if big.any() else float("nan")
    facts.append(
        Fact.make(
            f"KS distance of cascade sizes >= {BIG_CASCADE} to Twitter15",
            ks,
            "0 = identical size distribution",
            T15_SOURCE,
            (0.0, 0.3),
            int(big.sum()),
            "Twitter15 sizes from its 5/25/50/75/95% quantiles (interpolated)",
        )
    )
    v = casc["virality"][big]
    p10, p50, p90 = T15["virality_p10_p50_p90"]
    facts.append(
        Fact.make(
            f"structural virality, median of cascades >= {BIG_CASCADE}",
            float(np.median(v)) if len(v) else None,
            f"Twitter15 median {p50} (10-90%: {p10}-{p90}); broadcast ~2, viral >> 2",
            "Goel, Anderson, Hofman & Watts 2016; " + T15_SOURCE,
            (p10, p90),
            len(v),
        )
    )
    d10, d50, d90 = T15["depth_p10_p50_p90"]
    facts.append(
        Fact.make(
            f"cascade depth, median of cascades >= {BIG_CASCADE}",
            float(np.median(casc["depth"][big])) if big.any() else None,
            f"Twitter15 median {d50} (10-90%: {d10}-{d90})",
            T15_SOURCE,
            (d10, d90),
            int(big.sum()),
            f"all cascades >= 2 nodes: mean depth {casc['depth'][multi].mean():.2f}" if multi.any() else "",
        )
    )
    b10, b50, b90 = T15["breadth_share_p10_p50_p90"]
    share = casc["breadth"][big] / casc["size"][big]
    facts.append(
        Fact.make(
            f"max breadth / size, median of cascades >= {BIG_CASCADE}",
            float(np.median(share)) if len(share) else None,
            f"Twitter15 median {b50} (10-90%: {b10}-{b90})",
            T15_SOURCE,
            (b10, b90),
            len(share),
        )
    )
    users = np.concatenate([p["act_agent"] + 10**9 * i for i, p in enumerate(parts)])
    times = np.concatenate([p["act_t"] for p in parts])
    B, nb = S.burstiness(users, times)
    facts.append(
        Fact.make(
            "inter-event burstiness B (per-user gaps, pooled)",
            B,
            "human activity is bursty: B > 0 (Poisson 0, clock -1)",
            "Goh & Barabasi 2008, EPL 81:48002",
            (0.1, 0.9),
            nb,
            "users with >= 3 actions; times at step resolution",
            not_applicable=act_na,
        )
    )
    n_agents = sum(int(p["n"]) for p in parts)
    counts = np.unique(users, return_counts=True)[1] if len(users) else np.zeros(0)
    counts = np.concatenate([counts, np.zeros(max(n_agents - len(counts), 0))])
    facts.append(
        Fact.make(
            "activity heterogeneity: share of actions by the top 10% of agents",
            S.top_share(counts),
            "top 10% of US adult Twitter users wrote 80% of tweets",
            "Pew Research Center 2019",
            (0.5, 0.95),
            n_agents,
            not_applicable=act_na,
        )
    )
    first = parts[0]
    n0 = int(first["n"])
    src, dst = first["src"], first["dst"]
    indeg = np.bincount(dst, minlength=n0) if n0 else np.zeros(0)
    ga, gse, gn, gx = _fit_tail(indeg[indeg > 0]) if len(src) else (float("nan"), float("nan"), 0, float("nan"))
    facts.append(
        Fact.make(
            "follower (in-degree) tail exponent (MLE)",
            ga,
            "Twitter followers: power law, alpha = 2.276",
            "Kwak, Lee, Park & Moon 2010 (WWW)",
            (1.8, 3.0),
            gn,
            f"first run's final follow graph; {_tail_note(gx, gse)}",
            not_applicable=graph_na,
        )
    )
    facts.append(
        Fact.make(
            "reciprocity of follows",
            S.reciprocity(src, dst, n0) if len(src) else float("nan"),
            "22.1% of connected Twitter user pairs are mutual, i.e. 36.2% of follow edges (2r / (1 + r))",
            "Kwak, Lee, Park & Moon 2010 (WWW)",
            (0.1, 0.5),
            len(src),
            "share of follow edges whose reverse edge exists",
            not_applicable=graph_na,
        )
    )
    cc, ncc = S.clustering_sample(src, dst, n0, 2000) if len(src) else (float("nan"), 0)
    facts.append(
        Fact.make(
            "mean local clustering (undirected follow graph)",
            cc,
            "social graphs cluster far above random graphs (Twitter follow graph: Myers et al. 2014)",
            "Watts & Strogatz 1998; Myers, Sharma, Gupta & Lin 2014 (WWW)",
            (0.05, 0.5),
            ncc,
            "seeded sample of nodes with degree >= 2",
            not_applicable=graph_na,
        )
    )
    stance = first["stance"]
    has_stance = bool(np.isfinite(stance).sum() >= 3)
    lit_h = "Conover et al. 2011 (ICWSM); Cinelli et al. 2021 (PNAS 118:e2023301118)"
    facts.append(
        Fact.make(
            "stance assortativity of follow edges",
            S.stance_assortativity(stance[src], stance[dst]) if has_stance and len(src) else float("nan"),
            "political follow/retweet networks are strongly homophilous",
            lit_h,
            (0.2, 1.0),
            len(src),
            "n/a without stances" if not has_stance else "",
            not_applicable=graph_na,
        )
    )
    sh = first["parent"] >= 0
    rp_author = first["author"][sh]
    orig_author = first["author"][first["parent"][sh]] if sh.any() else np.zeros(0, np.int64)
    facts.append(
        Fact.make(
            "stance assortativity of repost edges",
            S.stance_assortativity(stance[rp_author], stance[orig_author]) if has_stance and sh.any() else float("nan"),
            "retweets stay within the like-minded (Conover et al.: retweet network segregated)",
            lit_h,
            (0.2, 1.0),
            int(sh.sum()),
        )
    )
    facts.append(
        Fact.make(
            "echo-chamber index (leaning vs mean leaning of followees)",
            S.echo_chamber_index(stance, src, dst) if has_stance and len(src) else float("nan"),
            "Twitter topics show a strong positive correlation",
            "Cinelli et al. 2021 (PNAS)",
            (0.3, 1.0),
            len(src),
            not_applicable=graph_na,
        )
    )
    orig = np.concatenate([p["kind"] == "original" for p in parts])
    reshares = np.bincount(parent[parent >= 0], minlength=len(parent))
    likes = np.concatenate([p["likes"] for p in parts])
    pop = (reshares + likes)[orig]
    pa_, pse, pn, px = _fit_tail(pop[pop > 0]) if (pop > 0).sum() else (float("nan"), float("nan"), 0, float("nan"))
    ks_ = sorted({int(p["k"]) for p in parts})
    facts.append(
        Fact.make(
            "popularity tail exponent under limited attention (likes + reshares per original post)",
            pa_,
            "popularity is heavy-tailed even among equally appealing memes when attention is limited",
            "Weng, Flammini, Vespignani & Menczer 2012 (Sci. Rep. 2:335)",
            (1.2, 3.0),
            pn,
            f"feed size k={ks_}; {_tail_note(px)}; {_top_note(S.top_share(pop, 0.01))}",
        )
    )
    wall = time.perf_counter() - t0
    return {
        "path": str(path),
        "runs": [str(d) for d in dirs],
        "n_agents": n_agents,
        "n_posts": int(len(parent)),
        "n_cascades_ge2": int(multi.sum()),
        "n_cascades_big": int(big.sum()),
        "facts": [asdict(f) for f in facts],
        "passed": sum(f.status == "pass" for f in facts),
        "failed": sum(f.status == "fail" for f in facts),
        "not_applicable": sum(f.status == "n/a" for f in facts),
        "wall_s": round(wall, 3),
        "load_s": round(t_load, 3),
    }


def _t15_size_sample() -> np.ndarray:
    """A stand-in sample of Twitter15's size distribution from its stored quantiles (product has no data)."""
    q = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    return np.interp(np.linspace(0.05, 0.95, 181), q, np.array(T15["size_quantiles"]))


def twitter15_reference(tar_path: str | Path | None = None) -> dict[str, Any]:
    """Recompute :data:`T15` from the Twitter15 tarball (research data; not needed at run time)."""
    # lazy: the real-data readers, only when the spec compares to Twitter15
    from socium.experiments.propagation.data.realcascades import load_twitter15

    trees = load_twitter15(tar_path, strict=False)
    par, root, off = [], [], 0
    for tr in trees.values():
        _, p, _ = tr.events()
        par.append(np.where(p >= 0, p + off, -1))
        root.append(np.full(len(p), off))
        off += len(p)
    c = S.cascade_table(np.concatenate(par), np.concatenate(root))
    s = c["size"]
    big = s >= BIG_CASCADE
    a, se, n = S.powerlaw_alpha(s, 200)
    return {
        "n_trees": len(trees),
        "size_alpha_xmin200": (round(a, 3), round(se, 3), n),
        "virality_p10_p50_p90": tuple(round(float(x), 3) for x in np.percentile(c["virality"][big], [10, 50, 90])),
        "depth_p10_p50_p90": tuple(int(x) for x in np.percentile(c["depth"][big], [10, 50, 90])),
        "breadth_share_p10_p50_p90": tuple(
            round(float(x), 3) for x in np.percentile((c["breadth"] / s)[big], [10, 50, 90])
        ),
        "size_quantiles": tuple(float(x) for x in np.percentile(s, [5, 25, 50, 75, 95])),
    }


def render_html(card: dict[str, Any]) -> str:
    e = html.escape
    banners = "".join(f"<div class='banner' role='alert'>{e(b)}</div>" for b in card.get("smoke_runs", []))
    rows = "".join(
        f"<tr class='{e(f['status'].replace('/', ''))}'><td>{e(f['name'])}</td><td>{e(_fmt(f['value']))}</td>"
        f"<td>{e(f['status'])}</td><td>{e(_fmt_band(f['band']))}</td><td>{f['n']}</td><td>{e(f['reference'])}</td>"
        f"<td>{e(f['source'])}</td><td>{e(f['detail'])}</td></tr>"
        for f in card["facts"]
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>socium stylized facts</title><style>"
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:4px 8px;font-size:13px;vertical-align:top}.pass td:nth-child(3){background:#cfc}"
        ".fail td:nth-child(3){background:#fcc}.na td:nth-child(3){background:#eee}"
        ".banner{background:#b00020;color:#fff;font-weight:bold;padding:.8em 1em;margin:1em 0;border-radius:4px}"
        "</style></head><body>"
        f"<h1>Stylized facts: {e(card['path'])}</h1>{banners}<p>{counted(len(card['runs']), 'run')}, "
        f"{counted(card['n_agents'], 'agent')}, "
        f"{card['n_posts']} posts, {card['n_cascades_ge2']} cascades with a reshare, {card['n_cascades_big']} with "
        f">= {BIG_CASCADE} nodes. {card['passed']} pass, {card['failed']} fail, {card['not_applicable']} n/a; "
        f"computed in {card['wall_s']} s.</p><table><tr><th>fact</th><th>value</th><th>status</th><th>pass band</th>"
        f"<th>n</th><th>reference</th><th>source</th><th>detail</th></tr>{rows}</table></body></html>"
    )


def _fmt(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def _fmt_band(b: Any) -> str:
    return "-" if b is None else f"[{b[0]:.2f}, {b[1]:.2f}]"


def write_scorecard(card: dict[str, Any], out_dir: str | Path, named: bool = False) -> tuple[Path, Path]:
    """``stylized_facts.{json,html}`` in ``out_dir``: ``RUN/report`` unless the user ``named`` a folder (``--out``);
    never through a planted ``report`` symlink, and a file there is refused by name."""
    out = own_folder(Path(out_dir), named=named)
    # a smoke run's scorecard says so, like every report page: its facts are not a model's
    card["smoke_runs"] = sorted({b for r in card["runs"] if (b := simulation_card(r).get("smoke_run"))})
    j = out / "stylized_facts.json"
    h = out / "stylized_facts.html"
    replace_file(j, json.dumps(card, indent=1))
    replace_file(h, render_html(card))
    return j, h
