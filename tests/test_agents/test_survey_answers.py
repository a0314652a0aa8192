"""Survey answers whose number contradicts their words are flagged, kept out of means, and counted (issue 29 item 2).

The cases are the ones a first-time user found in real traces: "yes" stored as -1.0, "yes" as 0.13,
", 1.0," as -1.0, and a run of emoji with a value.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from socium.agents.llm_policy import LLMPolicy
from socium.agents.survey_answers import check_answer
from socium.config.loading import config_from_dict
from socium.experiments.opinions.report import camp_headline
from socium.llm.model_free import LatencyBackend, schema_answer
from socium.llm.wrappers import CachingBackend
from socium.simulator.simulation import Simulation
from socium.trace.queries.opinions import polarisation_metrics, survey_outcomes, survey_rows
from socium.trace.queries.runs import open_run

S = (-1.0, 1.0)


@pytest.mark.parametrize(
    ("text", "value", "outcome", "says"),
    [
        ("yes", -1.0, "inconsistent", "'yes' (positive)"),
        ("yes", 0.13, "inconsistent", "too close to the middle"),
        (", 1.0,", -1.0, "inconsistent", "writes 1 but the value is -1"),
        ("\U0001f600\U0001f600\U0001f600\U0001f600\U0001f600", 0.5, "degenerate", "no word and no number"),
        ("...!!", 0.0, "degenerate", "no word"),
        ("{{short text}}", 1.0, "degenerate", "template placeholder"),  # seen in a SmolLM2-135M run
        (", 1.0, 2, 3, 4, 5, 6, 7, 8", 1.0, "degenerate", "run of 8 numbers"),
        ("taking the bold, bold, bold, bold, bold, bold, bold, bold", 1.0, "degenerate", "repeats one word"),
        ("I do not agree with her plan", 0.6, "inconsistent", "'not agree' (negative)"),
        ("No, keep the safe path.", 0.5, "inconsistent", "'no' (negative)"),
        ("-0.4", 0.4, "inconsistent", "writes -0.4"),
    ],
)
def test_contradicting_or_empty_answers_get_a_typed_outcome(text, value, outcome, says):
    got = check_answer(text, value, S)
    assert got is not None and got[0] == outcome and says in got[1], got


def test_the_reason_quotes_our_words_never_the_agents_text():
    outcome, reason = check_answer("yes <script>x</script> '); DROP TABLE surveys; --", -1.0, S)
    assert outcome == "inconsistent" and "<script>" not in reason and "DROP" not in reason and len(reason) < 200


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("yes", 0.8),
        ("No, she should keep the safe path.", -0.7),
        ("somewhat agree", 0.1),  # a hedged stance word needs only the right side
        ("I do not agree", -0.6),
        ("I'd say 0.5 on this", 0.5),
        ("+0.400", 0.4),  # what rule-based agents write
        ("No doubt: she should go for it", 0.9),  # "no doubt" is not a no
        ("It is hard to say", -0.2),  # no stance word, no number: nothing to contradict
        ("5 out of 10", 0.0),  # numbers outside the scale are not the value
    ],
)
def test_consistent_answers_pass(text, value):
    assert check_answer(text, value, S) is None


def test_other_scales_use_their_own_middle():
    assert check_answer("yes", 7.0, (0.0, 10.0)) is None
    assert check_answer("yes", 4.0, (0.0, 10.0))[0] == "inconsistent"
    assert check_answer("I give it 7", 3.0, (0.0, 10.0))[0] == "inconsistent"


ANSWERS = {
    0: '{"answer": "yes", "value": -1.0}',
    1: '{"answer": "\U0001f600\U0001f600\U0001f600", "value": 0.5}',
    2: '{"answer": ", 1.0,", "value": -1.0}',
}


def responder(req):
    md = req.metadata
    if not md.get("survey"):
        return schema_answer(req)
    return ANSWERS.get(md["agent_id"] % 4, '{"answer": "somewhat", "value": 0.25}')


def _run(tmp_path):
    c = config_from_dict(
        {
            "name": "surveys",
            "seed": 2,
            "steps": 2,
            "population": {"n_agents": 12, "mean_activity": 0.5, "stance": "bimodal"},
            "graph": {"kind": "random_out", "params": {"out_degree": 3}},
            "policy": {"kind": "llm"},
            "llm": {"backend": "random"},
            "surveys": [{"every": 1, "question": "Should she take the risk?", "scale": [-1, 1]}],
        }
    )
    policy = LLMPolicy(c, backend_factory=lambda cache: CachingBackend(LatencyBackend(0.0, responder=responder), cache))
    Simulation(c, tmp_path / "r", policy=policy).run()
    return tmp_path / "r"


def test_rejected_answers_are_recorded_counted_and_left_out_of_means(tmp_path):
    run = _run(tmp_path)
    con = duckdb.connect(str(run / "trace.duckdb"), read_only=True)
    rows = con.execute("SELECT agent_id, value, stated_value, outcome, reason FROM surveys WHERE step = 0").fetchall()
    con.close()
    want = {0: "inconsistent", 1: "degenerate", 2: "inconsistent", 3: "ok"}
    for agent, value, stated, outcome, reason in rows:
        assert outcome == want[agent % 4], (agent, outcome)
        if outcome == "ok":
            assert value == stated == 0.25 and reason is None
        else:
            assert value is None and stated == {0: -1.0, 1: 0.5, 2: -1.0}[agent % 4] and reason.startswith(outcome)
    with open_run(run) as con:
        m = polarisation_metrics(con, n_boot=200)
        counts = survey_outcomes(con)
    assert counts[0] == {"inconsistent": 6, "degenerate": 3, "ok": 3} and counts[1] == counts[0]
    for p in m["points"][1:]:
        assert p["answered"] == 3 and p["asked"] == 12 and p["mean"] == pytest.approx(0.25)
        assert p["outcomes"] == {"degenerate": 3, "inconsistent": 6, "ok": 3}
    assert m["answer_outcomes"] == {"degenerate": 6, "inconsistent": 12, "ok": 6}


def test_traces_written_before_the_outcome_column_still_read(tmp_path):
    run = _run(tmp_path)
    con = duckdb.connect(str(run / "trace.duckdb"))
    con.execute("UPDATE surveys SET value = stated_value")  # as an old trace stored them: unchecked
    con.execute("ALTER TABLE surveys DROP COLUMN outcome")
    con.execute("ALTER TABLE surveys DROP COLUMN stated_value")
    con.close()
    with open_run(run) as con:
        rows = survey_rows(con)
        m = polarisation_metrics(con, n_boot=200)
    assert len(rows) == 24 and {r[4] for r in rows} == {"ok"}  # never checked: all read as ok
    assert m["points"][1]["answered"] == 12


def _camp_metrics(cons_first, cons_last, prog_first, prog_last, gap_ci):
    def shift(a, b, first, last):
        return {"shift": b - a, "shift_ci": [b - a - 0.1, b - a + 0.1], "n_first": 10, "n_last": 9,
                "first_step": 1, "last_step": 5, "last_mean": b}  # fmt: skip

    return {
        "camp_shift": {
            "conservative": shift(cons_first, cons_last, 1, 5),
            "progressive": shift(prog_first, prog_last, 1, 5),
        },
        "points": [{"kind": "survey", "answered": 19, "camp_gap": float(np.mean(gap_ci)), "camp_gap_ci": gap_ci}],
    }


def test_the_headline_says_which_way_each_camp_moved():
    # the conservative camp drifts to +0.5 and both camps answer alike: not polarisation
    text = camp_headline(_camp_metrics(-0.1, 0.5, 0.1, 0.5, [-0.2, 0.2]), "LLM (SmolLM2-135M)")
    assert "conservative camp moved +0.60 [+0.50, +0.70]" in text and "toward the other side" in text
    assert "on the other side of neutral from its persona" in text and "answer alike" in text
    assert "more extreme" not in text.split("progressive camp")[0] and "persona-blind" in text
    # each camp moving outward with camps apart is what polarisation looks like
    text = camp_headline(_camp_metrics(-0.3, -0.6, 0.3, 0.6, [0.9, 1.3]), "LLM")
    assert text.count("away from the middle (more extreme)") == 2 and "answer alike" not in text
