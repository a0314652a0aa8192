"""The explorer's Solara app: one ``Page`` that reads the URL and shows the page it names.

URLs: ``/`` (an experiment's runs, or a lone run's timeline), ``/run/I`` (timeline of run I),
``/run/I/agent/K``, ``/run/I/post/P``, ``/run/I/calls``, ``/run/I/call/C``, ``/run/I/charts``,
``/run/I/agents``, ``/run/I/compare/K/S``, ``/study`` and ``/study/cascade/I`` (an emulator-only study's
cascades)
(agent K at step S in run I and its peers, side by side). Every page is a URL, so
a view can be bookmarked or sent to a colleague. The path opened comes from ``SOCIUM_EXPLORE_PATH``
(``socium explore`` sets it): Solara imports this module by name in its own server. A live run
(``socium run --explore``) hands its source in with :func:`use_source` instead, and every page then
carries a "live: step N of M" marker (:class:`~socium.explore.live.Live`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb
import solara
from solara import v as vue

from socium.errors import SociumError, UsageError
from socium.explore.agent_page import AgentPage, CallBlock, PostPage
from socium.explore.charts import RunCharts
from socium.explore.compare_page import ComparePage
from socium.explore.live import Live, refreshed
from socium.explore.run_pages import Agents, CallsPage, Experiment, Timeline, as_int
from socium.explore.source import RunView, Source, open_source
from socium.explore.study_pages import StudyCascadePage, StudyPage
from socium.explore.widgets import Go
from socium.trace.queries import explore as q

ENV = "SOCIUM_EXPLORE_PATH"
CSS = """
.say pre, pre.response, pre.prompt-message { background: #f6f6f6; padding: 6px; margin: 2px 0; font-size: 13px; }
.call-error { color: #b91c1c; }
details > summary { cursor: pointer; color: #1d4ed8; }
.post .content { margin: 4px 0; font-size: 15px; }
.v-card__title { font-size: 16px !important; padding: 8px 12px !important; }
.nowrap { white-space: nowrap; }
"""

_source: Source | None = None


def use_source(src: Source) -> None:
    """Serve ``src`` (a live run's source) instead of the path in ``SOCIUM_EXPLORE_PATH``."""
    global _source
    _source = src


def source() -> Source:
    """The runs opened (once per server process)."""
    global _source
    if _source is None:
        path = os.environ.get(ENV)
        if not path:
            raise UsageError(f"{ENV} is not set: start the explorer with `socium explore RUN_OR_EXPERIMENT_DIR`")
        _source = open_source(path)
    return _source


def current_root() -> Path | None:
    """The folder being served (None before a source is set): whose report files may be served."""
    return None if _source is None else _source.root


@solara.component
def Nav(run: RunView | None, src: Source) -> Any:
    """The header: what is open, and links to the run's pages."""
    with solara.Row(style="gap: 1.5em; align-items: baseline; border-bottom: 1px solid #ddd; padding: 4px 8px") as main:
        solara.Text("socium explore", style="font-weight: bold; white-space: nowrap")
        if src.is_experiment:
            Go("/", "all runs" if src.runs else "the study", "nav-runs nowrap")
        if src.study is not None:
            Go("/study", "cascades", "nav-study")
        if run is not None:
            info = run(q.overview)
            label = "" if run.label == "." else f"{run.label} · "
            solara.Text(
                f"{label}{info['name']} · seed {info['seed']} · {info['perspective']} · {info['agents']:,} agents · "
                f"{info['steps']} steps · {info['posts']:,} posts",
                style="color: #666",
            )
            Go(run.base, "timeline", "nav-timeline")
            Go(f"{run.base}/charts", "charts", "nav-charts")
            Go(f"{run.base}/agents", "agents", "nav-agents")
            Go(f"{run.base}/calls", f"calls ({info['calls']:,})", "nav-calls")
            if src.is_live:
                Live(run)
    return main


@solara.component
def Page() -> Any:
    """Dispatch on the URL; an unknown URL or an unreadable trace is a message, not a crash."""
    router = solara.use_router()
    parts = [p for p in router.parts if p]
    solara.Style(CSS)
    version = refreshed.value  # a live run's pages read again when it changes (a new committed step)
    try:
        src = source()
        if not parts:
            if src.is_experiment:
                with solara.Column(style="max-width: 980px; margin: 0 auto") as top:
                    solara.Title("socium explore: runs")
                    Nav(None, src)
                    Experiment(src)
                return top
            parts = ["run", "0"]
        if parts[0] == "study":
            return _study(src, parts)
        index = as_int(parts[1]) if len(parts) > 1 and parts[0] == "run" else None
        if index is None:
            raise UsageError(f"no page {router.path!r}: pages are /run/I, /run/I/agent/K, /run/I/post/P, /run/I/calls")
        run = src.view(index)
        rest = parts[2:]
        width = "1500px" if rest[:1] == ["compare"] else "980px"
        with solara.Column(style=f"max-width: {width}; margin: 0 auto") as main:
            Nav(run, src)
            vue.Html(tag="span", attributes={"data-version": str(version)}, class_="page-version")
            if not rest:
                solara.Title(f"timeline · {run.label}")
                Timeline(run).key(f"t{index}")
            elif rest == ["calls"]:
                solara.Title("calls")
                CallsPage(run).key(f"c{index}")
            elif rest == ["charts"]:
                solara.Title(f"charts · {run.label}")
                RunCharts(run).key(f"ch{index}")
            elif rest == ["agents"]:
                solara.Title("agents")
                Agents(run).key(f"a{index}")
            elif len(rest) == 3 and rest[0] == "compare" and None not in (as_int(rest[1]), as_int(rest[2])):
                agent_id, step = int(rest[1]), int(rest[2])
                solara.Title(f"agent {agent_id} at step {step}, compared")
                ComparePage(src, index, agent_id, step).key(f"cmp{index}/{agent_id}/{step}")
            elif len(rest) == 2 and rest[0] == "call" and as_int(rest[1]) is not None:
                solara.Title(f"call {rest[1]}")
                one = run(q.call, int(rest[1]))
                if one is None:
                    raise UsageError(f"no call {rest[1]} in this run")
                CallBlock(one, run).key(f"call{index}/{rest[1]}")
            elif len(rest) == 2 and rest[0] in ("agent", "post") and as_int(rest[1]) is not None:
                ident = as_int(rest[1])
                assert ident is not None
                solara.Title(f"{rest[0]} {ident}")
                page = AgentPage if rest[0] == "agent" else PostPage
                page(run, ident).key(f"{rest[0]}{index}/{ident}")
            else:
                raise UsageError(f"no page {router.path!r}")
        return main
    except (SociumError, duckdb.Error) as exc:
        return solara.Error(f"{type(exc).__name__}: {exc}")


def _study(src: Source, parts: list[str]) -> Any:
    """``/study`` (the cascades of an emulator-only study) and ``/study/cascade/I`` (one of them)."""
    if src.study is None:
        raise UsageError("this folder holds no forecast or counterfactual study")
    with solara.Column(style="max-width: 980px; margin: 0 auto") as main:
        Nav(None, src)
        if parts == ["study"]:
            solara.Title("socium explore: study")
            StudyPage(src.study)
        elif len(parts) == 3 and parts[1] == "cascade" and as_int(parts[2]) is not None:
            solara.Title(f"cascade {parts[2]}")
            StudyCascadePage(src.study, int(parts[2])).key(f"study/{parts[2]}")
        else:
            raise UsageError(f"no page {'/'.join(parts)!r}: pages are /study and /study/cascade/I")
    return main


@solara.component
def Layout(children: list[Any] = []) -> Any:  # noqa: B006 (Solara's signature for a layout)
    """No app bar or tabs: the explorer's own header (:func:`Nav`) says where you are."""
    return solara.Column(children=children, style="padding: 8px")


routes = [
    solara.Route(path="/", component=Page, layout=Layout),
    solara.Route(path="run", component=Page),
    solara.Route(path="study", component=Page),
]
"""Solara's router only serves URLs its routes match: ``/`` and everything under ``/run`` (``Page`` reads the rest)."""
