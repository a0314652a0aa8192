"""What the parts of an LLM policy need from the policy they speak for: the calls it makes for them.

:class:`~socium.agents.llm_policy.LLMPolicy` is composed of parts (the narrator of script mode,
the questions asked outside the agents' turns, the survey answers). Each part asks through its
policy's backends, seeds and persona settings, so it needs a handle on the policy; typed against
``LLMPolicy`` itself, the parts and the policy imported each other (issue 25: no import circles).
:class:`PolicyCalls` names only what the parts call, and ``LLMPolicy`` satisfies it structurally;
a part gets its settings (the config, the allowed actions) explicitly when it is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from socium.llm.types import LLMRequest, LLMResult

#: One call made and not yet handed to the driver: (cache key, request, result, where it came from).
MadeCall = tuple[str, LLMRequest, LLMResult, str]


class PolicyCalls(Protocol):
    """The request maker and senders of an LLM policy, as its parts use them."""

    def persona_kw(self) -> dict[str, Any]:
        """How an agent's own profile is shown in a prompt about it (``prompts.*_messages`` keywords)."""
        ...

    def seed(self, *key: int) -> int:
        """The request seed for ``key`` (agent, step, salt...), drawn from the run's LLM stream."""
        ...

    def request(
        self,
        rid: str,
        messages: list[dict[str, str]],
        schema: dict | None,
        meta: dict,
        seed: int,
        max_tokens: int | None = None,
    ) -> LLMRequest:
        """One request on the backend that answers for ``meta['agent_id']`` (``llms`` routing)."""
        ...

    async def ask(self, req: LLMRequest) -> LLMResult:
        """Send one request on its agent's backend."""
        ...

    async def generate(self, reqs: Sequence[LLMRequest]) -> list[LLMResult]:
        """Send requests, each on its agent's backend, answers in the order asked."""
        ...

    def backend_for(self, name: str) -> Any:
        """The backend of one of ``llms`` (``default``: the ``llm`` section)."""
        ...

    def drain_calls(self) -> list[MadeCall]:
        """The calls made since the last drain, for the driver to write as ``llm_calls`` rows."""
        ...
