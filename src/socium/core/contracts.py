"""What one active agent is given to decide on: built by the driver, plain data so it can travel to
Ray actors, and the only channel through which a policy learns about the world."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from socium.core.actions import Action
from socium.core.profile import AgentProfile


@dataclass(slots=True)
class SharedPost:
    """A post shown inside another: what a repost shares or a quote quotes (one link of the chain)."""

    post_id: int
    author: int
    author_username: str
    kind: str
    text: str
    likes: int
    dislikes: int
    reposts: int
    comments: int
    author_private: dict[str, Any] | None = None  # only filled under the mindreader perspective


@dataclass(slots=True)
class FeedItem:
    post_id: int
    author: int
    kind: str
    text: str
    root_id: int
    likes: int
    dislikes: int
    reposts: int
    comments: int
    source: str
    rank: int
    adopted: bool = False  # the viewer already posted/reposted/quoted this cascade
    liked: bool = False  # the viewer already liked this post
    disliked: bool = False  # the viewer already disliked this post
    adoption: float = 0.0  # fraction of the viewer's followees who adopted this cascade
    author_stance: float | None = None
    author_username: str = ""
    author_private: dict[str, Any] | None = None  # only filled under the mindreader perspective
    # What this post shares (repost) or quotes (quote), nearest first, at most ``llm_agents.quote_depth``
    # links; ``shared_more`` says the chain goes on beyond what is shown. Filled for LLM agents only.
    shared: list[SharedPost] = field(default_factory=list)
    shared_more: bool = False
    # Extra lines shown under the post (e.g. a moderation label or community note); agent text is
    # never put here unquoted.
    notes: list[str] = field(default_factory=list)
    replies: list[SharedPost] = field(default_factory=list)  # latest comments (llm_agents.comments_per_post)


@dataclass(slots=True)
class GroupView:
    """A chat group as one agent sees it: members see its recent messages, others only its name."""

    group_id: int
    name: str
    n_members: int
    member: bool
    messages: list[tuple[int, int, str, str]] = field(default_factory=list)  # (step, author, username, text)
    authors_private: dict[int, dict[str, Any]] = field(
        default_factory=dict
    )  # mindreader: message authors' private side


@dataclass(slots=True)
class Observation:
    agent_id: int
    step: int
    time_s: float
    hour: int
    feed: list[FeedItem]
    stance: float | None = None
    #: anything a policy plugin or a policy's own bookkeeping keeps with an observation; what prompts read is
    #: in the typed fields below
    extra: dict[str, Any] = field(default_factory=dict)
    groups: list[GroupView] = field(default_factory=list)  # filled for LLM agents (see agents.groups)
    # Results of the agent's last search / trend request, shown in its next observation (exposures are
    # recorded then, not when the request was made); ``results_from`` says what was asked.
    results: list[FeedItem] = field(default_factory=list)
    results_from: str = ""
    found_users: list[tuple[int, str]] = field(default_factory=list)  # search_user results: (user id, username)
    # ---- what an LLM agent is shown besides its feed (agents.perspectives.fill_observation; None / empty
    # for rule-based agents, which read only the feed) ----
    profile: AgentProfile | None = None  # its own profile
    memory: list[str] = field(default_factory=list)  # its memory's lines for this prompt
    show_score: bool = False  # platform.show_score: posts show likes - dislikes as one score
    datetime: str | None = None  # the real date and time the step stands for (start_datetime), as shown
    global_feed: list[FeedItem] = field(default_factory=list)  # perspectives with a global view: trending posts
    stats: str | None = None  # perspectives with a global view: platform-wide counts
    co_acting: list[Observation] | None = None  # grouped perspectives: the others acting with it, whose views it sees
    platform_notice: str | None = None  # moderation.prebunk: the inoculation text shown before the feed
    prebunk_shown: int | None = None  # the step the prebunk notice was shown (moderation reads it afterwards)

    # The platform's marks on the shown ids that the offered actions' rules read (the action table's
    # ``requires`` / ``excludes``: liked, following, ...), mark -> ids carrying it, so the answer schema
    # offers an action only on targets the platform would accept.
    marks: dict[str, set[int]] = field(default_factory=dict)

    def own_profile(self) -> AgentProfile:
        """The agent's own profile, which every LLM agent's observation carries (a rule-based one has none)."""
        if self.profile is None:
            raise ValueError(f"agent {self.agent_id}: this observation carries no profile (not an LLM agent's)")
        return self.profile

    def shown_posts(self) -> set[int]:
        """Post ids this observation shows (feed, results, and the posts they share): the ids an agent may act on."""
        out = set()
        for it in (*self.feed, *self.results):
            out.add(it.post_id)
            if it.shared:  # most posts share nothing: skip building a generator for them
                out.update([s.post_id for s in it.shared])
        return out

    def shown_comments(self) -> set[int]:
        """Comment ids shown under posts: the ids like_comment / dislike_comment may use."""
        return {c.post_id for it in (*self.feed, *self.results) for c in it.replies}

    def shown_users(self) -> set[int]:
        """Authors of every shown post plus users found by search, minus the agent itself."""
        out = {u for u, _ in self.found_users} if self.found_users else set()
        for it in (*self.feed, *self.results):
            out.add(it.author)
            if it.shared:  # called for every prompt and schema: no generators for the empty lists
                out.update([s.author for s in it.shared])
            if it.replies:
                out.update([c.author for c in it.replies])
        out.discard(self.agent_id)
        return out


#: One LLM call as a step's call log keeps it until the commit: ``(cache key, request, result, model)``,
#: the request an ``agents.call_log.RenderedRequest`` (or an ``llm.types.LLMRequest``), the result an
#: ``llm.types.LLMResult`` (both named by their module: they live above this floor).
LLMCall = tuple[str, Any, Any, str]

#: Who made a decision: recorded as ``actions.origin`` ('policy': a rule-based policy).
Origin = Literal["policy", "llm", "seed", "manual", "bot", "fact_checker"]


@dataclass(slots=True)
class Decision:
    """A policy's answer: actions in the order the agent wants them applied, plus own-state updates."""

    agent_id: int
    actions: list[Action]
    stance: float | None = None
    invalid_reason: str | None = None  # set when an LLM's output could not be turned into an action
    raw: str | None = None
    #: anything else a policy reports with it (e.g. ``unshown``: posts trimmed from the prompt, ``veracity``:
    #: a seed post's configured ground truth); the recorded parts are the typed fields
    meta: dict[str, Any] = field(default_factory=dict)
    origin: Origin = "policy"
    reason: str | None = None  # the agent's own short reason (llm_agents.ask_reason), recorded with each action
    #: the LLM calls made for it, as ``agents.call_log.RenderedRequest`` rows (written in the step's transaction)
    calls: list[LLMCall] = field(default_factory=list)
