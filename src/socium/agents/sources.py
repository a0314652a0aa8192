"""Where populations come from: a seeded synthetic generator and loaders for OASIS-style files.

Every source returns a :class:`~socium.agents.profiles.Population` whose agent ids are dense
(0..N-1, in file order), because the trace, the follow graph and the recommender all index by
position. Anything a source knows that has no column of its own goes to ``extra``.

When a source says nothing about activity, every agent gets 24 x ``DEFAULT_ACTIVITY`` (0.1): active
in one step out of ten whatever the hour, the same default as :class:`AgentProfile`.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from socium.agents.profiles import HOURS, Population
from socium.errors import ConfigError, InputFileError

DEFAULT_ACTIVITY = 0.1

DEFAULT_INTERESTS: list[str] = [
    "politics",
    "football",
    "cooking",
    "technology",
    "music",
    "science",
    "movies",
    "travel",
    "health",
    "finance",
    "gaming",
    "climate",
]

# Relative activity by hour of day (local time): quiet at night, a lunch bump, an evening peak.
# Only its shape matters; it is rescaled to mean 1 before use.
_DIURNAL = np.array(
    [
        0.35,
        0.22,
        0.15,
        0.12,
        0.12,
        0.18,
        0.40,
        0.75,
        1.00,
        1.05,
        1.05,
        1.15,
        1.30,
        1.20,
        1.05,
        1.05,
        1.10,
        1.25,
        1.45,
        1.65,
        1.80,
        1.70,
        1.30,
        0.75,
    ],
    dtype=np.float64,
)
_ACTIVITY_SIGMA = 0.6  # lognormal spread of per-agent activity: a few heavy posters, many lurkers
_HEAVY_ACTIVITY_SIGMA = 1.8  # activity: heavy_tailed; top 10% of agents ~half the activations (stylized fact)

_BIO_TEMPLATES: tuple[tuple[str, ...], ...] = (
    ("Into {0}.", "Mostly here for {0}.", "{0} enthusiast.", "Posting about {0}."),
    ("Into {0} and {1}.", "{0}, {1}, opinions.", "Talking {0} and sometimes {1}.", "Here for {0} and {1}."),
    ("{0}, {1} and {2}.", "Into {0}, {1} and {2}.", "Thoughts on {0}, {1}, {2}.", "Fan of {0}, {1} and {2}."),
)

OASIS_REQUIRED_COLUMNS = (
    "user_id",
    "name",
    "username",
    "following_agentid_list",
    "previous_tweets",
    "user_char",
    "description",
)
_BIGINT_TEXT = re.compile(r"-?[0-9]{1,18}")  # ASCII digits only, within a signed 64-bit integer
_REDDIT_REQUIRED = ("realname", "username", "bio", "persona")
# Optional OASIS-style persona columns (``socium population generate`` writes them): kept in ``extra`` so
# ``llm_agents.persona_fields`` can show them; ``interests`` is a JSON / Python list or comma-separated.
OASIS_PERSONA_COLUMNS = ("age", "gender", "mbti", "country", "profession", "political_leaning")


def synthetic_population(
    n: int,
    seed: int,
    *,
    stance: str = "none",
    interests_pool: list[str] | None = None,
    activity: str = "diurnal",
    mean_activity: float = 0.1,
) -> Population:
    """Generate ``n`` plausible agents cheaply enough for million-agent runs.

    Everything random is drawn as whole arrays from one ``SeedSequence(seed)``, so the result depends
    only on the arguments, never on global random state or on how many agents came before.

    ``stance``: ``"none"`` (NaN, no opinion dynamics), ``"uniform"`` (U[-1, 1]) or ``"bimodal"`` (two
    camps centred on +-0.6, sd 0.2, clipped to [-1, 1]). ``activity``: ``"diurnal"`` scales a daily
    curve by a per-agent lognormal factor of mean 1, so a minority posts much more than the rest, then
    clips to [0, 1]; ``"heavy_tailed"`` is the same with a wider factor (lognormal sigma
    ``_HEAVY_ACTIVITY_SIGMA``, rescaled after clipping so the mean stays ``mean_activity``): the top 10% of
    agents hold about half of all activations, as in measured social-media activity (Pew 2019: the top
    10% of US Twitter users wrote 80% of tweets); ``"uniform"`` gives every agent ``mean_activity`` at
    every hour, which removes activity as a confound in controlled experiments.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ConfigError(f"population.n: must be a non-negative integer, got {n!r}")
    n = int(n)
    if not (0.0 < float(mean_activity) <= 1.0):
        raise ConfigError(f"population.mean_activity: must lie in (0, 1], got {mean_activity!r}")
    pool = list(DEFAULT_INTERESTS if interests_pool is None else interests_pool)
    if not pool or not all(isinstance(t, str) and t for t in pool):
        raise ConfigError(f"population.interests_pool: must be a non-empty list of non-empty strings, got {pool!r}")
    if len(set(pool)) != len(pool):
        raise ConfigError("population.interests_pool: contains duplicates")
    stance_rng, interest_rng, bio_rng, activity_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)
    )

    stances = _synthetic_stance(stance_rng, n, stance)
    act = _synthetic_activity(activity_rng, n, activity, float(mean_activity))

    # 1..3 distinct topics per agent: draw three indices, then shift each later draw past the
    # earlier ones so they are distinct without a per-agent loop.
    p = len(pool)
    kmax = min(3, p)
    k = interest_rng.integers(1, kmax + 1, size=n)
    a = interest_rng.integers(0, p, size=n)
    cols = [a]
    if kmax >= 2:
        b = interest_rng.integers(0, p - 1, size=n)
        b += b >= a
        cols.append(b)
    if kmax >= 3:
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        c = interest_rng.integers(0, p - 2, size=n)
        c += c >= lo
        c += c >= hi
        cols.append(c)
    template = bio_rng.integers(0, len(_BIO_TEMPLATES[0]), size=n)

    topic_cols = [[pool[j] for j in col.tolist()] for col in cols]
    while len(topic_cols) < 3:
        topic_cols.append([""] * n)
    interests: list[list[str]] = []
    bios: list[str] = []
    append_i, append_b = interests.append, bios.append
    for ki, ti, x, y, z in zip(k.tolist(), template.tolist(), *topic_cols):
        topics = [x, y, z][:ki]
        append_i(topics)
        append_b(_BIO_TEMPLATES[ki - 1][ti].format(*topics))

    usernames = [f"user{i}" for i in range(n)]
    names = [f"User {i}" for i in range(n)]
    return Population(names, usernames, bios, interests, act, stance=stances)


def _synthetic_stance(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "none":
        return np.full(n, np.nan, dtype=np.float32)
    if kind == "uniform":
        return rng.uniform(-1.0, 1.0, size=n).astype(np.float32)
    if kind == "bimodal":
        side = np.where(rng.random(n) < 0.5, -0.6, 0.6)
        return np.clip(side + rng.normal(0.0, 0.2, size=n), -1.0, 1.0).astype(np.float32)
    raise ConfigError(f"population.stance: unknown {kind!r}; allowed: 'none', 'uniform', 'bimodal'")


def _synthetic_activity(rng: np.random.Generator, n: int, kind: str, mean: float) -> np.ndarray:
    if kind == "uniform":
        return np.full((n, HOURS), mean, dtype=np.float32)
    if kind not in ("diurnal", "heavy_tailed"):
        raise ConfigError(f"population.activity: unknown {kind!r}; allowed: 'diurnal', 'heavy_tailed', 'uniform'")
    sigma = _ACTIVITY_SIGMA if kind == "diurnal" else _HEAVY_ACTIVITY_SIGMA
    curve = (_DIURNAL / _DIURNAL.mean() * mean).astype(np.float32)
    # mu = -sigma^2/2 makes the factor's mean 1, so the population mean stays at ``mean``
    # (minus the little that clipping at 1 removes).
    factor = rng.lognormal(-0.5 * sigma**2, sigma, size=n).astype(np.float32)
    out = np.multiply.outer(factor, curve)
    np.clip(out, 0.0, 1.0, out=out)
    if kind == "heavy_tailed" and n:
        # a wide factor loses much of its mass to the clip: scale up until the mean is back (monotone)
        scale = 1.0
        for _ in range(50):
            got = float(np.clip(np.multiply.outer(factor, curve) * scale, 0.0, 1.0).mean())
            if got <= 0 or abs(got - mean) < 1e-4 * mean:
                break
            scale *= mean / got
        out = np.clip(np.multiply.outer(factor, curve) * np.float32(scale), 0.0, 1.0).astype(np.float32)
    return out


def load_oasis_csv(path: str | Path) -> tuple[Population, list[list[int]]]:
    """Load an OASIS Twitter user CSV; returns the population and each agent's followee ids.

    Agent ``i`` is data row ``i``; ``following_agentid_list`` already refers to those row indices (as
    in OASIS). The source ``user_id`` is kept in ``extra['user_id']``, ``user_char`` (OASIS's persona
    prompt) in ``extra['user_char']`` and the parsed ``previous_tweets`` list in
    ``extra['previous_tweets']``; ``bio`` is ``description``. Following lists are returned as written
    (self-follows included); :func:`socium.platform.graph.graph_from_following` drops self-loops.

    ``stance`` is optional: a number in [-1, 1] per row (empty = no opinion), the initial stance that
    opinion-dynamics null models and persona prompts use.

    ``goal`` is optional: each row's private goal (empty = none), as ``socium population generate``
    writes it coherent with the row's stance.

    ``activity_level_frequency`` is optional. Values all within [0, 1] are taken as probabilities.
    Otherwise they are counts on OASIS's 0-100 scale (OASIS divides them by 100), so each row is
    divided by ``max(100, row max)``: 100 means "always active", and rows with larger counts are scaled
    so their busiest hour is 1 rather than exceeding a probability. Missing column -> the default.
    """
    path = Path(path)
    text = _read_text(path)
    # previous_tweets cells can pass csv's 128 KiB default cap; raising the (process-wide) cap is harmless.
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    reader = csv.reader(io.StringIO(text, newline=""))  # only \n, \r\n, \r end rows
    try:
        header = next(reader)
    except StopIteration:
        raise InputFileError(path, 1, "empty file: expected a header row") from None
    except csv.Error as exc:
        raise InputFileError(path, 1, f"unreadable CSV header: {exc}") from None
    col = {name.strip(): j for j, name in enumerate(header)}
    for name in OASIS_REQUIRED_COLUMNS:
        if name not in col:
            raise InputFileError(path, 1, f"missing column {name!r} (required: {', '.join(OASIS_REQUIRED_COLUMNS)})")
    act_col = col.get("activity_level_frequency")
    persona_cols = [(k, col[k]) for k in OASIS_PERSONA_COLUMNS if k in col]
    interests_col = col.get("interests")
    stance_col = col.get("stance")
    goal_col = col.get("goal")
    llm_col = col.get("llm")  # optional: the named backend (`llms`) this row's agent talks to

    names: list[str] = []
    usernames: list[str] = []
    bios: list[str] = []
    extras: list[dict[str, Any]] = []
    interests: list[list[str]] = []
    following: list[list[int]] = []
    activity_rows: list[np.ndarray] = []
    stances: list[float] = []
    goals: list[str | None] = []
    lines: list[int] = []
    while True:
        line = reader.line_num + 1  # first physical line of the record; fields may span lines
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputFileError(path, line, f"unreadable CSV record: {exc}") from None
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputFileError(path, line, f"record has {len(row)} fields, header has {len(header)}")
        get = lambda name, row=row: row[col[name]]
        follows = _parse_literal_list(path, line, "following_agentid_list", get("following_agentid_list"))
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in follows):
            raise InputFileError(path, line, "column 'following_agentid_list': expected a list of integer agent ids")
        tweets = _parse_literal_list(path, line, "previous_tweets", get("previous_tweets"))
        if act_col is not None:
            activity_rows.append(_parse_activity(path, line, row[act_col]))
        if stance_col is not None:
            stances.append(_parse_stance(path, line, row[stance_col]))
        if goal_col is not None:
            goals.append(row[goal_col].strip() or None)
        uid_text = get("user_id").strip()
        # an id that fits a BIGINT is a number; anything else ('²' passes isdigit, 5,000 digits pass int's
        # limit) stays the source's own label
        uid: int | str = int(uid_text) if _BIGINT_TEXT.fullmatch(uid_text) else uid_text
        names.append(get("name"))
        usernames.append(get("username"))
        bios.append(get("description"))
        extra: dict[str, Any] = {"user_id": uid, "user_char": get("user_char"), "previous_tweets": tweets}
        extra.update({k: row[j].strip() for k, j in persona_cols if row[j].strip()})
        if llm_col is not None and row[llm_col].strip():
            extra["llm"] = row[llm_col].strip()
        extras.append(extra)
        interests.append(_parse_interests(path, line, row[interests_col]) if interests_col is not None else [])
        following.append([int(x) for x in follows])
        lines.append(line)

    n = len(names)
    for i, follows in enumerate(following):
        bad = [x for x in follows if not 0 <= x < n]
        if bad:
            raise InputFileError(
                path, lines[i], f"column 'following_agentid_list': agent id {bad[0]} out of range 0..{n - 1}"
            )
    activity = np.stack(activity_rows) if act_col is not None and n else np.full((n, HOURS), DEFAULT_ACTIVITY)
    stance = np.asarray(stances, dtype=np.float32) if stance_col is not None else None
    pop = Population(
        names,
        usernames,
        bios,
        interests,
        activity,
        stance=stance,
        goals=goals if goal_col is not None else None,
        extra=extras,
    )
    return pop, following


def load_reddit_json(path: str | Path) -> Population:
    """Load an OASIS Reddit persona file: a JSON list of objects, one agent each, in list order.

    ``realname``, ``username``, ``bio`` and ``persona`` are required; ``interested_topics`` becomes
    ``interests``; every other key (``persona``, ``age``, ``gender``, ``mbti``, ``country``,
    ``profession``, ...) goes to ``extra`` unchanged so prompt templates can use it.
    Reddit personas carry no activity, so every agent gets the default.
    """
    path = Path(path)
    text = _read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(path, exc.lineno, f"malformed JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:  # 50,000 nested brackets in a persona: Python's decoder recurses per level
        raise InputFileError(path, None, "JSON nested too deeply (thousands of levels of [ or {)") from None
    if not isinstance(data, list):
        raise InputFileError(path, 1, f"expected a JSON list of user objects, got {type(data).__name__}")
    names: list[str] = []
    usernames: list[str] = []
    bios: list[str] = []
    interests: list[list[str]] = []
    extras: list[dict[str, Any]] = []
    for i, rec in enumerate(data):
        if not isinstance(rec, dict):
            raise InputFileError(path, None, f"record {i}: expected an object, got {type(rec).__name__}")
        missing = [k for k in _REDDIT_REQUIRED if k not in rec]
        if missing:
            raise InputFileError(
                path, None, f"record {i}: missing field {missing[0]!r} (required: {', '.join(_REDDIT_REQUIRED)})"
            )
        for k in ("realname", "username", "bio"):
            if not isinstance(rec[k], str):
                raise InputFileError(path, None, f"record {i}: field {k!r} must be a string, got {rec[k]!r}")
        topics = rec.get("interested_topics", [])
        if isinstance(topics, str):
            topics = [topics]
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise InputFileError(path, None, f"record {i}: field 'interested_topics' must be a list of strings")
        names.append(rec["realname"])
        usernames.append(rec["username"])
        bios.append(rec["bio"])
        interests.append(list(topics))
        extras.append({k: v for k, v in rec.items() if k not in ("realname", "username", "bio", "interested_topics")})
    n = len(names)
    activity = np.full((n, HOURS), DEFAULT_ACTIVITY, dtype=np.float32)
    return Population(names, usernames, bios, interests, activity, extra=extras)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputFileError(path, None, "file not found") from None
    except IsADirectoryError:
        raise InputFileError(path, None, "is a directory, expected a file") from None
    except UnicodeDecodeError as exc:
        raise InputFileError(path, None, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except OSError as exc:
        raise InputFileError(path, None, f"cannot read: {exc.strerror or exc}") from None


# A list of plain decimal numbers ("[0, 1.5, 2e-3]"): the cells socium writes (activity, follow ids).
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_NUMBER_LIST = re.compile(rf"\[\s*(?:{_NUMBER}\s*(?:,\s*{_NUMBER}\s*)*)?\]")


def _parse_literal_list(path: Path, line: int, column: str, text: str) -> list[Any]:
    """``ast.literal_eval`` accepts only literals, so a crafted cell cannot run code.

    A cell that is a list of plain decimal numbers is read by ``json.loads`` instead: for exactly
    that grammar both give the same ints and floats, and JSON is ~10x cheaper than compiling the cell
    (a replicated 3,000-agent CV population spent ~10% of a run in ``literal_eval``). Anything else
    (strings, tuples, ``1_000``, a trailing comma) takes the ``literal_eval`` path as before.
    """
    s = text.strip()
    if not s:
        return []
    if _NUMBER_LIST.fullmatch(s):
        try:
            return list(json.loads(s))
        except ValueError:  # an integer past Python's digit limit: literal_eval reports it below
            pass
    try:
        value = ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise InputFileError(path, line, f"column {column!r}: not a list literal: {_clip(s)!r}") from None
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise InputFileError(path, line, f"column {column!r}: expected a list, got {_clip(s)!r}")
    return value


def _parse_activity(path: Path, line: int, text: str) -> np.ndarray:
    values = _parse_literal_list(path, line, "activity_level_frequency", text)
    if not values:
        return np.full(HOURS, DEFAULT_ACTIVITY, dtype=np.float32)
    if len(values) != HOURS or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise InputFileError(
            path, line, f"column 'activity_level_frequency': expected {HOURS} numbers, got {_clip(text)!r}"
        )
    arr = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InputFileError(path, line, "column 'activity_level_frequency': values must be finite and >= 0")
    if arr.max() > 1.0:
        arr = arr / max(100.0, float(arr.max()))
    return arr.astype(np.float32)


def _parse_interests(path: Path, line: int, text: str) -> list[str]:
    s = text.strip()
    if not s.startswith("["):
        return [t.strip() for t in s.split(",") if t.strip()]
    values = _parse_literal_list(path, line, "interests", s)
    if not all(isinstance(v, str) for v in values):
        raise InputFileError(path, line, f"column 'interests': expected a list of strings, got {_clip(s)!r}")
    return [v.strip() for v in values if v.strip()]


def _parse_stance(path: Path, line: int, text: str) -> float:
    """Optional ``stance`` column: a number in [-1, 1], or empty for "no opinion" (NaN)."""
    s = text.strip()
    if not s:
        return float("nan")
    try:
        v = float(s)
    except ValueError:
        raise InputFileError(path, line, f"column 'stance': not a number: {_clip(s)!r}") from None
    if not -1.0 <= v <= 1.0:
        raise InputFileError(path, line, f"column 'stance': {v} is outside [-1, 1]")
    return v


def _clip(s: str, limit: int = 80) -> str:
    return s if len(s) <= limit else s[:limit] + "..."
