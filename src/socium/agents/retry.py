"""The message that asks a model again after its answer was refused, and the check that its next answer
does not carry that message into a post.

Why a module of its own: the old re-ask ("That answer was invalid: R. Reply with one valid JSON
object.") read like something a person might say, and small models pasted it into the post they were
asked to write (issue 40: the explorer showed the retry text as the next post's content, and the
"leaked instruction" guardrail flagged it). The note now says in its own words that it is not part of
any post, and a retried answer whose text repeats the note is refused like any other invalid answer,
so the note cannot reach the platform. Every re-ask (decisions, surveys, questions, episodes) uses it,
and the explorer reads the parser's reason back out of it (``socium.trace.queries.explore``).
"""

from __future__ import annotations

NOTE_START = "(Note from the platform, not part of any post: your previous reply could not be used: "
NOTE_END = ". Answer again with only the JSON object.)"

NOTE_MARKERS = ("note from the platform", "could not be used:", "answer again with only the json object")
"""Lower-case phrases of the note: an answer holding any of them repeats it (``reporting.guardrails``
counts them as leaked instructions too)."""


def retry_message(reason: str) -> str:
    """The re-ask: the parser's ``reason`` (already cleaned and bounded by the caller) inside the note."""
    return f"{NOTE_START}{reason}{NOTE_END}"


def retry_turns(previous: str, reason: str) -> list[dict[str, str]]:
    """The two turns appended to the conversation for a re-ask: the refused answer, then the note."""
    return [{"role": "assistant", "content": previous}, {"role": "user", "content": retry_message(reason)}]


def repeats_note(text: str | None) -> bool:
    """Whether an answer's text carries the retry note (any of :data:`NOTE_MARKERS`, case-insensitive)."""
    low = (text or "").lower()
    return any(m in low for m in NOTE_MARKERS)
