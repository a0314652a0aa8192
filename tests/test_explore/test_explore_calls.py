"""An answer's fate in the call log (issue 40, item 2): accepted, rejected and retried (with the parser's
reason), rejected with no retry left, or failed; a filter for each; and the retry note that a model
cannot paste into its post."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from conftest import small_config
from socium.agents.retry import NOTE_MARKERS, repeats_note, retry_message
from socium.reporting.guardrails import LEAK_MARKERS
from socium.simulator.simulation import Simulation
from socium.trace.queries import explore as q
from socium.trace.queries.runs import open_run

POST = json.dumps({"type": "create_post", "content": "The bakery on the corner opened again today."})
ECHO = json.dumps({"type": "create_post", "content": "Fine. " + retry_message("not JSON")})
# cycled in call order: accepted at once; rejected then accepted; rejected twice (no retry left);
# rejected, then an answer that pastes the retry note into its post (refused too)
ANSWERS = [POST, "definitely not json", POST, "{{{", "still not json", "nope", ECHO]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fates") / "run"
    llm = {"backend": "scripted", "scripted_responses": ANSWERS, "min_valid_fraction": None, "max_concurrency": 1}
    cfg = small_config(steps=2, llm=llm, policy={"kind": "llm"}, population={"n_agents": 12, "mean_activity": 1.0})
    Simulation(cfg, path).run()
    return path


def _expected(con) -> dict[int, str]:
    """Each call's fate from its request id (``s{step}-a{agent}-{attempt}``) and the decision's action rows:
    a derivation independent of the explorer's (which reads the prompts)."""
    ids = {rid: cid for cid, rid in con.execute("SELECT call_id, request_id FROM llm_calls").fetchall()}
    sql = "SELECT step, agent_id FROM actions WHERE type = 'invalid_llm_output'"
    invalid = {(s, a) for s, a in con.execute(sql).fetchall()}
    out = {}
    for rid, cid in ids.items():
        step, agent = int(rid.split("-")[0][1:]), int(rid.split("-")[1][1:])
        retried = rid.endswith("-0") and rid[:-1] + "1" in ids
        out[cid] = "retried" if retried else "rejected" if (step, agent) in invalid else "accepted"
    return out


def test_every_call_is_labelled_with_its_answers_fate(run: Path) -> None:
    with open_run(run) as con:
        calls = q.calls(con, limit=10_000)
        want = _expected(con)
        refused = dict(
            ((s, a), r)
            for s, a, r in con.execute(
                "SELECT step, agent_id, reason FROM actions WHERE type = 'invalid_llm_output'"
            ).fetchall()
        )
        by_id = {c.call_id: c for c in calls}
        assert {c.call_id: c.fate for c in calls} == want
        assert {"accepted", "retried", "rejected"} <= set(want.values())
        for c in calls:
            if c.fate == "retried":  # the reason is the parser's, and the retry call asked with it
                assert c.retry_call is not None and c.fate_reason
                again = by_id[c.retry_call]
                assert again.messages[-1]["content"] == retry_message(c.fate_reason)
                assert again.messages[-2] == {"role": "assistant", "content": c.response}
            elif c.fate == "rejected":
                assert c.fate_reason == refused[(c.step, c.agent_id)]
            else:
                assert c.fate_reason is None
        # one filter per fate, and the counts add up
        for fate in q.FATES:
            flt = q.CallFilter(fate=fate)
            got = q.calls(con, flt, limit=10_000)
            assert [c.call_id for c in got] == sorted(k for k, v in want.items() if v == fate)
            assert q.count_calls(con, flt) == len(got)
        assert sum(q.count_calls(con, q.CallFilter(fate=f)) for f in q.FATES) == q.count_calls(con)


def test_a_failed_call_is_failed_whatever_its_answer(run: Path, tmp_path: Path) -> None:
    import shutil

    import duckdb

    shutil.copytree(run, tmp_path / "r")
    db = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"))
    first = db.execute("SELECT min(call_id) FROM llm_calls").fetchone()[0]
    db.execute("UPDATE llm_calls SET outcome = 'backend_error', error = 'HTTP 500' WHERE call_id = ?", [first])
    db.close()
    with open_run(tmp_path / "r") as con:
        (c,) = [c for c in q.calls(con, q.CallFilter(fate="failed")) if c.call_id == first]
        assert c.fate_reason == "HTTP 500"


def test_the_retry_note_never_reaches_a_post(run: Path) -> None:
    """The answer that pasted the note into its post was refused; no post holds any of its phrases."""
    with open_run(run) as con:
        texts = [t for (t,) in con.execute("SELECT content FROM posts WHERE content IS NOT NULL").fetchall()]
        reasons = [r for (r,) in con.execute("SELECT reason FROM actions WHERE type = 'invalid_llm_output'").fetchall()]
    assert texts and not any(repeats_note(t) for t in texts)
    assert any("repeats the platform's note" in r for r in reasons)
    assert set(NOTE_MARKERS) <= set(LEAK_MARKERS)  # the guardrail would count one that slipped through


@pytest.mark.browser
def test_the_calls_page_shows_each_fate_and_filters_by_it(run: Path) -> None:
    from test_explore import CHROMIUM, serving

    with open_run(run) as con:
        want = _expected(con)
        calls = {c.call_id: c for c in q.calls(con, limit=10_000)}
    with serving(run) as url:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1100, "height": 1400})
            page.set_default_timeout(60_000)
            page.goto(f"{url}/run/0/calls")
            page.locator(".call").first.wait_for()
            shown = {
                int(e.get_attribute("data-call")): e.get_attribute("data-fate") for e in page.locator(".call").all()
            }
            assert shown and shown == {k: want[k] for k in shown}
            for fate in ("retried", "rejected", "accepted"):
                page.locator(".v-select:has-text('answer')").first.click()
                page.locator(f".v-menu__content .v-list-item:has-text('{fate}')").first.click()
                n = sum(1 for v in want.values() if v == fate)
                page.locator(".pager-range").first.filter(has_text=re.compile(rf"of {n:,}$")).wait_for()
                deadline = time.monotonic() + 60  # as long as the page's own default wait
                js = "els => els.map(e => e.dataset.fate)"
                while (fates := set(page.eval_on_selector_all(".call", js))) != {fate}:
                    assert time.monotonic() < deadline, (fate, fates)
                    time.sleep(0.2)
                if fate == "retried":  # the parser's reason is shown, and the retry opens
                    first = page.locator(".call").first
                    cid = int(first.get_attribute("data-call") or -1)
                    assert calls[cid].fate_reason in first.locator(".fate-reason").inner_text()
                    first.locator(".retry-link").click()
                    page.locator(f".call[data-call='{calls[cid].retry_call}']").wait_for()
                    page.go_back()
                    page.locator(".call").first.wait_for()
            page.screenshot(path=str(run.parent / "calls.png"), full_page=False)
            browser.close()


def test_extra_exposure_columns_show_as_scores(run: Path, tmp_path: Path) -> None:
    """A recommender that records scores in ``exposures`` (For You) gets them shown; none without them."""
    import shutil

    import duckdb

    with open_run(run) as con:
        agent, step = con.execute("SELECT agent_id, step FROM exposures ORDER BY 1, 2 LIMIT 1").fetchone()
        assert all(it.scores == {} for it in q.feed(con, agent, step))
    shutil.copytree(run, tmp_path / "r")
    db = duckdb.connect(str(tmp_path / "r" / "trace.duckdb"))
    db.execute("ALTER TABLE exposures ADD COLUMN score DOUBLE")
    db.execute("UPDATE exposures SET score = rank / 10.0")
    db.close()
    with open_run(tmp_path / "r") as con:
        items = q.feed(con, agent, step)
    assert items and all(it.scores == {"score": pytest.approx(it.rank / 10)} for it in items)
