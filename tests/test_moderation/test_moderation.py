"""The intervention layer changes the platform as specified: labels, removal, suspension, down-ranking,
community notes' bridging rule, fact-check knobs, roles, prebunking, plugins, resume."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pytest

from conftest import post_block
from socium.config.loading import config_from_dict
from socium.core.actions import CreatePost, LikePost, ReportPost, Repost
from socium.errors import ConfigError
from socium.moderation.base import ModerationContext
from socium.moderation.feeds import ModeratedRecommender
from socium.moderation.registry import make_moderator
from socium.moderation.strategies import CommunityNotes, FactCheck
from socium.platform.graph import FollowIndex
from socium.platform.marks import ModerationEvent
from socium.platform.state import PlatformState
from socium.recsys.registry import BUILTIN
from socium.simulator.simulation import Simulation

FALSE = 2


def _cfg(**over):
    base = {
        "seed": 3,
        "steps": 6,
        "population": {"n_agents": 40, "mean_activity": 0.6, "activity": "uniform"},
        "graph": {"kind": "empty"},
        "policy": {"kind": "independent_cascade", "p_repost": 0.2, "p_post": 0.0},
        "recsys": {"kind": "global", "k": 10},
        "seed_posts": [
            {"author": 0, "content": "the moon is cheese", "veracity": "false"},
            {"author": 1, "content": "water is wet", "veracity": "true"},
        ],
    }
    base.update(over)
    return config_from_dict(base)


def _events(run_dir):
    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    try:
        return con.execute("SELECT step, event, post_id, agent_id FROM moderation_events ORDER BY step, seq").fetchall()
    finally:
        con.close()


def _state(n=6):
    st = PlatformState(n, FollowIndex.from_edges(np.zeros(0, np.int64), np.zeros(0, np.int64), n))
    st.begin_step(0, 0.0)
    return st


def test_removed_post_never_in_a_feed_search_or_trend_afterwards(tmp_path):
    cfg = _cfg(moderation={"kind": "fact_check", "params": {"delay": 1, "recall": 1.0}, "remove": True})
    Simulation(cfg, tmp_path).run()
    ev = _events(tmp_path)
    removed = [(s, p) for s, e, p, _ in ev if e == "remove"]
    assert removed == [(1, 0)]  # the false seed post, queued at step 0 and judged one step later
    con = duckdb.connect(str(tmp_path / "trace.duckdb"), read_only=True)
    before = con.execute(
        "SELECT count(*) FROM exposures e JOIN posts p USING (post_id) WHERE p.root_id = 0 AND e.step <= 1"
    ).fetchone()[0]
    after = con.execute(
        "SELECT count(*) FROM exposures e JOIN posts p USING (post_id) WHERE p.root_id = 0 AND e.step > 1"
    ).fetchone()[0]
    late = con.execute(
        "SELECT count(*) FROM actions WHERE step > 1 AND type = 'repost' AND outcome = 'ok' "
        "AND CAST(json_extract(args, '$.post_id') AS BIGINT) IN (SELECT post_id FROM posts WHERE root_id = 0)"
    ).fetchone()[0]
    con.close()
    assert before > 0 and after == 0 and late == 0


@pytest.mark.parametrize("kind", sorted(BUILTIN))
def test_every_recommender_drops_removed_and_downranks(kind):
    from socium.config.world import RecsysConfig
    from socium.recsys.registry import make_recommender

    n = 8
    src = np.repeat(np.arange(1, n), 1)
    st = PlatformState(n, FollowIndex.from_edges(np.zeros(n - 1, np.int64), src.astype(np.int64), n))  # 0 follows all
    st.begin_step(0, 0.0)
    for a in range(1, n):
        st.apply(a, CreatePost(content=f"post by {a}"))
    t = n - 2  # the newest post (by agent 7) is also the most engaging: top of every ranked feed
    for liker in range(1, n - 1):
        st.apply(liker, LikePost(post_id=t))
    params = {"embedder": "hashing"} if kind == "x" else {}
    rec = ModeratedRecommender(make_recommender(RecsysConfig(kind=kind, k=7, params=params)))
    rec.observe(st, range(0, len(st.posts)), 0)

    def feed():
        return list(rec.feeds(st, np.array([0]), 7, 0, np.random.default_rng(0))[0].post_ids)

    base = feed()
    assert t in base
    st.mod.apply(ModerationEvent("downrank", t, detail="0.1"), 0)
    moved = feed()
    assert sorted(moved) == sorted(base)  # nothing lost: the wrapper over-fetches
    if kind != "random":  # a random feed has no rank to move
        assert moved.index(t) > base.index(t)
    st.mod.apply(ModerationEvent("remove", t), 0)
    assert t not in feed()
    st.mod.apply(ModerationEvent("suspend", agent_id=1), 0)
    assert 0 not in feed()  # post 0 is by agent 1, now suspended


def test_downranking_moves_a_post_by_its_factor():
    """Rank scores 1/(1+rank) times the factor: 0.5 at the top is worth rank 1, so it drops one place."""

    class Fixed:
        def observe(self, *a):
            pass

        def feeds(self, state, users, k, step, rng):
            from socium.recsys.base import Feed

            ids = tuple(range(min(k, 5)))
            return [Feed(ids, ("global",) * len(ids)) for _ in users]

    st = _state()
    for a in range(5):
        st.apply(a, CreatePost(content=f"p{a}"))
    rec = ModeratedRecommender(Fixed())
    st.mod.apply(ModerationEvent("downrank", 0, detail="0.4"), 0)
    assert rec.feeds(st, np.array([5]), 5, 0, None)[0].post_ids == (1, 0, 2, 3, 4)
    st.mod.apply(ModerationEvent("downrank", 0, detail="0.1"), 0)
    assert rec.feeds(st, np.array([5]), 3, 0, None)[0].post_ids == (1, 2, 3)  # pushed out of a 3-post feed
    st.mod.apply(ModerationEvent("downrank", 0, detail="0"), 0)
    assert rec.feeds(st, np.array([5]), 5, 0, None)[0].post_ids == (1, 2, 3, 4)  # factor 0: never shown, room or not


def test_suspended_account_cannot_act(tmp_path):
    cfg = _cfg(moderation={"kind": "fact_check", "params": {"delay": 0, "recall": 1.0}, "suspend_after": 1})
    sim = Simulation(cfg, tmp_path)
    with sim:
        sim.step()  # step 0: the false seed post by agent 0 is judged at once -> strike -> suspension
        assert 0 in sim.world.state.mod.suspended
        sim.step(actions={0: [CreatePost(content="I am back")]})
        out = sim.world.state.apply(0, Repost(post_id=1))
        assert out.status == "invalid" and out.code == "suspended"
    con = duckdb.connect(str(tmp_path / "trace.duckdb"), read_only=True)
    rows = con.execute("SELECT origin, outcome, reason FROM actions WHERE step = 1 AND agent_id = 0").fetchall()
    active0 = con.execute("SELECT count(*) FROM exposures WHERE step >= 1 AND agent_id = 0").fetchone()[0]
    con.close()
    assert rows == [("manual", "invalid", "account 0 is suspended by moderation")]
    assert active0 == 0  # never woken again, so never shown a feed
    assert ("strike" in [e for _, e, _, _ in _events(tmp_path)]) and (0, "suspend", 0, 0) in _events(tmp_path)


def test_interactions_with_a_removed_post_are_invalid():
    st = _state()
    st.apply(0, CreatePost(content="x"))
    st.mod.apply(ModerationEvent("remove", 0), 0)
    for act in (Repost(post_id=0), LikePost(post_id=0), ReportPost(post_id=0)):
        out = st.apply(1, act)
        assert out.status == "invalid" and "removed by moderation" in out.reason
    assert st.search_posts("x") == [] and st.trend() == []


def test_community_notes_need_raters_who_usually_disagree():
    st = _state(8)
    st.apply(7, CreatePost(content="claim"))
    stance = np.array([0.8, 0.6, 0.7, -0.5, -0.9, 0.5, 0.1, 0.0])
    notes = CommunityNotes(min_per_side=1, min_raters=2)
    for a in (0, 1, 2):  # three raters of one side: no note
        st.apply(a, ReportPost(post_id=0))
    assert notes.moderate(ModerationContext(st, 1, 7, stance)) == []
    st.apply(3, ReportPost(post_id=0))  # one rater from the other side bridges
    got = notes.moderate(ModerationContext(st, 1, 7, stance))
    assert [(e.event, e.post_id) for e in got] == [("note", 0)]


def test_community_notes_without_stances_use_the_like_factor():
    """Raters who like disjoint sets of authors are on opposite sides; a note needs both."""
    st = _state(10)
    for a in (8, 9):
        st.apply(a, CreatePost(content=f"side {a}"))  # post 0 by 8, post 1 by 9
    st.apply(8, CreatePost(content="claim"))  # post 2
    for a in (0, 1, 2):
        st.apply(a, LikePost(post_id=0))
    for a in (3, 4, 5):
        st.apply(a, LikePost(post_id=1))
    nan = np.full(10, np.nan)
    notes = CommunityNotes(min_per_side=1, min_raters=2)
    for a in (0, 1):
        st.apply(a, ReportPost(post_id=2))
    assert notes.moderate(ModerationContext(st, 1, 7, nan)) == []
    st.apply(3, ReportPost(post_id=2))
    assert [e.post_id for e in notes.moderate(ModerationContext(st, 1, 7, nan)) if e.event == "note"] == [2]


def test_fact_check_recall_and_precision_knobs():
    st = _state(4)
    n = 400
    for i in range(n):
        st.apply(i % 3, CreatePost(content=f"c{i}"))
        st.posts.set("veracity", i, FALSE if i % 2 == 0 else 1)
    fc = FactCheck(delay=0, recall=0.5, precision=0.8)
    got = fc.moderate(ModerationContext(st, 0, 11, np.full(4, np.nan)))
    labelled = [e.post_id for e in got if e.event == "label"]
    tp = sum(1 for p in labelled if p % 2 == 0)
    assert abs(tp / (n / 2) - 0.5) < 0.1  # recall
    assert abs(tp / len(labelled) - 0.8) < 0.08  # precision
    perfect = FactCheck(delay=0, recall=1.0, precision=1.0).moderate(ModerationContext(st, 0, 11, np.full(4, np.nan)))
    assert sorted(e.post_id for e in perfect if e.event == "label") == list(range(0, n, 2))


def test_fact_check_labels_after_its_delay(tmp_path):
    cfg = _cfg(moderation={"kind": "fact_check", "params": {"delay": 3, "recall": 1.0}})
    Simulation(cfg, tmp_path).run()
    ev = _events(tmp_path)
    assert (0, "queue", 0, None) in ev and (3, "label", 0, None) in ev
    assert not [e for e in ev if e[1] == "label" and e[2] == 1]  # the true post is never labelled at precision 1


def test_label_lines_follow_reposts_and_truth_only_for_allowed_perspectives(tmp_path):
    cfg = _cfg(
        moderation={"kind": "fact_check", "params": {"delay": 0, "recall": 1.0}, "veracity_visible_to": ["omniscient"]}
    )
    sim = Simulation(cfg, tmp_path)
    with sim:
        sim.step(actions={5: [Repost(post_id=0)]})
        st = sim.world.state
        ver = st.posts.col("veracity")
        repost = [i for i in range(len(st.posts)) if st.posts.get("kind", i) == 1][0]
        assert ver[repost] == FALSE  # a repost carries its root's ground truth
        assert sim.world.moderation.lines(st, repost, ver) == [
            "Label: False information. Checked by independent fact-checkers."
        ]
    sim2 = Simulation(cfg.model_copy(update={"perspective": "omniscient"}), tmp_path / "omni")
    with sim2:
        sim2.step()
        lines = sim2.world.moderation.lines(sim2.world.state, 0, sim2.world.state.posts.col("veracity"))
        assert lines[-1].startswith("Ground truth") and lines[-1].endswith("false")


def test_roles_drawn_by_fraction_pinned_by_id_and_bots_skip_the_policy(tmp_path):
    calls = []

    class Spy:
        def decide(self, obs):
            from socium.core.contracts import Decision

            calls.append(obs.agent_id)
            return Decision(obs.agent_id, [])

    cfg = _cfg(
        population={"n_agents": 200, "mean_activity": 0.9, "activity": "uniform"},
        roles={"spreader": 0.1, "bot": 0.2, "agents": {"fact_checker": [5]}},
    )
    sim = Simulation(cfg, tmp_path, policy=Spy())
    roles = sim.world.moderation.roles
    assert roles[5] == 2 and abs((roles == 3).mean() - 0.2) < 0.07 and abs((roles == 1).mean() - 0.1) < 0.06
    sim.run()
    assert calls and not any(roles[a] == 3 for a in calls)
    con = duckdb.connect(str(tmp_path / "trace.duckdb"), read_only=True)
    bot_rows = con.execute("SELECT DISTINCT agent_id FROM actions WHERE origin = 'bot'").fetchall()
    stored = dict(con.execute("SELECT agent_id, role FROM agent_roles").fetchall())
    con.close()
    assert bot_rows and all(roles[a] == 3 for (a,) in bot_rows)
    assert stored[5] == "fact_checker" and len(stored) == int((roles > 0).sum())


def test_prebunking_marks_a_fraction_and_sets_the_prompt_line(tmp_path):
    cfg = _cfg(
        population={"n_agents": 100, "mean_activity": 0.9, "activity": "uniform"},
        moderation={"prebunk": {"fraction": 0.3, "step": 0}},
    )
    sim = Simulation(cfg, tmp_path)
    with sim:
        sim.step()
        got = set(sim.world.state.mod.prebunked)
        assert 15 < len(got) < 45
        obs = sim.agent_steps.observe(
            np.arange(100), 1, __import__("socium.simulator.recording", fromlist=["x"]).StepRecorder(1)
        )
        sim.world.moderation.annotate(obs, sim.world.state)
        assert {o.agent_id for o in obs if o.platform_notice is not None} == got


def test_resume_rebuilds_moderation_exactly(tmp_path):
    cfg = _cfg(
        steps=8,
        moderation={"kind": "hybrid", "params": {"delay": 1, "min_flags": 1}, "downrank": 0.5, "suspend_after": 1},
        roles={"spreader": 0.2, "fact_checker": 0.2},
    )
    Simulation(cfg, tmp_path / "full").run()
    Simulation(cfg.model_copy(update={"steps": 4}), tmp_path / "part").run()
    Simulation(cfg, tmp_path / "part", resume=True).run()
    assert _events(tmp_path / "full") == _events(tmp_path / "part") and len(_events(tmp_path / "full")) > 3
    q = "SELECT step, agent_id, type, outcome, post_id FROM actions ORDER BY step, seq"
    a = duckdb.connect(str(tmp_path / "full" / "trace.duckdb"), read_only=True).execute(q).fetchall()
    b = duckdb.connect(str(tmp_path / "part" / "trace.duckdb"), read_only=True).execute(q).fetchall()
    assert a == b


class GoodModerator:
    def __init__(self, target: int = 1) -> None:
        self.target = target

    def moderate(self, ctx):
        return [ModerationEvent("label", self.target, source="mine", detail="custom")] if ctx.step == 0 else []


def test_plugin_strategy_by_dotted_path_and_refusals(tmp_path, monkeypatch):
    # A package of its own on sys.path, so the dotted path resolves however pytest was started
    # ("tests.test_moderation" only imports when the repo root is on sys.path, as with python -m pytest).
    # It re-exports this module's class under the name pytest imported this file by: one class object.
    pkg = tmp_path / "socium_test_plugins"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mods.py").write_text(f"from {GoodModerator.__module__} import GoodModerator  # noqa: F401\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for path in ("socium_test_plugins.mods:GoodModerator", "socium_test_plugins.mods.GoodModerator"):
        mod = make_moderator(path, {"target": 1})
        assert type(mod) is GoodModerator and mod.target == 1
    with pytest.raises(ConfigError, match="not a moderation strategy class"):
        make_moderator("os:system", {})
    with pytest.raises(ConfigError, match="does not implement moderate"):
        make_moderator("socium.platform.marks:ModerationMarks", {})
    with pytest.raises(ConfigError, match="unknown key"):
        make_moderator("fact_check", {"dealy": 2})
    with pytest.raises(ConfigError, match="moderation.kind"):
        make_moderator("nonsense", {})


def test_no_moderation_leaves_a_run_unchanged(tmp_path):
    """kind none without roles: the wrapper is not installed and the run is what it always was."""
    cfg = _cfg()
    sim = Simulation(cfg, tmp_path)
    assert not isinstance(sim.world.recsys, ModeratedRecommender)
    sim.run()
    assert _events(tmp_path) == []


def _llm_cfg(**over):
    base = {
        "seed": 5,
        "steps": 3,
        "population": {"n_agents": 16, "mean_activity": 0.9, "activity": "uniform", "stance": "bimodal"},
        "graph": {"kind": "empty"},
        "recsys": {"kind": "global", "k": 4},
        "policy": {"kind": "llm"},
        "llm": {"backend": "random"},
        "seed_posts": [
            {"author": 0, "content": "the moon is cheese", "veracity": "false"},
            {"author": 1, "content": "water is wet", "veracity": "true"},
        ],
    }
    base.update(over)
    return config_from_dict(base)


def _post_blocks(run_dir, post_id):
    import json

    con = duckdb.connect(str(run_dir / "trace.duckdb"), read_only=True)
    rows = con.execute("SELECT step, prompt FROM llm_calls ORDER BY call_id").fetchall()
    con.close()
    out = []
    for step, prompt in rows:
        text = json.loads(prompt)[1]["content"]
        if re.search(rf"^<<<{post_id} u\d", text, re.M):
            out.append((step, post_block(text, post_id)))
    return out


def test_llm_prompt_shows_a_labelled_post_with_its_label(tmp_path):
    cfg = _llm_cfg(moderation={"kind": "fact_check", "params": {"delay": 0, "recall": 1.0}})
    Simulation(cfg, tmp_path).run()
    false_blocks, true_blocks = _post_blocks(tmp_path, 0), _post_blocks(tmp_path, 1)
    assert {s for s, _ in false_blocks} >= {0, 1}
    for step, block in false_blocks:  # judged after step 0's actions: labelled from step 1 on, exactly as users see it
        assert ("Note: Label: False information. Checked by independent fact-checkers." in block) == (step >= 1)
    assert true_blocks and not any("Label:" in b for _, b in true_blocks)
    assert not any("Ground truth" in b for _, b in false_blocks)  # local agents never see the ground truth


def test_llm_agents_report_posts_and_notes_reach_their_prompts(tmp_path):
    cfg = _llm_cfg(
        steps=4,
        llm_agents={"actions": ["report_post", "do_nothing"]},
        moderation={"kind": "community_notes", "params": {"min_per_side": 1, "min_raters": 2}},
    )
    Simulation(cfg, tmp_path).run()
    con = duckdb.connect(str(tmp_path / "trace.duckdb"), read_only=True)
    reports = con.execute(
        "SELECT count(*) FROM actions WHERE origin = 'llm' AND type = 'report_post' AND outcome = 'ok'"
    ).fetchone()[0]
    notes = con.execute("SELECT step, post_id FROM moderation_events WHERE event = 'note'").fetchall()
    con.close()
    assert reports > 0 and notes
    step, pid = notes[0]
    later = [b for s, b in _post_blocks(tmp_path, pid) if s > step]
    assert later and all("Note: Community note: Readers added context" in b for b in later)


def test_prebunk_line_is_in_the_prompt_of_inoculated_agents_only(tmp_path):
    cfg = _llm_cfg(steps=2, moderation={"prebunk": {"fraction": 0.5, "step": 0, "text": "zz prebunk zz"}})
    sim = Simulation(cfg, tmp_path)
    sim.run()
    import json

    con = duckdb.connect(str(tmp_path / "trace.duckdb"), read_only=True)
    rows = con.execute("SELECT agent_id, step, prompt FROM llm_calls").fetchall()
    marked = {a for (a,) in con.execute("SELECT agent_id FROM moderation_events WHERE event = 'prebunk'").fetchall()}
    con.close()
    later = [(a, "zz prebunk zz" in json.loads(p)[1]["content"]) for a, s, p in rows if s >= 1]
    assert later and marked and all(has == (a in marked) for a, has in later)
