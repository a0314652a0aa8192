"""The explorer's building blocks: hostile text shown as text, folds, links, post cards and a pager.

Every string from a trace (posts, personas, prompts, responses, errors) was written by an agent or a
model, so it is hostile data: it reaches the page only as the text child of an element (a DOM text
node: ``<script>`` shows as the characters ``<script>``), never through Markdown or HTML components.
``dir="auto"`` and ``unicode-bidi: isolate`` keep right-to-left text (and bidi override characters)
inside its own element, and long strings are cut to a bound with the rest folded away.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import solara
from solara import v as vue

from socium.explore.source import RunView
from socium.trace.queries.explore import PostView

ROWS = 20
"""Rows (posts, calls, cascade nodes, exposures) per page: every element shown is a widget the browser
builds, so a page's cost is its row count, whatever the run's size."""
SHORT = 1_000
"""Characters of a post or persona field shown before the rest is folded."""
LONG = 100_000
"""Characters of one folded text sent to the browser at most (a prompt is rarely 10^4)."""

CARD = "border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 12px; margin: 6px 0; background: white;"
ISOLATE = "unicode-bidi: isolate; white-space: pre-wrap; overflow-wrap: anywhere;"


def attrs(**data: Any) -> dict[str, str]:
    """``data-*`` attributes (what the browser tests read), values as text."""
    return {f"data-{k.replace('_', '-')}": str(v) for k, v in data.items()}


def Say(text: Any, limit: int = SHORT, tag: str = "span", classes: str = "", data: dict[str, str] | None = None) -> Any:
    """``text`` as a text node, at most ``limit`` characters, the rest in a fold saying how many there are.

    A plain function, not a component, and one element when the text fits: a page holds hundreds of
    these, and every element is a widget the browser must build (what a page costs to open)."""
    s = "" if text is None else str(text)
    attributes = {"dir": "auto", **(data or {})}
    if len(s) <= limit:
        return vue.Html(tag=tag, class_=classes, style_=ISOLATE, attributes=attributes, children=[s])
    with vue.Html(tag="span", class_="say") as main:
        vue.Html(tag=tag, class_=classes, style_=ISOLATE, attributes=attributes, children=[s[:limit]])
        with vue.Html(tag="details", class_="more"):
            vue.Html(tag="summary", children=[f"{len(s) - limit:,} more characters"])
            vue.Html(tag="span", style_=ISOLATE, attributes={"dir": "auto"}, children=[s[limit:LONG]])
            if len(s) > LONG:
                vue.Html(tag="em", children=[f" (cut: {len(s) - LONG:,} characters not sent)"])
    return main


def Fold(summary: str, text: Any, open_: bool = False, classes: str = "", data: dict[str, str] | None = None) -> Any:
    """A long text (a prompt, a raw response) folded under a one-line summary, shown preformatted."""
    s = "(none)" if text is None else str(text)
    shown = s[:LONG] + (f"\n… cut: {len(s) - LONG:,} characters not sent" if len(s) > LONG else "")
    attributes = {"open": "open"} if open_ else {}
    with vue.Html(tag="details", attributes=attributes, class_="fold") as main:
        vue.Html(tag="summary", children=[summary])
        vue.Html(
            tag="pre", class_=classes, style_=ISOLATE, attributes={"dir": "auto", **(data or {})}, children=[shown]
        )
    return main


def Go(path: str, label: str, classes: str = "") -> Any:
    """An in-app link (no page reload) whose label is shown as text: one element."""
    return solara.Link(path, children=[label], classes=[classes] if classes else [])


def Plain(text: str, style: str = "", classes: list[str] | None = None) -> Any:
    """Text of our own (counts, labels) in a span: one element, no component."""
    return vue.Html(tag="span", style_=style, class_=" ".join(classes or []), children=[text])


def who(user: str | None, agent_id: int | None, preset: str | None) -> str:
    """How the platform names an author: ``@name`` on X, ``u/name`` on Reddit."""
    name = user if user else f"agent {agent_id}"
    return f"u/{name}" if preset == "reddit" else f"@{name}"


VERB = {"repost": "reposted", "quote": "quoted", "comment": "replied to", "original": "posted"}


@solara.component
def PostCard(post: PostView, run: RunView) -> Any:
    """A post as the platform showed it: author, kind, text, the original it reshares, votes and labels."""
    base, preset = run.base, run.preset
    grey = "color: #666"
    with vue.Html(tag="div", class_="post", style_=CARD, attributes=attrs(post=post.post_id, kind=post.kind)) as main:
        with vue.Html(tag="div", class_="post-head"):
            Go(f"{base}/agent/{post.author}", who(post.username, post.author, preset), "author")
            Plain(f" {VERB.get(post.kind, post.kind)} · {run.when(post.step)} · ", grey)
            Go(f"{base}/post/{post.post_id}", f"post {post.post_id}", "post-link")
            for label in post.labels:
                Plain(f" {label} ", "background: #fde68a; padding: 0 4px; border-radius: 3px; margin-left: 4px")
        if post.content:
            Say(post.content, tag="div", classes="content")
        if post.parent_id is not None:
            with vue.Html(tag="blockquote", class_="original", style_="border-left: 3px solid #ccc; padding-left: 8px"):
                Go(f"{base}/agent/{post.parent_author}", who(post.parent_username, post.parent_author, preset))
                Plain(" · ")
                Go(f"{base}/post/{post.parent_id}", f"post {post.parent_id}", "post-link")
                Say(post.parent_content, tag="div", classes="content")
        score = f"▲ {post.up - post.down}" if preset == "reddit" else f"♥ {post.up}  ✕ {post.down}"
        Plain(f"{score}  · {post.comments} comments", grey)
    return main


@solara.component
def Pager(total: int, offset: int, on_offset: Callable[[int], None], page: int) -> Any:
    """Previous / next over ``total`` rows, ``page`` at a time, saying which rows are shown."""
    with solara.Row(style="align-items: center") as main:
        solara.Button("◀ previous", disabled=offset <= 0, on_click=lambda: on_offset(max(offset - page, 0)))
        last = min(offset + page, total)
        solara.Text(f"{offset + 1 if total else 0}–{last} of {total:,}", classes=["pager-range"])
        solara.Button("next ▶", disabled=last >= total, on_click=lambda: on_offset(offset + page))
    return main
