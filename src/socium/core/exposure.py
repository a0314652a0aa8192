"""Where an observation's builder reports what an agent was shown: the exposure-sink contract.

The perspective code (behaviour layer) records exposures while it fills an observation, and the
trace's ``exposures`` must be exactly what prompts contained. It writes to this protocol, so it does
not import the loop's step recorder that implements it.
"""

from __future__ import annotations

from typing import Protocol


class ExposureSink(Protocol):
    """Takes one agent's exposures of one step, in feed order (rank = position)."""

    def exposure(self, agent: int, post_ids: tuple[int, ...] | list[int], source: str | tuple[str, ...]) -> None:
        """``post_ids`` were shown to ``agent``; ``source`` is one feed source, or one per post."""
        ...
