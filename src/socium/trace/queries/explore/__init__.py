"""What ``socium explore`` shows: one page of a run at a time, seen through each agent's eyes.

Every function here returns one page (``limit``/``offset`` are bound parameters, as are all values),
so opening a 10^5-agent trace reads a few hundred rows, never a whole table. Text fields (posts,
personas, prompts, responses) are agent- or model-written: hostile data that callers must show as
text, never as markup. Optional tables (``llm_calls``, ``memories``, ``moderation_events``,
``interviews``) are absent from some traces; functions reading them return nothing there.

By role: :mod:`.posts` (timeline, a post, its cascade and audience), :mod:`.agents` (an agent's
activations and the agents list), :mod:`.calls` (the call log and each answer's fate), :mod:`.overview`
(a run's header and the numbers its charts draw), :mod:`.common` (what they share). The pages import
this package as ``q`` and call ``q.timeline`` etc., so the split moved no caller.
"""

from __future__ import annotations

from socium.trace.queries.explore.agents import (
    AGENT_SORTS,
    EXPOSURE_BASE,
    ActionView,
    AgentRow,
    FeedItem,
    actions,
    activation_steps,
    agent,
    agent_order,
    agent_rows,
    agents_table,
    feed,
    find_agents,
    interviews,
    memories_at,
    neighbourhood,
    stance_over_time,
    surveys,
)
from socium.trace.queries.explore.calls import (
    FATES,
    RETRY_REASON,
    CallFilter,
    CallView,
    call,
    call_facets,
    calls,
    calls_at,
    count_calls,
)
from socium.trace.queries.explore.common import PAGE, Con
from socium.trace.queries.explore.overview import (
    activity_by_step,
    committed_steps,
    overview,
    stance_by_step,
    top_cascades_by_step,
)
from socium.trace.queries.explore.posts import (
    RESHARES,
    PostView,
    acted_on,
    cascade,
    cascade_size_by_step,
    count_timeline,
    exposed_to,
    exposure_sources,
    post,
    replies,
    reshares,
    timeline,
)

__all__ = [
    "AGENT_SORTS", "EXPOSURE_BASE", "FATES", "PAGE", "RESHARES", "RETRY_REASON", "ActionView", "AgentRow",
    "CallFilter", "CallView", "Con", "FeedItem", "PostView", "acted_on", "actions", "activation_steps",
    "activity_by_step", "agent", "agent_order", "agent_rows", "agents_table", "call", "call_facets", "calls",
    "calls_at", "cascade", "cascade_size_by_step", "committed_steps", "count_calls", "count_timeline", "exposed_to",
    "exposure_sources", "feed", "find_agents", "interviews", "memories_at", "neighbourhood", "overview", "post",
    "replies", "reshares", "stance_by_step", "stance_over_time", "surveys", "timeline", "top_cascades_by_step",
]  # fmt: skip
