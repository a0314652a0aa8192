"""Whether a step's LLM calls are fit to commit, and what the trace says a run has spent.

A server that is down, or answers every request with garbage, must not turn into a "successful"
run full of ``invalid_llm_output`` rows. The driver therefore looks at every call of a step
(after retries) before committing it: an open circuit breaker, a refused budget, or more failed
calls than ``llm.max_invalid_fraction`` stop the run with the step uncommitted, so ``--resume``
redoes it once the server is back. The calls that were made are still written (marked
``aborted_step`` in their metadata) so the call log and the budgets lose nothing.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from socium.errors import BudgetExceeded, LLMUnavailable, UnusableModelOutput
from socium.llm.resume_replay import StoppedAnswers
from socium.llm.slot_meter import SlotWindow, combine
from socium.llm.types import LLMResult
from socium.llm.wrappers import ConcurrencyLimit, find_wrapper
from socium.trace.queries.calls import spend_by_backend, stopped_step_answers
from socium.trace.queries.runs import step_is_committed
from socium.trace.rundir import SLOTS_FILE
from socium.trace.safe_write import replace_file


def step_problem(n_calls: int, results: Sequence[LLMResult], llm: Any, step: int) -> Exception | None:
    """The error that must stop the run before ``step`` is committed, or None when it may be.

    ``n_calls``: the step's model calls; ``results``: at least those of its results that failed or
    carry an error kind (a step's :class:`~socium.agents.call_log.CallLog` keeps only these);
    ``llm`` is the run's :class:`~socium.llm.factory.LLMConfig` (None for rule-based runs).
    """
    if not n_calls or llm is None:
        return None
    refused = [r for r in results if r.error_kind == "budget"]
    if refused:
        return BudgetExceeded(
            f"{refused[0].error} (step {step} not committed: {len(refused)} of its requests could not be sent)"
        )
    failed = [r for r in results if not r.ok]
    if not failed:
        return None
    opened = any(r.error_kind == "circuit_open" for r in failed)
    limit = getattr(llm, "max_invalid_fraction", None)
    too_many = limit is not None and len(failed) > limit * n_calls
    if not (opened or too_many):
        return None
    why = "the circuit breaker opened" if opened else f"more than {limit:.0%} of its model calls failed"
    return LLMUnavailable(
        f"LLM server failing: {len(failed)} of {n_calls} model calls in step {step} failed "
        f"after retries ({describe_failures(failed)}); {why}, so step {step} was not committed. "
        "Fix the server, then continue with: socium run --resume --out RUN_DIR"
    )


# Answers judged together before the valid-output floor applies: one unlucky answer of a step with two active
# agents must not stop a healthy run (the floor is about a model that cannot do the task, not about noise).
MIN_ANSWERS = 20


def count_answers(actions: Mapping[str, Sequence[Any]]) -> tuple[int, int, str | None]:
    """(usable, judged, one reason) over the LLM agents of a step's ``actions`` columns.

    An agent's answer is usable when it produced at least one action; unparseable or off-schema text is
    not. Agents whose call failed at the backend are left out: ``max_invalid_fraction`` judges those.
    """
    usable: dict[int, bool] = {}
    reason = None
    for agent, origin, typ, why in zip(actions["agent_id"], actions["origin"], actions["type"], actions["reason"]):
        if origin != "llm":
            continue
        if typ != "invalid_llm_output":
            usable[agent] = True
        elif not str(why or "").startswith("backend error"):
            usable.setdefault(agent, False)
            reason = reason or str(why or "")
    return sum(usable.values()), len(usable), reason


class OutputHealth:
    """The LLM agents' valid-output rate over the latest steps holding at least :data:`MIN_ANSWERS` answers.

    Why: a model answering 100% unusable text gave a successful run (exit 0, invalid rate 0.98, nothing
    on the terminal), because ``max_invalid_fraction`` counts only backend failures. Below
    ``llm.min_valid_fraction`` the run stops like a failing server: the step is not committed, its calls
    are logged, and the error names the likely causes.
    """

    def __init__(self, floor: float | None, min_answers: int = MIN_ANSWERS) -> None:
        self.floor = floor
        self.min_answers = min_answers
        self.window: deque[tuple[int, int, int]] = deque()  # (step, usable, judged)

    def check(self, step: int, actions: Mapping[str, Sequence[Any]]) -> UnusableModelOutput | None:
        """The error that must stop the run before ``step`` is committed, or None."""
        if self.floor is None:
            return None
        usable, judged, reason = count_answers(actions)
        if judged:
            self.window.append((step, usable, judged))
        while len(self.window) > 1 and sum(w[2] for w in list(self.window)[1:]) >= self.min_answers:
            self.window.popleft()  # keep only the latest steps that hold enough answers
        total = sum(w[2] for w in self.window)
        good = sum(w[1] for w in self.window)
        if not judged or total < self.min_answers or good >= self.floor * total:
            return None
        first = self.window[0][0]
        where = f"step {step}" if first == step else f"steps {first}..{step}"
        example = f" (e.g. {reason[:160]!r})" if reason else ""
        return UnusableModelOutput(
            f"model output unusable: only {good} of {total} LLM agent answers in {where} were usable actions, "
            f"below llm.min_valid_fraction {self.floor:.0%}{example}. Likely causes: the wrong model (a base "
            "model, or one too small for the action schema), a missing or wrong chat template, or a server "
            "without JSON / structured output (check llm.model and the server's settings). Step "
            f"{step} was not committed; fix the model, then continue with: socium run --resume --out RUN_DIR"
        )


def take_slots(policy: Any) -> SlotWindow | None:
    """How busy the connection limits of this process's LLM backends kept their slots since the last call
    (the step's LLM window), or None when no backend with a limit made a call.

    In-process only: under the Ray executor each actor's backend has its own limit, which this process
    does not see, so a Ray run reports nothing here."""
    # the policy's built backends (LLMPolicy: ``_backend`` and the named ``llms``); reading them builds nothing
    backends = [getattr(policy, "_backend", None), *(getattr(policy, "_named", None) or {}).values()]
    limits = {id(lim): lim for b in backends if (lim := find_wrapper(b, ConcurrencyLimit)) is not None}
    return combine(lim.meter.take() for lim in limits.values())


def note_slots(run_dir: Path, got: SlotWindow) -> dict[str, float]:
    """Add a step's window to the run's totals in ``llm_slots.json`` (beside the trace, never in it: wall-clock
    facts must not change a trace's digest); returns the totals. Continues the file a resumed run left."""
    path = run_dir / SLOTS_FILE
    try:
        tot = {k: float(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, AttributeError, TypeError):  # none yet (or unreadable): start again
        tot = {}
    tot["steps"] = tot.get("steps", 0.0) + 1
    for key, add in (
        ("window_s", got.window_s),
        ("busy_slot_s", got.busy_slot_s),
        ("idle_s", got.idle_s),
        ("slot_s", got.slots * got.window_s),
    ):
        tot[key] = tot.get(key, 0.0) + add
    replace_file(path, json.dumps(tot, sort_keys=True))
    return tot


def slots_summary(run_dir: Path) -> dict[str, Any] | None:
    """The run card's ``llm.slots``: occupancy and idle share over every measured step's LLM window, or None
    when the run measured none (no HTTP backend with a connection limit, or a Ray run)."""
    try:
        tot = json.loads((run_dir / SLOTS_FILE).read_text(encoding="utf-8"))
        win, cap = float(tot["window_s"]), float(tot["slot_s"])
        busy, idle, steps = float(tot["busy_slot_s"]), float(tot["idle_s"]), int(tot["steps"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return {
        "occupancy": round(min(1.0, busy / cap), 4) if cap > 0 else 0.0,
        "idle_share": round(min(1.0, idle / win), 4) if win > 0 else 0.0,
        "steps_measured": steps,
        "llm_window_s": round(win, 2),
        "measured_by": "the client's connection limit (llm.max_concurrency), in-process executor",
    }


def describe_failures(failed: Sequence[LLMResult], examples: int = 3) -> str:
    """The real causes, most frequent first: kinds with counts and one message each.

    A fail-fast of the open breaker carries the failure that opened it in its own message, so the
    cause named here is never just "circuit open".
    """
    kinds = Counter(r.error_kind or "other" for r in failed)
    first: dict[str, str] = {}
    for r in failed:
        first.setdefault(r.error_kind or "other", (r.error or "")[:240])
    return "; ".join(f"{n}x {k}: {first[k]}" for k, n in kinds.most_common(examples))


def spent_from_trace(con: Any, table: str = "llm_calls") -> dict[str, tuple[int, int]]:
    """(calls, tokens) already spent per backend (``llms`` name, ``default`` for ``llm``): every attempt
    in the call log, aborted steps included. Answers served from the cache are not in the log, so
    they cost nothing here either; answers a resume read from a stopped step's record are (``attempts``
    0), and their tokens count once, in the stopped step's row.
    """
    try:
        return spend_by_backend(con, table)
    except Exception:  # no call log yet: nothing spent
        return {}


def stopped_answers(store: Any, step: int) -> StoppedAnswers | None:
    """The answers a stopped session received in ``step`` (not committed), for its resume to serve instead of
    asking again (:mod:`socium.llm.resume_replay`); None when it has none (or the run keeps no call log)."""
    try:
        rows = stopped_step_answers(store.con, step)
    except duckdb.CatalogException:  # no call log
        return None
    return StoppedAnswers.from_rows(step, rows) if rows else None


def log_aborted_calls(store: Any, calls: Any, first_id: int, step: int) -> int:
    """Write the model calls of a step that will not be committed, in their own transaction; returns the
    next free ``call_id``.

    Why: they were made (and may be paid for), so the call log and a resumed run's budgets must count
    them; the step itself stays uncommitted, so a resume redoes it from the same state. ``calls`` is the
    step's :class:`~socium.agents.call_log.CallLog`. A failure to write is logged, never raised: it must
    not hide the error that stopped the step (a full disk fails both).
    """
    if not calls:
        return first_id
    try:
        store.append_rows({"llm_calls": mark_aborted(calls.rows(first_id).to_pydict(), step)})
    except Exception as exc:
        logging.getLogger(__name__).warning(
            "could not log the %d model calls of aborted step %d: %s", len(calls), step, exc
        )
        return first_id
    return first_id + len(calls)


def step_committed(store: Any, step: int) -> bool:
    """Whether ``step``'s marker is in the trace: after an error or a signal while it was being written,
    this says whether its calls are in the trace with it (True) or must be logged as aborted."""
    try:
        return step_is_committed(store.con, step)
    except Exception:  # the trace cannot be read: the calls cannot be written either
        return False


def mark_aborted(rows: dict[str, list], step: int) -> dict[str, list]:
    """Mark ``llm_calls`` rows (from :func:`~socium.agents.llm_policy.call_rows`) as made in a step that
    was not committed, so analyses of committed steps can leave them out."""
    import json

    rows["metadata"] = [json.dumps({**json.loads(m), "aborted_step": step}, sort_keys=True) for m in rows["metadata"]]
    return rows
