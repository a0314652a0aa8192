"""One run budget over many Ray actors: the driver hands each shard a share of what is left.

Why: every actor builds its own LLM backend, and with it its own :class:`~socium.llm.wrappers.BudgetLedger`.
Left alone, each ledger would allow the whole ``llm.call_budget`` / ``llm.token_budget``, so N actors
could spend N times the budget (measured: 34 calls against a budget of 17 with 2 actors). A ledger
shared over the network would put a round trip on every request and leak reservations when an actor
dies; instead the driver, which sees every call the actors made (they travel back in
``Decision.meta``), keeps the run's ledger and, before each step, splits what is left among the shards
in proportion to the agents each one decides for. An actor's ledger may spend only its share, so the
shards together never pass the budget. The price: a shard whose agents need more than their share is
refused while others still had room, so a run stops a little early, never late.

Limit: the calls of an actor that dies in the middle of a step never reach the driver (neither the
trace nor the ledger sees them), and the re-run of its batch gets the same share again; each actor
death can therefore overspend by at most that shard's share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from socium.llm.wrappers import BudgetLedger

#: per ``llms`` name: (calls, tokens) a shard may spend this step; None where that budget is not set
Allowance = dict[str, tuple[int | None, int | None]]


def split_shares(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` split in proportion to ``weights`` (equally when all are 0); the parts sum to ``total``.

    Largest remainders, ties to the lower index, so the split is deterministic.
    """
    n = len(weights)
    if n == 0:
        return []
    total = max(0, int(total))
    w = [max(0, int(x)) for x in weights]
    s = sum(w)
    if s == 0:
        w, s = [1] * n, n
    base = [total * x // s for x in w]
    left = total - sum(base)
    order = sorted(range(n), key=lambda i: (-(total * w[i] % s), i))
    for i in order[:left]:
        base[i] += 1
    return base


def shard_allowances(ledgers: Mapping[str, BudgetLedger], weights: Sequence[int]) -> list[Allowance] | None:
    """Each shard's share of what every budgeted ledger has left (None when no budget is set)."""
    if not ledgers:
        return None
    out: list[Allowance] = [{} for _ in weights]
    for name, led in ledgers.items():
        calls = tokens = None
        if led.max_calls is not None:
            calls = split_shares(led.max_calls - led.spent_calls - led.reserved_calls, weights)
        if led.max_tokens is not None:
            tokens = split_shares(led.max_tokens - led.spent_tokens - led.reserved_tokens, weights)
        for i in range(len(weights)):
            out[i][name] = (None if calls is None else calls[i], None if tokens is None else tokens[i])
    return out


def apply_allowance(ledger: BudgetLedger, share: tuple[int | None, int | None], where: str) -> None:
    """Inside an actor: let ``ledger`` spend ``share`` more this step, and say so when it refuses."""
    calls, tokens = share
    if calls is not None:
        ledger.max_calls = ledger.spent_calls + ledger.reserved_calls + calls
    if tokens is not None:
        ledger.max_tokens = ledger.spent_tokens + ledger.reserved_tokens + tokens
    # the refusal names the share and never the actor's ledger limits: those are no budget the user set
    parts = [f"{n:,} {unit}" for n, unit in ((calls, "calls"), (tokens, "tokens")) if n is not None]
    ledger.note = (
        f"{where} spent its share of the run's budget for this step ({' and '.join(parts)} of what was left); "
        "the shards split what is left of the run's llm budgets before each step"
    )


def count_calls(ledgers: Mapping[str, BudgetLedger], calls: Sequence[Any]) -> None:
    """On the driver: add calls made elsewhere (``(key, request, result, model)``) to the run's ledgers,
    counted as :func:`~socium.simulator.llm_health.spent_from_trace` counts the trace."""
    for _key, req, res, _model in calls:
        led = ledgers.get(req.metadata.get("llm", "default"))
        if led is not None and res.attempts:  # none sent (refused, or replayed on resume): nothing spent here
            led.spent_calls += int(res.attempts)
            led.spent_tokens += int(res.prompt_tokens or 0) + int(res.completion_tokens or 0)
