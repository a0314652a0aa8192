"""The real cascade a propagation run simulates, for the run's charts: its curve beside the simulated one.

A propagation experiment (``socium experiment propagation``) writes each cascade's runs under
``runs/<cascade id>/<model|null>/`` and, in its ``results.json``, the real cascade's per-minute curves
(``cascades[i].real``: scale, depth, max breadth of the users the run simulates). The simulated curve is
computed from the run's own trace by the study's measure
(:func:`socium.trace.queries.cascades.propagation_curves`: each user once, at its earliest reshare), so the
two curves on the chart are the ones the study's NRMSE compares. A run whose folder is not laid out that
way, or whose experiment has not written its results yet, has no real curve (nothing is drawn).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = "results.json"


@dataclass(frozen=True)
class RealCurve:
    """The real cascade of one propagation run: per minute its scale (users reached), and the study's scores."""

    cascade_id: str
    arm: str
    real: list[float]
    """Users reached by each minute (``real.scale``), minute 0 first."""
    nrmse: float | None
    """The study's NRMSE of this run's scale curve against the real one (None where not recorded)."""


@functools.lru_cache(maxsize=8)
def _results(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """A results.json parsed once per version of the file (a study's may be megabytes)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def real_curve_of(run_dir: Path) -> RealCurve | None:
    """The real cascade beside the propagation run in ``run_dir`` (None: not a propagation study's run)."""
    run_dir = run_dir.resolve()
    if len(run_dir.parts) < 4 or run_dir.parent.parent.name != "runs":
        return None
    path = run_dir.parents[2] / RESULTS
    try:
        st = path.stat()
    except OSError:
        return None
    res = _results(str(path), st.st_mtime_ns, st.st_size)
    if res.get("experiment") != "propagation":
        return None
    cid, arm = run_dir.parent.name, run_dir.name
    for c in res.get("cascades", []):
        if isinstance(c, dict) and str(c.get("id")) == cid and arm in (c.get("runs") or {}):
            scale = (c.get("real") or {}).get("scale")
            if not scale:
                return None
            nrmse = ((c["runs"][arm] or {}).get("nrmse") or {}).get("scale")
            return RealCurve(cid, arm, [float(v) for v in scale], None if nrmse is None else float(nrmse))
    return None
