"""Issue 36 item 4: episodes and group episodes stop like ``socium run`` on a failing server or junk output.

They exited 0 with "goal 0.00, valid 1.00" when the server was down or every answer was junk. The run-level
guards (breaker, ``llm.max_invalid_fraction``, ``llm.min_valid_fraction``) now apply to every command that
calls a model: exit 4 naming the cause, the episode that tripped the guard unwritten; and the summary shows
the invalid-turn rate.
"""

from __future__ import annotations

import socket
from pathlib import Path

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app
from socium.episodes.health import EpisodeHealth
from socium.llm.types import LLMResult

runner = CliRunner()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: every connection is refused
    return port


def _write(tmp_path: Path, body: dict) -> Path:
    f = tmp_path / "e.yaml"
    f.write_text(yaml.safe_dump(body))
    return f


DOWN = {"backend": "openai", "model": "m", "retries": 0, "timeout_s": 2}
JUNK = {"backend": "scripted", "scripted_responses": ["I am a base model and this is not JSON"]}


@pytest.mark.parametrize("command", ["episodes", "group-episodes"])
@pytest.mark.parametrize(("llm", "said"), [(DOWN, "LLM server failing"), (JUNK, "model output unusable")])
def test_a_down_server_or_junk_answers_stop_the_run_with_exit_4(tmp_path, command, llm, said) -> None:
    if llm is DOWN:
        llm = {**llm, "base_urls": [f"http://127.0.0.1:{_closed_port()}/v1"]}
    if command == "episodes":
        body = {"name": "g", "llm": llm, "modes": ["agents"], "tasks": {"bargaining": 12}, "max_turns": 6}
        db = "episodes.duckdb"
    else:
        body = {"name": "g", "llm": llm, "parties": 3, "deals": 12, "modes": ["agents"], "max_turns": 9}
        db = "group_episodes.duckdb"
    out = tmp_path / "run"
    r = runner.invoke(app, [command, str(_write(tmp_path, body)), "--out", str(out)])
    text = " ".join(r.output.split())
    assert r.exit_code == 4, (r.exit_code, text, r.exception)
    assert said in text and "was not written" in text and f"socium {command} CONFIG --out" in text
    assert "Traceback" not in r.output
    con = duckdb.connect(str(out / db), read_only=True)
    table = "episodes" if command == "episodes" else "group_episodes"
    written = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    con.close()
    assert written < 12  # the run stopped; the episode that tripped the guard was not written


def test_the_episodes_table_shows_the_invalid_turn_rate(tmp_path) -> None:
    body = {
        "name": "ok",
        "llm": {"backend": "random", "min_valid_fraction": None, "max_invalid_fraction": None},
        "modes": ["agents"],
        "tasks": {"bargaining": 2},
        "max_turns": 3,
    }
    r = runner.invoke(app, ["episodes", str(_write(tmp_path, body)), "--out", str(tmp_path / "run"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "invalid turns" in r.output and "of all turns" in r.output
    assert "invalid turns" in (tmp_path / "run" / "summary.md").read_text()


def _res(ok: bool, kind: str | None = None) -> LLMResult:
    return LLMResult(request_id="r", text="{}" if ok else "", error=None if ok else "boom", error_kind=kind)


class _Turn:
    def __init__(self, valid: bool) -> None:
        self.valid, self.error = valid, None if valid else "not JSON"


def test_health_window_needs_enough_items_and_names_the_breaker() -> None:
    llm = type("L", (), {"max_invalid_fraction": 0.5, "min_valid_fraction": 0.5})()
    h = EpisodeHealth(llm, "again")
    # one unlucky episode (3 of 5 calls failed, 2 of 4 turns invalid) is under the 20-item window: no stop
    assert h.check("e0", [_res(True)] * 2 + [_res(False, "timeout")] * 3, [_Turn(True), _Turn(False)] * 2) is None
    assert h.check("e1", [_res(True)] * 20, [_Turn(True)] * 20) is None
    breaker = h.check("e2", [_res(True), _res(False, "circuit_open")], [_Turn(True)])
    assert breaker is not None and "circuit breaker opened" in str(breaker) and "episode e2" in str(breaker)
    junk = EpisodeHealth(llm, "again")
    assert junk.check("a", [_res(True)] * 10, [_Turn(False)] * 10) is None
    stop = junk.check("b", [_res(True)] * 10, [_Turn(False)] * 10)
    assert stop is not None and "only 0 of 20 turns" in str(stop)
