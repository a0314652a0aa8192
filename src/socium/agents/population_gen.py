"""Populations generated from a community description and demographic marginals.

Why (Social Simulacra, SocioVerse): a researcher studying a community rarely has its users' profiles,
but usually knows its make-up (ages, countries, leanings). The attributes that make up a
population's composition are therefore *sampled* from explicit marginals with the run's seed, so
the composition is exactly what the researcher declared and reproducible; only the prose (name,
handle, bio, persona) is written by a language model, under a JSON schema, given those attributes.
Stance and goal are derived from the sampled political leaning before the model writes anything,
so the model is told a persona that is coherent by construction and cannot contradict it in a
structured field.

The output is an OASIS-style CSV that ``population.source: oasis_csv`` loads unchanged.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from socium.agents.profiles import goal_for
from socium.agents.sources import DEFAULT_INTERESTS, OASIS_REQUIRED_COLUMNS
from socium.config.llm import LLMConfig
from socium.config.loading import read_yaml_mapping
from socium.errors import ConfigError, SociumError
from socium.llm.base import run_coro_sync
from socium.llm.factory import build_backend
from socium.llm.parsing import parse_json_lenient
from socium.llm.types import ChatMessage, LLMRequest
from socium.platform.text import clean_text, quote_untrusted

# MBTI type frequencies in the US population (The Myers-Briggs Company, MBTI Manual, 3rd ed., 1998).
MBTI_US = {
    "ISFJ": 13.8,
    "ESFJ": 12.3,
    "ISTJ": 11.6,
    "ISFP": 8.8,
    "ESTJ": 8.7,
    "ESFP": 8.5,
    "ENFP": 8.1,
    "ISTP": 5.4,
    "INFP": 4.4,
    "ESTP": 4.3,
    "INTP": 3.3,
    "ENTP": 3.2,
    "ENFJ": 2.5,
    "INTJ": 2.1,
    "ENTJ": 1.8,
    "INFJ": 1.5,
}
LEANINGS = ("left", "centre-left", "centre", "centre-right", "right")
MAX_NAME, MAX_USERNAME, MAX_BIO, MAX_PERSONA = 80, 30, 300, 600


class Marginals(BaseModel):
    """Independent categorical marginals (weights need not sum to 1; they are normalised).

    The defaults other than MBTI are *illustrative*, not measured: replace them with the
    marginals of the community you study (``--marginals FILE.yaml``, any subset of keys).
    """

    model_config = ConfigDict(extra="forbid")

    age: dict[str, float] = Field(
        default_factory=lambda: {"18-24": 0.22, "25-34": 0.30, "35-49": 0.27, "50-64": 0.15, "65-80": 0.06},
        description="Age bands 'lo-hi' (inclusive) and their weights; an age is drawn uniformly within the band.",
    )
    gender: dict[str, float] = Field(
        default_factory=lambda: {"female": 0.48, "male": 0.49, "non-binary": 0.03}, description="Gender weights."
    )
    country: dict[str, float] = Field(
        default_factory=lambda: {
            "US": 0.40,
            "UK": 0.12,
            "India": 0.12,
            "Japan": 0.08,
            "Brazil": 0.08,
            "Germany": 0.07,
            "Canada": 0.07,
            "Nigeria": 0.06,
        },
        description="Country weights.",
    )
    mbti: dict[str, float] = Field(
        default_factory=lambda: dict(MBTI_US), description="MBTI type weights (US estimates)."
    )
    political_leaning: dict[str, float] = Field(
        default_factory=lambda: {"left": 0.15, "centre-left": 0.25, "centre": 0.25, "centre-right": 0.2, "right": 0.15},
        description="Leaning weights; keys must be among " + ", ".join(LEANINGS) + ".",
    )
    interests: dict[str, float] = Field(
        default_factory=lambda: dict.fromkeys(DEFAULT_INTERESTS, 1.0),
        description="Interest topics and their weights; each person gets interests_per_person distinct ones.",
    )
    interests_per_person: tuple[int, int] = Field((1, 3), description="Inclusive range of interests per person.")
    stance_by_leaning: dict[str, float] = Field(
        default_factory=lambda: {"left": 0.6, "centre-left": 0.3, "centre": 0.0, "centre-right": -0.3, "right": -0.6},
        description="Mean stance on the issue (-1 against .. +1 for) by leaning; the sign convention is the issue's.",
    )
    stance_sd: float = Field(0.2, ge=0, description="Spread of stance around its leaning's mean (clipped to [-1, 1]).")

    @field_validator("age", "gender", "country", "mbti", "political_leaning", "interests")
    @classmethod
    def _weights(cls, v: dict[str, float]) -> dict[str, float]:
        if not v:
            raise ValueError("needs at least one category")
        bad = [k for k, w in v.items() if not (isinstance(w, (int, float)) and np.isfinite(w) and w >= 0)]
        if bad or sum(v.values()) <= 0:
            raise ValueError(f"weights must be finite, >= 0 and not all zero (bad: {bad[:3]})")
        return v

    @field_validator("age")
    @classmethod
    def _bands(cls, v: dict[str, float]) -> dict[str, float]:
        for band in v:
            _band(band)
        return v

    @field_validator("political_leaning", "stance_by_leaning")
    @classmethod
    def _leanings(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = [k for k in v if k not in LEANINGS]
        if unknown:
            raise ValueError(f"unknown leaning {unknown[0]!r}; allowed: {', '.join(LEANINGS)}")
        return v


def _band(band: str) -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in band.split("-"))
    except ValueError:
        raise ValueError(f"age band {band!r} is not 'lo-hi'") from None
    if not 0 <= lo <= hi <= 120:
        raise ValueError(f"age band {band!r} must satisfy 0 <= lo <= hi <= 120")
    return lo, hi


def load_marginals(path: str | Path | None) -> Marginals:
    """Defaults, overridden by the keys of a YAML file; errors name the file and key."""
    if path is None:
        return Marginals()

    data = read_yaml_mapping(Path(path))
    try:
        return Marginals.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise ConfigError(f"{path}: {'.'.join(str(x) for x in e['loc'])}: {e['msg']}") from None


@dataclass
class Person:
    """The sampled (structured) part of one generated agent, then the model-written prose."""

    id: int
    age: int
    gender: str
    country: str
    mbti: str
    political_leaning: str
    interests: list[str]
    stance: float
    goal: str
    name: str = ""
    username: str = ""
    bio: str = ""
    persona: str = ""
    prose_source: str = "llm"
    notes: list[str] = field(default_factory=list)


def _draw(rng: np.random.Generator, weights: dict[str, float], n: int) -> list[str]:
    keys = list(weights)
    p = np.array([weights[k] for k in keys], dtype=np.float64)
    return [keys[i] for i in rng.choice(len(keys), size=n, p=p / p.sum())]


def sample_people(n: int, seed: int, marginals: Marginals, issue: str) -> list[Person]:
    """Structured attributes of ``n`` people, each attribute from its own seeded stream."""
    if n < 1:
        raise ConfigError(f"--n: must be at least 1, got {n}")
    lo, hi = marginals.interests_per_person
    pool = list(marginals.interests)
    if not 1 <= lo <= hi or hi > len(pool):
        raise ConfigError(
            f"interests_per_person: need 1 <= lo <= hi <= {len(pool)} (the number of interests), got {(lo, hi)}"
        )
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(8)]
    bands = _draw(streams[0], marginals.age, n)
    ages = [int(streams[1].integers(_band(b)[0], _band(b)[1] + 1)) for b in bands]
    genders = _draw(streams[2], marginals.gender, n)
    countries = _draw(streams[3], marginals.country, n)
    mbtis = _draw(streams[4], marginals.mbti, n)
    leanings = _draw(streams[5], marginals.political_leaning, n)
    w = np.array([marginals.interests[t] for t in pool], dtype=np.float64)
    w = w / w.sum()
    interests = []
    for _ in range(n):
        k = int(streams[6].integers(lo, hi + 1))
        k = min(k, int(np.count_nonzero(w)))
        interests.append([pool[j] for j in streams[6].choice(len(pool), size=k, replace=False, p=w)])
    noise = streams[7].normal(0.0, marginals.stance_sd, size=n)
    people = []
    for i in range(n):
        stance = float(np.clip(marginals.stance_by_leaning.get(leanings[i], 0.0) + noise[i], -1.0, 1.0))
        stance = round(stance, 3)
        people.append(
            Person(
                i,
                ages[i],
                genders[i],
                countries[i],
                mbtis[i],
                leanings[i],
                interests[i],
                stance,
                goal_for(stance, issue),
            )
        )
    return people


PROSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
        "username": {"type": "string", "minLength": 1, "maxLength": MAX_USERNAME},
        "bio": {"type": "string", "minLength": 1, "maxLength": MAX_BIO},
        "persona": {"type": "string", "minLength": 1, "maxLength": MAX_PERSONA},
    },
    "required": ["name", "username", "bio", "persona"],
    "additionalProperties": False,
}


def prose_messages(p: Person, description: str, issue: str, avoid: Sequence[str] = ()) -> list[dict[str, str]]:
    """The request for one person's prose: the sampled facts are given, never asked for."""
    facts = (
        f"age {p.age}; gender {p.gender}; country {p.country}; MBTI {p.mbti}; political leaning "
        f"{p.political_leaning}; interests: {', '.join(p.interests)}; stance on {issue}: {p.stance:+.2f} "
        f"(-1 against .. +1 for); private goal: {p.goal}"
    )
    user = (
        f"Community: {quote_untrusted(description, 1000)}\nPerson: {facts}\n"
        "Write this person's display name, a social-media username (letters, digits, underscores), a short public "
        f"bio (at most {MAX_BIO} characters) and a persona paragraph (at most {MAX_PERSONA} characters) describing "
        "how they think and post. Everything must agree with the facts above, including the stance and goal."
    )
    if avoid:
        user += "\nDo not reuse these bios: " + " | ".join(quote_untrusted(a, 120) for a in avoid)
    return [
        {"role": "system", "content": "You write realistic, varied social-media user profiles as one JSON object."},
        {"role": "user", "content": user},
    ]


def _clean_username(raw: str, fallback: str) -> str:
    s = "".join(c for c in raw if c.isascii() and (c.isalnum() or c == "_"))[:MAX_USERNAME]
    return s or fallback


def _apply_prose(p: Person, data: Any) -> None:
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    for k in ("name", "username", "bio", "persona"):
        if not isinstance(data.get(k), str) or not data[k].strip():
            raise ValueError(f"field {k!r} missing or empty")
    p.name = clean_text(" ".join(data["name"].split()), MAX_NAME).text
    p.username = _clean_username(data["username"], f"user{p.id}")
    p.bio = clean_text(" ".join(data["bio"].split()), MAX_BIO).text
    p.persona = clean_text(" ".join(data["persona"].split()), MAX_PERSONA).text


def _fallback_prose(p: Person, issue: str) -> None:
    """When the model fails twice the person keeps a templated profile (recorded in ``prose_source``)."""
    p.name = p.name or f"User {p.id}"
    p.username = p.username or f"user{p.id}"
    p.bio = (f"{p.age}, {p.country}. Into {', '.join(p.interests)}.")[:MAX_BIO]
    side = "for" if p.stance >= 0.2 else "against" if p.stance <= -0.2 else "undecided on"
    p.persona = f"A {p.political_leaning} {p.mbti} who is {side} {issue}."[:MAX_PERSONA]
    p.prose_source = "template"


def write_prose(
    people: list[Person], description: str, issue: str, llm: LLMConfig, seed: int, batch: int = 64
) -> dict[str, int]:
    """Ask the model for every person's prose (batched), re-ask once on invalid or duplicate output.

    Returns counts (calls, invalid answers, duplicates re-asked, template fallbacks) for the report.
    """
    backend = build_backend(llm)
    stats = {"calls": 0, "invalid": 0, "duplicates": 0, "fallback": 0}
    seen_bios: set[str] = set()
    try:
        todo = list(people)
        for attempt in range(2):
            retry: list[Person] = []
            for start in range(0, len(todo), batch):
                chunk = todo[start : start + batch]
                reqs = [
                    LLMRequest(
                        request_id=f"popgen-{p.id}-{attempt}",
                        messages=[
                            ChatMessage(**m)
                            for m in prose_messages(p, description, issue, sorted(seen_bios)[:3] if attempt else ())
                        ],
                        json_schema=PROSE_SCHEMA,
                        max_tokens=400,
                        temperature=llm.temperature,
                        seed=int(np.random.SeedSequence([seed, p.id, attempt]).generate_state(1)[0] >> 1),
                    )
                    for p in chunk
                ]
                results = run_coro_sync(backend.generate(reqs))
                stats["calls"] += len(reqs)
                for p, res in zip(chunk, results):
                    try:
                        if not res.ok:
                            raise ValueError(f"backend error: {res.error}")
                        _apply_prose(p, parse_json_lenient(res.text))
                    except ValueError as exc:
                        stats["invalid"] += 1
                        p.notes.append(clean_text(str(exc), 200).text)
                        retry.append(p)
                        continue
                    key = p.bio.casefold()
                    if key in seen_bios:
                        stats["duplicates"] += 1
                        retry.append(p)
                        continue
                    seen_bios.add(key)
            todo = retry
            if not todo:
                break
        for p in todo:
            _fallback_prose(p, issue)
            stats["fallback"] += 1
    finally:
        backend.close()
    _dedupe_usernames(people)
    return stats


def _dedupe_usernames(people: list[Person]) -> None:
    seen: set[str] = set()
    for p in people:
        base, k = p.username, 1
        while p.username.casefold() in seen:
            k += 1
            p.username = f"{base[: MAX_USERNAME - len(str(k)) - 1]}_{k}"
        seen.add(p.username.casefold())


COLUMNS = (
    *OASIS_REQUIRED_COLUMNS,
    "stance",
    "goal",
    "age",
    "gender",
    "country",
    "mbti",
    "political_leaning",
    "interests",
    "prose_source",
)


def write_csv(people: Sequence[Person], out: str | Path) -> Path:
    """OASIS-style CSV (``population.source: oasis_csv``); extra columns carry the sampled attributes."""
    out = Path(out)
    if out.exists() and out.is_dir():
        raise SociumError(f"--out {out}: is a directory, expected a CSV file path")
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for p in people:
            w.writerow(
                [
                    p.id,
                    p.name,
                    p.username,
                    "[]",
                    "[]",
                    p.persona,
                    p.bio,
                    f"{p.stance:.3f}",
                    p.goal,
                    p.age,
                    p.gender,
                    p.country,
                    p.mbti,
                    p.political_leaning,
                    json.dumps(p.interests),
                    p.prose_source,
                ]
            )
    return out


def generate_population(
    description: str,
    n: int,
    out: str | Path,
    *,
    seed: int = 0,
    issue: str | None = None,
    marginals: Marginals | None = None,
    llm: LLMConfig | None = None,
) -> dict[str, Any]:
    """Sample, write prose, de-duplicate, write the CSV; returns a summary (counts and marginals)."""
    if not description.strip():
        raise ConfigError("DESCRIPTION: must not be empty")
    issue = (issue or description).strip()[:200]
    m = marginals or Marginals()
    people = sample_people(n, seed, m, issue)
    stats = write_prose(people, description, issue, llm or LLMConfig(backend="embedded"), seed)
    path = write_csv(people, out)
    return {
        "out": str(path),
        "n": n,
        "seed": seed,
        "issue": issue,
        **stats,
        "marginals": {
            k: observed_shares([getattr(p, k) for p in people])
            for k in ("gender", "country", "mbti", "political_leaning")
        },
    }


def observed_shares(values: Sequence[str]) -> dict[str, float]:
    keys, counts = np.unique(np.asarray(values, dtype=object).astype(str), return_counts=True)
    return {str(k): round(float(c) / len(values), 4) for k, c in zip(keys, counts)}
