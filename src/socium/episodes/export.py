"""Episodes as chat-format JSONL for supervised fine-tuning, as Zhou et al. (2024) did with script mode.

Two formats, one JSON object ``{"messages": [...]}`` per line:

* ``turns`` (default): one example per recorded turn. The prompt is rebuilt in the *agents* view
  of the speaking character (its own profile and goal, the other's public view, the transcript so
  far), and the target is that turn as the agent's JSON action. This is how script-mode episodes
  teach a model to act as an agent: the omniscient author's turns become targets for an agent
  that sees only its own side.
* ``script``: one example per episode: the script-mode prompt and the whole script as its target.

Only valid episodes are exported, and only valid turns become targets; ``min_goal`` optionally
keeps only episodes whose goal (rule-based, else judge) reaches it, ``exclude_failed`` leaves out those
whose goal is 0. By default failed episodes are exported too (a script is a transcript to imitate
whatever its outcome); :func:`export_counts` says how many, and the CLI prints it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from socium.episodes.config import ALL_MODES, EpisodesConfig
from socium.episodes.loop import EpisodeSpec
from socium.episodes.prompts import Turn, build_script_prompt, build_turn_prompt
from socium.episodes.store import open_run
from socium.errors import ConfigError

ExportFormat = Literal["turns", "script"]


#: An episode's goal (0 to 10): the rule score where the task has one, else the judge's; the mean of both sides.
GOAL_SQL = "coalesce((goal_0 + goal_1) / 2, (judge_goal_0 + judge_goal_1) / 2)"


#: Keeps an episode unless the exclusion is asked for and its goal is exactly 0 (an unscored one stays).
NOT_FAILED_SQL = f"(NOT ? OR coalesce({GOAL_SQL}, 1) <> 0)"


def _episodes(
    run_dir: str | Path, mode: str | None, min_goal: float | None, exclude_failed: bool = False
) -> Iterator[tuple[EpisodeSpec, list[Turn]]]:
    con = open_run(run_dir)
    try:
        rows = con.execute(
            f"SELECT episode_id, spec FROM episodes WHERE valid AND (? IS NULL OR mode = ?) AND (? IS NULL OR "
            f"{GOAL_SQL} >= ?) AND {NOT_FAILED_SQL} ORDER BY idx",
            [mode, mode, min_goal, min_goal, exclude_failed],
        ).fetchall()
        for episode_id, spec_json in rows:
            turns = con.execute(
                "SELECT turn, speaker, action_type, argument FROM turns WHERE episode_id = ? AND valid ORDER BY turn",
                [episode_id],
            ).fetchall()
            yield (
                EpisodeSpec.model_validate_json(spec_json),
                [Turn(turn=t, speaker=s, action_type=a, argument=arg or "") for t, s, a, arg in turns],
            )
    finally:
        con.close()


def export_counts(
    run_dir: str | Path, mode: str | None, min_goal: float | None, exclude_failed: bool = False
) -> dict[str, int]:
    """How many valid episodes an export takes, and how many of them failed (goal 0): by default every
    valid episode is exported, a failed one too, so a fine-tuning set can teach failure unless the
    user says ``min_goal``; the CLI prints these counts so that choice is never silent."""
    con = open_run(run_dir)
    try:
        row = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE {GOAL_SQL} = 0), count(*) FILTER (WHERE {GOAL_SQL} IS NULL) "
            f"FROM episodes WHERE valid AND (? IS NULL OR mode = ?) AND (? IS NULL OR {GOAL_SQL} >= ?) "
            f"AND {NOT_FAILED_SQL}",
            [mode, mode, min_goal, min_goal, exclude_failed],
        ).fetchone()
    finally:
        con.close()
    n, failed, unscored = row if row else (0, 0, 0)
    return {"episodes": int(n), "failed": int(failed), "unscored": int(unscored)}


def _check(mode: str | None, fmt: str) -> None:
    """Bad choices are errors before anything is read or written (never an empty file)."""
    if fmt not in ("turns", "script"):
        raise ConfigError(f"export format must be 'turns' or 'script', got {fmt!r}")
    if mode is not None and mode not in ALL_MODES:
        raise ConfigError(f"export mode {mode!r} is not one of {', '.join(ALL_MODES)} (or None for all modes)")


def run_config(run_dir: str | Path) -> EpisodesConfig:
    con = open_run(run_dir)
    try:
        found = con.execute("SELECT value FROM run_meta WHERE key = 'config'").fetchall()
    finally:
        con.close()
    if not found:
        raise ConfigError(f"{run_dir}: the run's config is missing from run_meta")
    return EpisodesConfig.model_validate_json(found[0][0])


def sft_examples(
    run_dir: str | Path,
    mode: str | None = "script",
    fmt: ExportFormat = "turns",
    min_goal: float | None = None,
    exclude_failed: bool = False,
) -> Iterator[dict[str, Any]]:
    """Chat examples ``{"messages": [system, user, assistant]}`` from a finished run."""
    _check(mode, fmt)
    cfg = run_config(run_dir)
    for spec, turns in _episodes(run_dir, mode, min_goal, exclude_failed):
        if fmt == "script":
            if not turns:
                continue
            msgs = build_script_prompt(
                spec.env,
                spec.agents,
                spec.relationship,
                include_environment=cfg.include_environment,
                max_turns=cfg.max_turns,
            )
            target = {
                "turns": [{"speaker": t.speaker, "action_type": t.action_type, "argument": t.argument} for t in turns]
            }
            yield {"messages": [*msgs, {"role": "assistant", "content": json.dumps(target, ensure_ascii=False)}]}
            continue
        for k, turn in enumerate(turns):
            me = turn.speaker
            msgs = build_turn_prompt(
                "agents",
                spec.env,
                spec.agents[me],
                spec.agents[1 - me],
                me,
                spec.relationship,
                turns[:k],
                include_environment=cfg.include_environment,
                max_turn_chars=cfg.max_turn_chars,
            )
            answer = {"action_type": turn.action_type, "argument": turn.argument}
            yield {"messages": [*msgs, {"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)}]}


def export_sft(
    run_dir: str | Path,
    out: str | Path | None = None,
    mode: str | None = "script",
    fmt: ExportFormat = "turns",
    min_goal: float | None = None,
    exclude_failed: bool = False,
) -> tuple[Path, int]:
    """Write :func:`sft_examples` to ``out`` (default RUN_DIR/sft-<mode>-<fmt>.jsonl); returns (path, count).
    ``exclude_failed`` leaves out episodes whose goal is 0 (see :func:`export_counts`)."""
    _check(mode, fmt)
    examples = sft_examples(run_dir, mode, fmt, min_goal, exclude_failed)
    run_config(run_dir)  # fail on a missing or foreign run before creating the output file
    path = Path(out) if out else Path(run_dir) / f"sft-{mode or 'all'}-{fmt}.jsonl"
    if path.is_dir():
        raise ConfigError(f"--out {path}: is a directory, expected a JSONL file path")
    n = 0
    try:
        with path.open("w", encoding="utf-8") as fh:
            for ex in examples:
                fh.write(json.dumps(ex, ensure_ascii=False) + "\n")
                n += 1
    except OSError as exc:
        raise ConfigError(f"--out {path}: cannot write: {exc.strerror or exc}") from None
    return path, n
