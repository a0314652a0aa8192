"""Answer only from a recorded call log, so a run can be reproduced without the model.

A miss means the replayed run asked something the recorded one never did (changed prompt, seed or
code): continuing would silently mix recorded and invented behaviour, so by default it raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from socium.errors import ReplayMiss
from socium.llm.cache import ResultCache, get_many
from socium.llm.types import LLMRequest, LLMResult


class ReplayBackend:
    """Serves recorded answers keyed by ``request.cache_key(model_name)``.

    ``model_name`` must be the name the recording run used, since it is part of the key.
    ``on_miss='error'`` returns a failed result (kind ``replay_miss``) instead of raising, for
    partial replays that tolerate gaps.
    """

    def __init__(self, store: ResultCache, model_name: str, on_miss: Literal["raise", "error"] = "raise") -> None:
        if on_miss not in ("raise", "error"):
            raise ValueError(f"on_miss must be 'raise' or 'error', got {on_miss!r}")
        self.store = store
        self.model_name = model_name
        self.on_miss = on_miss
        self.hits = 0
        self.misses = 0
        # the recorded run's context window, when one bounded its prompts (socium.llm.context)
        self.context_tokens: int | None = None

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        keys = [r.cache_key(self.model_name) for r in requests]
        found = get_many(self.store, keys)
        out: list[LLMResult] = []
        for req, key in zip(requests, keys):
            hit = found.get(key)
            if hit is not None:
                self.hits += 1
                out.append(hit.model_copy(update={"request_id": req.request_id, "cached": True, "attempts": 0}))
                continue
            self.misses += 1
            msg = (
                f"replay miss: request {req.request_id!r} (cache key {key[:16]}..., model "
                f"{self.model_name!r}, metadata {req.metadata}) is not in the recorded calls"
            )
            if self.on_miss == "raise":
                raise ReplayMiss(msg)
            out.append(LLMResult.failure(req.request_id, msg, "replay_miss", attempts=0))
        return out

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"ReplayBackend(model_name={self.model_name!r})"
