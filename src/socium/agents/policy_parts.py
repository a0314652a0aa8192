"""What :class:`~socium.agents.llm_policy.LLMPolicy` provides to its mixins (``llm_narrator``,
``llm_questions``), declared once for the type checker; nothing here exists at run time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from socium.config import ExperimentConfig
    from socium.core.contracts import Observation
    from socium.llm.types import LLMRequest, LLMResult


class PolicyParts:
    """Base of the LLMPolicy mixins: attribute and method declarations only."""

    if TYPE_CHECKING:  # provided by LLMPolicy
        cfg: ExperimentConfig
        ac: Any
        allowed: list[str]
        _deciding_step: int | None

        @property
        def backend(self) -> Any: ...
        def backend_for(self, name: str) -> Any: ...
        def llm_of(self, agent: int) -> str: ...
        def persona_kw(self) -> dict[str, Any]: ...
        def action_schema(self, obs: Observation) -> dict[str, Any]: ...
        def _seed(self, *key: int) -> int: ...

        _request: Callable[..., LLMRequest]  # (rid, messages, schema, meta, seed, max_tokens=None)

        async def _ask(self, req: LLMRequest) -> LLMResult: ...
        async def _generate(self, reqs: Sequence[LLMRequest]) -> list[LLMResult]: ...
        def _drain_calls(self) -> list[tuple[str, LLMRequest, LLMResult, str]]: ...
