"""An agent's page and a post's page: the run through one agent's eyes, and one post's life.

The agent page lists each activation in order with exactly what the trace holds for it: the feed
(its exposures rows, one item per row, by rank), every call's prompt messages and raw response, the
parsed actions with their outcome and reason, and the memory entries written. Nothing is inferred.
"""

from __future__ import annotations

from typing import Any, cast

import solara
from solara import v as vue

from socium.explore.charts import CascadeTree, Neighbourhood
from socium.explore.page_rows import agent_exports, export_menu, post_exports
from socium.explore.seen import paired, seen_feed
from socium.explore.source import RunView
from socium.explore.widgets import ROWS, Fold, Go, Pager, Plain, PostCard, Say, attrs, who
from socium.trace.queries import explore as q

ACTIVATIONS = 5
"""Activations per page of an agent's page (each may hold a feed, prompts and responses)."""


def args_text(args: dict[str, Any]) -> str:
    """An action's arguments as a person reads them (``post 3 · "text"``), not as JSON."""
    parts = []
    for k, v in args.items():
        parts.append(f"{k.replace('_', ' ')} {v}" if k.endswith("id") else f"{k}: {v}")
    return " · ".join(parts) if parts else "(no arguments)"


@solara.component
def Persona(run: RunView, agent_id: int) -> Any:
    """Name, username, bio, interests, goal, role and stance over time."""
    a = run(q.agent, agent_id)
    if a is None:
        return solara.Error(f"no agent {agent_id} in this run")
    with solara.Card(title=f"Agent {agent_id}", classes=["persona"]) as main:
        with solara.Row(style="gap: 0.5em; align-items: baseline"):
            Say(a["name"], classes="persona-name")
            Say(f"@{a['username']}", classes="persona-username")
            Plain(f"role: {a['role']}", style="color: #666")
        Say(a["bio"], tag="div", classes="persona-bio")
        if a.get("interests"):
            Say("interests: " + ", ".join(str(i) for i in a["interests"]), tag="div")
        if a.get("goal"):
            Say(f"goal: {a['goal']}", tag="div", classes="persona-goal")
        series = run(q.stance_over_time, agent_id)
        if series:
            text = "  →  ".join(f"{run.when(s)}: {v:+.2f}" for s, v in series)
            Plain(f"stance: {text}", classes=["stance"])
        for row in run(q.surveys, agent_id):
            with vue.Html(tag="div", class_="survey"):
                value = row.get("value")
                outcome = row.get("outcome")
                head = f"survey ({run.when(row['step'])}" + (f", {outcome}" if outcome else "") + "): "
                Plain(head + (f"{value:+.2f} · " if value is not None else ""), "font-weight: bold")
                Say(f"{row.get('question')} → {row.get('answer')}")
        for step, question, answer in run(q.interviews, agent_id):
            with vue.Html(tag="div", class_="interview"):
                Plain(f"interview ({run.when(step)}): ", style="font-weight: bold")
                Say(question)
                Say(answer, tag="div")
    return main


def _score(name: str, value: Any) -> str:
    return f"{name} {value:.3g}" if isinstance(value, float) else f"{name} {value}"


@solara.component
def Feed(run: RunView, agent_id: int, step: int) -> Any:
    """The agent's feed at ``step``: one item per exposures row, by rank, each shown as the text its prompt
    gave it (:mod:`socium.explore.seen`), with the prompt's whole feed section one click away."""
    items = run(q.feed, agent_id, step)
    calls = run(q.calls_at, agent_id, step)
    seen = seen_feed(calls, agent_id)
    texts = paired([it.post_id for it in items], seen)
    with vue.Html(tag="div", class_="feed", attributes=attrs(step=step, n=len(items), call=seen.call or "")) as main:
        if not items and seen.section is None:
            note = "no feed at this step: its calls asked something else" if calls else "no feed at this step"
            Plain(note.capitalize(), style="font-weight: bold", classes=["feed-none"])
            return main
        where = f", as the prompt of call {seen.call} showed them" if seen.call is not None else ""
        Plain(f"Feed ({len(items)} item{'' if len(items) == 1 else 's'}{where})", style="font-weight: bold")
        if not items:
            Plain(" (empty: the prompt said so)" if seen.section is not None else " (empty)")
        elif seen.call is None:
            Plain(" (no prompt: the trace's rows, not a rendering)", style="color: #666")
        for it, rendered in zip(items, texts, strict=True):
            with vue.Html(
                tag="div",
                class_="feed-item",
                style_="border-bottom: 1px solid #eee; padding: 2px 0",
                attributes=attrs(rank=it.rank, post=it.post_id, source=it.source or "", rendered=rendered is not None),
            ):
                Plain(f"#{it.rank} · {it.source or 'unknown source'} · ", style="color: #666")
                Go(f"{run.base}/post/{it.post_id}", f"post {it.post_id}", "post-link")
                Plain(" · ")
                Go(f"{run.base}/agent/{it.author}", who(it.username, it.author, run.preset))
                Plain(f" ({it.kind})" if it.kind and it.kind != "original" else "")
                if it.scores:
                    shown = " · ".join(
                        f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in it.scores.items()
                    )
                    Plain(f" · {shown}", "color: #666", classes=["scores"])
                if rendered is not None:
                    Say(rendered, limit=100_000, tag="pre", classes="seen")
                else:
                    if seen.call is not None:
                        Plain(" · not in the prompt at this place", style="color: #b91c1c")
                    Say(it.content, tag="div", classes="content")
        if seen.section is not None:
            Fold("the feed section exactly as the prompt held it", seen.section, classes="feed-section")
    return main


@solara.component
def Calls(run: RunView, agent_id: int, step: int) -> Any:
    """Every call made for the agent at ``step``: its prompt messages, raw response, outcome and error."""
    calls = run(q.calls_at, agent_id, step)
    with vue.Html(tag="div", class_="calls", attributes=attrs(step=step)) as main:
        if calls:
            Plain(f"LLM calls ({len(calls)})", style="font-weight: bold")
        for c in calls:
            CallBlock(c, run)
    return main


@solara.component
def CallBlock(c: q.CallView, run: RunView) -> Any:
    """One call: header line, the error if it failed, the prompt (folded), the raw response."""
    ok = c.outcome == "ok"
    with vue.Html(
        tag="div", class_="call", attributes=attrs(call=c.call_id, outcome=c.outcome or "", fate=c.fate)
    ) as main:
        head = (
            f"call {c.call_id} · {run.when(c.step)} · {c.model or 'no model'} · transport {c.outcome} · "
            f"{c.prompt_tokens or 0}+{c.completion_tokens or 0} tokens · {c.latency_s or 0:.2f} s"
        )
        with solara.Row(style="gap: 0.5em; align-items: baseline"):
            Plain(head, style="color: #666" if ok else "color: #b91c1c; font-weight: bold")
            if c.agent_id is not None:
                Go(f"{run.base}/agent/{c.agent_id}", f"agent {c.agent_id}")
        Fate(c, run)
        if c.error:
            Say(
                f"error: {c.error}",
                tag="div",
                classes="call-error",
            )
        with vue.Html(tag="details", class_="fold prompt"):
            chars = sum(len(str(m.get("content", ""))) for m in c.messages)
            vue.Html(tag="summary", children=[f"prompt: {len(c.messages)} messages, {chars:,} characters"])
            for m in c.messages:
                role = str(m.get("role", "?"))
                vue.Html(tag="div", children=[role], style_="font-weight: bold; margin-top: 4px")
                Say(m.get("content", ""), limit=100_000, tag="pre", classes="prompt-message", data=attrs(role=role))
        Fold("raw response", c.response, open_=True, classes="response")
    return main


FATE_COLOUR = {"accepted": "#15803d", "retried": "#b45309", "rejected": "#b91c1c", "failed": "#b91c1c"}


def Fate(c: q.CallView, run: RunView) -> Any:
    """What became of the answer: accepted; rejected (the parser's reason) and asked again; rejected with
    no retry left; or no answer at all (the transport failed)."""
    with vue.Html(tag="div", class_="fate", attributes=attrs(fate=c.fate)) as main:
        Plain(f"answer {c.fate}", style=f"color: {FATE_COLOUR.get(c.fate, '#666')}; font-weight: bold")
        if c.fate == "retried":
            Say(f" (rejected: {c.fate_reason})", classes="fate-reason")
            if c.retry_call is not None:
                Go(f"{run.base}/call/{c.retry_call}", f" → asked again as call {c.retry_call}", "retry-link")
        elif c.fate == "rejected":
            Say(f" (rejected, no retry left: {c.fate_reason})", classes="fate-reason")
    return main


@solara.component
def Actions(run: RunView, agent_id: int, step: int) -> Any:
    """The parsed actions at ``step``: type, arguments, outcome (and why not applied), stated reason."""
    acts = run(q.actions, agent_id, step)
    with vue.Html(tag="div", class_="actions", style_="margin-top: 6px") as main:
        Plain(f"Actions ({len(acts)})" if acts else "No action", style="font-weight: bold")
        for a in acts:
            with vue.Html(tag="div", class_="action", attributes=attrs(type=a.type, outcome=a.outcome or "")):
                Plain(f"#{a.seq} ", style="color: #666")
                colour = "#15803d" if a.outcome == "ok" else "#b91c1c"
                Plain(f"{a.type} ", style="font-weight: bold")
                Plain(f"[{a.outcome}] ", style=f"color: {colour}")
                if a.origin and a.origin not in ("llm", "policy"):
                    Plain(f"({a.origin}) ", style="color: #666")
                Say(args_text(a.args))
                if a.reason:
                    Say(f"why not applied: {a.reason}", tag="div", classes="action-reason")
                if a.rationale:
                    Say(f"stated reason: {a.rationale}", tag="div", classes="rationale")
                if a.post_id is not None:
                    Go(f"{run.base}/post/{a.post_id}", f" → wrote post {a.post_id}", "post-link")
    return main


@solara.component
def AgentPage(run: RunView, agent_id: int) -> Any:
    """Persona, then each activation in order, a page at a time."""
    offset, set_offset = solara.use_state(0)
    steps = run(q.activation_steps, agent_id, limit=ACTIVATIONS + 1, offset=offset)
    with solara.Column() as main:
        Persona(run, agent_id)
        with solara.Card(title="Follow neighbourhood", classes=["neighbours"]):
            Neighbourhood(run, agent_id)
        export_menu(agent_exports(run, agent_id))
        with solara.Row(style="align-items: center"):
            solara.Button("◀ earlier", disabled=offset <= 0, on_click=lambda: set_offset(max(offset - ACTIVATIONS, 0)))
            Plain(f"activations {offset + 1}–{offset + min(len(steps), ACTIVATIONS)}")
            solara.Button(
                "later ▶", disabled=len(steps) <= ACTIVATIONS, on_click=lambda: set_offset(offset + ACTIVATIONS)
            )
        if not steps:
            solara.Info("This agent was never activated (no feed, action or call in the trace).")
        for s in steps[:ACTIVATIONS]:
            with solara.Card(title=run.when(s).capitalize(), classes=["activation"]):
                vue.Html(tag="div", attributes=attrs(step=s), class_="activation-step")
                if run.source.is_experiment:
                    Go(f"{run.base}/compare/{agent_id}/{s}", "this step in other runs, side by side", "compare-link")
                Feed(run, agent_id, s)
                Calls(run, agent_id, s)
                Actions(run, agent_id, s)
                mems = run(q.memories_at, agent_id, s)
                if mems:
                    Plain("Memory written", style="font-weight: bold")
                    for kind, text, importance in mems:
                        imp = "" if importance is None else f" (importance {importance:.1f})"
                        Say(f"{kind}{imp}: {text}", tag="div", classes="memory")
    return main


@solara.component
def PostPage(run: RunView, post_id: int) -> Any:
    """The post, its cascade as it grew, who was shown it (and by which feed source), who acted on it."""
    exp_off, set_exp_off = solara.use_state(0)
    node_off, set_node_off = solara.use_state(0)
    until, set_until = solara.use_state(cast("int | None", None))

    def as_of(step: int) -> None:
        set_until(step)
        set_node_off(0)

    p = run(q.post, post_id)
    if p is None:
        return solara.Error(f"no post {post_id} in this run")
    page = ROWS
    with solara.Column() as main:
        PostCard(p, run)
        root = p.root_id if p.root_id is not None and p.kind != "comment" else None
        export_menu(post_exports(run, post_id, root, until))
        if root is not None:
            with solara.Card(title=f"Cascade of post {root}", classes=["cascade"]):
                growth = run(q.cascade_size_by_step, root)
                first, last = (growth[0][0], growth[-1][0]) if growth else (0, 0)
                at = last if until is None else min(max(until, first), last)
                Plain("size over time: " + ", ".join(f"{run.when(s)}: {n}" for s, n in growth), classes=["growth"])
                if last > first:
                    solara.SliderInt("as of step", value=at, min=first, max=last, on_value=as_of)
                total = next((n for s, n in reversed(growth) if s <= at), 0)
                Plain(f"as of {run.when(at)}: {total:,} posts in the cascade", "font-weight: bold", ["as-of"])
                CascadeTree(run, root, at, post_id)
                Pager(total, node_off, set_node_off, page)
                for nid, parent, author, step, depth in run(q.cascade, root, until=at, limit=page, offset=node_off):
                    here = "font-weight: bold;" if nid == post_id else ""
                    with vue.Html(
                        tag="div",
                        class_="cascade-node",
                        style_=f"margin-left: {min(depth, 20) * 1.5}em; {here}",
                        attributes=attrs(post=nid, parent=parent, depth=depth),
                    ):
                        Plain(f"{'└ ' if depth else ''}{run.when(step)} · ")
                        Go(f"{run.base}/post/{nid}", f"post {nid}", "post-link")
                        Plain(" by ")
                        Go(f"{run.base}/agent/{author}", f"agent {author}")
        with solara.Card(title="Shown to", classes=["exposed"]):
            sources = run(q.exposure_sources, post_id)
            n = sum(sources.values())
            direct = sum(v for k, v in sources.items() if not k.startswith("via "))
            Plain(
                f"{n:,} times in a feed: {direct:,} as itself, {n - direct:,} through its reposts and quotes"
                if n
                else "never shown in a feed",
                "font-weight: bold",
                classes=["shown-total"],
            )
            Plain(" (" + ", ".join(f"{k}: {v}" for k, v in sources.items()) + ")" if n else "")
            Pager(n, exp_off, set_exp_off, page)
            for step, agent_id, rank, source, via, via_kind in run(q.exposed_to, post_id, limit=page, offset=exp_off):
                with vue.Html(tag="div", class_="exposure", attributes=attrs(agent=agent_id, step=step, via=via or "")):
                    Plain(f"{run.when(step)} · ")
                    Go(f"{run.base}/agent/{agent_id}", f"agent {agent_id}", "agent-link")
                    Plain(f" · rank {rank} · {source or 'unknown source'}")
                    if via is not None:
                        Plain(f" · through a {via_kind}: ", "color: #b45309")
                        Go(f"{run.base}/post/{via}", f"post {via}", "via-link")
        with solara.Card(title="Acted on it", classes=["acted"]):
            acted = run(q.acted_on, post_id, limit=page)
            if not acted:
                Plain("nobody")
            for step, agent_id, typ, outcome in acted:
                with vue.Html(tag="div", class_="acted-row"):
                    Plain(f"{run.when(step)} · ")
                    Go(f"{run.base}/agent/{agent_id}", f"agent {agent_id}", "agent-link")
                    Plain(f" · {typ} [{outcome}]")
        comments = run(q.replies, post_id, limit=page)
        if comments:
            Plain(f"Replies ({p.comments})", style="font-weight: bold")
            for c in comments:
                PostCard(c, run)
    return main
