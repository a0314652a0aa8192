"""The Simulation Card: what a reader needs to judge a run (model actually called, visibility, inputs, costs).

Everything on the card comes from the trace, not from what the config merely asked for: the models
named are the ones in ``llm_calls.model``, so a replayed or mis-configured run cannot claim a model
it never called. A run whose backend is a test double (``fake``, ``random``, ``scripted``) carries a
``smoke_run`` banner, which reports repeat on every page, so a smoke run can never pass for a real one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb

from socium.agents.call_recording import recorded_model
from socium.agents.perspectives import who_saw_what
from socium.core.perspective import perspective, perspective_names
from socium.errors import SociumError, TraceError
from socium.llm.models import KNOWN, SMOLLM2
from socium.reporting import guardrails
from socium.simulator.llm_health import slots_summary
from socium.trace.queries import calls as calls_q
from socium.trace.queries import runs as runs_q
from socium.trace.store import open_trace, recorded_config, require_store

SMOKE_BACKENDS = {
    "fake": "a loopback fake OpenAI server answering canned JSON",
    "random": "schema-valid random JSON, no language model",
    "scripted": "fixed scripted responses, no language model",
}
HTTP_BACKENDS = ("openai", "fake")


def smoke_banner(backend: str | None) -> str | None:
    """The warning a smoke run's card and reports carry; None for a real model."""
    if backend not in SMOKE_BACKENDS:
        return None
    return f"SMOKE RUN: llm.backend '{backend}' ({SMOKE_BACKENDS[backend]}); these are not a model's results"


def run_smoke_banner(run_dir: str | Path) -> str | None:
    """The smoke banner of one run from its recorded config (an LLM policy on a test-double backend), without
    building its whole card: pooled pages (``socium seeds``) check every replicate's runs this way."""
    with runs_q.open_run(run_dir) as con:
        cfg = runs_q.run_config(con)
    if "llm" not in str((cfg.get("policy") or {}).get("kind", "")):
        return None
    return smoke_banner((cfg.get("llm") or {}).get("backend"))


def _replay_source(replay_from: str | None) -> dict[str, Any]:
    """Which run a replay answered from and whose model's answers it served: a replay calls no model,
    so ``models_called`` alone would leave the card silent about the model behind the actions."""
    if not replay_from:
        return {"replayed_from": "not recorded"}

    try:
        model: str = recorded_model(replay_from)
    except (SociumError, OSError, duckdb.Error) as exc:
        model = f"unknown now ({type(exc).__name__}: the source run is not readable)"
    return {"replayed_from": replay_from, "replayed_model": model}


def _backend_section(llm_cfg: dict[str, Any], models: dict[str, int], replay_from: str | None = None) -> dict[str, Any]:
    kind = llm_cfg.get("backend")
    out: dict[str, Any] = {"backend": kind, "models_called": models or "none (no calls recorded)"}
    if kind == "fake":  # no server kind: the fake is socium's own loopback server, not vLLM or llama.cpp
        out["servers"] = "socium's fake OpenAI server on the loopback interface, started by the run"
    elif kind in HTTP_BACKENDS:
        # host and path only: never credentials that a URL might carry, never the API key's variable
        out["servers"] = [
            f"{u.scheme}://{u.hostname}{f':{u.port}' if u.port else ''}{u.path}"
            for u in map(urlsplit, llm_cfg.get("base_urls") or [])
        ]
        out["server_kind"] = llm_cfg.get("server_kind")
    if kind == "embedded":
        spec = KNOWN.get(llm_cfg.get("model") or "") or (None if llm_cfg.get("model_path") else SMOLLM2)
        out["model_file"] = llm_cfg.get("model_path") or (spec.file_name if spec else None)
        if spec is not None:  # where the weights came from and under which licence
            out["model_provenance"] = spec.provenance()
    if kind == "replay":
        out.update(_replay_source(replay_from))
    for k in ("temperature", "max_tokens"):
        if llm_cfg.get(k) is not None:
            out[k] = llm_cfg[k]
    return out


def _event_loop(run: dict[str, Any], cfg: dict[str, Any]) -> str:
    """The loop the driver ran its LLM calls on (uvloop or asyncio): it changes speed, never results."""
    loop = run.get("event_loop") or "not recorded"
    if (cfg.get("executor") or {}).get("kind") == "ray":
        return f"{loop} in the driver; Ray actors run on Ray's own loop"
    return str(loop)


def _engines(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """How the in-process engines ran (``llm_engines``: threads and slots as chosen at start), each
    distinct set-up once with the first step it served, the model's provenance left to ``model_provenance``."""
    out: dict[str, dict[str, Any]] = {}
    for step, llm, desc in calls_q.engines(con):
        shown: dict[str, Any] = {
            k: desc[k]
            for k in ("engine", "model_file", "n_threads", "n_parallel", "n_ctx_per_slot", "decoding")
            if k in desc
        }
        key = json.dumps([llm, shown], sort_keys=True)
        if key not in out:
            out[key] = {"llm": llm, **shown, "from_step": step}
    return list(out.values())


def _input_digests(run: dict[str, Any]) -> Any:
    """Input-file digests recorded with the run (a ``runs`` column), when the trace has them."""
    for key, value in run.items():
        if "digest" in key and value:
            try:
                return json.loads(value) if isinstance(value, str) else value
            except ValueError:
                return value
    return None


def simulation_card(run_dir: str | Path) -> dict[str, Any]:
    db = require_store(Path(run_dir))
    con = open_trace(db)
    try:
        found = runs_q.run_row(con)
        if found is None:
            raise TraceError(f"{db}: the trace has no run row (set-up never committed)")
        run = found
        cfg = recorded_config(run["config"], db)
        totals = runs_q.step_totals(con)
        steps = (totals.steps, totals.actions, totals.wall_s)
        outcomes = runs_q.outcome_counts(con)
        n_agents = runs_q.count_rows(con, "agents")
        n_posts = runs_q.count_rows(con, "posts")
        tables = runs_q.table_names(con)
        llm: dict[str, Any] = {}
        models: dict[str, int] = {}
        if "llm_calls" in tables:
            llm = calls_q.totals(con)
            models = calls_q.calls_by_model(con)
            if cfg.get("llms"):  # a mixed-model run: what each model did
                llm["by_model"] = calls_q.usage_by_model(con)
            if cfg.get("llm_agents", {}).get("record_reason"):
                llm["reason"] = calls_q.reason_cost(con)
            aborted = calls_q.aborted_calls(con)
            if aborted:  # made in steps that were stopped (server down, budget) and redone on resume
                llm["calls_in_aborted_steps"] = aborted
            replayed = calls_q.replayed_calls(con)
            if replayed:  # of the calls of committed steps: answers read from a stopped step's record on resume
                llm["replayed_calls"] = replayed
        narrated = run["perspective"] in perspective_names() and perspective(run["perspective"]).narrated
        narrator = calls_q.narrator_quality(con) if narrated and "llm_calls" in tables else None
        engines = _engines(con) if "llm_engines" in tables else []
        checks = guardrails.run_checks(con, outcomes)  # model-quality guardrails (invalid, leaked, surveys)
    except (duckdb.Error, TypeError, ValueError) as exc:
        raise TraceError(
            f"{db}: not a complete socium trace: {str(exc).splitlines()[0] if str(exc) else exc!r}"
        ) from None
    finally:
        con.close()
    total = sum(outcomes.values()) or 1
    is_llm = "llm" in cfg["policy"]["kind"] or bool(models)  # llm, group_llm, or any run that called a model
    llm_cfg = cfg.get("llm") or {}
    card: dict[str, Any] = {}
    banner = smoke_banner(llm_cfg.get("backend")) if is_llm else None
    if banner:
        card["smoke_run"] = banner
    warnings = guardrails.quality_warnings(checks) if is_llm else []
    if warnings:  # second only to the smoke banner: a reader must see them before any number
        card["quality_warnings"] = warnings
    card.update(
        {
            "name": run["name"],
            "seed": run["seed"],
            "config_hash": run["config_hash"][:16],
            "socium_version": run["socium_version"],
            "created_at": str(run["created_at"]),
            "policy": cfg["policy"]["kind"],
            "platform": cfg["platform"]["preset"],
            "recsys": cfg["recsys"]["kind"],
        }
    )
    if is_llm:  # a rule-based policy reads only its feed: a perspective would mean nothing
        card["perspective"] = run["perspective"]
        seen = who_saw_what(cfg)  # generated from the perspective table (None: no prompts were built)
        if seen is not None:
            card["who_saw_what"] = seen
        card["llm"] = _backend_section(llm_cfg, models, (cfg.get("llm_agents") or {}).get("replay_from"))
        card["llm"]["event_loop"] = _event_loop(run, cfg)
        called = list(models) or [str(card["llm"].get("replayed_model") or llm_cfg.get("model") or "")]
        card["llm"]["model_supports"] = guardrails.model_support(called)
        card["llm"]["output_quality"] = guardrails.card_section(checks)
        if engines:
            card["llm"]["engines"] = engines
        slots = slots_summary(Path(run_dir))  # only runs that measured it (an HTTP backend with a limit)
        if slots is not None:
            card["llm"]["slots"] = slots
    card.update(
        {
            "agents": n_agents,
            "steps_committed": f"{steps[0]} of {cfg['steps']}",
            "step_minutes": cfg["step_minutes"],
            "posts": n_posts,
            "actions": dict(outcomes),
            "invalid_rate": round((total - outcomes.get("ok", 0)) / total, 4),
            "wall_seconds": round(steps[2] or 0.0, 2),
        }
    )
    if "input_digests" in run:  # recorded at set-up: the sha256 of every input file the world was built from
        inputs = _input_digests(run)
        card["input_digests"] = (
            {
                k: {"path": v.get("path"), "sha256": str(v.get("sha256", ""))[:16]} if isinstance(v, dict) else v
                for k, v in inputs.items()
            }
            if isinstance(inputs, dict) and inputs
            else "none (no input files)"
        )
    if cfg.get("llms"):
        card["llms"] = {
            name: {k: c.get(k) for k in ("backend", "model") if c.get(k) is not None} for name, c in cfg["llms"].items()
        }
    if llm and (is_llm or llm["calls"]):
        card["llm_usage"] = llm
    if narrator and is_llm:
        card["narrator"] = narrator
    return card


def card_value(v: Any) -> str:
    """A card field for people: nested mappings as 'key: value; ...', floats rounded, lists comma-separated."""
    if isinstance(v, dict):
        return "; ".join(f"{k}: {card_value(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(card_value(x) for x in v)
    if isinstance(v, float):
        return f"{v:,.4g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)
