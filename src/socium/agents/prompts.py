"""Prompts for LLM agents on the platform.

Order matters for cost: the fixed instructions and action catalogue come first and are identical
for every agent and step, so vLLM's prefix cache reuses them; then persona, memory, observation.
Other agents' text is quoted as data inside ``<<<...>>>`` items (:func:`render_post`), bounded and
defused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from socium.agents.action_prompts import ITEMS_ARE_DATA, catalogue
from socium.agents.profiles import AgentProfile
from socium.agents.prompt_blocks import (
    feed_block,
    groups_block,
    memory_block,
    persona_block,
    render_post,
    results_block,
)
from socium.core.contracts import FeedItem, Observation
from socium.core.perspective import perspective as table_row
from socium.platform.text import quote_untrusted


def agent_messages(
    profile: AgentProfile,
    obs: Observation,
    memory: Sequence[str],
    *,
    system: str,
    perspective: str,
    max_item_chars: int,
    ground_truth: str | None,
    persona_fields: Sequence[str] = ("bio", "interests"),
    issue: str | None = None,
    memo: dict[tuple, str] | None = None,
) -> list[dict[str, str]]:
    """An agent's turn: its profile, memory, feed, results and groups. ``memo``: rendered posts to
    share between the prompts of a step (:func:`render_post_memo`)."""
    row = table_row(perspective)  # what this perspective sees: socium.core.perspective
    mindreader = row.others_private == "shown_authors"
    if row.prompt_text:  # trusted text from the table, after the shared instructions
        system = f"{system}\n{row.prompt_text}"
    told: set[int] = {profile.id}  # authors whose private side this prompt has shown (never one's own)
    parts = [f"## You\n{persona_block(profile, fields=persona_fields, issue=issue)}"]
    if memory:  # no section at all rather than "(nothing yet)": ~10 tokens on every first activation
        parts.append(f"## What you did recently\n{memory_block(memory)}")
    if ground_truth:
        parts.append(f"## A fact you know to be true\n{quote_untrusted(ground_truth, 600)}")
    if notice := obs.platform_notice:  # moderation.prebunk: inoculation before the feed
        parts.append(f"## Notice from the platform\n{quote_untrusted(notice, 1000)}")
    when = obs.datetime or f"hour {obs.hour:02d}:00"
    parts.append(f"## Your feed ({when})\n{feed_block(obs, max_item_chars, mindreader, told, memo)}")
    results = results_block(obs, max_item_chars, mindreader, told, memo=memo)
    if results:
        parts.append(results)
    if obs.groups:
        parts.append(f"## Your groups\n{groups_block(obs, max_item_chars, mindreader=mindreader, told=told)}")
    if row.global_view or row.grouped:
        parts += _global_sections(obs, persona_fields, issue)
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def narrator_messages(
    members: Sequence[tuple[AgentProfile, Observation, Sequence[str]]],
    global_feed: Sequence[FeedItem],
    stats: str,
    *,
    actions: Sequence[str],
    platform: str,
    ground_truth: str | None,
    persona_fields: Sequence[str] = ("bio", "interests"),
    issue: str | None = None,
    perspective: str = "omniscient",
) -> list[dict[str, str]]:
    """A narrated perspective (omniscient, script mode): one call writes an action for every member, seeing
    everything; the table row's ``prompt_text`` follows the narrator's instructions."""
    system = (
        "You are the narrator of a social-media simulation. You know every character's profile and private goal "
        "and the whole platform. For EACH listed character choose exactly one action they take now. Answer with "
        'one JSON object {"agent_<ID>": ACTION, ...} with one key per character; each character may only act on '
        'post ids and user ids shown to them. ACTION is {"type": NAME, ...its arguments}.\n'
        f"{ITEMS_ARE_DATA}\n"
        f"{catalogue(actions, narrated=True)}"
    )
    if text := table_row(perspective).prompt_text:
        system = f"{system}\n{text}"
    parts = [f"## Platform\n{stats}"]
    if ground_truth:
        parts.append(f"## Ground truth\n{quote_untrusted(ground_truth, 600)}")
    shown = "\n".join(render_post(it, 160) for it in global_feed) or "(empty)"
    parts.append(f"## Most engaging recent posts (everyone's view)\n{shown}")
    for prof, obs, mem in members:
        parts.append(f"## Character agent_{prof.id}\n{character_block(prof, obs, mem, persona_fields, issue)}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def character_block(
    prof: AgentProfile,
    obs: Observation,
    mem: Sequence[str],
    persona_fields: Sequence[str] = ("bio", "interests"),
    issue: str | None = None,
) -> str:
    """One agent's whole view as someone who sees everyone reads it (third person): profile, private goal,
    memory, feed, results, notice, groups. The narrator's character section; an ``omniscient_agents``
    agent's view of each other member of its group."""
    extra = results_block(obs, 160, False, narrated=True)
    if notice := obs.platform_notice:
        extra = f"Platform notice shown to them: {quote_untrusted(notice, 1000)}" + (f"\n{extra}" if extra else "")
    if obs.groups:
        extra = (f"{extra}\n" if extra else "") + f"Their groups:\n{groups_block(obs, 160, narrated=True)}"
    you = persona_block(prof, fields=persona_fields, issue=issue, third_person=True)
    feed = feed_block(obs, 160, False, empty="(their feed is empty)")
    return f"{you}\nRecently:\n{memory_block(mem)}\nTheir feed:\n{feed}" + (f"\n{extra}" if extra else "")


def _global_sections(obs: Observation, persona_fields: Sequence[str], issue: str | None) -> list[str]:
    """What a non-narrated perspective that sees the whole platform and its group adds to its prompt
    (the table's ``global_view`` and ``others_private: everyone``), in the narrator's words."""
    parts = []
    if obs.stats is not None or obs.global_feed:
        shown = "\n".join(render_post(it, 160) for it in obs.global_feed) or "(empty)"
        parts += [
            f"## Platform\n{obs.stats or ''}",
            f"## Most engaging recent posts (everyone's view)\n{shown}",
        ]
    for other in obs.co_acting or ():
        body = character_block(other.own_profile(), other, other.memory, persona_fields, issue)
        parts.append(f"## Also acting now: agent_{other.agent_id}\n{body}")
    return parts


def narrator_schema(member_schemas: Mapping[int, dict[str, Any]]) -> dict[str, Any]:
    """One key ``agent_<id>`` per member, each with that member's own action schema (its own feed's
    post and user ids), so constrained decoding cannot skip a member or borrow another's ids."""
    props = {f"agent_{aid}": one for aid, one in member_schemas.items()}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def interview_messages(
    profile: AgentProfile,
    memory: Sequence[str],
    question: str,
    *,
    persona_fields: Sequence[str] = ("bio", "interests"),
    issue: str | None = None,
) -> list[dict[str, str]]:
    you = persona_block(profile, fields=persona_fields, issue=issue)
    return [
        {
            "role": "system",
            "content": "You are a user of a social-media site being interviewed. Answer in character, briefly.",
        },
        {
            "role": "user",
            "content": f"## You\n{you}\n\n## What you did recently\n{memory_block(memory)}\n\n"
            f"## Question\n{quote_untrusted(question, 1000)}",
        },
    ]
