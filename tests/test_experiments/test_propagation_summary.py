"""examples/propagation_llm_summary.py pools CV seeds by cascade and checks the issue-12 targets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "propagation_llm_summary.py"
CURVES = ("scale", "depth", "max_breadth")


def _results(d: Path, seed: int, ic: list[float], cal: list[float]) -> Path:
    rows = [
        {
            "id": f"c{i}",
            "real_final": {"scale": 10},
            "models": {
                "ic_pooled": {"nrmse": dict.fromkeys(CURVES, a), "final": {"scale": 12.0}},
                "calibrated": {"nrmse": dict.fromkeys(CURVES, b), "final": {"scale": 9.0}},
            },
        }
        for i, (a, b) in enumerate(zip(ic, cal))
    ]
    spec = {"max_users": None, "cv": {"seed": seed, "runs": 5, "models": ["ic_pooled", "calibrated"]}}
    targets = {"scale": 0.15, "depth": 0.20, "max_breadth": 0.15}
    d.mkdir()
    (d / "results.json").write_text(
        json.dumps({"spec": spec, "cascades": rows, "summary": {"reference": {"targets": targets}}})
    )
    return d


def test_pooled_means_paired_difference_and_target_verdicts(tmp_path: Path) -> None:
    s0 = _results(tmp_path / "s0", 0, [0.3, 0.2, 0.4, 0.3], [0.1, 0.1, 0.2, 0.2])
    s1 = _results(tmp_path / "s1", 1, [0.3, 0.2, 0.4, 0.3], [0.1, 0.3, 0.2, 0.2])
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(s0), str(s1), "--boot", "500"], capture_output=True, text=True, check=True
    ).stdout
    assert "seeds [0, 1]; cascades n=4; agents per cascade: all users; replicas per prediction 5" in out
    # calibrated: per-cascade means over seeds 0.1, 0.2, 0.2, 0.2 -> 0.175; IC 0.3; paired -0.125
    assert "| calibrated null | 0.175 (" in out and "| IC baseline (pooled p, 5-min clock) | 0.300 (" in out
    assert "| calibrated - IC (paired) | -0.125 (" in out
    assert "seed 1 calibrated: scale 0.200 (" in out
    assert "target calibrated scale <= 0.15: 0.175" in out and "-> NOT met" in out
    assert "target calibrated depth <= 0.2: 0.175" in out


def test_extra_run_set_is_matched_by_seed_and_cascade_and_paired(tmp_path: Path) -> None:
    """--extra adds another run set's calibrated model; its paired difference uses the same cascades."""
    s0 = _results(tmp_path / "s0", 0, [0.3, 0.2, 0.4, 0.3], [0.1, 0.1, 0.2, 0.2])
    e0 = _results(tmp_path / "e0", 0, [0.3, 0.2, 0.4, 0.3], [0.2, 0.1, 0.1, 0.2])  # rows in another order below
    data = json.loads((e0 / "results.json").read_text())
    data["cascades"].reverse()
    (e0 / "results.json").write_text(json.dumps(data))
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(s0), "--extra", f"new={e0}", "--boot", "200"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "| new | 0.150 (" in out and "| new - calibrated (paired) | +0.000 (" in out
    assert "target new scale <= 0.15: 0.150" in out
    e1 = _results(tmp_path / "e1", 1, [0.3, 0.2, 0.4, 0.3], [0.2, 0.1, 0.1, 0.2])
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), str(s0), "--extra", f"new={e1}"], capture_output=True, text=True
    )  # another seed than the main run set: refused, never silently mismatched
    assert bad.returncode != 0 and "seeds [1] differ from [0]" in bad.stderr
