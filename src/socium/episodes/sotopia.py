"""SOTOPIA's profiles as typed records, and the visibility rules its prompts depend on.

The models read the JSONL exports of SOTOPIA's Redis store (``agent_profiles.jsonl`` and friends)
and write them back unchanged, so a run can cite the exact upstream records it used. Unknown keys
are kept (``extra='allow'``) because newer SOTOPIA exports add fields we do not interpret.
Nothing here knows where the data lives: every loader takes a path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, ValidationError

from socium.errors import InputFileError


class RelationshipType(IntEnum):
    """SOTOPIA's ``RelationshipType``; the code decides how much of the other's profile is visible."""

    STRANGER = 0
    KNOW_BY_NAME = 1
    ACQUAINTANCE = 2
    FRIEND = 3
    ROMANTIC_RELATIONSHIP = 4
    FAMILY_MEMBER = 5


def _relationship(value: object) -> RelationshipType:
    """SOTOPIA writes the code as a decimal string ("3"); accept that, ints, and enum names."""
    if isinstance(value, RelationshipType):
        return value
    if isinstance(value, bool):
        raise ValueError("relationship must be 0..5, not a boolean")
    if isinstance(value, int):
        return RelationshipType(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return RelationshipType(int(text))
        try:
            return RelationshipType[text.upper()]
        except KeyError:
            pass
    raise ValueError(f"relationship must be 0..5 or one of {[r.name.lower() for r in RelationshipType]}, got {value!r}")


# Read from a number, a numeric string or a name; written back as SOTOPIA's files store it ("3").
Relationship = Annotated[
    RelationshipType, BeforeValidator(_relationship), PlainSerializer(lambda v: str(int(v)), when_used="json")
]


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def to_record(self) -> dict[str, Any]:
        """The JSON object as SOTOPIA writes it; fields absent from the input stay absent."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class CharacterProfile(_Record):
    """One SOTOPIA character (upstream ``AgentProfile``)."""

    agent_id: str = Field(validation_alias=AliasChoices("agent_id", "pk"), min_length=1)
    first_name: str
    last_name: str = ""
    age: int = Field(0, ge=0)
    occupation: str = ""
    gender: str = ""
    gender_pronoun: str = ""
    public_info: str = ""
    big_five: str = ""
    moral_values: list[str] = Field(default_factory=list)
    schwartz_personal_values: list[str] = Field(default_factory=list)
    personality_and_values: str = ""
    decision_making_style: str = ""
    secret: str = ""
    mbti: str = ""
    model_id: str = ""
    tag: str = ""

    @property
    def pk(self) -> str:
        return self.agent_id

    @property
    def name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()


class EnvironmentProfile(_Record):
    """One SOTOPIA scenario: shared scenario text, one private goal per agent, required relationship."""

    env_id: str = Field(validation_alias=AliasChoices("env_id", "pk"), min_length=1)
    codename: str = ""
    source: str = ""
    scenario: str
    agent_goals: list[str] = Field(min_length=2)
    relationship: Relationship = RelationshipType.STRANGER
    age_constraint: str | None = None
    occupation_constraint: str | None = None
    agent_constraint: str | None = None
    tag: str = ""

    @property
    def pk(self) -> str:
        return self.env_id


class RelationshipProfile(_Record):
    """How two characters know each other; SOTOPIA draws episode pairs to match a scenario's level."""

    relationship_id: str = Field(validation_alias=AliasChoices("relationship_id", "pk"), min_length=1)
    agent1_id: str = Field(validation_alias=AliasChoices("agent1_id", "agent_1_id"))
    agent2_id: str = Field(validation_alias=AliasChoices("agent2_id", "agent_2_id"))
    relationship: Relationship
    background_story: str = ""


class EnvAgentCombo(_Record):
    """One fixed (scenario, character pair) of the 450-episode benchmark."""

    combo_id: str = Field(validation_alias=AliasChoices("combo_id", "pk"), min_length=1)
    env_id: str
    agent_ids: list[str] = Field(min_length=2)


M = TypeVar("M", bound=BaseModel)


def _summarise(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:5]:
        loc = ".".join(str(p) for p in e["loc"]) or "<record>"
        parts.append(f"{loc}: {e['msg']}")
    more = err.error_count() - len(parts)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def iter_jsonl(path: str | Path, model: type[M]) -> Iterator[tuple[int, M]]:
    """Yield ``(line number, record)`` so callers can report later problems (duplicates) by line."""
    p = Path(path)
    try:
        fh = p.open("rb")
    except OSError as e:
        raise InputFileError(p, None, f"cannot read: {e.strerror or e}") from e
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputFileError(p, lineno, f"not UTF-8 ({e.reason} at byte {e.start})") from e
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                raise InputFileError(p, lineno, f"invalid JSON: {e.msg} at column {e.colno}") from e
            if not isinstance(obj, dict):
                raise InputFileError(p, lineno, f"expected a JSON object, got {type(obj).__name__}")
            try:
                yield lineno, model.model_validate(obj)
            except ValidationError as e:
                raise InputFileError(p, lineno, f"invalid {model.__name__}: {_summarise(e)}") from e


def load_jsonl(path: str | Path, model: type[M]) -> list[M]:
    """All records of a JSONL file; blank lines are skipped, anything else malformed is an error."""
    return [rec for _, rec in iter_jsonl(path, model)]


def _keyed(path: Path, rows: Iterator[tuple[int, M]], key: str) -> tuple[dict[str, M], dict[str, int]]:
    out: dict[str, M] = {}
    lines: dict[str, int] = {}
    for lineno, rec in rows:
        k = getattr(rec, key)
        if k in out:
            raise InputFileError(path, lineno, f"duplicate {key} {k!r} (first on line {lines[k]})")
        out[k] = rec
        lines[k] = lineno
    return out, lines


@dataclass(frozen=True)
class SotopiaData:
    """The four SOTOPIA tables, cross-checked so an episode never refers to a missing record."""

    environments: dict[str, EnvironmentProfile]
    characters: dict[str, CharacterProfile]
    relationships: list[RelationshipProfile]
    combos: list[EnvAgentCombo]
    hard_env_ids: list[str] = field(default_factory=list)

    FILES = {
        "characters": "agent_profiles.jsonl",
        "environments": "environment_profiles.jsonl",
        "relationships": "relationship_profiles.jsonl",
        "combos": "env_agent_combo_storages.jsonl",
    }
    HARD_FILE = "hard_env_ids.txt"

    @classmethod
    def load(cls, folder: str | Path) -> SotopiaData:
        """Load and cross-check a folder holding SOTOPIA's JSONL exports (``hard_env_ids.txt`` optional)."""
        root = Path(folder)
        paths = {k: root / v for k, v in cls.FILES.items()}
        characters, _ = _keyed(paths["characters"], iter_jsonl(paths["characters"], CharacterProfile), "agent_id")
        environments, _ = _keyed(paths["environments"], iter_jsonl(paths["environments"], EnvironmentProfile), "env_id")
        relationships: list[RelationshipProfile] = []
        for lineno, rel in iter_jsonl(paths["relationships"], RelationshipProfile):
            for aid in (rel.agent1_id, rel.agent2_id):
                if aid not in characters:
                    raise InputFileError(paths["relationships"], lineno, f"unknown agent id {aid!r}")
            relationships.append(rel)
        combos: list[EnvAgentCombo] = []
        for lineno, combo in iter_jsonl(paths["combos"], EnvAgentCombo):
            if combo.env_id not in environments:
                raise InputFileError(paths["combos"], lineno, f"unknown env_id {combo.env_id!r}")
            for aid in combo.agent_ids:
                if aid not in characters:
                    raise InputFileError(paths["combos"], lineno, f"unknown agent id {aid!r}")
            combos.append(combo)
        hard: list[str] = []
        hard_path = root / cls.HARD_FILE
        if hard_path.exists():
            for lineno, line in enumerate(hard_path.read_text(encoding="utf-8").splitlines(), start=1):
                env_id = line.strip()
                if not env_id:
                    continue
                if env_id not in environments:
                    raise InputFileError(hard_path, lineno, f"unknown env_id {env_id!r}")
                hard.append(env_id)
        return cls(environments, characters, relationships, combos, hard)

    def relationships_between(self, a: str, b: str) -> list[RelationshipProfile]:
        """All stored relationships of a pair, either order (the upstream file lists a few pairs twice)."""
        return [r for r in self.relationships if {r.agent1_id, r.agent2_id} == {a, b}]


# --- visibility markup --------------------------------------------------------------------------

Viewer = Literal["agent_0", "agent_1", "environment", "omniscient"]
HINT_TAGS = ("extra_info", "strategy_hint", "clarification_hint")
_TAG = re.compile(r"<(/?)(root|p|extra_info|strategy_hint|clarification_hint)((?:\s+[^<>]*?)?)\s*(/?)>")
_VIEWER_ATTR = re.compile(r"""viewer\s*=\s*(?:'([^']*)'|"([^"]*)")""")


def _may_see(viewer: str, restricted_to: str, include_environment: bool) -> bool:
    if restricted_to == "environment":
        return viewer == "environment" or include_environment
    if restricted_to == viewer:
        return True
    return viewer in ("environment", "omniscient")


def render_for(text: str, viewer: Viewer, include_environment: bool = False, hide_tags: Collection[str] = ()) -> str:
    """The part of SOTOPIA-marked-up ``text`` that ``viewer`` may read, with the tags removed.

    Mirrors SOTOPIA's ``XMLRenderer`` (``sotopia/renderers/xml_renderer.py``): ``<p viewer='agent_i'>``
    is private to agent i; hint tags (``extra_info``, ``strategy_hint``, ``clarification_hint``) keep
    their content. Differences, on purpose: the ``environment`` viewer and ``omniscient`` (a script
    writer, a mind reader) see every agent's private segments, but ``<p viewer='environment'>`` text
    (e.g. the mutual-friend answer) reaches anyone other than the ``environment`` viewer only when
    ``include_environment`` is set, because showing it to an agent gives the task away. Text that is
    not one of these tags is kept verbatim, so a stray ``<`` never swallows content as an XML parser
    would. Tags named in ``hide_tags`` are dropped with their content (a no-hints ablation).
    """
    hidden = set(hide_tags)
    out: list[str] = []
    stack: list[tuple[str, bool]] = []  # (tag, visible)
    visible = True
    pos = 0
    for m in _TAG.finditer(text):
        if visible:
            out.append(text[pos : m.start()])
        pos = m.end()
        closing, tag, attrs, selfclose = m.group(1), m.group(2), m.group(3), m.group(4)
        if closing:
            for i in range(len(stack) - 1, -1, -1):  # close the nearest matching open tag
                if stack[i][0] == tag:
                    del stack[i:]
                    break
            visible = all(v for _, v in stack)
            continue
        if selfclose:
            continue
        va = _VIEWER_ATTR.search(attrs or "")
        seg_visible = tag not in hidden
        if va is not None:
            seg_visible = seg_visible and _may_see(viewer, va.group(1) or va.group(2) or "", include_environment)
        stack.append((tag, seg_visible))
        visible = visible and seg_visible
    if visible:
        out.append(text[pos:])
    return "".join(out).strip()


_GENDER_ADJ = {"Man": "male", "Woman": "female", "Nonbinary": "nonbinary"}


def _identity(c: CharacterProfile) -> str:
    gender = _GENDER_ADJ.get(c.gender, c.gender.lower())
    desc = " ".join(w for w in (f"{c.age}-year-old", gender, c.occupation.lower()) if w)
    pronoun = f" {c.gender_pronoun} pronouns." if c.gender_pronoun else ""
    public = f" {c.public_info}" if c.public_info else ""
    return f"{c.name} is a {desc}.{pronoun}{public}"


def public_view(character: CharacterProfile, relationship_level: RelationshipType | int) -> str:
    """What the other agent may know about ``character`` at this relationship level.

    SOTOPIA's ``get_bio`` (``sotopia/envs/parallel.py``) marks the part of each bio that only its owner
    sees, by relationship: stranger -> nothing; know_by_name -> the full name; acquaintance -> name,
    age, gender, occupation, pronouns and public info; friend, romantic relationship, family member ->
    additionally the personality-and-values description. The secret is never shown. This returns the
    part left for the other agent. (SOTOPIA still lists both names as "participants" even for
    strangers; that is the prompt builder's concern, not the bio's.)
    """
    level = _relationship(relationship_level)
    if level == RelationshipType.STRANGER:
        return ""
    if level == RelationshipType.KNOW_BY_NAME:
        return character.name
    text = _identity(character)
    if level >= RelationshipType.FRIEND and character.personality_and_values:
        text += f" Personality and values description: {character.personality_and_values}"
    return text


def private_view(character: CharacterProfile, detailed: bool = False) -> str:
    """The character's own bio as SOTOPIA shows it to the character, secret included.

    SOTOPIA's self bio omits big five, MBTI, moral/Schwartz values and decision-making style;
    ``detailed`` adds them for experiments that want the full record.
    """
    text = _identity(character)
    if character.personality_and_values:
        text += f" Personality and values description: {character.personality_and_values}"
    if detailed:
        extra = [
            ("Big five", character.big_five),
            ("MBTI", character.mbti),
            ("Moral values", ", ".join(v.strip() for v in character.moral_values)),
            ("Schwartz values", ", ".join(v.strip() for v in character.schwartz_personal_values)),
            ("Decision-making style", character.decision_making_style),
        ]
        text += "".join(f" {k}: {v}." for k, v in extra if v)
    if character.secret:
        text += f" {character.first_name}'s secrets: {character.secret}"
    return text
