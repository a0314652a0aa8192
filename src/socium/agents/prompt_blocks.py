"""The sections of an agent's prompt: its persona and memory, and others' text (posts, comments, shared
chains, search results, group messages) quoted as bounded, defused ``<<<...>>>`` items."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from socium.agents.profiles import AgentProfile
from socium.core.contracts import FeedItem, Observation, SharedPost
from socium.platform.text import one_line, quote_inline, quote_untrusted

PERSONA_FACTS = ("age", "gender", "mbti", "country", "profession")  # rendered on one line, in this order


def persona_value(p: AgentProfile, name: str) -> Any:
    """A persona field from the profile or what its source kept in ``extra`` (OASIS ``user_char`` is the persona)."""
    if name == "bio":
        return p.bio
    if name == "interests":
        return p.interests or p.extra.get("interests") or p.extra.get("interested_topics")
    if name == "persona":
        return p.extra.get("persona") or p.extra.get("user_char")
    return p.extra.get(name, p.extra.get(name.upper()))


def persona_block(
    p: AgentProfile,
    show_goal: bool = True,
    fields: Sequence[str] = ("bio", "interests"),
    issue: str | None = None,
    third_person: bool = False,
) -> str:
    """The agent's own profile, compactly: the ``fields`` its source provides (missing ones are skipped).

    ``third_person``: as a narrator reads about a character ("@u ..., Private goal: ...") rather than
    as the agent is told about itself ("You are @u ..., Your private goal: ..."), so a narrator is
    never addressed as one of its characters.
    Each field stays on its own line (``quote_inline``): persona data cannot open a prompt section."""
    facts = [
        quote_inline(v, 40) for f in PERSONA_FACTS if f in fields and (v := persona_value(p, f)) not in (None, "", [])
    ]
    lines = [
        ("" if third_person else "You are ")
        + f"@{quote_inline(p.username, 60)} ({quote_inline(p.name, 80)})"
        + (f", {', '.join(facts)}." if facts else ".")
    ]
    for f in fields:
        v = persona_value(p, f)
        if f in PERSONA_FACTS or v in (None, "", []):
            continue
        if f == "interests":
            items = [str(i) for i in (v if isinstance(v, list) else [v])][:8]
            if "bio" in fields and all(i.lower() in p.bio.lower() for i in items):
                continue  # the bio already says it (synthetic bios are made from the interests)
            lines.append("Interests: " + ", ".join(quote_inline(i, 40) for i in items))
        else:
            lines.append(f"{f.capitalize()}: {quote_inline(v, 600)}")
    if p.stance is not None:
        about = quote_inline(issue, 200) if issue else "the main issue"
        lines.append(f"{'Stance' if third_person else 'Your stance'} on {about}: {p.stance:+.2f} (-1 against, +1 for).")
    if show_goal and p.goal:
        lines.append(f"{'Private goal' if third_person else 'Your private goal'}: {quote_inline(p.goal, 400)}")
    return "\n".join(lines)


def memory_block(memory: Sequence[str]) -> str:
    return "\n".join(f"- {one_line(m)}" for m in memory) if memory else "(nothing yet)"


def _counts(x: FeedItem | SharedPost, show_score: bool = False) -> str:
    """Non-zero engagement counts only: zeros carry no information and cost tokens on every post.

    With ``platform.show_score`` (Reddit, Muchnik's design) one score replaces the up and down votes."""
    votes = [("score", x.likes - x.dislikes)] if show_score else [("likes", x.likes), ("dislikes", x.dislikes)]
    c = [f"{k}={v}" for k, v in (*votes, ("reposts", x.reposts), ("comments", x.comments)) if v or k == "score"]
    return (" " + " ".join(c)) if c else ""


def _private(x: FeedItem | SharedPost, show: bool, told: set[int] | None = None) -> str:
    """A mindreader's line about an author's private side; once per author and prompt (``told``)."""
    if not (show and x.author_private):
        return ""
    return _private_line(x.author, x.author_username, x.author_private, told)


def _private_line(author: int, username: str, private: dict[str, Any], told: set[int] | None) -> str:
    if told is not None:
        if author in told:
            return ""
        told.add(author)
    # one line (quote_inline): a value holding a line break (U+2028 passes json.dumps) starts no line
    return f"\nWhat you know privately about @{quote_inline(username, 60)}: " + quote_inline(
        json.dumps(private, ensure_ascii=False), 600
    )


def _item(tag: str, x: FeedItem | SharedPost, fields: str, text: str | None, max_chars: int) -> str:
    """One quoted item on the compact form ``<<<TAG ID uAUTHOR FIELDS @NAME: TEXT>>>``.

    Why this form: the old ``<<<POST id=.. @.. user_id=..>>>`` ... ``<<<END POST>>>`` markers cost
    ~22 tokens per post, as much as a short post's text, and a prompt's length decides the embedded
    model's speed. It is as safe: quoted text cannot hold ``<`` or ``>`` (:func:`quote_untrusted`),
    so it can neither close its own item early nor open another, and the closing ``>>>`` is the end
    marker. The fields socium writes (ids, kind, counts) come before the author's name, the only
    other-controlled part of the header, so a name cannot pose as an id or a count. ``text`` None:
    an item that shows no text (a repost), so no ``: TEXT`` part."""
    head = f"<<<{tag}{x.post_id} u{x.author}{fields} @{quote_inline(x.author_username, 60)}"
    return head + (">>>" if text is None else f": {quote_untrusted(text, max_chars) if text else '(empty)'}>>>")


def render_post(
    it: FeedItem, max_chars: int, show_private: bool = False, show_score: bool = False, told: set[int] | None = None
) -> str:
    """One post as an agent sees it, quoted and bounded; every list of posts in a prompt goes through here.

    The post is one ``<<<ID uAUTHOR ... @NAME: TEXT>>>`` item (:func:`_item`); the lines after it up
    to the next post belong to it. A repost shows the post it shares (author, text, counts) as a
    ``<<<shared ...>>>`` item under who shared it; a quote shows its comment and then the quoted
    post; a chain shows at most ``llm_agents.quote_depth`` links, each link saying when it is itself
    a quote or repost. The latest comments (``it.replies``, ``<<<comment ...>>>``) and lines in
    ``it.notes`` (e.g. a moderation label) follow. Lines outside the items are socium's and kept to
    one line each, so no quoted text can start a line of its own. ``told``: authors whose private
    side this prompt already showed (a mindreader reads each author's once, however often they appear).
    """
    counts = _counts(it, show_score)
    if it.kind == "repost":
        head = _item("", it, f" reposted{counts}", None, max_chars)
    else:
        kind = "" if it.kind == "original" else f" {it.kind}"
        head = _item("", it, f"{kind}{counts}", it.text, max_chars)
    parts = [head + _private(it, show_private, told)]
    for s in it.shared:
        verb = "quoting" if s.kind == "quote" else "sharing" if s.kind == "repost" else "original"
        kind = f" {s.kind}" if s.kind in ("quote", "repost", "comment") else ""
        parts.append(
            _item("shared ", s, f"{kind}{_counts(s, show_score)}", s.text or f"({verb})", max_chars)
            + _private(s, show_private, told)
        )
    if it.shared_more:
        parts.append("(it shares a further post, not shown)")
    for c in it.replies:
        parts.append(_item("comment ", c, _counts(c, show_score), c.text, max_chars) + _private(c, show_private, told))
    parts.extend(f"Note: {quote_inline(n, 300)}" for n in it.notes)
    return "\n".join(parts)


def feed_block(
    obs: Observation,
    max_item_chars: int,
    mindreader: bool,
    told: set[int] | None = None,
    memo: dict[tuple, str] | None = None,
    empty: str = "(your feed is empty)",
) -> str:
    """The feed's posts; ``memo`` (see :func:`render_post_memo`) reuses posts already rendered; ``empty``
    is what an empty feed reads as (third person where the narrator describes another agent's view)."""
    if not obs.feed:
        return empty
    show_score = obs.show_score
    if memo is None or mindreader:  # a mindreader's render depends on the prompt (``told``): not shared
        return "\n".join(render_post(it, max_item_chars, mindreader, show_score, told) for it in obs.feed)
    return "\n".join(render_post_memo(memo, it, max_item_chars, show_score) for it in obs.feed)


def _linked_key(links: list[SharedPost]) -> tuple | None:
    return tuple((s.post_id, s.likes, s.dislikes, s.reposts, s.comments) for s in links) if links else None


def render_post_memo(memo: dict[tuple, str], it: FeedItem, max_chars: int, show_score: bool = False) -> str:
    """:func:`render_post` without a private side, rendered once per distinct post state in ``memo``.

    Why: in a step every viewer of a post gets the same text (ids, counts, quoted text, shared chain,
    comments, notes), and most posts sit in many feeds; rendering them took ~a third of building a
    prompt. The key holds everything the text is made of that can change (counts, notes, the shared
    posts' and comments' ids and counts, the kind and ``shared_more``); what it leaves out (a post's
    text, author and username) never changes once the post exists. The caller bounds the memo's size.
    """
    key = (
        it.post_id,
        it.likes,
        it.dislikes,
        it.reposts,
        it.comments,
        it.kind,
        it.shared_more,
        max_chars,
        show_score,
        tuple(it.notes) if it.notes else None,
        _linked_key(it.shared),
        _linked_key(it.replies),
    )
    text = memo.get(key)
    if text is None:
        text = memo[key] = render_post(it, max_chars, False, show_score)
    return text


def results_block(
    obs: Observation,
    max_item_chars: int,
    mindreader: bool,
    told: set[int] | None = None,
    narrated: bool = False,
    memo: dict[tuple, str] | None = None,
) -> str | None:
    """Results of the agent's last search / trend request (None when it made none).

    ``narrated``: a line inside a character's section of a narrator prompt, not a section of its own.
    ``memo``: as :func:`feed_block`'s (a result is the same post text as in a feed: on the OASIS-parity
    workload, where 3 of the 13 actions search or ask for trends, rendering results was ~a sixth of the
    prompt's CPU)."""
    if not obs.results_from:
        return None
    if obs.found_users:
        body = "\n".join(f"- @{quote_inline(name, 60)} (user_id={u})" for u, name in obs.found_users)
    elif memo is None or mindreader:  # a mindreader's render depends on the prompt (``told``): not shared
        body = (
            "\n".join(render_post(it, max_item_chars, mindreader, obs.show_score, told) for it in obs.results)
            or "(nothing found)"
        )
    else:
        show_score = obs.show_score
        body = "\n".join(render_post_memo(memo, it, max_item_chars, show_score) for it in obs.results) or (
            "(nothing found)"
        )
    head = "They asked for" if narrated else "## You asked for"
    return f"{head} {quote_inline(obs.results_from, 240)}" + (":" if narrated else "") + f"\n{body}"


def groups_block(
    obs: Observation,
    max_item_chars: int,
    narrated: bool = False,
    mindreader: bool = False,
    told: set[int] | None = None,
) -> str:
    """The agent's groups with their recent messages, then groups it could join; all names and
    messages are other agents' text, so each is bounded and quoted like a post. ``narrated``: about
    a character, for a narrator."""
    mine = [g for g in obs.groups if g.member]
    others = [g for g in obs.groups if not g.member]
    out = []
    for g in mine:
        # the group's name is a member's text: quoted in the text position of its own item
        lines = [f"<<<group {g.group_id} members={g.n_members}: {quote_inline(g.name, 60)}>>>"]
        for step, author, username, text in g.messages:
            lines.append(
                f"<<<message u{author} step={step} @{quote_inline(username, 60)}: "
                f"{quote_untrusted(text, max_item_chars)}>>>"
                + (
                    _private_line(author, username, g.authors_private[author], told)
                    if mindreader and author in g.authors_private
                    else ""
                )
            )
        if not g.messages:
            lines.append("(no messages yet)")
        out.append("\n".join(lines))
    if not mine:
        out.append("(in no group)" if narrated else "(you are in no group)")
    if others:
        out.append(
            ("Groups they could join:\n" if narrated else "Groups you could join:\n")
            + "\n".join(
                f"- group_id={g.group_id} members={g.n_members} name={quote_inline(g.name, 60)}" for g in others
            )
        )
    return "\n".join(out)


FEED_HEADING = "## Your feed ("
"""How an agent's prompt opens its feed section (:func:`socium.agents.prompts.agent_messages`)."""
_POST_START = re.compile(r"^<<<(\d+) u")


def feed_section(prompt_text: str) -> str | None:
    """The feed section of an agent's prompt (the text :func:`feed_block` wrote), or None when the prompt
    has none (a survey or interview, a narrator's prompt). The section runs to the next ``## `` heading:
    quoted text cannot start a line (:func:`_item`), so no post can pose as a heading."""
    start = prompt_text.find(FEED_HEADING)
    if start < 0 or (start and prompt_text[start - 1] != "\n"):
        return None
    body = prompt_text.find("\n", start) + 1
    end = prompt_text.find("\n\n## ", body)
    return prompt_text[body : end if end >= 0 else len(prompt_text)]


def split_feed(section: str) -> list[tuple[int, str]]:
    """A feed section back into its posts, in order: (post id, the text :func:`render_post` gave it).

    The inverse of :func:`feed_block`: each post starts a line with ``<<<ID u`` and the lines after it
    (a reposted original, a private side, comments, notes) belong to it up to the next post; only
    socium's own lines can start that way. An empty feed ("(your feed is empty)") has no posts."""
    items: list[tuple[int, list[str]]] = []
    for line in section.split("\n"):
        m = _POST_START.match(line)
        if m:
            items.append((int(m.group(1)), [line]))
        elif items:
            items[-1][1].append(line)
    return [(pid, "\n".join(lines)) for pid, lines in items]
