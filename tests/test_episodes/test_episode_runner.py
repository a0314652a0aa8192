"""The episodes runner: specs, the DuckDB trace, the per-mode table (checked by hand), export, config, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from socium.cli.main import app
from socium.episodes.config import episodes_config_from_dict, load_episodes_config
from socium.episodes.export import export_sft
from socium.episodes.loop import EpisodeSpec
from socium.episodes.prompts import Script, TurnAction
from socium.episodes.runner import build_specs, models_for, run_episodes
from socium.errors import ConfigError, RunDirError
from socium.llm.model_free import ScriptedBackend
from socium.llm.types import LLMRequest

T_975_DF3 = 3.182446305284263  # Student t quantile, two-sided 95%, 3 degrees of freedom


def make_cfg(out: Path, **over):
    base = {
        "name": "t",
        "seed": 11,
        "out": str(out),
        "llm": {"backend": "scripted"},
        "tasks": {"mutual_friend": 2, "bargaining": 2, "n_friends": 3},
        "max_turns": 4,
    }
    base.update(over)
    return episodes_config_from_dict(base)


def hand_responder(specs: list[EpisodeSpec]):
    """Per mode: agents speak 3 words x4 turns; mindreaders speak 5 words then leave; script writes 3 turns.

    Answers: mutual friend agents both right (10), mindreaders one right (5), script both say "Nobody"
    (0, but they agree); bargaining agents deal at the buyer's target (10/0 -> 5), mindreaders no
    deal (0), script deal at the midpoint (5/5 -> 5).
    """
    by_id = {s.episode_id: s for s in specs}

    def respond(req: LLMRequest) -> str:
        md = req.metadata
        spec = by_id[md["episode_id"]]
        if md["call"] == "script":
            return json.dumps(
                {
                    "turns": [
                        {"speaker": 0, "action_type": "speak", "argument": "a b"},
                        {"speaker": 1, "action_type": "speak", "argument": "c d"},
                        {"speaker": 0, "action_type": "none", "argument": ""},
                    ]
                }
            )
        if md["call"] == "turn":
            if spec.mode == "agents":
                return json.dumps({"action_type": "speak", "argument": "hello there friend"})
            return json.dumps(
                {"action_type": "speak", "argument": "one two three four five"}
                if md["step"] == 0
                else {"action_type": "leave", "argument": ""}
            )
        task, i = spec.task, md["agent_id"]
        if spec.kind == "mutual_friend":
            name = {
                "agents": task.shared_name,
                "mindreaders": task.shared_name if i == 0 else "none",
                "script": "Nobody",
            }[spec.mode]
            return json.dumps({"friend_name": name})
        price = {
            "agents": task.buyer_target,
            "mindreaders": None,
            "script": (task.buyer_target + task.seller_target) / 2,
        }[spec.mode]
        return json.dumps({"deal": price is not None, "price": price})

    return respond


@pytest.fixture(scope="module")
def hand_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("episodes")
    cfg = make_cfg(out)
    models = models_for(ScriptedBackend(hand_responder(build_specs(cfg))))
    rep = run_episodes(cfg, models=models, plots=False)  # plots: see the CLI test
    return cfg, rep


def test_specs_order_pairs_modes_and_is_seeded(tmp_path) -> None:
    cfg = make_cfg(tmp_path, repeats=2)
    specs = build_specs(cfg)
    assert len(specs) == (2 + 2) * 3 * 2
    assert [s.index for s in specs] == list(range(len(specs)))
    assert [s.kind for s in specs[:12:3]] == ["mutual_friend", "bargaining", "mutual_friend", "bargaining"]
    assert [s.mode for s in specs[:3]] == ["agents", "mindreaders", "script"]
    first = specs[:3]
    assert len({s.scenario_id for s in first}) == 1 and len({s.seed for s in first}) == 1  # same situation per mode
    assert specs[12].scenario_id == specs[0].scenario_id and specs[12].seed != specs[0].seed  # repeat: new seeds
    assert [s.model_dump_json() for s in build_specs(cfg)] == [s.model_dump_json() for s in specs]
    other = build_specs(make_cfg(tmp_path, seed=12, repeats=2))
    assert other[0].task != specs[0].task


def test_trace_tables_are_consistent(hand_run) -> None:
    cfg, rep = hand_run
    con = duckdb.connect(str(rep.out / "episodes.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM episodes").fetchall()[0][0] == 12
        bad = con.execute(
            "SELECT e.episode_id FROM episodes e LEFT JOIN (SELECT episode_id, count(*) n FROM turns "
            "GROUP BY 1) t USING (episode_id) WHERE coalesce(t.n, 0) != e.n_turns"
        ).fetchall()
        assert bad == []
        n_calls = con.execute("SELECT sum(n_calls) FROM episodes").fetchall()[0][0]
        ids = [r[0] for r in con.execute("SELECT call_id FROM llm_calls ORDER BY call_id").fetchall()]
        assert ids == list(range(n_calls))
        # agents: 4 turns + 2 answers; mindreaders: 2 + 2; script: 1 + 2 -> per scenario 13, four scenarios
        assert n_calls == 4 * 13
        per_ep = con.execute("SELECT metadata->>'episode_id', count(*) FROM llm_calls GROUP BY 1").fetchall()
        assert dict(per_ep) == dict(con.execute("SELECT episode_id, n_calls FROM episodes").fetchall())
        row = con.execute(
            "SELECT ended_by, someone_left, words_per_turn FROM episodes WHERE mode = 'mindreaders' LIMIT 1"
        ).fetchall()[0]
        assert row == ("leave", True, 5.0)
    finally:
        con.close()


def test_table_numbers_match_hand_computation(hand_run) -> None:
    _, rep = hand_run
    rows = {(r["mode"], r["task"]): r for r in rep.summary["rows"]}
    expect = {
        "agents": ([10, 5, 10, 5], 3.0, 4.0, 1.0, 0.0),
        "mindreaders": ([5, 0, 5, 0], 5.0, 2.0, 0.0, 1.0),
        "script": ([0, 5, 0, 5], 2.0, 3.0, 1.0, 0.0),
    }
    for mode, (goals, wpt, turns, agree, leave) in expect.items():
        r = rows[(mode, "all")]
        mean = sum(goals) / 4
        sd = math.sqrt(sum((g - mean) ** 2 for g in goals) / 3)
        half = T_975_DF3 * sd / 2
        assert r["episodes"] == 4 and r["goal_mean"] == pytest.approx(mean)
        assert r["goal_ci_low"] == pytest.approx(max(0.0, mean - half))
        assert r["goal_ci_high"] == pytest.approx(min(10.0, mean + half))
        assert (r["words_per_turn"], r["turns_per_episode"], r["agreement_rate"], r["leave_rate"]) == (
            wpt,
            turns,
            agree,
            leave,
        )
    assert rows[("agents", "mutual_friend")]["goal_mean"] == 10.0
    assert rows[("agents", "mutual_friend")]["goal_ci_low"] is None  # 2 episodes: n too small for an interval
    assert rows[("mindreaders", "bargaining")]["agreement_rate"] == 0.0
    assert rows[("script", "mutual_friend")]["agreement_rate"] == 1.0  # agreeing on a wrong name is agreement
    assert [r["mode"] for r in rep.summary["rows"] if r["task"] == "all"] == ["agents", "mindreaders", "script"]
    md = (rep.out / "summary.md").read_text()
    assert "| agents | all | 4 | 7.50 [" in md and "(n=2: n too small for an interval)" in md
    # rule-scored tasks: the paper's GPT-4-judged SOTOPIA scores are not set beside them, only named in a note
    assert "6.95 / 7.49" not in md and "paper goal" not in md and "not measured the same way" in md


def test_rerun_resumes_and_config_change_is_refused(hand_run) -> None:
    cfg, rep = hand_run
    again = run_episodes(cfg, models=models_for(ScriptedBackend(["unused"])), plots=False)
    assert again.ran == 0 and again.skipped == 12
    changed = cfg.model_copy(update={"max_turns": 5})
    with pytest.raises(RunDirError):
        run_episodes(changed, models=models_for(ScriptedBackend(["x"])), plots=False)


def test_export_sft_formats(hand_run, tmp_path) -> None:
    _, rep = hand_run
    path, n = export_sft(rep.out, tmp_path / "s.jsonl", mode="script", fmt="turns")
    lines = path.read_text().splitlines()
    assert n == len(lines) == 4 * 3  # four script episodes, three turns each
    for line in lines:
        msgs = json.loads(line)["messages"]
        assert [m["role"] for m in msgs] == ["system", "user", "assistant"]
        TurnAction.model_validate_json(msgs[2]["content"])
        assert "Your goal is known only to you" in msgs[0]["content"]  # agent view, not the author's
    second = json.loads(lines[1])["messages"]
    assert "a b" in second[1]["content"] and json.loads(second[2]["content"])["argument"] == "c d"
    path, n = export_sft(rep.out, tmp_path / "w.jsonl", mode="script", fmt="script")
    assert n == 4
    Script.model_validate_json(json.loads(path.read_text().splitlines()[0])["messages"][2]["content"])
    assert export_sft(rep.out, tmp_path / "a.jsonl", mode=None, fmt="turns")[1] == 12 + 4 * 4 + 4 * 2
    assert export_sft(rep.out, tmp_path / "g.jsonl", mode="script", min_goal=5)[1] == 2 * 3


@pytest.mark.parametrize(
    "over,needle",
    [
        ({"modes": ["agents", "agents"]}, "must not repeat"),
        ({"modes": ["narrator"]}, "modes.0"),
        ({"max_turns": 0}, "max_turns"),
        ({"tasks": {"mutual_friend": 0}}, "nothing to run"),
        ({"sotopia": {"n": 2}}, "sotopia.path is required"),
        ({"include_environmnet": True}, "unknown key"),
        ({"executor": {"kind": "dask"}}, "executor.kind"),
    ],
)
def test_bad_config_errors_name_the_key(tmp_path, over, needle) -> None:
    with pytest.raises(ConfigError, match=needle):
        make_cfg(tmp_path, **over)


def test_config_file_and_overrides(tmp_path) -> None:
    f = tmp_path / "e.yaml"
    f.write_text("name: x\ntasks: {mutual_friend: 1}\nllm: {backend: random}\n")
    cfg = load_episodes_config(f, ["max_turns=7", "executor.kind=ray"])
    assert (cfg.max_turns, cfg.executor.kind, cfg.modes) == (7, "ray", ["agents", "mindreaders", "script"])
    assert cfg.config_hash() == load_episodes_config(f, ["max_turns=7"]).config_hash()  # executor is not a result
    with pytest.raises(ConfigError, match="not found"):
        load_episodes_config(tmp_path / "missing.yaml")
    cfg = load_episodes_config(Path(__file__).parents[2] / "examples" / "episodes.yaml")
    assert cfg.llm.backend == "embedded" and not cfg.include_environment


def test_cli_episodes_and_export(tmp_path) -> None:
    f = tmp_path / "e.yaml"
    f.write_text("name: cli\ntasks: {mutual_friend: 1, bargaining: 1}\nllm: {backend: random}\nmax_turns: 3\n")
    runner = CliRunner()
    res = runner.invoke(app, ["episodes", str(f), "--out", str(tmp_path / "run"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "mindreaders" in res.output and "ran 6 episodes" in res.output
    assert "SMOKE RUN: llm.backend 'random'" in res.output
    assert "[bold red]" not in res.output and "[/]" not in res.output  # styled, not printed as literal markup
    assert (tmp_path / "run" / "summary.md").read_text().startswith("**SMOKE RUN")
    assert (tmp_path / "run" / "summary.json").is_file()
    page = (tmp_path / "run" / "report" / "index.html").read_text()  # the HTML report, banner and both figures
    assert "SMOKE RUN" in page and "goal_by_mode.png" in page and "words_per_turn.png" in page
    assert "report:" in res.output
    again = runner.invoke(app, ["episodes", str(f), "--out", str(tmp_path / "run"), "--quiet"])
    assert again.exit_code == 0 and "reusing 6 finished episodes" in again.output and "ran 0 episodes" in again.output
    assert all(
        (tmp_path / "run" / "plots" / p).stat().st_size > 1000 for p in ("goal_by_mode.png", "words_per_turn.png")
    )
    res = runner.invoke(app, ["export-sft", str(tmp_path / "run"), "--mode", "all", "--out", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 0 and "wrote" in res.output
    assert all("messages" in json.loads(ln) for ln in (tmp_path / "x.jsonl").read_text().splitlines())
    res = runner.invoke(app, ["episodes", str(f), "--set", "max_turns=99"])
    assert res.exit_code == 2 and "max_turns" in res.output
    res = runner.invoke(app, ["export-sft", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and "episodes.duckdb" in res.output


@pytest.mark.slow
@pytest.mark.ray
def test_ray_executor_matches_inprocess(tmp_path) -> None:
    common = {"llm": {"backend": "random"}, "tasks": {"mutual_friend": 2, "bargaining": 1}, "max_turns": 3}
    a = run_episodes(make_cfg(tmp_path / "a", **common), plots=False)
    b = run_episodes(make_cfg(tmp_path / "b", **common, executor={"kind": "ray", "parallel": 2}), plots=False)
    q = "SELECT episode_id, turn, speaker, action_type, argument FROM turns ORDER BY episode_id, turn"
    calls = "SELECT call_id, request_id, response FROM llm_calls ORDER BY call_id"
    rows = []
    for rep in (a, b):
        con = duckdb.connect(str(rep.out / "episodes.duckdb"), read_only=True)
        rows.append((con.execute(q).fetchall(), con.execute(calls).fetchall()))
        con.close()
    assert rows[0] == rows[1] and len(rows[0][0]) > 0


def test_hostile_model_output_is_stored_not_crashing(tmp_path) -> None:
    """NULs, lone surrogates, giant and non-finite values from a model must reach the trace bounded."""
    cfg = make_cfg(tmp_path, tasks={"bargaining": 1}, modes=["agents"], max_turns=3)

    def respond(req: LLMRequest) -> str:
        md = req.metadata
        if md["call"] == "answer":
            return '{"deal": true, "price": Infinity}' if md["agent_id"] == 0 else '{"deal": true, "price": NaN}'
        if md["step"] == 0:
            return json.dumps({"action_type": "speak", "argument": "a\x00b \ud800 '); DROP TABLE turns; --"})
        if md["step"] == 1:
            return "\x00\ud800" + "{" * 20000
        return json.dumps({"action_type": "speak", "argument": "x" * 5000})

    rep = run_episodes(cfg, models=models_for(ScriptedBackend(respond)), plots=False)
    con = duckdb.connect(str(rep.out / "episodes.duckdb"), read_only=True)
    try:
        turns = con.execute("SELECT action_type, argument, raw, valid FROM turns ORDER BY turn").fetchall()
        answers, agreement, goal = con.execute("SELECT answer_errors, agreement, goal_0 FROM episodes").fetchall()[0]
    finally:
        con.close()
    assert turns[0][1] == "ab ? '); DROP TABLE turns; --" and turns[0][3]  # stored as data, surrogate replaced
    assert turns[1][0] == "invalid" and "\x00" not in turns[1][2] and len(turns[1][2]) <= 8000
    assert turns[2][0] == "speak" and len(turns[2][1]) == 4000  # an overlong utterance is cut to the bound
    assert "finite" in answers and agreement is False and goal == 0.0


def test_goal_error_bars_are_the_tables_interval(tmp_path, monkeypatch) -> None:
    """The plotted interval is the table's, also where it is clipped to 10 (asymmetric)."""
    from matplotlib.axes import Axes

    from socium.episodes.report import table_rows, write_plots

    row = {
        "mode": "script",
        "task": "bargaining",
        "episodes": 4,
        "goal_mean": 9.5,
        "goal_ci_low": 8.7,
        "goal_ci_high": 10.0,
        "judge_goal_mean": None,
        "words_per_turn": 12.0,
        "turns_per_episode": 5.0,
        "agreement_rate": 1.0,
        "leave_rate": 0.0,
        "valid_rate": 1.0,
    }
    summary = {"rows": [row, {**row, "task": "all"}], "model": "m"}
    seen = []
    real_bar = Axes.bar

    def spy(self, x, height, *a, **kw):
        seen.append((list(height), kw.get("yerr")))
        return real_bar(self, x, height, *a, **kw)

    monkeypatch.setattr(Axes, "bar", spy)
    write_plots(summary, tmp_path)
    heights, yerr = seen[0]
    assert heights == [9.5]
    assert [float(v) for v in yerr[:, 0]] == pytest.approx([9.5 - 8.7, 10.0 - 9.5])  # [below, above]
    assert "9.50 [8.70, 10.00]" in table_rows(summary)[0][3]
