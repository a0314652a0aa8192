"""The perspective table: every perspective's name and full behaviour, in one place.

Why here, on the ground floor: perspective (what each agent may see) is socium's research variable,
and config validation, the observation builder, the prompts, the policy's call structure, moderation,
dyadic episodes, the Simulation Card and the perspective comparison all ask the same questions of
it. Each asks this table instead of comparing names, so a new perspective is one table entry
(:func:`register_perspective`) plus nothing else, and a report can say exactly how two arms differ
(:func:`differences`) instead of claiming they differ "only in perspective".

Every perspective sees its own profile, private goal, memory and feed (:data:`OWN`). A row adds:

``others_private``  none: nothing private of anyone else; shown_authors: the private bio, goal and
                    stance of the author of every post and group message shown; everyone: every
                    member of its group of ``llm_agents.group_size`` active agents (runs of the
                    sorted active ids) -- their profile, private goal, memory and feed
``global_view``     the platform's trending posts and statistics
``environment_facts``  environment-only facts (``llm_agents.ground_truth``, posts' veracity) even
                    when the config's ``*_visible_to`` lists do not name it
``narrated``        one narrator call writes the actions of its whole group; otherwise one call
                    per active agent
``episode_mode``    the same access in dyadic episodes (SOTOPIA's agents / mindreaders / script)
``prompt_text``     a line appended to the system prompt telling the agent what it knows (empty
                    for the three original perspectives, whose prompts are a recorded contract)

Register a perspective at import time of a module every process imports (Ray actors are separate
processes and look rows up by name); configs are validated against the table when they are loaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from socium.errors import ConfigError

OthersPrivate = Literal["none", "shown_authors", "everyone"]
OWN = ("profile", "private goal", "memory", "feed")
"""What every perspective sees of itself."""
MAX_PROMPT_TEXT = 2000
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_OTHERS_TEXT = {
    "none": "nothing private of anyone else",
    "shown_authors": "the private bio, goal and stance of the author of every post shown to it "
    "(shared posts and comments included) and of every group message shown to it",
    "everyone": "every group member's profile, private goal, memory and feed",
}
NARRATED_CALLS = "one narrator call per group of active agents (dyadic episodes: one call writes the whole episode)"
AGENT_CALLS = "one call per active agent"


@dataclass(frozen=True)
class Perspective:
    """One row of the table: what a perspective reveals and how its decisions are asked for."""

    name: str
    description: str  # one human sentence, for the Simulation Card and reports
    others_private: OthersPrivate
    global_view: bool
    narrated: bool
    episode_mode: str | None = None
    environment_facts: bool = False
    prompt_text: str = ""

    def __post_init__(self) -> None:
        where = f"perspective {self.name!r}"
        if not _NAME.match(self.name):
            raise ConfigError(f"{where}: a name is 1-40 lowercase letters, digits and '_', starting with a letter")
        if self.others_private not in _OTHERS_TEXT:
            known = ", ".join(_OTHERS_TEXT)
            raise ConfigError(f"{where}: others_private {self.others_private!r}; expected one of {known}")
        if self.narrated and self.others_private != "everyone":
            raise ConfigError(
                f"{where}: a narrated perspective writes a whole group, so others_private must be 'everyone'"
            )
        if len(self.prompt_text) > MAX_PROMPT_TEXT or len(self.description) > MAX_PROMPT_TEXT:
            raise ConfigError(f"{where}: prompt_text and description are at most {MAX_PROMPT_TEXT} characters")

    @property
    def calls(self) -> str:
        """How its decisions are asked for, in words."""
        return NARRATED_CALLS if self.narrated else AGENT_CALLS

    @property
    def grouped(self) -> bool:
        """Its calls need whole groups of active agents together (a narrator's, or one that sees its group)."""
        return self.others_private == "everyone"

    def knowledge(self) -> dict[str, str]:
        """What it sees and how it is asked, one human line per table column (reports, the card)."""
        return {
            "own": ", ".join(OWN),
            "others": _OTHERS_TEXT[self.others_private],
            "global": "the platform's trending posts and statistics" if self.global_view else "nothing platform-wide",
            "environment facts": "always" if self.environment_facts else "only when the config's *_visible_to names it",
            "calls": self.calls,
        }


BUILTIN: tuple[Perspective, ...] = (
    Perspective(
        "local",
        "each agent sees only its own profile, goal, memory and feed",
        "none",
        global_view=False,
        narrated=False,
        episode_mode="agents",
    ),
    Perspective(
        "mindreader",
        "local, plus the private side of the author of everything shown",
        "shown_authors",
        global_view=False,
        narrated=False,
        episode_mode="mindreaders",
    ),
    Perspective(
        "omniscient",
        "one narrator call sees every member of a group and the whole platform, and writes all their actions",
        "everyone",
        global_view=True,
        narrated=True,
        episode_mode="script",
    ),
    Perspective(
        "omniscient_agents",
        "omniscient knowledge (its group's views, profiles and goals, the whole platform), but each agent "
        "decides in its own call, as local and mindreader agents do",
        "everyone",
        global_view=True,
        narrated=False,
        prompt_text="You also know the profile, private goal, recent actions and feed of everyone acting with you "
        "now, and what is trending on the whole platform; all of it is shown below. Act only as yourself.",
    ),
)
_TABLE: dict[str, Perspective] = {p.name: p for p in BUILTIN}


def register_perspective(p: Perspective) -> Perspective:
    """Add ``p`` to the table (idempotent for an identical row); a clashing name or episode mode is a ConfigError."""
    old = _TABLE.get(p.name)
    if old is not None:
        if old == p:
            return p
        raise ConfigError(f"perspective {p.name!r} is already registered with a different table row")
    if p.episode_mode is not None and p.episode_mode in episode_modes():
        raise ConfigError(
            f"perspective {p.name!r}: episode mode {p.episode_mode!r} already stands for "
            f"{episode_modes()[p.episode_mode]!r}"
        )
    _TABLE[p.name] = p
    return p


def unregister_perspective(name: str) -> None:
    """Remove a perspective registered at run time (tests, plugins); the built-in ones stay."""
    if any(b.name == name for b in BUILTIN):
        raise ConfigError(f"perspective {name!r} is built in and cannot be unregistered")
    perspective(name)
    del _TABLE[name]


def perspective(name: str) -> Perspective:
    """The table row of ``name``; an unknown name is a ConfigError naming it and the known ones."""
    try:
        return _TABLE[name]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown perspective {name!r}; known: {', '.join(_TABLE)}") from None


def perspective_names() -> tuple[str, ...]:
    """Every registered perspective, built-in ones first, in registration order."""
    return tuple(_TABLE)


def sees_environment_facts(name: str, visible_to: list[str] | tuple[str, ...]) -> bool:
    """Whether agents of ``name`` are shown an environment-only fact whose config lists ``visible_to``."""
    return name in visible_to or perspective(name).environment_facts


def episode_modes() -> dict[str, str]:
    """Dyadic-episode mode -> the perspective it stands for."""
    return {p.episode_mode: p.name for p in _TABLE.values() if p.episode_mode is not None}


def for_episode_mode(mode: str) -> Perspective:
    """The perspective a dyadic-episode mode (agents / mindreaders / script) stands for."""
    modes = episode_modes()
    if mode not in modes:
        raise ConfigError(f"unknown episode mode {mode!r}; expected one of {', '.join(modes)}")
    return _TABLE[modes[mode]]


def differences(a: str, b: str) -> dict[str, tuple[str, str]]:
    """What differs between two perspectives' rows: column -> (a's value, b's value), in words.

    Why: a perspective comparison must say what its arms change -- e.g. ``omniscient`` vs ``local``
    changes both what agents know and how calls are made, ``omniscient`` vs ``omniscient_agents``
    only the call structure.
    """
    ka, kb = perspective(a).knowledge(), perspective(b).knowledge()
    out = {k: (ka[k], kb[k]) for k in ka if ka[k] != kb[k]}
    pa, pb = perspective(a), perspective(b)
    if pa.prompt_text != pb.prompt_text:
        out["prompt text"] = (pa.prompt_text or "(none)", pb.prompt_text or "(none)")
    return out


__all__ = [
    "AGENT_CALLS",
    "BUILTIN",
    "MAX_PROMPT_TEXT",
    "NARRATED_CALLS",
    "OWN",
    "OthersPrivate",
    "Perspective",
    "differences",
    "episode_modes",
    "for_episode_mode",
    "perspective",
    "perspective_names",
    "register_perspective",
    "sees_environment_facts",
    "unregister_perspective",
]
