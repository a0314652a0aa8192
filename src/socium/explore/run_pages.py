"""Pages over a whole run or experiment: the timeline, the agent finder, the call log, the run list.

Each page asks for one page of rows (:mod:`socium.trace.queries.explore`) and a count for the pager,
so it costs the same on a 30-agent run and a 10^5-agent one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import solara
from solara import v as vue

from socium.experiments.studies import study_in
from socium.explore.agent_page import CallBlock
from socium.explore.export import export_rows, fields_of, paged, records
from socium.explore.files import FIGURES, file_link, shown_path
from socium.explore.source import RunView, Source, overrides
from socium.explore.widgets import ROWS, Go, Pager, Plain, PostCard, Say, attrs
from socium.trace.queries import explore as q
from socium.trace.queries.runs import run_config

ALL = "all"
MAX_FIGURES = 12
"""The experiment's own figures drawn on its page at most (the rest are linked)."""
SHOWN_OVERRIDES = 16
"""Config differences listed per run of an experiment (the rest are counted)."""


def as_int(text: str) -> int | None:
    """A filter box's text as an integer (None: empty or not a number, so no filter)."""
    t = text.strip()
    return int(t) if t.lstrip("-").isdigit() and len(t) < 19 else None


def rewinding(setter: Callable[[str], None], set_offset: Callable[[int], None]) -> Callable[[str], None]:
    """A filter's setter that also goes back to the first page (the old offset may be past the new end)."""

    def set_and_rewind(value: str) -> None:
        setter(value or "")
        set_offset(0)

    return set_and_rewind


def rewinding_bool(setter: Callable[[bool], None], set_offset: Callable[[int], None]) -> Callable[[bool], None]:
    """A checkbox's setter that also goes back to the first page."""

    def set_and_rewind(value: bool) -> None:
        setter(value)
        set_offset(0)

    return set_and_rewind


@solara.component
def Timeline(run: RunView) -> Any:
    """Posts as the platform showed them, newest first, filtered by step, author and text."""
    step, set_step = solara.use_state("")
    author, set_author = solara.use_state("")
    text, set_text = solara.use_state("")
    offset, set_offset = solara.use_state(0)
    flt = {"step": as_int(step), "author": as_int(author), "text": text or None}

    def on(setter: Callable[[str], None]) -> Callable[[str], None]:
        return rewinding(setter, set_offset)

    total = run(q.count_timeline, **flt)
    posts = run(q.timeline, **flt, limit=ROWS, offset=offset)
    with solara.Column() as main:
        with solara.Row(style="gap: 1em; align-items: baseline"):
            solara.InputText("step", value=step, on_value=on(set_step), continuous_update=False)
            solara.InputText("author (agent id)", value=author, on_value=on(set_author), continuous_update=False)
            solara.InputText("text contains", value=text, on_value=on(set_text), continuous_update=False)
        with solara.Row(style="align-items: center; gap: 2em"):
            Pager(total, offset, set_offset, ROWS)
            export_rows(
                "timeline",
                lambda: paged(lambda n, o: run(q.timeline, **flt, limit=n, offset=o), partial(records, cls=q.PostView)),
                fields_of(q.PostView),
            )
        with vue.Html(tag="div", class_="timeline", attributes=attrs(total=total)):
            for p in posts:
                PostCard(p, run)
    return main


@solara.component
def Agents(run: RunView) -> Any:
    """The agents, with stance (at the end of the run), activations, followers and actions; filtered by
    id, username or name and sorted by any of those columns; each opens its page."""
    text, set_text = solara.use_state("")
    sort, set_sort = solara.use_state("id")
    descending, set_descending = solara.use_state(False)
    offset, set_offset = solara.use_state(0)
    if sort == "id":  # the default: one page of ids, no scan
        rows = run(q.agents_table, text or None, sort=sort, descending=descending, limit=ROWS + 1, offset=offset)
    else:  # sorted by a measure: the order costs a scan, so it is built once and paged through
        order = run.memo(("agent_order", text, sort, descending),
                         lambda: run(q.agent_order, text or None, sort=sort, descending=descending))  # fmt: skip
        rows = run(q.agent_rows, order[offset : offset + ROWS + 1])
    with solara.Column() as main:
        with solara.Row(style="gap: 1em; align-items: baseline"):
            solara.InputText("id, username or name", value=text, on_value=rewinding(set_text, set_offset))
            solara.Select("sort by", value=sort, values=list(q.AGENT_SORTS), on_value=rewinding(set_sort, set_offset))
            solara.Checkbox(label="descending", value=descending, on_value=rewinding_bool(set_descending, set_offset))
        grid = "display: grid; grid-template-columns: 7em 1fr 6em 7em 6em 6em; gap: 2px 8px"
        with vue.Html(tag="div", style_=grid, class_="agents-table"):
            for head in ("agent", "username (name)", "stance", "activations", "followers", "actions"):
                Plain(head, "font-weight: bold; color: #666")
            for r in rows[:ROWS]:
                Go(f"{run.base}/agent/{r.agent_id}", f"agent {r.agent_id}", "agent-link")
                Say(f"@{r.username} ({r.name})")
                Plain("–" if r.stance is None else f"{r.stance:+.2f}")
                Plain(f"{r.activations:,}")
                Plain(f"{r.followers:,}")
                Plain(f"{r.n_actions:,}")
        with solara.Row():
            solara.Button("◀ previous", disabled=offset <= 0, on_click=lambda: set_offset(max(offset - ROWS, 0)))
            solara.Button("next ▶", disabled=len(rows) <= ROWS, on_click=lambda: set_offset(offset + ROWS))
    return main


def as_float(text: str) -> float | None:
    """A filter box's text as a number (None: empty or not a number, so no filter)."""
    try:
        return float(text) if text.strip() else None
    except ValueError:
        return None


@solara.component
def CallsPage(run: RunView) -> Any:
    """The LLM call log, filtered by outcome, model, latency and tokens; a failed call shows its error."""
    fate, set_fate = solara.use_state(ALL)
    outcome, set_outcome = solara.use_state(ALL)
    model, set_model = solara.use_state(ALL)
    latency, set_latency = solara.use_state("")
    tokens, set_tokens = solara.use_state("")
    offset, set_offset = solara.use_state(0)
    outcomes, models = run(q.call_facets)
    flt = q.CallFilter(
        fate=None if fate == ALL else fate,
        outcome=None if outcome == ALL else outcome,
        model=None if model == ALL else model,
        min_latency_s=as_float(latency),
        min_tokens=as_int(tokens),
    )
    total = run(q.count_calls, flt)
    with solara.Column() as main:
        if not outcomes:
            solara.Info("This run made no LLM calls (its agents follow rules).")
            return main
        with solara.Row(style="gap: 1em"):
            solara.Select("answer", value=fate, values=[ALL, *q.FATES], on_value=rewinding(set_fate, set_offset))
            solara.Select(
                "transport", value=outcome, values=[ALL, *outcomes], on_value=rewinding(set_outcome, set_offset)
            )
            solara.Select("model", value=model, values=[ALL, *models], on_value=rewinding(set_model, set_offset))
            solara.InputText("latency ≥ (s)", value=latency, on_value=rewinding(set_latency, set_offset))
            solara.InputText("tokens ≥", value=tokens, on_value=rewinding(set_tokens, set_offset))
        with solara.Row(style="align-items: center; gap: 2em"):
            Pager(total, offset, set_offset, ROWS)
            export_rows(
                "calls",
                lambda: paged(lambda n, o: run(q.calls, flt, limit=n, offset=o), partial(records, cls=q.CallView)),
                fields_of(q.CallView),
            )
        for c in run(q.calls, flt, limit=ROWS, offset=offset):
            with solara.Card(margin=1):
                CallBlock(c, run)
    return main


@solara.component
def Experiment(source: Source) -> Any:
    """The runs of an experiment folder with their seed, perspective and overrides; each opens."""
    offset, set_offset = solara.use_state(0)
    labels = source.labels()
    base_cfg = RunView(source, labels[0], 0)(run_config) if labels else {}
    with solara.Column() as main:
        if source.files:
            with solara.Row(style="gap: 1em; flex-wrap: wrap; align-items: baseline", classes=["experiment-files"]):
                Plain("the experiment's report and results:", "color: #666")
                for rel in source.files:
                    vue.Html(tag="a", attributes={"href": file_link(rel), "target": "_blank", "rel": "noopener"},
                             class_="experiment-file", children=[rel])  # fmt: skip
        if source.study is not None:
            n = len(source.study.cascades())
            Go("/study", f"its {n:,} cascades, one page each (observed prefix, forecast, real future, arms)",
               "study-link")  # fmt: skip
        figures = [rel for rel in source.files if rel.lower().endswith(FIGURES)]
        if figures:  # open where they are all there is; folded above a list of runs
            with vue.Html(tag="details", attributes={} if labels else {"open": "open"}, class_="experiment-figures"):
                vue.Html(tag="summary", children=[f"the experiment's figures ({len(figures)})"])
                for rel in figures[:MAX_FIGURES]:
                    with vue.Html(tag="figure", class_="experiment-figure", style_="margin: 8px 0"):
                        vue.Html(tag="img", attributes={"src": file_link(rel), "alt": rel, "loading": "lazy"},
                                 style_="max-width: 100%; border: 1px solid #eee")  # fmt: skip
                        vue.Html(tag="figcaption", style_="color: #666; font-size: 13px", children=[rel])
                if len(figures) > MAX_FIGURES:
                    Plain(f"{len(figures) - MAX_FIGURES} more figures are linked above", "color: #666")
        if not labels:
            known = study_in(source.root)
            what = f"This {known.name} experiment ({known.about})" if known else "This experiment"
            solara.Info(
                f"{what} simulated no run (an emulator study: forecasts or counterfactuals); "
                "its numbers and figures are in the files above"
                + (" and on its cascades' pages." if source.study else ".")
            )
            return main
        Plain(f"{len(labels)} runs under {source.root.name}/", style="font-weight: bold")
        Pager(len(labels), offset, set_offset, ROWS)
        for i, label in list(enumerate(labels))[offset : offset + ROWS]:
            info = RunView(source, label, i)(q.overview)
            diff = overrides(base_cfg, info["config"]) if i else {}
            with solara.Card(margin=1, classes=["run-row"]):
                Go(f"/run/{i}", label, "run-link")
                Plain(
                    f"  {info['name']} · seed {info['seed']} · {info['perspective']} · {info['agents']:,} agents · "
                    f"{info['steps']} steps · {info['posts']:,} posts · {info['calls']:,} calls",
                    style="color: #666",
                )
                if i:
                    shown = "; ".join(
                        f"{k}={shown_path(v, source.root)}" for k, v in list(diff.items())[:SHOWN_OVERRIDES]
                    )
                    more = len(diff) - SHOWN_OVERRIDES
                    shown = (shown + (f"; and {more} more" if more > 0 else "")) or "same config as the first run"
                    Say(f"differs from the first run: {shown}", tag="div", classes="overrides")
                else:
                    Plain(" (the run the others are compared with)", style="color: #666")
    return main
