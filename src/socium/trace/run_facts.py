"""What a run folder holds, read for errors that say what to do instead (and for the files runs leave).

Why apart from the lock (:mod:`socium.trace.rundir`): these read a trace or a result file to word a refusal
or a hint (a finished run of this config, an experiment folder whose runs are below it, the last committed
step a stopped run names); nothing here takes a lock or writes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from socium.errors import InputFileError, RunDirError, SociumError


def _trace_facts(db: Path) -> tuple[int | None, int | None, str | None]:
    """(last committed step, the steps its own config runs to, its config hash) of a trace; Nones where
    the trace cannot tell (corrupt, killed before the set-up committed)."""
    import duckdb  # imported only when a trace is read

    from socium.trace.store import open_trace  # lazy: duckdb; rundir is on CLI start-up

    try:
        con = open_trace(db)
    except SociumError:
        return None, None, None
    try:
        (last,) = con.execute("SELECT max(step) FROM steps").fetchone() or (None,)
        row = con.execute("SELECT config, config_hash FROM runs LIMIT 1").fetchone()
    except duckdb.Error:  # no schema yet (killed before it was made), or not a socium trace
        return None, None, None
    finally:
        con.close()
    steps = None
    if row is not None:
        try:
            steps = int(json.loads(row[0]).get("steps"))
        except (TypeError, ValueError, AttributeError):
            steps = None
    return (None if last is None else int(last)), steps, (None if row is None else str(row[1]))


def last_committed_step(run_dir: str | Path) -> int | None:
    """The last step the run's trace committed (-1: only the set-up); None without a readable trace."""
    db = Path(run_dir) / "trace.duckdb"
    return _trace_facts(db)[0] if db.is_file() else None


def held_run_error(run_dir: Path, config_hash: str) -> RunDirError:
    """The refusal for a fresh run into a folder that already holds a run, saying what to do instead.

    Why its own steps: a finished 24-step run targeted by a 48-step config was called "unfinished (use
    --resume)" because it was measured against the new config, and following that advice then failed
    (another config is another world). Finished or not is judged by the run's own recorded ``steps``, and
    the way on depends on whether the new config is the same world (hash without ``steps``).
    """
    last, steps, recorded = _trace_facts(run_dir / "trace.duckdb")
    elsewhere = "pass --force to overwrite it, or choose another --out"
    if last is None or steps is None:
        return RunDirError(f"{run_dir} already holds a trace with no readable set-up; {elsewhere}")
    done = f"{last + 1} of {steps} steps committed"
    if recorded != config_hash:
        state = "a finished run" if last >= steps - 1 else "an unfinished run"
        return RunDirError(f"{run_dir} already holds {state} of another config ({done}); {elsewhere}")
    if last >= steps - 1:
        return RunDirError(
            f"{run_dir} already holds a finished run of this config ({done}); extend it with "
            f"`socium run --resume --out {run_dir} --steps N`, or {elsewhere}"
        )
    return RunDirError(
        f"{run_dir} already holds an unfinished run of this config ({done}); continue it with "
        f"`socium run --resume --out {run_dir}`, or {elsewhere}"
    )


def out_dir_error(run_dir: Path, exc: OSError) -> RunDirError | None:
    """One line for a run directory that cannot be created or written (``--out /proc/foo/bar`` was a
    60-line traceback); None when ``exc`` is about another file, which the caller must not mislabel."""
    if exc.filename is None:
        return None
    failed = Path(exc.filename)
    if failed != run_dir and failed not in run_dir.parents and failed.parent != run_dir:
        return None
    return RunDirError(f"--out {run_dir}: cannot create or write {failed}: {exc.strerror or exc}; choose another --out")


def runs_below(folder: Path, limit: int = 5, depth: int = 3) -> tuple[list[Path], int]:
    """Run directories (holding ``trace.duckdb``) at most ``depth`` levels below ``folder``: the first
    ``limit`` in name order, and how many there are in all."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        if len(here.relative_to(folder).parts) >= depth:
            dirs.clear()
        dirs.sort()
        if here != folder and "trace.duckdb" in files:
            found.append(here)
    found.sort()
    return found[:limit], len(found)


def not_a_run_hint(path: Path, command: str) -> str | None:
    """What to do when ``path`` is a folder socium wrote but not a run: an experiment, sweep or
    sensitivity folder (its runs are below it) or an episodes folder. None when it is none of these."""
    if not path.is_dir() or (path / "trace.duckdb").exists():
        return None
    if any((path / n).exists() for n in ("episodes.duckdb", "group_episodes.duckdb")):
        return f"{path} is an episodes folder, not a run; `socium report {path}` summarises it"
    shown, total = runs_below(path)
    if not shown:
        return None
    more = f" and {total - len(shown)} more" if total > len(shown) else ""
    names = ", ".join(str(p) for p in shown) + more
    whole = f", or `socium report {path}` for the whole experiment" if (path / "results.json").exists() else ""
    return (
        f"{path} is not a run but holds {total} run{'s' * (total != 1)}: {names}; "
        f"`socium {command} {shown[0]}` for one of them{whole}"
    )


def read_json_file(p: Path, key: str) -> dict[str, Any]:
    """A JSON object socium wrote (``results.json``, ``sensitivity.json``, ``summary.json``), holding ``key``.

    A file cut off mid-write or edited by hand is an :class:`InputFileError` naming file and line, not
    json's or a ``KeyError`` traceback from whichever reader touched it first.
    """
    try:
        res = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(p, None, f"cannot read: {exc}") from None
    except json.JSONDecodeError as exc:  # a run cut off while writing it, or a hand edit
        raise InputFileError(p, exc.lineno, f"not valid JSON ({exc.msg}); rerun to rewrite it") from None
    if not isinstance(res, dict) or key not in res:
        raise InputFileError(p, None, f"not a socium {p.name} (no {key!r} at its top level)")
    return res
