"""Model-quality guardrails (issue 29 item 7): a run whose model answers garbage carries a visible warning
in its Simulation Card and report; a clean run does not; every card names what the model can support."""

import json

from typer.testing import CliRunner

from conftest import small_config
from socium.cli.main import app
from socium.experiments.report import write_report
from socium.reporting.guardrails import LEAK_MARKERS, THRESHOLDS, model_support, quality_warnings
from socium.simulator.simulation import Simulation

LLM = {"policy": {"kind": "llm"}, "population": {"n_agents": 12, "mean_activity": 1.0}}
GARBAGE = [  # a re-ask takes the next answer: most agent-steps end invalid, every post echoes the prompt
    "definitely not json",
    "{{{",
    "still not json",
    json.dumps({"type": "create_post", "content": "Lovely day. Reply with one valid JSON object."}),
]
CLEAN = [json.dumps({"type": "create_post", "content": "The bakery on the corner opened again today."})]


def _run(tmp_path, name, responses):
    llm = {"backend": "scripted", "scripted_responses": responses, "min_valid_fraction": None}  # runs to the end
    cfg = small_config(steps=2, llm=llm, **LLM)
    Simulation(cfg, tmp_path / name).run()
    return tmp_path / name


def _card_text(run_dir):
    r = CliRunner().invoke(app, ["card", str(run_dir)], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    return r.output


def test_garbage_run_is_flagged_in_card_and_report(tmp_path):
    run = _run(tmp_path, "garbage", GARBAGE)
    text = _card_text(run)
    assert "MODEL OUTPUT WARNING" in text and "prompt instructions" in text
    from socium.reporting.card import simulation_card

    card = simulation_card(run)
    warnings = card["quality_warnings"]
    assert list(card)[:2] == ["smoke_run", "quality_warnings"]  # right under the smoke banner
    assert any("of the agents' actions were invalid" in w for w in warnings)
    assert card["llm"]["output_quality"]["leaked_rate"].startswith("1.000")  # every post echoed the prompt
    rep = write_report(run)
    assert any("MODEL OUTPUT WARNING" in b for b in rep.banners)
    assert "MODEL OUTPUT WARNING" in rep.html.read_text(encoding="utf-8")


def test_clean_run_has_no_warning(tmp_path):
    run = _run(tmp_path, "clean", CLEAN)
    text = _card_text(run)
    assert "MODEL OUTPUT WARNING" not in text
    from socium.reporting.card import simulation_card

    card = simulation_card(run)
    assert "quality_warnings" not in card
    assert card["llm"]["output_quality"]["invalid_rate"].startswith("0.000")
    assert not any("MODEL OUTPUT WARNING" in b for b in write_report(run).banners)


def test_thresholds_and_model_support():
    assert quality_warnings({"invalid_rate": (10, 100)}) == []  # at the threshold: no warning
    (w,) = quality_warnings({"invalid_rate": (11, 100), "leaked_rate": (0, 0)})  # no posts: no leak rate
    assert "11% (11 of 100)" in w and f"{THRESHOLDS.invalid_rate:.0%} threshold" in w
    assert quality_warnings({"survey_inconsistent_rate": (3, 10)})[0].count("survey answers") == 1
    assert "plumbing model" in model_support(["SmolLM2-135M-Instruct.Q4_1"])
    assert "not social behaviour" in model_support(["smollm2-135m"])
    assert "not assessed" in model_support(["Qwen/Qwen3-8B"])
    assert all(m == m.lower() for m in LEAK_MARKERS)  # matched case-insensitively against lowered text


def _row(mode, task):
    return {
        "mode": mode,
        "task": task,
        "episodes": 5,
        "n_goal": 5,
        "goal_mean": 3.0,
        "goal_ci_low": 1.0,
        "goal_ci_high": 5.0,
        "judge_goal_mean": None,
        "words_per_turn": 12.0,
        "turns_per_episode": 5.0,
        "agreement_rate": 0.4,
        "leave_rate": 0.0,
        "valid_rate": 1.0,
    }


def test_paper_scores_only_beside_like_measurements():
    """Issue 29 item 8: Zhou et al.'s GPT-4-judged SOTOPIA goals sit beside SOTOPIA rows judged by GPT-4
    only; beside rule-scored tasks (or a small judge) they move to a note saying why they are not comparable."""
    from socium.episodes.report import PAPER_HEADER, markdown_table, paper_note, shows_paper, table_rows

    rule = {"rows": [_row("agents", "bargaining"), _row("agents", "all")], "judge_model": None}
    assert not shows_paper(rule)
    assert all(len(r) == 11 for r in table_rows(rule))  # no paper columns at all
    md = markdown_table(rule)
    assert PAPER_HEADER[0] not in md and "6.95 / 7.49" not in md and "not measured the same way" in md
    small_judge = {**rule, "rows": [_row("agents", "sotopia")], "judge_model": "SmolLM2-135M-Instruct.Q4_1"}
    assert not shows_paper(small_judge) and "SmolLM2" in paper_note(small_judge)
    gpt4 = {"rows": [_row("agents", "bargaining"), _row("agents", "sotopia")], "judge_model": "gpt-4o-2024-08-06"}
    rows = table_rows(gpt4)
    assert shows_paper(gpt4) and rows[0][-2:] == ["", ""]  # the rule-scored row stays bare
    assert rows[1][-2:] == ["6.95 / 7.49", "29.8"]  # the SOTOPIA row, judged by GPT-4, gets the paper's figures
