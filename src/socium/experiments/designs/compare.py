"""Perspective comparison at network scale: one experiment under every registered perspective.

Zhou et al. (2024, arXiv 2403.05020) found that who-sees-what changes dyadic results (script mode
looks better than agents mode); this asks the same question of network phenomena. The experiment
spec (population, seed content, seed, platform) is the same for every arm; only ``perspective``
is set, and the perspective table (``socium.core.perspective``) says what that changes: what the
agents see AND how their decisions are asked for. ``omniscient`` is one narrator call per group,
so against ``local`` it changes both; ``omniscient_agents`` has the same knowledge with one call per
agent, so ``omniscient`` vs ``omniscient_agents`` isolates narration and ``omniscient_agents`` vs
``local`` isolates information. Each arm's table row and the differences between consecutive arms
are stored in ``results.json`` for the report. Null models are skipped here: they have no perspective.
What differs by experiment (which runs are the model's, which numbers are its headline) is named by the
experiment's entry in the study registry (:mod:`socium.experiments.studies`), read here without a switch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from socium.core.perspective import differences, perspective, perspective_names
from socium.errors import ConfigError
from socium.experiments.spec import ExperimentSpec, deep_merge, llm_usage, write_results
from socium.experiments.studies import study
from socium.trace.queries import cascades, population, posts, runs


def arm_differences(names: list[str] | tuple[str, ...]) -> dict[str, dict[str, list[str]]]:
    """What the perspective table changes between each pair of arms, ``"a vs b"`` -> column -> [a, b]."""
    return {
        f"{a} vs {b}": {k: list(v) for k, v in differences(a, b).items()}
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    }


def trace_stats(run_dir: Path) -> dict[str, Any]:
    """Experiment-agnostic facts of one run: posts, reshares, crowd votes, seed cascade, last survey."""
    with runs.open_run(run_dir) as con:
        kinds = posts.post_kinds(con)
        votes, p_up = posts.crowd_votes(con)
        seed_cascade = cascades.final_shape(con, 0)
        s = population.last_survey(con)
        agent_steps = runs.agent_steps(con)
    use = llm_usage(run_dir)
    tokens = use["prompt_tokens"] + use["completion_tokens"]
    return {
        "posts": int(sum(kinds.values())),
        "originals": int(kinds.get("original", 0)),
        "reshares": int(kinds.get("repost", 0) + kinds.get("quote", 0)),
        "comments": int(kinds.get("comment", 0)),
        "crowd_votes": votes,
        "p_positive_vote": p_up,
        "seed_cascade": seed_cascade,
        "final_stance_variance": None if s[0] is None else float(s[0]),
        "final_mean_abs_stance": None if s[1] is None else float(s[1]),
        "agent_steps": int(agent_steps),
        "tokens_per_agent_step": tokens / agent_steps if agent_steps else 0.0,
        **use,
    }


def model_dirs(results: dict[str, Any]) -> list[Path]:
    """The model (non-null) run directories of an experiment's results (its study's ``model_runs``)."""
    return study(results["experiment"]).model_dirs(results)


def headline(results: dict[str, Any]) -> dict[str, Any]:
    """The experiment's own key numbers for its model run(s) (its study's ``headline``)."""
    return study(results["experiment"]).key_numbers(results)


# ---- what each study's results hold, named by its entry in socium.experiments.studies --------------
def model_dir(results: dict[str, Any]) -> list[Path]:
    """A study with one model run (``runs.model``): herding, polarisation."""
    return [Path(results["runs"]["model"]["dir"])]


def propagation_model_dirs(results: dict[str, Any]) -> list[Path]:
    """Propagation: one model run per cascade."""
    return [Path(c["runs"]["model"]["dir"]) for c in results["cascades"]]


def propagation_headline(results: dict[str, Any]) -> dict[str, Any]:
    return {"nrmse": results["summary"]["model"]["nrmse"]}


def herding_headline(results: dict[str, Any]) -> dict[str, Any]:
    m = results["runs"]["model"]["metrics"]
    return {"effects": m["effects"], "p_next_positive": {g: d["p_next_positive"] for g, d in m["groups"].items()}}


def polarisation_headline(results: dict[str, Any]) -> dict[str, Any]:
    m = results["runs"]["model"]["metrics"]
    last = m["points"][-1]
    return {
        "group_extremity_shift": m["group_extremity_shift"],
        "final_variance": last["variance"],
        "final_bimodality": last["bimodality"],
    }


def aggregate(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum counts and tokens over runs; average the per-run seed-cascade and stance figures."""

    def mean(vals: list[Any]) -> float | None:
        vals = [x for x in vals if x is not None]
        return sum(vals) / len(vals) if vals else None

    out: dict[str, Any] = {
        k: sum(s[k] for s in stats)
        for k in (
            "posts",
            "reshares",
            "comments",
            "crowd_votes",
            "llm_calls",
            "prompt_tokens",
            "completion_tokens",
            "agent_steps",
        )
    }
    out["wall_s"] = round(sum(s["wall_s"] for s in stats), 2)
    out["tokens_per_agent_step"] = (
        (out["prompt_tokens"] + out["completion_tokens"]) / out["agent_steps"] if out["agent_steps"] else 0.0
    )
    out["invalid_rate"] = mean([s["invalid_rate"] for s in stats])
    out["p_positive_vote"] = mean([s["p_positive_vote"] for s in stats])
    for k in ("size", "depth", "max_breadth"):
        out[f"seed_cascade_{k}"] = mean([s["seed_cascade"][k] if s["seed_cascade"] else None for s in stats])
    out["final_stance_variance"] = mean([s["final_stance_variance"] for s in stats])
    out["final_mean_abs_stance"] = mean([s["final_mean_abs_stance"] for s in stats])
    return out


def run_compare(
    spec: ExperimentSpec,
    out: Path,
    runner: Callable[..., dict[str, Any]],
    *,
    force: bool = False,
    log: Callable[[str], None] = lambda s: None,
    perspectives: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Run ``runner(spec', out/<perspective>)`` for each perspective (default: every registered one,
    :func:`~socium.core.perspective.perspective_names`) and tabulate the differences."""
    if "perspective" in spec.base:
        raise ConfigError("compare: remove base.perspective; every perspective is run")
    if not study(spec.experiment).compared():  # refused before any run (it failed after every arm had run)
        raise ConfigError(
            f"compare: experiment {spec.experiment!r} cannot be compared across perspectives "
            "(its study names no model runs and headline: socium.experiments.studies)"
        )
    arms = perspective_names() if perspectives is None else tuple(perspectives)
    for name in arms:
        perspective(name)  # an unknown arm fails before any run, naming it
    rows: dict[str, Any] = {}
    for persp in arms:
        s = spec.model_copy(update={"base": deep_merge(spec.base, {"perspective": persp}), "run_null": False})
        log(f"compare: {persp}")
        res = runner(s, out / persp, force=force, log=log)
        stats = [trace_stats(d) for d in model_dirs(res)]
        rows[persp] = {
            "dir": str(out / persp),
            "totals": aggregate(stats),
            "headline": headline(res),
            "runs": len(stats),
            "table": {"description": perspective(persp).description, **perspective(persp).knowledge()},
        }
    results = {
        "experiment": "compare",
        "of": spec.experiment,
        "spec": spec.model_dump(mode="json"),
        "perspectives": rows,
        "differences": arm_differences(arms),
    }
    write_results(out, results)
    return results
