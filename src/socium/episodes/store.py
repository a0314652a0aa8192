"""``OUT/episodes.duckdb``: the episodes run's trace (``episodes``, ``turns``, ``llm_calls``, ``run_meta``).

Each episode is written in one transaction (its row, its turns, its calls), so a crash loses at
most the episodes in flight and a rerun continues from what is there. Values reach DuckDB only as
Arrow tables or bound parameters: transcripts are model output and never touch SQL text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from socium.agents.call_log import call_rows
from socium.episodes.config import EpisodesConfig
from socium.episodes.loop import EpisodeResult
from socium.errors import RunDirError, TraceError
from socium.llm.cache import llm_calls_ddl
from socium.platform.text import clean_text
from socium.trace.store import open_trace

DB_NAME = "episodes.duckdb"
MAX_CALL_TEXT = 1_000_000  # per llm_calls text cell; prompts are far smaller, replies are token-capped

EPISODE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("episode_id", "VARCHAR PRIMARY KEY"),
    ("idx", "BIGINT"),
    ("mode", "VARCHAR"),
    ("task_kind", "VARCHAR"),
    ("scenario_id", "VARCHAR"),
    ("env_id", "VARCHAR"),
    ("env_codename", "VARCHAR"),
    ("seed", "BIGINT"),
    ("repeat", "BIGINT"),
    ("agent_0", "VARCHAR"),
    ("agent_1", "VARCHAR"),
    ("n_turns", "BIGINT"),
    ("ended_by", "VARCHAR"),
    ("valid", "BOOLEAN"),
    ("invalid_reason", "VARCHAR"),
    ("goal_0", "DOUBLE"),
    ("goal_1", "DOUBLE"),
    ("success", "BOOLEAN"),
    ("objective_detail", "VARCHAR"),
    ("answers", "JSON"),
    ("answer_errors", "JSON"),
    ("judge_scores", "JSON"),
    ("judge_goal_0", "DOUBLE"),
    ("judge_goal_1", "DOUBLE"),
    ("judge_overall_0", "DOUBLE"),
    ("judge_overall_1", "DOUBLE"),
    ("judge_error", "VARCHAR"),
    ("n_speak", "BIGINT"),
    ("words_per_turn", "DOUBLE"),
    ("agreement", "BOOLEAN"),
    ("someone_left", "BOOLEAN"),
    ("invalid_turns", "BIGINT"),
    ("n_calls", "BIGINT"),
    ("prompt_tokens", "BIGINT"),
    ("completion_tokens", "BIGINT"),
    ("model", "VARCHAR"),
    ("judge_model", "VARCHAR"),
    ("spec", "JSON"),  # the EpisodeSpec: scenario, characters, task; lets export rebuild prompts
    ("wall_s", "DOUBLE"),  # volatile: wall clock
)
TURN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("episode_id", "VARCHAR"),
    ("turn", "BIGINT"),
    ("speaker", "BIGINT"),
    ("action_type", "VARCHAR"),
    ("argument", "VARCHAR"),
    ("raw", "VARCHAR"),
    ("valid", "BOOLEAN"),
    ("error", "VARCHAR"),
)
VOLATILE = {"episodes": {"wall_s"}, "llm_calls": {"latency_s", "created_at"}}


def _ddl(table: str, cols: Sequence[tuple[str, str]]) -> str:
    return f"CREATE TABLE IF NOT EXISTS {table} (" + ", ".join(f'"{n}" {t}' for n, t in cols) + ")"


def metrics(result: EpisodeResult) -> dict[str, Any]:
    """Descriptive per-episode metrics from the turns.

    ``words_per_turn`` is the mean whitespace word count of 'speak' turns (utterances), as the
    paper's 29.8-vs-16.0 comparison counts words said; None when nobody spoke.
    """
    speak = [t for t in result.turns if t.valid and t.action_type == "speak"]
    words = [len(t.argument.split()) for t in speak]
    return {
        "n_turns": len(result.turns),
        "n_speak": len(speak),
        "words_per_turn": (sum(words) / len(words)) if words else None,
        "someone_left": any(t.valid and t.action_type == "leave" for t in result.turns),
        "invalid_turns": sum(1 for t in result.turns if not t.valid),
    }


def episode_row(result: EpisodeResult) -> dict[str, Any]:
    s = result.spec
    obj, judge = result.objective, result.judge
    row: dict[str, Any] = {
        "episode_id": s.episode_id,
        "idx": s.index,
        "mode": s.mode,
        "task_kind": s.kind,
        "scenario_id": s.scenario_id,
        "env_id": s.env.env_id,
        "env_codename": s.env.codename,
        "seed": s.seed,
        "repeat": s.repeat,
        "agent_0": s.agents[0].name,
        "agent_1": s.agents[1].name,
        "ended_by": result.ended_by,
        "valid": result.valid,
        "invalid_reason": result.invalid_reason,
        "goal_0": obj.goal[0] if obj else None,
        "goal_1": obj.goal[1] if obj else None,
        "success": obj.success if obj else None,
        "objective_detail": result.objective_detail,
        "answers": json.dumps(result.answers),
        "answer_errors": json.dumps(result.answer_errors),
        "judge_scores": json.dumps(judge) if judge else None,
        "judge_goal_0": judge["agent_0"]["goal"] if judge else None,
        "judge_goal_1": judge["agent_1"]["goal"] if judge else None,
        "judge_overall_0": judge["agent_0"]["overall"] if judge else None,
        "judge_overall_1": judge["agent_1"]["overall"] if judge else None,
        "judge_error": result.judge_error,
        "agreement": result.agreement,
        "n_calls": len(result.calls),
        "prompt_tokens": sum(c[2].prompt_tokens for c in result.calls),
        "completion_tokens": sum(c[2].completion_tokens for c in result.calls),
        "model": result.model,
        "judge_model": result.judge_model,
        "spec": s.model_dump_json(),
        "wall_s": result.wall_s,
    }
    row.update(metrics(result))
    return row


def _schema(cols: Sequence[tuple[str, str]]) -> pa.Schema:
    types = {
        "VARCHAR": pa.string(),
        "JSON": pa.string(),
        "BIGINT": pa.int64(),
        "DOUBLE": pa.float64(),
        "BOOLEAN": pa.bool_(),
    }
    return pa.schema([(n, types[t.split()[0]]) for n, t in cols])


class EpisodeStore:
    """The single writer of one run's database."""

    def __init__(self, out_dir: str | Path, cfg: EpisodesConfig, *, force: bool = False) -> None:
        self.path = Path(out_dir) / DB_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if force and self.path.exists():
            self.path.unlink()
        self.con = open_trace(self.path, read_only=False)  # a corrupt file: one error line naming it
        for stmt in (
            _ddl("episodes", EPISODE_COLUMNS),
            _ddl("turns", TURN_COLUMNS),
            llm_calls_ddl(),
            "CREATE TABLE IF NOT EXISTS run_meta (key VARCHAR PRIMARY KEY, value JSON)",
        ):
            self.con.execute(stmt)
        found = self.con.execute("SELECT value FROM run_meta WHERE key = 'config_hash'").fetchall()
        stored = found[0] if found else None
        if stored is None:
            self.con.execute(
                "INSERT INTO run_meta VALUES ('config_hash', ?), ('config', ?)",
                [json.dumps(cfg.config_hash()), cfg.model_dump_json()],
            )
        elif json.loads(stored[0]) != cfg.config_hash():
            self.con.close()
            raise RunDirError(f"{self.path} holds episodes of a different config; use another --out or --force")

    def done_ids(self) -> set[str]:
        return {r[0] for r in self.con.execute("SELECT episode_id FROM episodes").fetchall()}

    def _insert(self, table: str, cols: Sequence[tuple[str, str]], rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        tbl = pa.Table.from_pylist(rows, schema=_schema(cols))
        self.con.register("_batch", tbl)
        names = ", ".join(f'"{n}"' for n, _ in cols)
        try:
            self.con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _batch")  # names are ours
        finally:
            self.con.unregister("_batch")

    def write(self, result: EpisodeResult) -> None:
        """The episode row, its turns and its calls, in one transaction."""
        turns = [
            {
                "episode_id": result.spec.episode_id,
                "turn": t.turn,
                "speaker": t.speaker,
                "action_type": t.action_type,
                "argument": t.argument,
                "raw": t.raw,
                "valid": t.valid,
                "error": t.error,
            }
            for t in result.turns
        ]
        con = self.con
        con.begin()
        try:
            first = con.execute("SELECT coalesce(max(call_id) + 1, 0) FROM llm_calls").fetchall()[0][0]
            self._insert("episodes", EPISODE_COLUMNS, [episode_row(result)])
            self._insert("turns", TURN_COLUMNS, turns)
            calls = call_rows(result.calls, int(first))
            for col in ("prompt", "response", "error", "metadata", "params"):  # model text: valid UTF-8, no NULs
                calls[col] = [None if v is None else clean_text(v, MAX_CALL_TEXT).text for v in calls[col]]
            if calls["call_id"]:
                tbl = pa.table(calls)
                con.register("_batch", tbl)
                names = ", ".join(f'"{c}"' for c in tbl.column_names)
                try:
                    con.execute(f"INSERT INTO llm_calls ({names}) SELECT {names} FROM _batch")
                finally:
                    con.unregister("_batch")
            con.commit()
        except Exception as exc:
            con.rollback()
            raise TraceError(f"could not write episode {result.spec.episode_id}: {exc}") from exc

    def close(self) -> None:
        self.con.close()


def open_run(run_dir: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to a finished (or interrupted) episodes run."""
    path = Path(run_dir) / DB_NAME
    if not path.is_file():
        raise RunDirError(f"no {DB_NAME} in {run_dir}; run `socium episodes CONFIG --out {run_dir}` first")
    return open_trace(path)  # a corrupt or busy file is a TraceError naming it, not duckdb's traceback
