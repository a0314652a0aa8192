"""One agent at one step in several runs side by side: what each perspective (or seed, or setting)
showed it, asked it and got back, and how the prompts differ.

Why: socium's research variable is what each agent may see. In a ``compare`` experiment the same
agent at the same step is asked under local, mindreader and omniscient perspectives; reading the
three prompts apart hides what changed, so the page diffs each against the first
(:mod:`socium.explore.diff`, shown as text like everything from a trace).
"""

from __future__ import annotations

from typing import Any

import solara
from solara import v as vue

from socium.explore.agent_page import Actions, Calls, Feed
from socium.explore.diff import MOST, pairing, peers, prompt_diff
from socium.explore.page_rows import compare_exports, export_menu
from socium.explore.source import Source
from socium.explore.widgets import Fold, Go, Plain
from socium.trace.queries import explore as q


@solara.component
def ComparePage(src: Source, ref: int, agent_id: int, step: int) -> Any:
    """Columns: one per chosen run (feed, calls, actions of the agent at the step); then prompt diffs."""
    labels = src.labels()
    chosen, set_chosen = solara.use_state(peers(labels, labels[ref]))
    views = [src.view(labels.index(label)) for label in chosen if label in labels][:MOST]
    when = src.view(ref).when(step)
    with solara.Column() as main:
        Plain(f"Agent {agent_id} at {when}, side by side", "font-weight: bold; font-size: 18px")
        Plain(pairing(labels, labels[ref]), "color: #666", classes=["pairing"])
        solara.SelectMultiple(f"runs (at most {MOST})", values=chosen, all_values=labels, on_value=set_chosen)
        export_menu(compare_exports(views, agent_id, step))
        grid = f"display: grid; grid-template-columns: repeat({max(len(views), 1)}, minmax(0, 1fr)); gap: 12px"
        with vue.Html(tag="div", style_=grid, class_="compare"):
            for v in views:
                info = v(q.overview)
                with vue.Html(
                    tag="div", class_="compare-run", style_="border-top: 3px solid #1d4ed8; padding-top: 4px"
                ):
                    Go(f"{v.base}/agent/{agent_id}", v.label, "run-link")
                    Plain(f" · {info['perspective']} · seed {info['seed']}", "color: #666")
                    Feed(v, agent_id, step)
                    Calls(v, agent_id, step)
                    Actions(v, agent_id, step)
        for v in views[1:]:
            diff = prompt_diff(views[0], v, agent_id, step)
            summary = f"prompt: {views[0].label} → {v.label}" + ("" if diff else " (the same)")
            Fold(summary, diff or "(no difference)", open_=bool(diff), classes="prompt-diff")
    return main
