"""The run-level guards of ``socium run``, for episodes and group episodes.

Why: with the server down, or every answer junk, ``socium episodes`` and ``group-episodes`` exited 0 with
"goal 0.00, valid 1.00": the breaker stop, ``llm.max_invalid_fraction`` and ``llm.min_valid_fraction``
existed only in the simulator's step loop. Here each finished episode is judged before it is written, over a
window of the latest episodes holding at least :data:`MIN_ITEMS` calls (or turns), as
:class:`~socium.simulator.llm_health.OutputHealth` judges steps:

* an open circuit breaker, or more than ``max_invalid_fraction`` of the model calls failing at the backend
  after retries, is :class:`~socium.errors.LLMUnavailable`;
* fewer than ``min_valid_fraction`` of the turns being valid actions is
  :class:`~socium.errors.UnusableModelOutput`.

The episode that tripped a guard is not written (its calls were made but its turns are the failing server's,
not the model's), so running the same command again redoes it once the server or the model is fixed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from socium.errors import LLMUnavailable, UnusableModelOutput
from socium.llm.types import LLMResult
from socium.simulator.llm_health import MIN_ANSWERS, describe_failures

#: Calls (turns) judged together before a fraction applies: one failed call of a two-turn episode must not
#: stop a healthy run; the same floor as a simulation's valid-output check.
MIN_ITEMS = MIN_ANSWERS


class EpisodeHealth:
    """Judge each episode's calls and turns, with those of the latest episodes, before it is written."""

    def __init__(self, llm: Any, again: str, min_items: int = MIN_ITEMS) -> None:
        self.max_invalid = getattr(llm, "max_invalid_fraction", None)
        self.floor = getattr(llm, "min_valid_fraction", None)
        self.again = again  # the command that continues the run, named in the error
        self.min_items = min_items
        self._calls: deque[tuple[int, list[LLMResult]]] = deque()  # (calls, failed ones) per episode
        self._turns: deque[tuple[int, int, str | None]] = deque()  # (valid, turns, one reason) per episode

    def check(self, episode_id: str, results: Sequence[LLMResult], turns: Sequence[Any]) -> LLMUnavailable | None:
        """The error that must stop the run before episode ``episode_id`` is written, or None."""
        failed = [r for r in results if not r.ok]
        if any(r.error_kind == "circuit_open" for r in failed):
            return self._unavailable(episode_id, len(results), failed, "the circuit breaker opened")
        if failed and len(failed) == len(results):  # not one answer: never written as an episode of "no deal"
            return self._unavailable(episode_id, len(results), failed, "every call of the episode failed")
        self._calls.append((len(results), failed))
        _trim(self._calls, self.min_items)
        n = sum(c for c, _ in self._calls)
        bad = [r for _, fs in self._calls for r in fs]
        if self.max_invalid is not None and n >= self.min_items and len(bad) > self.max_invalid * n:
            return self._unavailable(episode_id, n, bad, f"more than {self.max_invalid:.0%} of the model calls failed")
        valid = sum(1 for t in turns if t.valid)
        reason = next((str(t.error) for t in turns if not t.valid and t.error), None)
        self._turns.append((valid, len(turns), reason))
        _trim(self._turns, self.min_items, at=1)
        total = sum(t[1] for t in self._turns)
        good = sum(t[0] for t in self._turns)
        if self.floor is None or total < self.min_items or good >= self.floor * total:
            return None
        example = next((r for *_, r in self._turns if r), None)
        shown = f" (e.g. {example[:160]!r})" if example else ""
        return UnusableModelOutput(
            f"model output unusable: only {good} of {total} turns of the latest episodes were valid actions, below "
            f"llm.min_valid_fraction {self.floor:.0%}{shown}. Likely causes: the wrong model (a base model, or one "
            "too small for the turn schema), a missing or wrong chat template, or a server without JSON / "
            f"structured output. Episode {episode_id} was not written; fix the model, then continue with: "
            f"{self.again}"
        )

    def _unavailable(self, episode_id: str, n: int, failed: list[LLMResult], why: str) -> LLMUnavailable:
        return LLMUnavailable(
            f"LLM server failing: {len(failed)} of {n} model calls failed after retries "
            f"({describe_failures(failed)}); {why}, so episode {episode_id} was not written. Fix the server, then "
            f"continue with: {self.again}"
        )


def _trim(window: deque[Any], min_items: int, at: int = 0) -> None:
    """Keep only the latest entries that together hold ``min_items`` (field ``at`` counts an entry's items)."""
    while len(window) > 1 and sum(w[at] for w in list(window)[1:]) >= min_items:
        window.popleft()


def invalid_turn_rate(summary_rows: Sequence[dict[str, Any]]) -> float | None:
    """Invalid turns over all turns of a dyadic summary's per-mode rows (None without turns)."""
    rows = [r for r in summary_rows if r.get("task") == "all"]
    turns = sum((r.get("turns_per_episode") or 0) * (r.get("episodes") or 0) for r in rows)
    if not turns:
        return None
    return (
        sum((r.get("invalid_turn_rate") or 0) * (r.get("turns_per_episode") or 0) * r["episodes"] for r in rows) / turns
    )
