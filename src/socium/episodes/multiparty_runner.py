"""``socium group-episodes CONFIG``: N-party deal episodes under agents / mindreaders / script.

The run's trace is ``OUT/group_episodes.duckdb`` (``group_episodes``, ``group_turns``,
``llm_calls``, ``run_meta``), one transaction per episode, so an interrupted run continues where
it stopped and a changed config is refused rather than mixed in.
"""

from __future__ import annotations

import hashlib
import json
import math
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import duckdb
import numpy as np
import pyarrow as pa
from pydantic import ConfigDict, Field, field_validator

from socium.agents.call_log import call_rows
from socium.config.base import StrictNumbers
from socium.config.llm import LLMConfig
from socium.config.loading import read_yaml_mapping, validate_dict
from socium.episodes.health import EpisodeHealth
from socium.episodes.loop import CallRecorder
from socium.episodes.multiparty import GroupLimits, GroupResult, run_group_episode
from socium.episodes.multiparty_prompts import group_access
from socium.episodes.multiparty_task import MAX_PARTIES, DealTask, GroupMode, GroupSpec, TurnTaking, make_characters
from socium.episodes.sotopia import RelationshipType
from socium.errors import RunDirError, TraceError
from socium.llm.base import LLMBackend, run_coro_sync
from socium.llm.cache import llm_calls_ddl
from socium.llm.factory import build_backend
from socium.llm.wrappers import CachingBackend
from socium.platform.text import clean_text
from socium.reporting import progress
from socium.trace.rundir import default_out, locked_out_dir
from socium.trace.safe_write import replace_file
from socium.trace.store import open_trace

DB_NAME = "group_episodes.duckdb"


class GroupEpisodesConfig(StrictNumbers):
    """Deals x modes x repeats of N-party episodes."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("group-episodes", min_length=1, max_length=100, description="Run name.")
    seed: int = Field(0, ge=0, description="Root seed: task generation, characters, turn order, request seeds.")
    out: str | None = Field(None, description="Run directory (default runs/<name>-seed<seed>).")
    llm: LLMConfig = Field(default_factory=LLMConfig, description="The model playing (or writing) the characters.")
    judge_llm: LLMConfig | None = Field(None, description="SOTOPIA-Eval judge for every character; null: none.")
    modes: list[GroupMode] = Field(
        default=["agents", "mindreaders", "script"],
        min_length=1,
        description="Perspectives to run each deal under.",
    )
    parties: int = Field(3, ge=3, le=MAX_PARTIES, description="Characters per episode.")
    deals: int = Field(4, ge=1, description="Distinct deal instances (each run in every mode).")
    pot: int = Field(100, ge=10, description="Points to split.")
    repeats: int = Field(1, ge=1, description="Episodes per (deal, mode).")
    turn_taking: TurnTaking = Field(
        "round_robin",
        description="round_robin, random (seeded, no one twice running) "
        "or addressed (each speaker names who talks next).",
    )
    relationship: Literal["stranger", "know_by_name", "acquaintance", "friend"] = Field(
        "acquaintance", description="What characters know of each other in agents mode (SOTOPIA relationship)."
    )
    max_turns: int = Field(12, ge=1, le=40, description="Turn cap (script length cap too).")
    max_turn_chars: int = Field(1000, ge=1, description="Each quoted turn is cut to this in prompts.")
    argument_chars: int = Field(400, ge=16, le=1000, description="maxLength of an utterance in every mode.")
    reask: bool = Field(True, description="Re-ask once with the validation error.")

    @field_validator("modes")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"modes must not repeat: {v}")
        return v

    def out_dir(self) -> Path:
        return Path(self.out) if self.out else default_out(self.name, f"-seed{self.seed}")

    def config_hash(self) -> str:
        data = self.model_dump(mode="json", exclude={"out"})
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def limits(self) -> GroupLimits:
        return GroupLimits(
            max_turns=self.max_turns,
            max_turn_chars=self.max_turn_chars,
            argument_chars=self.argument_chars,
            max_tokens=self.llm.max_tokens,
            temperature=self.llm.temperature,
            reask=self.reask,
        )


def load_group_config(path: str | Path, overrides: list[str] | None = None) -> GroupEpisodesConfig:
    return validate_dict(GroupEpisodesConfig, read_yaml_mapping(path), overrides, source=str(path))


def build_group_specs(cfg: GroupEpisodesConfig) -> list[GroupSpec]:
    """Every episode in write order: repeat -> deal -> mode (so a partial run stays balanced across modes)."""
    specs = []
    rel = RelationshipType[cfg.relationship.upper()]
    for d in range(cfg.deals):
        rng = np.random.default_rng(np.random.SeedSequence(cfg.seed, spawn_key=(7, d)))
        sid = f"deal{cfg.parties}-{d:04d}"
        task = DealTask.generate(rng, cfg.parties, cfg.pot)
        chars = make_characters(rng, cfg.parties, sid)
        for rep in range(cfg.repeats):
            seed = int(np.random.SeedSequence(cfg.seed, spawn_key=(8, d, rep)).generate_state(1)[0] & 0x7FFFFFFF)
            for mode in cfg.modes:
                specs.append(
                    (
                        rep,
                        d,
                        GroupSpec(
                            episode_id=f"{sid}-r{rep}-{mode}",
                            index=0,
                            mode=mode,
                            scenario_id=sid,
                            seed=seed,
                            repeat=rep,
                            turn_taking=cfg.turn_taking,
                            relationship=rel,
                            characters=chars,
                            task=task,
                        ),
                    )
                )
    specs.sort(key=lambda t: (t[0], t[1]))
    return [s.model_copy(update={"index": i}) for i, (_, _, s) in enumerate(specs)]


_EPISODES = (
    "CREATE TABLE IF NOT EXISTS group_episodes (episode_id VARCHAR PRIMARY KEY, idx BIGINT, mode VARCHAR, "
    "scenario_id VARCHAR, seed BIGINT, repeat BIGINT, parties BIGINT, turn_taking VARCHAR, n_turns BIGINT, "
    "ended_by VARCHAR, valid BOOLEAN, invalid_reason VARCHAR, deal BOOLEAN, success BOOLEAN, "
    "goals JSON, mean_goal DOUBLE, detail VARCHAR, answers JSON, answer_errors JSON, judge_scores JSON, "
    "judge_mean_goal DOUBLE, judge_error VARCHAR, n_speak BIGINT, words_per_turn DOUBLE, "
    "invalid_turns BIGINT, speakers JSON, n_calls BIGINT, prompt_tokens BIGINT, completion_tokens BIGINT, "
    "model VARCHAR, spec JSON, wall_s DOUBLE)"
)
_TURNS = (
    "CREATE TABLE IF NOT EXISTS group_turns (episode_id VARCHAR, turn BIGINT, speaker BIGINT, "
    "action_type VARCHAR, argument VARCHAR, next_speaker BIGINT, raw VARCHAR, valid BOOLEAN, error VARCHAR)"
)


class GroupStore:
    """Single writer of ``group_episodes.duckdb``; values only as Arrow tables."""

    def __init__(self, out: Path, cfg: GroupEpisodesConfig, force: bool = False) -> None:
        self.path = out / DB_NAME
        out.mkdir(parents=True, exist_ok=True)
        if force and self.path.exists():
            self.path.unlink()
        self.con = open_trace(self.path, read_only=False)  # a corrupt file: one error line naming it
        for ddl in (
            _EPISODES,
            _TURNS,
            llm_calls_ddl(),
            "CREATE TABLE IF NOT EXISTS run_meta (key VARCHAR PRIMARY KEY, value JSON)",
        ):
            self.con.execute(ddl)
        got = self.con.execute("SELECT value FROM run_meta WHERE key = 'config_hash'").fetchall()
        if not got:
            self.con.execute(
                "INSERT INTO run_meta VALUES ('config_hash', ?), ('config', ?)",
                [json.dumps(cfg.config_hash()), cfg.model_dump_json()],
            )
        elif json.loads(got[0][0]) != cfg.config_hash():
            self.con.close()
            raise RunDirError(f"{self.path} holds group episodes of a different config; use another --out or --force")

    def done_ids(self) -> set[str]:
        return {r[0] for r in self.con.execute("SELECT episode_id FROM group_episodes").fetchall()}

    def _insert(self, table: str, rows: dict[str, list]) -> None:
        if not next(iter(rows.values())):
            return
        tbl = pa.table(rows)
        self.con.register("_batch", tbl)
        names = ", ".join(f'"{c}"' for c in tbl.column_names)  # column names are ours, values are bound
        try:
            self.con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _batch")
        finally:
            self.con.unregister("_batch")

    def write(self, res: GroupResult, calls: list) -> None:
        s = res.spec
        speak = [t for t in res.turns if t.valid and t.action_type == "speak"]
        words = [len(t.argument.split()) for t in speak]
        j = res.judge
        row: dict[str, list[Any]] = {
            "episode_id": [s.episode_id],
            "idx": [s.index],
            "mode": [s.mode],
            "scenario_id": [s.scenario_id],
            "seed": [s.seed],
            "repeat": [s.repeat],
            "parties": [len(s.characters)],
            "turn_taking": [s.turn_taking],
            "n_turns": [len(res.turns)],
            "ended_by": [res.ended_by],
            "valid": [res.invalid_reason is None],
            "invalid_reason": [res.invalid_reason],
            "deal": [res.deal],
            "success": [res.success],
            "goals": [json.dumps(res.goals)],
            "mean_goal": [float(np.mean(res.goals)) if res.goals else None],
            "detail": [res.detail],
            "answers": [json.dumps(res.answers)],
            "answer_errors": [json.dumps(res.answer_errors)],
            "judge_scores": [json.dumps(j) if j else None],
            "judge_mean_goal": [float(np.mean([v["goal"] for v in j.values()])) if j else None],
            "judge_error": [res.judge_error],
            "n_speak": [len(speak)],
            "words_per_turn": [sum(words) / len(words) if words else None],
            "invalid_turns": [sum(1 for t in res.turns if not t.valid)],
            "speakers": [json.dumps([t.speaker for t in res.turns])],
            "n_calls": [len(calls)],
            "prompt_tokens": [sum(c[2].prompt_tokens for c in calls)],
            "completion_tokens": [sum(c[2].completion_tokens for c in calls)],
            "model": [res.model],
            "spec": [s.model_dump_json()],
            "wall_s": [res.wall_s],
        }
        turns: dict[str, list] = {
            k: []
            for k in (
                "episode_id",
                "turn",
                "speaker",
                "action_type",
                "argument",
                "next_speaker",
                "raw",
                "valid",
                "error",
            )
        }
        for t in res.turns:
            for k, v in (
                ("episode_id", s.episode_id),
                ("turn", t.turn),
                ("speaker", t.speaker),
                ("action_type", t.action_type),
                ("argument", t.argument),
                ("next_speaker", t.next_speaker),
                ("raw", t.raw),
                ("valid", t.valid),
                ("error", t.error),
            ):
                turns[k].append(v)
        con = self.con
        con.begin()
        try:
            first = int(con.execute("SELECT coalesce(max(call_id) + 1, 0) FROM llm_calls").fetchall()[0][0])
            self._insert("group_episodes", row)
            self._insert("group_turns", turns)
            rows = call_rows(calls, first)
            for col in ("prompt", "response", "error", "metadata", "params"):
                rows[col] = [None if v is None else clean_text(v, 1_000_000).text for v in rows[col]]
            if rows["call_id"]:
                self._insert("llm_calls", rows)
            con.commit()
        except Exception as exc:
            con.rollback()
            raise TraceError(f"could not write group episode {s.episode_id}: {exc}") from exc

    def close(self) -> None:
        self.con.close()


def _t_ci(values: list[float]) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    m = float(np.mean(values))
    if len(values) < 2:
        return m, None, None
    from scipy.special import stdtrit

    half = float(stdtrit(len(values) - 1, 0.975)) * float(np.std(values, ddof=1)) / math.sqrt(len(values))
    return m, max(0.0, m - half), min(10.0, m + half)


def _wilson(k: int, n: int) -> tuple[float | None, float | None]:
    if n == 0:
        return None, None
    z, p = 1.959964, k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def summarize_groups(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Per mode: episodes, deal and success rates (Wilson 95% CI), mean goal per character (t 95% CI), words,
    invalid."""
    rows = con.execute(
        "SELECT mode, deal, success, goals, words_per_turn, n_speak, invalid_turns, n_turns, n_calls, "
        "prompt_tokens, completion_tokens, judge_mean_goal FROM group_episodes ORDER BY idx"
    ).fetchall()
    out: dict[str, Any] = {"modes": {}, "access": {}}
    for mode in dict.fromkeys(r[0] for r in rows):
        rs = [r for r in rows if r[0] == mode]
        goals = [g for r in rs for g in json.loads(r[3])]
        deals, succ = sum(bool(r[1]) for r in rs), sum(bool(r[2]) for r in rs)
        m, lo, hi = _t_ci(goals)
        speak = sum(r[5] or 0 for r in rs)
        wpt = sum((r[4] or 0) * (r[5] or 0) for r in rs) / speak if speak else None
        judge = [r[11] for r in rs if r[11] is not None]
        out["modes"][mode] = {
            "episodes": len(rs),
            "deal_rate": deals / len(rs),
            "deal_ci95": _wilson(deals, len(rs)),
            "success_rate": succ / len(rs),
            "success_ci95": _wilson(succ, len(rs)),
            "goal_mean": m,
            "goal_ci95": (lo, hi),
            "goal_n": len(goals),
            "words_per_turn": wpt,
            "turns_per_episode": float(np.mean([r[7] for r in rs])),
            "invalid_turn_rate": (sum(r[6] for r in rs) / max(1, sum(r[7] for r in rs))),
            "calls_per_episode": float(np.mean([r[8] for r in rs])),
            "tokens_per_episode": float(np.mean([(r[9] or 0) + (r[10] or 0) for r in rs])),
            "judge_goal_mean": float(np.mean(judge)) if judge else None,
        }
        out["access"][mode] = group_access(mode)
    out["episodes"] = len(rows)
    return out


def run_group_episodes(
    cfg: GroupEpisodesConfig,
    *,
    force: bool = False,
    backend: Any = None,
    judge_backend: Any = None,
    on_done: Callable[[GroupResult, int, int], None] | None = None,
) -> dict[str, Any]:
    """Run the episodes not yet in the store (in order), then summarise the whole run.

    ``backend`` / ``judge_backend`` replace the config's (tests); their calls are recorded too.
    """
    with locked_out_dir(cfg.out_dir(), progress.current().note, force):  # one writer per --out, as `socium run`
        return _run_locked(cfg, force, backend, judge_backend, on_done)


def _run_locked(
    cfg: GroupEpisodesConfig,
    force: bool,
    backend: Any,
    judge_backend: Any,
    on_done: Callable[[GroupResult, int, int], None] | None,
) -> dict[str, Any]:
    out = cfg.out_dir()
    specs = build_group_specs(cfg)
    store = GroupStore(out, cfg, force)
    rec = CallRecorder()
    own = backend is None
    b = build_backend(cfg.llm, cache=rec) if own else CachingBackend(backend, rec)
    jb: LLMBackend | None = None
    if judge_backend is not None:
        jb = CachingBackend(judge_backend, rec)
    elif cfg.judge_llm is not None:
        jb = b if cfg.judge_llm == cfg.llm else build_backend(cfg.judge_llm, cache=rec)
    t0 = time.perf_counter()
    try:
        done = store.done_ids()
        todo = [s for s in specs if s.episode_id not in done]
        health = EpisodeHealth(cfg.llm, f"socium group-episodes CONFIG --out {shlex.quote(str(out))}")
        for k, spec in enumerate(todo):
            res = run_coro_sync(run_group_episode(spec, cfg.limits(), b, jb))
            calls = rec.drain(spec.episode_id)
            problem = health.check(spec.episode_id, [c[2] for c in calls], res.turns)
            if problem is not None:  # the run-level guards of `socium run`: stop, this episode unwritten
                raise problem
            store.write(res, calls)
            if on_done:
                on_done(res, k + 1, len(todo))
        summary = summarize_groups(store.con)
    finally:
        store.close()
        if own:
            b.close()
            if jb is not None and jb is not b:
                jb.close()
    summary["this_invocation"] = {
        "episodes": len(todo),
        "skipped": len(specs) - len(todo),
        "wall_s": time.perf_counter() - t0,
    }
    replace_file(out / "summary.json", json.dumps(summary, indent=2, default=str))
    replace_file(out / "config.json", cfg.model_dump_json(indent=2))
    return summary
