"""How many tokens a prompt takes, and how many the backend's context window holds.

Why: a prompt longer than the model's context is refused (llama.cpp: ``exceed_context_size_error``),
so the call is lost; script mode's narrator prompt grows with its group (8 characters' profiles,
memories and feeds overflowed 2,048 and once 4,096 tokens). A caller that can shorten its prompt
(split a group, drop feed items) asks :func:`context_window` how many tokens it has and
:func:`prompt_counter` how to count them.

A backend that knows its window exposes ``context_tokens`` (the embedded backend: ``llm.n_ctx`` per
slot); one that can tokenise exposes ``count_prompt_tokens(messages)``, the exact count with its chat
template. Both are looked up through the wrapper stack (``.inner``). HTTP servers report neither: their
prompts are not bounded here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Messages = Sequence[Mapping[str, str]]

#: Fewest UTF-8 bytes per token assumed by the estimate. Measured with SmolLM2's tokenizer (llama.cpp,
#: chat template included) on script-mode narrator prompts of 1,004-3,175 tokens: 2.79-3.02 bytes per
#: token (ids and ``<<<POST ...>>>`` markup tokenise densely); 2.0 leaves a third in hand.
BYTES_PER_TOKEN = 2.0
#: Tokens a chat template adds around each message (role markers, separators), and once per prompt.
TEMPLATE_TOKENS = 8


def estimate_prompt_tokens(messages: Messages) -> int:
    """A conservative estimate of a chat prompt's tokens when the backend's tokenizer is not at hand."""
    nbytes = sum(len(m["content"].encode("utf-8", "surrogatepass")) for m in messages)
    return int(nbytes / BYTES_PER_TOKEN + 0.999) + TEMPLATE_TOKENS * (len(messages) + 1)


def _layers(backend: Any) -> list[Any]:
    out: list[Any] = []
    while backend is not None and len(out) < 64:
        out.append(backend)
        backend = getattr(backend, "inner", None)
    return out


def context_window(backend: Any) -> int | None:
    """Tokens one request may hold, prompt and completion together; None when the backend does not say."""
    for layer in _layers(backend):
        n = getattr(layer, "context_tokens", None)
        if isinstance(n, int) and n > 0:
            return n
    return None


def prompt_counter(backend: Any) -> Callable[[Messages], int]:
    """The backend's own token count where one of its layers offers it, else :func:`estimate_prompt_tokens`."""
    for layer in _layers(backend):
        count = getattr(layer, "count_prompt_tokens", None)
        if callable(count):
            return count
    return estimate_prompt_tokens
