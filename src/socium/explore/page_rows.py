"""The rows an agent's, a post's and a side-by-side page show, as tables to export (CSV or Parquet).

Why built from the pages' own query functions (:mod:`socium.trace.queries.explore`), called the way
the pages call them: a downloaded file then holds exactly what the page pages through, never the
result of a second SQL that could drift from it. Each export says where each row was shown (the
activation's step, the side-by-side column's run) in columns of its own, first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial

from socium.explore.export import Batches, Rows, capped, fields_of, flatten, paged, records, tuples
from socium.explore.source import RunView
from socium.trace.queries import explore as q

EXPOSED = ["step", "agent_id", "rank", "source", "via_post", "via_kind"]
ACTED = ["step", "agent_id", "type", "outcome"]
NODES = ["post_id", "parent_id", "author", "step", "depth"]


@dataclass(frozen=True)
class Export:
    """One downloadable table of a page: its file name, how to fetch its rows, its columns."""

    name: str
    fetch: Callable[[], Batches]
    columns: list[str]

    def rows(self) -> Rows:
        """Every row at once (tests and small views; the download streams :attr:`fetch`'s batches)."""
        return flatten(self.fetch())


def _activation_rows(
    views: Sequence[RunView], agent_id: int, steps: Callable[[RunView], list[int]], kind: str
) -> Iterator[Rows]:
    """One batch per (run, activation step): an activation's rows are what its page section shows."""
    for v in views:
        where = {"run": v.label} if len(views) > 1 or v.source.is_experiment else {}
        for s in steps(v):
            if kind == "feed":
                yield records(v(q.feed, agent_id, s), q.FeedItem, **where, agent_id=agent_id, step=s)
            elif kind == "calls":
                yield records(v(q.calls_at, agent_id, s), q.CallView, **where, shown_for=agent_id)
            else:
                yield records(v(q.actions, agent_id, s), q.ActionView, **where, agent_id=agent_id, step=s)


def _capped_rows(
    views: Sequence[RunView], agent_id: int, steps: Callable[[RunView], list[int]], kind: str
) -> Iterator[Rows]:
    return capped(_activation_rows(views, agent_id, steps, kind))


def _columns(kind: str, run_column: bool) -> list[str]:
    run = ["run"] if run_column else []
    if kind == "feed":
        return [*run, "agent_id", "step", *fields_of(q.FeedItem)]
    if kind == "calls":
        return [*run, "shown_for", *fields_of(q.CallView)]
    return [*run, "agent_id", "step", *fields_of(q.ActionView)]


KINDS = ("feed", "calls", "actions")


def agent_exports(run: RunView, agent_id: int) -> list[Export]:
    """An agent's page: its feed items, calls and actions over every activation (not only the page shown)."""

    def steps(v: RunView) -> list[int]:
        return v(q.activation_steps, agent_id, limit=10**6)

    run_col = run.source.is_experiment
    return [
        Export(
            f"agent{agent_id}-{kind}",
            partial(_capped_rows, [run], agent_id, steps, kind),
            _columns(kind, run_col),
        )
        for kind in KINDS
    ]


def compare_exports(views: Sequence[RunView], agent_id: int, step: int) -> list[Export]:
    """The side-by-side page: each run's feed, calls and actions of the agent at the step, a ``run`` column first."""
    return [
        Export(
            f"agent{agent_id}-step{step}-{kind}",
            partial(_capped_rows, views, agent_id, lambda _v: [step], kind),
            _columns(kind, True),
        )
        for kind in KINDS
    ]


def post_exports(run: RunView, post_id: int, root: int | None, until: int | None) -> list[Export]:
    """A post's page: who was shown it, who acted on it, and its cascade as of the step the slider shows."""
    out = [
        Export(
            f"post{post_id}-shown-to",
            lambda: paged(lambda n, o: run(q.exposed_to, post_id, limit=n, offset=o), partial(tuples, columns=EXPOSED)),
            EXPOSED,
        ),
        Export(
            f"post{post_id}-acted-on",
            lambda: paged(lambda n, o: run(q.acted_on, post_id, limit=n, offset=o), partial(tuples, columns=ACTED)),
            ACTED,
        ),
    ]
    if root is not None:
        out.append(
            Export(
                f"cascade{root}" + ("" if until is None else f"-step{until}"),
                lambda: paged(
                    lambda n, o: run(q.cascade, root, until=until, limit=n, offset=o), partial(tuples, columns=NODES)
                ),
                NODES,
            )
        )
    return out


def export_menu(exports: Sequence[Export]) -> None:
    """A row of CSV and Parquet downloads, one pair per table of the page (each fetched only when clicked)."""
    import solara

    from socium.explore.export import export_rows  # lazy: pyarrow.parquet, only when a page offers downloads

    with solara.Row(style="gap: 0.5em 1.5em; flex-wrap: wrap; align-items: center", classes=["export"]):
        solara.Text("export", style="color: #666")
        for e in exports:
            export_rows(e.name, e.fetch, e.columns, label=e.name.split("-", 1)[-1])
