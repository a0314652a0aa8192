"""Population text is data: cleaned and bounded at load, like agents' posts.

Why: bios, names and persona fields come from files a researcher did not write (scraped profiles,
generated personas). A lone surrogate in a JSON persona once made the set-up transaction fail after
the run directory was made; a 1 MB bio was stored whole in ``agents`` and carried into every
prompt's budget. Every string goes through :func:`socium.platform.text.clean_text` (NULs and lone
surrogates replaced, length bounded); names, usernames and interests are also kept to one line.
"""

from __future__ import annotations

from typing import Any

from socium.agents.profiles import Population
from socium.platform.text import clean_text, one_line

MAX_NAME_CHARS = 100
MAX_USERNAME_CHARS = 64
MAX_BIO_CHARS = 2000
MAX_GOAL_CHARS = 1000
MAX_INTEREST_CHARS = 80
MAX_INTERESTS = 32
MAX_EXTRA_CHARS = 4000  # each string of a source's extra fields (OASIS user_char, Reddit persona, ...)
MAX_EXTRA_ITEMS = 200  # each list in extra fields (e.g. previous_tweets)


def clean_field(value: Any, max_chars: int, single_line: bool = False) -> str:
    text = clean_text("" if value is None else value, max_chars).text
    return " ".join(one_line(text).split()) if single_line else text


def _clean_extra(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return clean_field(value, MAX_EXTRA_CHARS)
    if depth > 8:
        return None
    if isinstance(value, dict):
        return {clean_field(k, 200, True): _clean_extra(v, depth + 1) for k, v in list(value.items())[:MAX_EXTRA_ITEMS]}
    if isinstance(value, (list, tuple)):
        return [_clean_extra(v, depth + 1) for v in list(value)[:MAX_EXTRA_ITEMS]]
    return value


def clean_population(pop: Population) -> Population:
    """Clean every text column of ``pop`` in place (and return it)."""
    pop.names = [clean_field(s, MAX_NAME_CHARS, True) for s in pop.names]
    pop.usernames = [clean_field(s, MAX_USERNAME_CHARS, True) for s in pop.usernames]
    pop.bios = [clean_field(s, MAX_BIO_CHARS) for s in pop.bios]
    pop.interests = [[clean_field(t, MAX_INTEREST_CHARS, True) for t in ts[:MAX_INTERESTS]] for ts in pop.interests]
    pop.goals = [None if g is None else clean_field(g, MAX_GOAL_CHARS) for g in pop.goals]
    if pop.extra is not None:
        pop.extra = [_clean_extra(e) for e in pop.extra]
    return pop


def clean_goals(goals: list[str] | dict[str, list[str]]) -> list[str] | dict[str, list[str]]:
    """``population.goals`` (a list, or lists by stance side) cleaned and bounded like any persona text."""
    if isinstance(goals, dict):
        return {side: [clean_field(g, MAX_GOAL_CHARS) for g in lst] for side, lst in goals.items()}
    return [clean_field(g, MAX_GOAL_CHARS) for g in goals]
