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


#: Columns a recommender may add to ``exposures`` to say why a post was shown (``Feed.explain`` holds
#: one tuple per item in this order). Only the ``foryou`` recommender fills them; a trace gains the
#: columns with its first explained exposure, so every other run's ``exposures`` (and its digest) stays
#: exactly as before. ``features`` lists the value model's inputs in ``recsys.foryou.value_model.FEATURES``
#: order.
EXPLANATION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("score", "DOUBLE"),  # final score before re-ranking (value score x cold start x diversity x OON)
    ("value_score", "DOUBLE"),  # the weighted value-model score (X's offset applied)
    ("oon_factor", "DOUBLE"),  # out-of-network factor applied (1 = none)
    ("diversity_factor", "DOUBLE"),  # author-diversity multiplier applied
    ("cold_start", "BOOLEAN"),  # lifted by the cold-start boost
    ("rank_before", "INTEGER"),  # place among the user's candidates by score, before re-ranking (0-based)
    ("rank_after", "INTEGER"),  # place in the re-ranked feed (0-based; moderation may move it later)
    ("features", "DOUBLE[]"),  # the value model's inputs
)
EXPLANATION_NAMES = tuple(name for name, _ in EXPLANATION_COLUMNS)
