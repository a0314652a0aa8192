"""The explorer's pictures: a run's activity, stance distribution and largest cascades over simulated
time (and, for a propagation study's run, its cascade beside the real one); a cascade drawn as a tree; an
agent's follow neighbourhood.

Drawn with matplotlib (the project's plotting library: its reports use it) and networkx's layouts, and
shown with Solara's own ``FigureMatplotlib``; every number comes from a named query in
:mod:`socium.trace.queries.explore`. Figures are built on ``matplotlib.figure.Figure`` (not pyplot's
global state), because pages render in one thread per browser tab. Big things are capped, and the
caption says so: a tree shows at most :data:`TREE_NODES` nodes, a neighbourhood :data:`NEIGHBOURS`.
"""

from __future__ import annotations

from typing import Any

import solara
from matplotlib.figure import Figure

from socium.errors import SociumError
from socium.explore.real_curve import RealCurve, real_curve_of
from socium.explore.source import RunView
from socium.explore.widgets import Plain, attrs
from socium.trace.queries import explore as q
from socium.trace.queries.cascades import propagation_curves

TREE_NODES = 200
"""Cascade nodes drawn at most (the first in the order they happened); the page lists them all."""
NEIGHBOURS = 40
"""Followees and followers drawn at most, each."""


def _fig(width: float = 7.5, height: float = 2.6) -> Figure:
    fig = Figure(figsize=(width, height), dpi=90, layout="constrained")
    return fig


@solara.component
def RunCharts(run: RunView) -> Any:
    """Activity per step, the stance distribution over time and the largest cascades' growth, each
    against simulated time (hours since the run's start)."""
    activity = run(q.activity_by_step)
    stances = run(q.stance_by_step)
    top = run(q.top_cascades_by_step)
    hours = {s: h for s, h, *_ in activity}
    with solara.Column(classes=["charts"]) as main:
        if not activity:
            solara.Info("No step is committed yet.")
            return main
        fig = _fig()
        ax = fig.add_subplot()
        x = [h for _, h, *_ in activity]
        ax.plot(x, [a for *_, a, _, _ in activity], marker="o", label="active agents")
        ax.plot(x, [n for *_, n, _ in activity], marker="o", label="actions")
        ax.plot(x, [p for *_, p in activity], marker="o", label="posts")
        ax.set(xlabel="simulated time (h)", ylabel="per step", title="Activity per step")
        ax.legend(fontsize=8)
        solara.FigureMatplotlib(fig, format="png")
        if stances:
            fig = _fig()
            ax = fig.add_subplot()
            xs = [hours.get(s, float(s)) for s, _, _ in stances]
            p10, p25, p50, p75, p90 = zip(*(qs for _, qs, _ in stances), strict=True)
            ax.fill_between(xs, p10, p90, alpha=0.2, label="10th–90th percentile")
            ax.fill_between(xs, p25, p75, alpha=0.35, label="25th–75th percentile")
            ax.plot(xs, p50, label="median")
            ax.plot(xs, [m for *_, m in stances], linestyle="--", label="mean")
            ax.set(xlabel="simulated time (h)", ylabel="stance (-1 against, +1 for)", title="Stance distribution")
            ax.set_ylim(-1.05, 1.05)
            ax.legend(fontsize=8)
            solara.FigureMatplotlib(fig, format="png")
        if top:
            fig = _fig()
            ax = fig.add_subplot()
            last = activity[-1][0]
            for root, growth in top.items():
                xs, ys = [hours.get(s, float(s)) for s, _ in growth], [n for _, n in growth]
                if growth and growth[-1][0] < last:  # flat to the last committed step: it stopped growing
                    xs, ys = [*xs, hours[last]], [*ys, ys[-1]]
                ax.step(xs, ys, where="post", marker="o", markevery=range(len(growth)), label=f"post {root}")
            ax.set(xlabel="simulated time (h)", ylabel="posts in the cascade", title="Largest cascades over time")
            ax.legend(fontsize=8)
            solara.FigureMatplotlib(fig, format="png")
        real = real_curve_of(run.source.runs[run.label]) if run.label in run.source.runs else None
        if real is not None:
            RealBeside(run, real)
    return main


@solara.component
def RealBeside(run: RunView, real: RealCurve) -> Any:
    """A propagation run's source-post cascade (users reached per minute, the study's measure, from this
    trace) beside the real cascade it simulates (from the experiment's results.json)."""
    minutes = len(real.real)
    try:
        sim = [float(v) for v in run(propagation_curves, 0, minutes)["scale"]]
    except SociumError as exc:  # e.g. the source post is not in this trace (yet)
        return solara.Info(f"the real cascade {real.cascade_id} is not drawn: {exc}")
    fig = _fig()
    ax = fig.add_subplot()
    hours = [m / 60 for m in range(minutes)]
    ax.plot(hours, real.real, color="black", lw=1.6, label=f"real cascade {real.cascade_id}")
    ax.plot(hours, sim, color="tab:blue", lw=1.4, label=f"simulated ({real.arm} run, post 0)")
    ax.set(xlabel="simulated time (h)", ylabel="users reached", title="The source post's cascade against the real one")
    ax.legend(fontsize=8)
    with solara.Column(classes=["real-beside"]) as main:
        solara.FigureMatplotlib(fig, format="png", dependencies=[run.label, sim[-1] if sim else 0])
        nrmse = "" if real.nrmse is None else f" · the study's NRMSE of this run: {real.nrmse:.3f}"
        Plain(
            f"after {minutes} min: real {real.real[-1]:,.0f}, simulated {sim[-1]:,.0f} users{nrmse}",
            "color: #666",
            classes=["real-caption"],
        )
        data = attrs(cascade=real.cascade_id, real_final=real.real[-1], sim_final=sim[-1] if sim else "")
        solara.v.Html(tag="span", attributes=data, class_="real-data")
    return main


def tree_figure(nodes: list[tuple[int, int, int, int, int]], highlight: int) -> Figure:
    """A cascade's first nodes as a tree (root on top, one row per depth), ``highlight`` in red."""
    import networkx as nx

    g = nx.DiGraph()
    for nid, _parent, _author, _step, depth in nodes:
        g.add_node(nid, depth=depth)
    for nid, parent, *_ in nodes:
        if parent in g and parent != nid:
            g.add_edge(parent, nid)
    pos = nx.multipartite_layout(g, subset_key="depth", align="horizontal", scale=1.0)
    pos = {k: (x, -y) for k, (x, y) in pos.items()}  # root row on top
    fig = _fig(7.5, 3.2)
    ax = fig.add_subplot()
    colours = ["#b91c1c" if n == highlight else "#1d4ed8" for n in g.nodes]
    nx.draw_networkx(g, pos, ax=ax, node_size=60, node_color=colours, with_labels=len(g) <= 40, font_size=7,
                     arrows=False, edge_color="#999")  # fmt: skip
    ax.set_axis_off()
    return fig


def neighbourhood_figure(agent_id: int, followees: list[int], followers: list[int]) -> Figure:
    """An agent and the accounts it follows (out) and that follow it (in), as a small graph."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_node(agent_id)
    g.add_edges_from((agent_id, f) for f in followees)
    g.add_edges_from((f, agent_id) for f in followers)
    pos = nx.spring_layout(g, seed=0)  # a fixed seed: the same picture on every visit
    fig = _fig(5.0, 4.0)
    ax = fig.add_subplot()
    colours = ["#b91c1c" if n == agent_id else "#1d4ed8" for n in g.nodes]
    nx.draw_networkx(g, pos, ax=ax, node_size=140, node_color=colours, font_size=7, font_color="white",
                     edge_color="#999", arrowsize=8)  # fmt: skip
    ax.set_axis_off()
    return fig


@solara.component
def CascadeTree(run: RunView, root: int, until: int, highlight: int) -> Any:
    """The cascade of ``root`` as of step ``until``, drawn as a tree (its first :data:`TREE_NODES` nodes)."""
    nodes = run(q.cascade, root, until=until, limit=TREE_NODES)
    with solara.Column(classes=["cascade-tree"]) as main:
        if len(nodes) > 1:
            solara.FigureMatplotlib(tree_figure(nodes, highlight), format="png", dependencies=[root, until, highlight])
            if len(nodes) == TREE_NODES:
                Plain(f"the first {TREE_NODES} posts drawn; the list below holds them all", "color: #666")
    return main


@solara.component
def Neighbourhood(run: RunView, agent_id: int) -> Any:
    """Whom the agent follows and who follows it at the end of the run, drawn (at most :data:`NEIGHBOURS` each)."""
    followees, followers = run(q.neighbourhood, agent_id, NEIGHBOURS)
    with solara.Column(classes=["neighbourhood"]) as main:
        Plain(
            f"follows {len(followees)}{'+' if len(followees) == NEIGHBOURS else ''} · followed by "
            f"{len(followers)}{'+' if len(followers) == NEIGHBOURS else ''} (at the end of the run)",
            "color: #666",
            classes=["neighbourhood-counts"],
        )
        if followees or followers:
            solara.FigureMatplotlib(
                neighbourhood_figure(agent_id, followees, followers), format="png", dependencies=[agent_id]
            )
    return main
