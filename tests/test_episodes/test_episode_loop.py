"""The episode loop: turn validation, termination, script mode, objective outcomes and the judge."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from socium.episodes.config import episodes_config_from_dict
from socium.episodes.judge import judge_schema, judge_vs_objective
from socium.episodes.loop import EpisodeResult, EpisodeSpec, TurnRecord, end_reason, run_episode
from socium.episodes.objective import DealAnswer, decide_deal
from socium.episodes.prompts import DIMENSIONS
from socium.episodes.runner import build_specs, models_for
from socium.episodes.structured import wire_schema
from socium.episodes.tasks import score_bargaining
from socium.llm.base import run_coro_sync
from socium.llm.model_free import RandomBackend, ScriptedBackend
from socium.llm.types import LLMRequest

Responder = Callable[[LLMRequest], str]


def cfg_for(**over: Any):
    base = {
        "name": "t",
        "seed": 3,
        "out": "unused",
        "llm": {"backend": "scripted"},
        "tasks": {"mutual_friend": 1, "bargaining": 1, "n_friends": 3},
        "max_turns": 6,
    }
    base.update(over)
    return episodes_config_from_dict(base)


def spec_of(cfg, kind: str, mode: str) -> EpisodeSpec:
    return next(s for s in build_specs(cfg) if s.kind == kind and s.mode == mode)


def turn(action: str, argument: str = "") -> str:
    return json.dumps({"action_type": action, "argument": argument})


def play(
    spec: EpisodeSpec, cfg, responder: Responder, judge: Responder | None = None
) -> tuple[EpisodeResult, ScriptedBackend]:
    backend = ScriptedBackend(responder)
    jb = ScriptedBackend(judge) if judge is not None else None
    return run_coro_sync(run_episode(spec, cfg, models_for(backend, jb))), backend


def answers(spec: EpisodeSpec, a0: dict, a1: dict) -> Callable[[LLMRequest], str | None]:
    def f(req: LLMRequest) -> str | None:
        if req.metadata["call"] == "answer":
            return json.dumps(a0 if req.metadata["agent_id"] == 0 else a1)
        return None

    return f


def test_agents_episode_runs_to_leave_and_scores_the_answers() -> None:
    cfg = cfg_for()
    spec = spec_of(cfg, "mutual_friend", "agents")
    name = spec.task.shared_name  # type: ignore[union-attr]
    ans = answers(spec, {"friend_name": name}, {"friend_name": f" {name.lower()}. "})

    def responder(req: LLMRequest) -> str:
        step = req.metadata["step"]
        return ans(req) or (turn("leave") if step == 3 else turn("speak", f"turn {step} words"))

    res, backend = play(spec, cfg, responder)
    assert [(t.turn, t.speaker, t.action_type) for t in res.turns] == [
        (0, 0, "speak"),
        (1, 1, "speak"),
        (2, 0, "speak"),
        (3, 1, "leave"),
    ]
    assert res.ended_by == "leave" and res.valid
    assert res.objective is not None and res.objective.goal == (10.0, 10.0) and res.agreement is True
    assert len(res.calls) == 6 == len(backend.calls)  # 4 turns + 2 answers, all recorded
    assert backend.calls[0].json_schema["properties"]["argument"]["maxLength"] == cfg.argument_chars == 600
    # speaker alternates and each turn prompt shows the earlier turns as quoted data
    assert "turn 2 words" in backend.calls[3].messages[1].content
    assert "turn 2 words" not in backend.calls[2].messages[1].content


@pytest.mark.parametrize("mode,sees_other", [("agents", False), ("mindreaders", True)])
def test_turn_prompts_follow_the_mode(mode: str, sees_other: bool) -> None:
    cfg = cfg_for(max_turns=2)
    spec = spec_of(cfg, "mutual_friend", mode)
    other_only = next(f.name for f in spec.task.friends[1] if f.name != spec.task.shared_name)  # type: ignore[union-attr]
    res, backend = play(
        spec, cfg, lambda r: answers(spec, {"friend_name": "x"}, {"friend_name": "x"})(r) or turn("speak", "hi")
    )
    first = backend.calls[0]
    assert first.metadata["agent_id"] == 0 and first.metadata["perspective"] == mode
    assert (other_only in first.messages[1].content) is sees_other
    assert spec.task.shared_name in first.messages[1].content  # type: ignore[union-attr]  # own list holds it
    assert "common friend" not in first.messages[1].content  # environment-only text stays hidden


def test_include_environment_flag_reveals_ground_truth() -> None:
    cfg = cfg_for(max_turns=1, include_environment=True)
    spec = spec_of(cfg, "mutual_friend", "agents")
    _, backend = play(spec, cfg, lambda r: answers(spec, {"friend_name": "x"}, {"friend_name": "x"})(r) or turn("none"))
    assert "common friend" in backend.calls[0].messages[1].content


def test_none_streak_and_invalid_turns_end_the_episode() -> None:
    cfg = cfg_for(max_none_streak=3)
    spec = spec_of(cfg, "bargaining", "agents")
    no = {"deal": False, "price": None}

    def responder(req: LLMRequest) -> str:
        if req.metadata["call"] == "answer":
            return json.dumps(no)
        step = req.metadata["step"]
        return {0: turn("speak", "hello"), 1: turn("none"), 2: "not json at all"}.get(step, turn("none"))

    res, backend = play(spec, cfg, responder)
    assert [t.action_type for t in res.turns] == ["speak", "none", "invalid", "none"]
    assert res.ended_by == "none_streak"
    bad = res.turns[2]
    assert not bad.valid and bad.raw == "not json at all" and "after re-ask" in (bad.error or "")
    # the re-ask showed the model its error; the next speaker saw the invalid turn as "did nothing"
    reask = [c for c in backend.calls if c.request_id == f"{spec.episode_id}-t2-1"][0]
    assert "could not be used" in reask.messages[-1].content
    assert (
        "(did nothing)"
        in [c for c in backend.calls if c.request_id == f"{spec.episode_id}-t3-0"][0].messages[1].content
    )
    assert res.objective is not None and res.objective.goal == (0.0, 0.0) and res.agreement is False


def test_reask_recovers_a_turn() -> None:
    cfg = cfg_for(max_turns=1)
    spec = spec_of(cfg, "mutual_friend", "agents")
    seen: list[str] = []

    def responder(req: LLMRequest) -> str:
        if req.metadata["call"] == "answer":
            return json.dumps({"friend_name": "none"})
        seen.append(req.request_id)
        return turn("shout", "x") if req.request_id.endswith("-0") else turn("speak", "ok then")

    res, _ = play(spec, cfg, responder)
    assert seen == [f"{spec.episode_id}-t0-0", f"{spec.episode_id}-t0-1"]
    assert res.turns[0].valid and res.turns[0].argument == "ok then" and res.ended_by == "max_turns"


def test_max_turns_cap() -> None:
    cfg = cfg_for(max_turns=3)
    spec = spec_of(cfg, "mutual_friend", "mindreaders")
    res, _ = play(
        spec, cfg, lambda r: answers(spec, {"friend_name": "a"}, {"friend_name": "b"})(r) or turn("speak", "x")
    )
    assert len(res.turns) == 3 and res.ended_by == "max_turns" and res.agreement is False


def test_end_reason_rules() -> None:
    t = lambda a, valid=True: TurnRecord(0, 0, a, "", None, valid)
    assert end_reason([t("speak"), t("leave")], 20, 2) == "leave"
    assert end_reason([t("none"), t("none")], 20, 2) == "none_streak"
    assert end_reason([t("none"), t("invalid", False)], 20, 2) == "none_streak"
    assert end_reason([t("none"), t("speak")], 20, 2) is None
    assert end_reason([t("speak")] * 3, 3, 2) == "max_turns"


def script(turns: list[tuple[int, str, str]]) -> str:
    return json.dumps({"turns": [{"speaker": s, "action_type": a, "argument": g} for s, a, g in turns]})


def test_script_mode_one_call_cut_to_max_turns() -> None:
    cfg = cfg_for(max_turns=5)
    spec = spec_of(cfg, "bargaining", "script")
    task = spec.task
    price = (task.buyer_target + task.seller_target) / 2  # type: ignore[union-attr]
    long = script([(i % 2, "speak", f"line {i}") for i in range(25)])
    deal = {"deal": True, "price": price}

    res, backend = play(spec, cfg, lambda r: answers(spec, deal, deal)(r) or long)
    assert [c.metadata["call"] for c in backend.calls] == ["script", "answer", "answer"]
    assert len(res.turns) == 5 and res.ended_by == "max_turns" and res.valid
    assert res.turns[4].argument == "line 4"
    assert res.objective == score_bargaining(task, True, price) and res.objective.goal == (5.0, 5.0)  # type: ignore[arg-type]
    # the author saw both goals; the characters answering afterwards see only their own
    both = backend.calls[0].messages[1].content
    assert f"{task.buyer_target:.2f}" in both and f"{task.seller_target:.2f}" in both  # type: ignore[union-attr]
    assert f"{task.seller_target:.2f}" not in backend.calls[1].messages[1].content  # type: ignore[union-attr]


def test_script_mode_leave_ends_the_script() -> None:
    cfg = cfg_for()
    spec = spec_of(cfg, "mutual_friend", "script")
    s = script([(0, "speak", "hi"), (1, "leave", ""), (0, "speak", "after the end")])
    res, _ = play(spec, cfg, lambda r: answers(spec, {"friend_name": "a"}, {"friend_name": "a"})(r) or s)
    assert [t.action_type for t in res.turns] == ["speak", "leave"] and res.ended_by == "leave"


def test_invalid_script_is_recorded_with_reason() -> None:
    cfg = cfg_for()
    spec = spec_of(cfg, "mutual_friend", "script")
    bad = json.dumps({"turns": [{"speaker": 2, "action_type": "speak", "argument": "x"}]})
    res, backend = play(spec, cfg, lambda r: answers(spec, {"friend_name": "a"}, {"friend_name": "b"})(r) or bad)
    assert not res.valid and res.ended_by == "invalid_script" and res.turns == []
    assert "speaker" in (res.invalid_reason or "")
    assert [c.metadata["call"] for c in backend.calls] == ["script", "script", "answer", "answer"]
    assert res.objective is not None  # the characters are still asked: nothing was said


def test_bargaining_deal_rule() -> None:
    cfg = cfg_for()
    task = spec_of(cfg, "bargaining", "agents").task
    tol = max(1.0, 0.01 * task.listing_price)  # type: ignore[union-attr]
    d = lambda deal, price: DealAnswer(deal=deal, price=price)
    assert decide_deal(task, d(True, 100.0), d(True, 100.0 + tol))[:2] == (True, 100.0 + tol / 2)  # type: ignore[arg-type]
    assert decide_deal(task, d(True, 100.0), d(True, 100.0 + tol + 0.5))[0] is False  # type: ignore[arg-type]
    assert decide_deal(task, d(True, 100.0), d(False, None))[0] is False  # type: ignore[arg-type]
    assert decide_deal(task, d(True, None), d(True, None))[0] is False  # type: ignore[arg-type]
    assert decide_deal(task, d(True, 100.0), None)[0] is False  # type: ignore[arg-type]


VALID_EVAL = {k: {"reasoning": "r", "score": hi} for k, (lo, hi, _) in DIMENSIONS.items()}


def test_judge_scores_recorded_and_out_of_range_rejected() -> None:
    cfg = cfg_for(judge_llm={"backend": "scripted"})
    spec = spec_of(cfg, "mutual_friend", "agents")
    play_turns = lambda r: answers(spec, {"friend_name": "a"}, {"friend_name": "a"})(r) or turn("leave")
    good = json.dumps({"agent_0": VALID_EVAL, "agent_1": {**VALID_EVAL, "goal": {"reasoning": "r", "score": 3}}})
    res, _ = play(spec, cfg, play_turns, judge=lambda r: good)
    assert res.judge is not None and res.judge["agent_0"]["goal"] == 10 and res.judge["agent_1"]["goal"] == 3
    assert res.judge["agent_0"]["overall"] == pytest.approx(sum(hi for _, hi, _ in DIMENSIONS.values()) / 7)
    assert any(c[1].metadata["call"] == "judge" for c in res.calls)

    over = json.dumps({"agent_0": {**VALID_EVAL, "goal": {"reasoning": "r", "score": 11}}, "agent_1": VALID_EVAL})
    res, _ = play(spec, cfg, play_turns, judge=lambda r: over)
    assert res.judge is None and "goal.score" in (res.judge_error or "")


def test_sotopia_agreement_comes_from_the_judge(shared_data) -> None:
    cfg = cfg_for(
        tasks={}, sotopia={"path": str(shared_data / "sotopia"), "n": 1}, judge_llm={"backend": "scripted"}, max_turns=2
    )
    spec = build_specs(cfg)[0]
    assert spec.kind == "sotopia" and spec.task is None
    good = json.dumps({"agent_0": VALID_EVAL, "agent_1": VALID_EVAL})
    res, backend = play(spec, cfg, lambda r: turn("speak", "hello"), judge=lambda r: good)
    assert res.objective is None and res.agreement is True
    assert [c.metadata["call"] for c in backend.calls] == ["turn", "turn"]  # no answer questions without a task


def test_wire_schema_caps_strings_without_touching_validation() -> None:
    s = judge_schema(4000)
    capped = wire_schema(s, max_tokens=50)
    assert capped is not None
    lengths = [
        p["reasoning"]["maxLength"]
        for p in capped["$defs"].values()
        if "reasoning" in p.get("properties", {})
        for p in [p["properties"]]
    ]
    assert lengths and set(lengths) == {150}
    assert wire_schema({"type": "string", "maxLength": 900}, max_tokens=500, max_string_chars=240) == {
        "type": "string",
        "maxLength": 240,
    }
    assert s["$defs"]["Score0To10"]["properties"]["reasoning"]["maxLength"] == 4000  # original untouched
    assert judge_vs_objective([(10, 0), (0, 10)]) == {"n": 2, "mae": 10.0, "pearson_r": pytest.approx(-1.0)}
    assert judge_vs_objective([(5, 1), (5, 2)])["pearson_r"] is None


def test_random_backend_episodes_are_deterministic() -> None:
    cfg = cfg_for(judge_llm={"backend": "random"})
    for spec in build_specs(cfg):
        runs = [
            run_coro_sync(run_episode(spec, cfg, models_for(RandomBackend(seed=5), RandomBackend(seed=6))))
            for _ in range(2)
        ]
        a, b = ([(t.turn, t.speaker, t.action_type, t.argument, t.valid) for t in r.turns] for r in runs)
        assert a == b and runs[0].answers == runs[1].answers and runs[0].judge == runs[1].judge
        assert [c[1].seed for c in runs[0].calls] == [c[1].seed for c in runs[1].calls]


@pytest.mark.slow
def test_embedded_model_plays_every_mode() -> None:
    """The real CPU model through llama.cpp's grammar: schemas must compile (a 4000-character
    maxLength crashed llama.cpp) and every call must come back as a recorded, typed outcome."""
    pytest.importorskip("xllamacpp")
    from socium.episodes.runner import build_models, close_models

    cfg = cfg_for(
        llm={"backend": "embedded", "max_tokens": 48},
        tasks={"mutual_friend": 1},
        max_turns=2,
        script_max_tokens=200,
        argument_chars=120,
    )
    models = build_models(cfg)
    try:
        for spec in build_specs(cfg):
            res = run_coro_sync(run_episode(spec, cfg, models))
            assert res.calls and all(c[2].ok for c in res.calls), [c[2].error for c in res.calls]
            assert res.objective is not None and len(res.answers) == 2
            assert all(len(t.argument) <= 120 for t in res.turns if t.valid)
    finally:
        close_models(models)
