"""What an agent's feed looked like in its prompt: the feed section of the call that decided for it,
split back into its posts by the prompt's own code (:func:`socium.agents.prompt_blocks.split_feed`).

Why from the prompt rather than from the posts table: the structured rows are not what the agent saw
(a repost's row has no text where the prompt showed the original's author, text and counts; counts
in the table are final, not as of that step; the prompt cut long text with ``…[truncated]``). The
stored prompt is the text the model got, so each feed item is shown as its part of that text, in the
prompt's order; the trace's ``exposures`` row beside it says which post, rank and source it was.
Rule-based agents have no prompt: their feed is shown from the rows alone, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from socium.agents.prompt_blocks import feed_section, split_feed
from socium.trace.queries.explore import CallView


@dataclass(frozen=True)
class SeenFeed:
    """The feed as one call's prompt held it (``call`` None: no call of this activation held a feed)."""

    call: int | None = None
    section: str | None = None
    items: list[tuple[int, str]] = field(default_factory=list)
    """(post id, rendered text) in the prompt's order."""


def seen_feed(calls: list[CallView], agent_id: int) -> SeenFeed:
    """The first of the agent's own calls whose prompt holds a feed section (a retry resends the same)."""
    for c in calls:
        if c.agent_id != agent_id:
            continue
        for m in c.messages:
            if m.get("role") != "user":
                continue
            section = feed_section(str(m.get("content", "")))
            if section is not None:
                return SeenFeed(c.call_id, section, split_feed(section))
    return SeenFeed()


def paired(rows: list[int], seen: SeenFeed) -> list[str | None]:
    """For each exposures row's post id (by rank), the text the prompt gave it at the same place, or None
    (no prompt, or the prompt's item there is another post: shown as such, never silently)."""
    return [seen.items[k][1] if k < len(seen.items) and seen.items[k][0] == pid else None for k, pid in enumerate(rows)]
