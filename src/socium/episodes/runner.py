"""``socium episodes``: scenarios x repeats x modes, in process or on Ray actors, then the report.

Every scenario (a procedural task instance or a SOTOPIA scenario with its character pair) is run
in every mode with the same request-seed base, so modes are compared on identical situations.
Episodes are ordered repeat -> scenario (kinds interleaved) -> mode, so a run stopped early is
still balanced across modes and tasks; a rerun with the same config continues where it stopped.
Results are written in that order whatever the executor, so call ids are reproducible.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from socium.core.rng import GENERATOR, component_rng
from socium.episodes.config import EpisodesConfig
from socium.episodes.health import EpisodeHealth
from socium.episodes.loop import CallRecorder, EpisodeResult, EpisodeSpec, Models, run_episode
from socium.episodes.report import summarize, write_plots, write_summary
from socium.episodes.sotopia import CharacterProfile, RelationshipType, SotopiaData
from socium.episodes.store import EpisodeStore
from socium.episodes.tasks import TASK_NAMES as _TASK_NAMES
from socium.episodes.tasks import make_bargaining, make_mutual_friend
from socium.errors import ConfigError
from socium.llm.base import LLMBackend, run_coro_sync
from socium.llm.embedded import EmbeddedBackend
from socium.llm.factory import build_backend
from socium.llm.wrappers import CachingBackend, find_wrapper
from socium.reporting import progress
from socium.simulator.ray_start import start_ray
from socium.trace.run_facts import read_json_file
from socium.trace.rundir import locked_out_dir
from socium.trace.safe_write import replace_file

_KIND_CODE = {"mutual_friend": 1, "bargaining": 2, "sotopia": 3}


@dataclass(frozen=True)
class _Scenario:
    kind: str
    number: int
    env: Any
    agents: tuple[CharacterProfile, CharacterProfile]
    relationship: RelationshipType
    task: Any


def _task_characters(rng: np.random.Generator, scenario_id: str) -> tuple[CharacterProfile, CharacterProfile]:
    picks = rng.choice(len(_TASK_NAMES), size=2, replace=False)
    out = []
    for k, p in enumerate(picks):
        first, last = _TASK_NAMES[int(p)]
        out.append(
            CharacterProfile(
                agent_id=f"{scenario_id}-agent{k}", first_name=first, last_name=last, age=int(rng.integers(25, 61))
            )
        )
    return out[0], out[1]


def _procedural(cfg: EpisodesConfig) -> dict[str, list[_Scenario]]:
    out: dict[str, list[_Scenario]] = {"mutual_friend": [], "bargaining": []}
    for kind, n in (("mutual_friend", cfg.tasks.mutual_friend), ("bargaining", cfg.tasks.bargaining)):
        for i in range(n):
            rng = component_rng(cfg.seed, GENERATOR, _KIND_CODE[kind], i)
            task: Any = (
                make_mutual_friend(rng, n_friends=cfg.tasks.n_friends)
                if kind == "mutual_friend"
                else make_bargaining(rng)
            )
            agents = _task_characters(rng, f"{kind}-{i:04d}")
            out[kind].append(_Scenario(kind, i, task.to_environment(), agents, RelationshipType.STRANGER, task))
    return out


def _sotopia(cfg: EpisodesConfig) -> list[_Scenario]:
    sc = cfg.sotopia
    if sc.count == 0 or sc.path is None:
        return []
    data = SotopiaData.load(sc.path)
    rng = component_rng(cfg.seed, GENERATOR, _KIND_CODE["sotopia"])
    if sc.env_ids is not None:
        missing = [e for e in sc.env_ids if e not in data.environments]
        if missing:
            raise ConfigError(f"sotopia.env_ids: unknown in {sc.path}: {missing[:5]}")
        env_ids = sc.env_ids[: sc.count]
    else:
        pool = data.hard_env_ids if sc.hard_only else sorted(data.environments)
        if sc.count > len(pool):
            raise ConfigError(f"sotopia.n: {sc.count} exceeds the {len(pool)} available scenarios")
        env_ids = [pool[int(i)] for i in rng.permutation(len(pool))[: sc.count]]
    out = []
    for i, env_id in enumerate(env_ids):
        combos = [c for c in data.combos if c.env_id == env_id]
        if not combos:
            raise ConfigError(f"sotopia.env_ids: scenario {env_id} has no character pair in env_agent_combo_storages")
        combo = combos[int(component_rng(cfg.seed, GENERATOR, _KIND_CODE["sotopia"], i).integers(len(combos)))]
        a, b = (data.characters[x] for x in combo.agent_ids[:2])
        env = data.environments[env_id]
        rels = data.relationships_between(a.agent_id, b.agent_id)
        level = rels[0].relationship if rels else env.relationship
        out.append(_Scenario("sotopia", i, env, (a, b), level, None))
    return out


def build_specs(cfg: EpisodesConfig) -> list[EpisodeSpec]:
    """All episodes of a run, in write order (repeat -> scenario, kinds interleaved -> mode)."""
    by_kind = _procedural(cfg)
    by_kind["sotopia"] = _sotopia(cfg)
    longest = max(len(v) for v in by_kind.values())
    scenarios = [
        by_kind[k][i] for i in range(longest) for k in ("mutual_friend", "bargaining", "sotopia") if i < len(by_kind[k])
    ]
    specs: list[EpisodeSpec] = []
    for rep in range(cfg.repeats):
        for s in scenarios:
            sid = f"{s.kind}-{s.number:04d}"
            seed = int(
                np.random.SeedSequence(cfg.seed, spawn_key=(_KIND_CODE[s.kind], s.number, rep)).generate_state(1)[0]
                & 0x7FFFFFFF
            )
            for mode in cfg.modes:
                specs.append(
                    EpisodeSpec(
                        episode_id=f"{sid}-r{rep}-{mode}",
                        index=len(specs),
                        mode=mode,
                        kind=s.kind,
                        scenario_id=sid,
                        seed=seed,
                        repeat=rep,
                        env=s.env,
                        agents=s.agents,
                        relationship=s.relationship,
                        task=s.task,
                    )
                )
    return specs


def models_for(backend: LLMBackend, judge_backend: LLMBackend | None = None) -> Models:
    """Wrap ready-made backends (tests, custom servers) so their calls are recorded in the trace."""
    rec = CallRecorder()
    judge = CachingBackend(judge_backend, rec) if judge_backend is not None else None
    return Models(CachingBackend(backend, rec), rec, judge)


def build_models(cfg: EpisodesConfig) -> Models:
    """The config's backend stacks; a judge configured identically to the agents shares their model."""
    for where, llm in (("llm", cfg.llm), ("judge_llm", cfg.judge_llm)):
        if llm is not None and llm.backend == "replay":
            raise ConfigError(f"{where}.backend: 'replay' is not supported for episodes yet")
    rec = CallRecorder()
    backend = build_backend(cfg.llm, cache=rec)
    judge = None
    if cfg.judge_llm is not None:
        judge = backend if cfg.judge_llm == cfg.llm else build_backend(cfg.judge_llm, cache=rec)
    if cfg.prompt_cache_mb > 0:
        for b in {id(x): x for x in (backend, judge) if x is not None}.values():
            emb = find_wrapper(b, EmbeddedBackend)
            if emb is not None:  # consecutive turns share most of their prompt: ~1.5-2x faster on CPU
                emb.enable_prompt_cache(cfg.prompt_cache_mb << 20)
    return Models(backend, rec, judge)


def close_models(models: Models) -> None:
    models.backend.close()
    if models.judge_backend is not None and models.judge_backend is not models.backend:
        models.judge_backend.close()


OnDone = Callable[[EpisodeResult, int, int], None]


async def _inprocess(
    specs: Sequence[EpisodeSpec],
    cfg: EpisodesConfig,
    models: Models,
    store: EpisodeStore,
    on_done: OnDone | None,
    deadline: float,
    health: EpisodeHealth,
) -> None:
    step = cfg.executor.concurrency
    for k in range(0, len(specs), step):
        if time.perf_counter() >= deadline:
            return
        batch = await asyncio.gather(*(run_episode(s, cfg, models) for s in specs[k : k + step]))
        for j, res in enumerate(batch):  # in index order: call ids do not depend on timing
            _write_checked(store, res, health)
            if on_done:
                on_done(res, k + j + 1, len(specs))


def _write_checked(store: EpisodeStore, res: EpisodeResult, health: EpisodeHealth) -> None:
    """Write ``res`` unless the run-level guards stop the run (then raise; the episode is redone by a rerun)."""
    problem = health.check(res.spec.episode_id, [c[2] for c in res.calls], res.turns)
    if problem is not None:
        raise problem
    store.write(res)


class _EpisodeWorker:
    """A Ray actor: builds its backends once (one model load), then plays episodes it is sent."""

    def __init__(self, cfg_json: str) -> None:
        self.cfg = EpisodesConfig.model_validate_json(cfg_json)
        self.models = build_models(self.cfg)

    def run(self, spec_json: str) -> EpisodeResult:
        spec = EpisodeSpec.model_validate_json(spec_json)
        return run_coro_sync(run_episode(spec, self.cfg, self.models))


def _ray(
    specs: Sequence[EpisodeSpec],
    cfg: EpisodesConfig,
    store: EpisodeStore,
    on_done: OnDone | None,
    deadline: float,
    health: EpisodeHealth,
) -> None:
    import ray
    from ray.util import ActorPool

    owns = not ray.is_initialized()
    if owns:
        start_ray(
            **(
                {"address": cfg.executor.address}
                if cfg.executor.address
                else {"num_cpus": cfg.executor.parallel, "include_dashboard": False}
            )
        )
    try:
        worker = ray.remote(num_cpus=1, max_restarts=0)(_EpisodeWorker)
        actors = [worker.remote(cfg.model_dump_json()) for _ in range(min(cfg.executor.parallel, len(specs)))]
        pool = ActorPool(actors)
        # map() yields in submission order, so writes follow episode order while actors run ahead
        for n, res in enumerate(pool.map(lambda a, s: a.run.remote(s.model_dump_json()), list(specs)), start=1):
            _write_checked(store, res, health)
            if on_done:
                on_done(res, n, len(specs))
            if time.perf_counter() >= deadline:
                break  # episodes still running on actors are dropped; a rerun redoes them
    finally:
        if owns:
            ray.shutdown()


@dataclass
class RunReport:
    out: Path
    summary: dict[str, Any]
    ran: int
    skipped: int
    wall_s: float
    plots: list[Path]


def run_episodes(
    cfg: EpisodesConfig,
    *,
    force: bool = False,
    models: Models | None = None,
    on_done: OnDone | None = None,
    plots: bool = True,
    time_budget_s: float | None = None,
) -> RunReport:
    """Run what is not yet in ``cfg.out_dir()/episodes.duckdb``, then summarise the whole run.

    ``models`` replaces the config's backends (in-process only); the caller closes it.
    ``time_budget_s`` stops starting new episodes after that long (benchmarks); because of the
    run order the episodes done are balanced across modes and tasks, and a rerun continues.
    """
    with locked_out_dir(cfg.out_dir(), progress.current().note, force):  # one writer per --out, as `socium run`
        return _run_locked(cfg, force, models, on_done, plots, time_budget_s)


def _run_locked(
    cfg: EpisodesConfig,
    force: bool,
    models: Models | None,
    on_done: OnDone | None,
    plots: bool,
    time_budget_s: float | None,
) -> RunReport:
    out = cfg.out_dir()
    specs = build_specs(cfg)
    store = EpisodeStore(out, cfg, force=force)
    try:
        done = store.done_ids()
        todo = [s for s in specs if s.episode_id not in done]
        prog = progress.current()
        prog.expect(len(todo))
        if len(todo) < len(specs):
            prog.note(f"reusing {len(specs) - len(todo)} finished episodes already in {out / 'episodes.duckdb'}")

        def report_done(res: EpisodeResult, n: int, total: int) -> None:
            tokens = sum((c[2].prompt_tokens or 0) + (c[2].completion_tokens or 0) for c in res.calls)
            prog.finish_item(res.spec.episode_id, llm_calls=len(res.calls), tokens=tokens)
            if on_done is not None:
                on_done(res, n, total)

        replace_file(out / "config.json", cfg.model_dump_json(indent=2))
        t0 = time.perf_counter()
        deadline = t0 + time_budget_s if time_budget_s is not None else float("inf")
        health = EpisodeHealth(cfg.llm, f"socium episodes CONFIG --out {shlex.quote(str(out))}")
        if todo and cfg.executor.kind == "ray" and models is None:
            _ray(todo, cfg, store, report_done, deadline, health)
        elif todo:
            own = models is None
            m = build_models(cfg) if models is None else models
            try:
                run_coro_sync(_inprocess(todo, cfg, m, store, report_done, deadline, health))
            finally:
                if own:
                    close_models(m)
        wall = time.perf_counter() - t0
        ran = len(store.done_ids()) - len(done)
        summary = summarize(store.con)
    finally:
        store.close()
    summary["llm_backend"] = cfg.llm.backend
    summary["this_invocation"] = {
        "episodes": ran,
        "wall_s": wall,
        "episodes_per_min": (60.0 * ran / wall) if ran and wall > 0 else None,
        "executor": cfg.executor.model_dump(),
    }
    write_summary(summary, out)
    paths = write_plots(summary, out / "plots") if plots and summary["episodes"] else []
    return RunReport(out, summary, ran, len(specs) - len(todo), wall, paths)


def load_summary(run_dir: str | Path) -> dict[str, Any]:
    return read_json_file(Path(run_dir) / "summary.json", "episodes")
