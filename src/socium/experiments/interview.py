"""Ask an agent of a finished run a question, as it is at the end of the run (persona + memory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socium.agents.call_log import call_rows
from socium.agents.llm_policy import LLMPolicy
from socium.agents.memory import MemoryStream
from socium.agents.routing import llm_route
from socium.config.llm import LLMConfig
from socium.errors import BudgetExceeded, ConfigError, TraceError
from socium.simulator import interviews as iv
from socium.simulator.inputs import recorded_inputs
from socium.simulator.llm_health import spent_from_trace
from socium.simulator.run_setup import load_run_config
from socium.simulator.step_agents import memory_line
from socium.simulator.world import build_population
from socium.trace.queries import calls as C
from socium.trace.queries import population as Q
from socium.trace.queries import runs as R
from socium.trace.rundir import INTERVIEW_LOG, RunDirLock
from socium.trace.safe_write import append_run_file
from socium.trace.store import TraceStore, open_trace, read_run_row, require_store

if TYPE_CHECKING:
    import duckdb


def _memory(con: duckdb.DuckDBPyConnection, cfg: Any, agent_id: int, question: str) -> list[str]:
    """What the agent remembers at the end: its last actions (window), or the stream entries most
    relevant to the question (stream), so an answer can cite what the agent saw and concluded."""
    if cfg.llm_agents.memory.kind == "stream":
        stream = MemoryStream(cfg.llm_agents.memory, cfg.llm_agents.memory_size)
        stream.restore(Q.memories(con, agent_id))
        last = R.last_step(con)
        return stream.recall(agent_id, last or 0, question, cfg.step_minutes / 60.0)
    rows = R.recent_actions(con, agent_id, cfg.llm_agents.memory_size)
    return [memory_line(s, t, json.loads(a), o) for s, t, a, o in rows]


def interview(
    run_dir: str | Path, agent_id: int, question: str, llm: dict[str, Any] | None = None, record: bool = False
) -> str:
    """The agent's answer; ``llm`` overrides the run's backend settings (e.g. ``{"backend": "openai", ...}``).

    ``record`` stores the answer in the run's ``interviews`` table (origin 'cli', step = the last
    committed step) with its ``llm_calls`` row, in one transaction, so later analysis sees it. Without it
    the trace is left as the run wrote it, and the call goes to ``RUN_DIR/interview_calls.jsonl`` (it was
    made, and the run's budget counts it: before, such calls were in no trace and under no budget).
    """
    cfg = load_run_config(run_dir, allow_plugins=True)  # builds no recommender or moderator: imports nothing
    # the input files the run read (by their recorded sha256), wherever this command is run from: never the
    # persona of whatever people.csv the current folder holds
    cfg = recorded_inputs(cfg, _recorded_digests(run_dir), Path(run_dir))
    budgets = cfg.llm  # the run's budgets hold whichever backend answers
    if llm is not None:
        LLMConfig.parse(llm)  # a typo in --backend: 'llm.backend: ...' (ConfigError), not pydantic's traceback
        cfg = cfg.model_copy(update={"llm": type(cfg).model_validate({**cfg.model_dump(), "llm": llm}).llm})
    if cfg.llm is None:
        raise ConfigError(f"{run_dir}: the run has no llm section; pass --backend to choose a model")
    pop, _ = build_population(cfg)
    if not 0 <= agent_id < len(pop):
        raise ConfigError(f"--agent {agent_id}: not an agent of this run (0..{len(pop) - 1})")
    con = open_trace(require_store(Path(run_dir)))
    try:
        stance = Q.current_stance(con, agent_id)
        if stance is not None:
            pop.stance[agent_id] = stance
        memory = _memory(con, cfg, agent_id, question)
        last = R.last_step(con)
        last = -1 if last is None else last
        spent = spent_from_trace(con)
    finally:
        con.close()
    logged = _logged_spend(Path(run_dir) / INTERVIEW_LOG)
    calls0, tokens0 = spent.get("default", (0, 0))
    spent["default"] = (calls0 + logged[0], tokens0 + logged[1])
    if budgets is not None:
        _check_budget(budgets, spent.get("default", (0, 0)), run_dir)
    if not record:
        answered, calls = _ask(cfg, pop, spent, agent_id, memory, question, last)
        _log_calls(Path(run_dir) / INTERVIEW_LOG, calls)
        return str(answered[1])
    db = require_store(Path(run_dir))
    # a recorded interview writes the trace: never beside a live run, and the lock is taken before the model is
    # asked (a refusal after the call lost a call that was made); the refusal names interview's own way out
    with RunDirLock(db.parent, instead="or ask without --record (the call is then logged beside the trace)"):
        answered, calls = _ask(cfg, pop, spent, agent_id, memory, question, last)
        return _record(db, calls, answered, last, question, agent_id)


def _ask(
    cfg: Any, pop: Any, spent: dict[str, tuple[int, int]], agent_id: int, memory: list[str], question: str, last: int
) -> tuple[Any, list[Any]]:
    """One interview call: ((request id, answer text), the calls made)."""
    policy = LLMPolicy(cfg)
    policy.spent = spent  # its ledger goes on from what the run spent, as a resumed run's does
    policy.set_route(*llm_route(cfg, pop))
    try:
        (answered,), calls = policy.interview_batch(
            [(pop.profile(agent_id), memory)], question, last, iv.question_key(question)
        )
    finally:
        policy.close()
    return answered, calls


def _recorded_digests(run_dir: str | Path) -> dict[str, Any]:
    row = read_run_row(require_store(Path(run_dir))) or {}
    try:
        digests = json.loads(row.get("input_digests") or "{}")
    except ValueError:
        raise TraceError(f"{run_dir}: runs.input_digests is not JSON") from None
    return digests if isinstance(digests, dict) else {}


def _check_budget(llm: LLMConfig, spent: tuple[int, int], run_dir: str | Path) -> None:
    """Refuse an interview the run's budgets no longer allow (it was asked past them: 18 calls recorded
    against a call budget of 17); a budget is the run's, interviews included."""
    calls, tokens = spent
    if llm.call_budget is not None and calls + 1 > llm.call_budget:
        raise BudgetExceeded(
            f"{run_dir}: call budget: the run has used {calls} of its {llm.call_budget} calls "
            "(llm.call_budget), so an interview would pass it"
        )
    if llm.token_budget is not None and tokens >= llm.token_budget:
        raise BudgetExceeded(
            f"{run_dir}: token budget: the run has used {tokens} of its {llm.token_budget} tokens (llm.token_budget)"
        )


def _log_calls(path: Path, calls: list[Any]) -> None:
    """Append an unrecorded interview's calls to the run's side log, one ``llm_calls``-shaped object a line."""
    if not calls:  # answered from the cache: nothing was sent
        return
    cols = call_rows(calls, 0)
    cols.pop("call_id")
    rows = [dict(zip(cols, values)) for values in zip(*cols.values())]
    append_run_file(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))


def _logged_spend(path: Path) -> tuple[int, int]:
    """(calls, tokens) of the side log: every attempt, so the run's budget holds unrecorded interviews too.
    A line that is not one of ours (edited, cut off by a crash) counts nothing rather than stopping the count."""
    if not path.is_file():
        return 0, 0
    calls = tokens = 0
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                row = json.loads(line)
                n = int(row.get("attempts") or 0)
                t = int(row.get("prompt_tokens") or 0) + int(row.get("completion_tokens") or 0)
            except (ValueError, TypeError, AttributeError, RecursionError):
                continue
            calls, tokens = calls + max(n, 0), tokens + max(t, 0)
    return calls, tokens


def _record(db: Path, calls: list[Any], answered: Any, last: int, question: str, agent_id: int) -> str:
    store = TraceStore(db)
    try:
        first = C.next_call_id(store.con)
        batches: dict[str, Any] = {}
        ids: dict[str, int] = {}
        if calls:
            batches["llm_calls"] = call_rows(calls, first)
            ids = dict(zip(batches["llm_calls"]["request_id"], batches["llm_calls"]["call_id"]))
        rid, text = answered
        batches["interviews"] = iv.table([iv.rows(last, question, [(agent_id, rid, text)], ids, "cli")])
        store.append_rows(batches)
    finally:
        store.close()
    return text
