"""Per-table digests of the reference runs, to show a refactor changed no trace and no config hash.

Runs, into ``--out``, the quickstart, the main job (examples/llm-agents.yaml) with the model-free
``random`` backend and then replayed from that run's own calls (``llm.backend=replay``), and one small run
of each experiment kind (herding, polarisation, intervention, propagation, a sweep, an episodes run) with
model-free backends, then writes ``digests.json``: for every DuckDB file under each run's folder,
``trace.store.trace_digest`` (sha256 of each table's rows, wall-clock columns left out) and the config hash
of every ``runs`` row. ``--compare A.json B.json`` prints the before / after table.

    python benchmarks/trace_digests.py --out /tmp/digests-before      # on the old tree
    python benchmarks/trace_digests.py --out /tmp/digests-after       # on the new one
    python benchmarks/trace_digests.py --compare /tmp/digests-before/digests.json /tmp/digests-after/digests.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import filelock

from socium.trace.store import VOLATILE, trace_digest

# The episodes' own store records each episode's wall time (``episodes.wall_s``): left out like a trace's.
VOLATILE.setdefault("episodes", set()).add("wall_s")

EX = Path(__file__).resolve().parent.parent / "examples"
SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"  # ../shared/data beside the repo

#: name -> socium CLI arguments (``{out}``: the run's folder, ``{base}``: the whole --out folder)
RUNS: dict[str, list[str]] = {
    "quickstart": ["run", str(EX / "quickstart.yaml"), "--out", "{out}", "--quiet"],
    "llm-agents random": [
        "run",
        str(EX / "llm-agents.yaml"),
        "--out",
        "{out}",
        "--quiet",
        "--set",
        "llm.backend=random",
    ],
    "llm-agents replay": [
        "run",
        str(EX / "llm-agents.yaml"),
        "--out",
        "{out}",
        "--quiet",
        "--set",
        "llm.backend=replay",
        "--set",
        "llm_agents.replay_from={base}/llm-agents_random",
    ],
    "herding": [
        "experiment",
        "herding",
        str(EX / "herding.yaml"),
        "--out",
        "{out}",
        "--quiet",
        "--no-report",
        "--set",
        "base.llm.backend=random",
        "--set",
        "base.steps=3",
        "--set",
        "n_items=6",
    ],
    "polarisation": [
        "experiment",
        "polarisation",
        str(EX / "polarisation.yaml"),
        "--out",
        "{out}",
        "--quiet",
        "--no-report",
        "--set",
        "base.llm.backend=random",
        "--set",
        "base.steps=3",
        "--set",
        "n_agents=12",
    ],
    "intervention": [
        "experiment",
        "intervention",
        str(EX / "intervention.yaml"),
        "--out",
        "{out}",
        "--quiet",
        "--no-report",
        "--set",
        "base.steps=4",
        "--set",
        "seeds=[0]",
    ],
    "propagation": [
        "experiment",
        "propagation",
        str(EX / "propagation.yaml"),
        "--out",
        "{out}",
        "--quiet",
        "--no-report",
        "--set",
        "base.llm.backend=random",
        "--set",
        "sample=1",
        "--set",
        "minutes=30",
    ],
    "sweep": ["sweep", str(EX / "sweep.yaml"), "--out", "{out}", "--quiet", "--parallel", "1"],
    "episodes": [
        "episodes",
        str(EX / "episodes.yaml"),
        "--out",
        "{out}",
        "--quiet",
        "--set",
        "llm.backend=random",
        "--set",
        "max_turns=4",
    ],
}


def _hashes(db: Path) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(r[0] for r in con.execute("SELECT config_hash FROM runs").fetchall())
    except duckdb.Error:
        return []
    finally:
        con.close()


#: Every run is made here, whatever --out is: the replay run's config names the recorded run's folder
#: (``llm_agents.replay_from``), so the same path before and after keeps its config hash comparable.
SCRATCH = Path("/tmp/socium-trace-digests")


def record(out: Path, only: list[str]) -> dict[str, object]:
    """Run and digest every run (or ``only`` these), one invocation at a time on this machine: two at once
    (engineers checking their refactors side by side) shared SCRATCH and deleted each other's runs."""
    with filelock.FileLock(str(SCRATCH) + ".lock"):
        return _record(out, only)


def _record(out: Path, only: list[str]) -> dict[str, object]:
    out.mkdir(parents=True, exist_ok=True)
    old = out / "digests.json"
    got: dict[str, object] = json.loads(old.read_text())["runs"] if only and old.exists() else {}
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    for name, args in RUNS.items():
        if only and name not in only:
            continue
        folder = SCRATCH / name.replace(" ", "_")
        argv = [a.format(out=folder, base=SCRATCH) for a in args]
        t0 = time.perf_counter()
        env = dict(os.environ)
        if "SOCIUM_DATA_DIR" not in env and SHARED_DATA.is_dir():  # the studies' real data, read-only
            env["SOCIUM_DATA_DIR"] = str(SHARED_DATA)
        proc = subprocess.run([sys.executable, "-m", "socium.cli", *argv], capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        entry: dict[str, object] = {"rc": proc.returncode, "wall_s": round(wall, 1)}
        if proc.returncode != 0:
            entry["error"] = (proc.stderr or proc.stdout)[-600:]
        files = {}
        for db in sorted(folder.rglob("*.duckdb")) if folder.exists() else []:
            rel = db.relative_to(folder).as_posix()
            files[rel] = {"tables": trace_digest(db), "config_hashes": _hashes(db)}
            if "runs" in files[rel]["tables"]:
                # a replayed run records the sha256 of the recorded trace's file, whose bytes differ between
                # any two runs (DuckDB keeps the wall-clock columns): the runs row without it, for comparison
                VOLATILE["runs"].add("input_digests")
                files[rel]["runs_without_input_digests"] = trace_digest(db)["runs"]
                VOLATILE["runs"].discard("input_digests")
        entry["files"] = files
        got[name] = entry
        print(f"{name}: rc {proc.returncode}, {len(files)} trace file(s), {wall:.1f} s", flush=True)
    meta = {
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load": Path("/proc/loadavg").read_text().split()[:3],
    }
    (out / "digests.json").write_text(json.dumps({"meta": meta, "runs": got}, indent=1, sort_keys=True))
    return got


def compare(a_path: Path, b_path: Path) -> int:
    a = json.loads(a_path.read_text())["runs"]
    b = json.loads(b_path.read_text())["runs"]
    bad = 0
    print("| run | trace files | tables | config hashes | digest (first table set, 12 hex) | same |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in a:
        fa, fb = a[name]["files"], b.get(name, {}).get("files", {})
        n_tab = sum(len(f["tables"]) for f in fa.values())
        tables_a = {rel: f["tables"] for rel, f in fa.items()}
        same = tables_a == {rel: f["tables"] for rel, f in fb.items()} and a[name]["rc"] == b.get(name, {}).get("rc")
        only_inputs = {  # differs only in the recorded input file's sha256 (see record)
            rel: {t: d for t, d in f["tables"].items() if t != "runs"} | {"r": f.get("runs_without_input_digests")}
            for rel, f in fa.items()
        } == {
            rel: {t: d for t, d in f["tables"].items() if t != "runs"} | {"r": f.get("runs_without_input_digests")}
            for rel, f in fb.items()
        }
        diff = [
            f"{rel}:{t}"
            for rel in sorted(set(fa) | set(fb))
            for t in sorted(set(fa.get(rel, {}).get("tables", {})) | set(fb.get(rel, {}).get("tables", {})))
            if fa.get(rel, {}).get("tables", {}).get(t) != fb.get(rel, {}).get("tables", {}).get(t)
        ]
        hashes = sorted({h for f in fa.values() for h in f["config_hashes"]})
        first = next(iter(fa.values()), {"tables": {}})["tables"]
        summary = __import__("hashlib").sha256(json.dumps(first, sort_keys=True).encode()).hexdigest()[:12]
        shown = ", ".join(h[:8] for h in hashes[:3]) + (f" +{len(hashes) - 3}" if len(hashes) > 3 else "")
        print(
            f"| {name} (rc {a[name]['rc']}) | {len(fa)} | {n_tab} | {shown or '-'} | {summary} | "
            f"{'yes' if same else 'yes, but for runs.input_digests' if only_inputs else 'NO: ' + ', '.join(diff[:6])} |"
        )
        bad += not (same or only_inputs)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", action="append", default=[], help="run only this name (repeatable)")
    ap.add_argument("--compare", nargs=2, type=Path)
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        ap.error("--out or --compare is required")
    record(args.out, args.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
