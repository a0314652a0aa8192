"""The explorer on a run that is still running: a "live: step N of M" marker that follows the run.

Why a marker that polls, not a push from the simulation: the run must not slow down for a viewer it
does not know about, so the simulation is not told anything. Each open page asks the trace for the
committed steps every :data:`POLL_S` seconds (one ``max(step)`` on the ``steps`` table, through a
cursor of the writer's connection) and, while "follow" is on, reads the page again when a step was
committed. Every step's rows and its ``steps`` row are written in one transaction, so what a page
shows is always whole committed steps.
"""

from __future__ import annotations

import threading
from typing import Any

import solara
from solara import v as vue

from socium.errors import SociumError
from socium.explore.source import RunView
from socium.explore.widgets import Plain, attrs
from socium.trace.queries import explore as q

POLL_S = 1.0
"""Seconds between two looks at the committed steps (one indexed aggregate on a small table)."""

refreshed = solara.reactive(0)
"""Bumped to make the open page read the trace again (a reactive is per browser session)."""
following = solara.reactive(True)
"""Whether a newly committed step re-reads the open page by itself."""


@solara.component
def Live(run: RunView) -> Any:
    """``live: step N of M`` (N committed steps of the M planned), refreshed every :data:`POLL_S`; once the
    run has ended, ``run finished (exit status S)`` over the finished trace.

    Every hook is called on every render, in the same order, before anything may return: Reacton
    refuses a render whose hooks differ from the previous one ("conditional hooks"), which is what a
    return between two hooks did when the run closed its trace."""
    tick, set_tick = solara.use_state(0)
    finished = run.source.finished

    def wait(cancel: threading.Event) -> None:
        if finished is None and not cancel.wait(POLL_S):
            set_tick(lambda t: t + 1)

    solara.use_thread(wait, dependencies=[tick, finished])
    try:
        done: int | None = run(q.committed_steps)
        problem = None
    except SociumError as exc:  # between the run closing its trace and the explorer opening the file
        done, problem = None, str(exc)
    seen = solara.use_ref(done)

    def on_commit() -> None:
        if done is not None and seen.current != done:
            seen.current = done
            if following.value:
                refreshed.set(refreshed.value + 1)

    solara.use_effect(on_commit, [done, finished])
    total = run.source.live_steps or 0
    if done is None:
        return Plain(problem or "", classes=["live", "live-ended"], style="color: #b91c1c")
    state = "running" if finished is None else "finished"
    text = f"live: step {done} of {total}"
    if finished is not None:
        text = f"steps {done} of {total} committed · run finished ({finished})"
    if done:  # the simulated time the last committed step stands for
        text += f" · last: {run.clock.time(done - 1)}"
    with solara.Row(style="gap: 0.5em; align-items: center") as main:
        vue.Html(
            tag="span",
            class_="live",
            style_=f"color: {'#15803d' if finished is None else '#1d4ed8'}; font-weight: bold; white-space: nowrap",
            attributes=attrs(committed=done, planned=total, state=state, ended=finished or ""),
            children=[text],
        )
        if finished is None:
            solara.Checkbox(label="follow", value=following)
        solara.Button("refresh", on_click=lambda: refreshed.set(refreshed.value + 1), text=True)
    return main
