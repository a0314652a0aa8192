"""Issue 36 item 12: ``socium experiment`` and ``socium report`` stopped by SIGTERM exited -15 with no line.

The signal now unwinds (each run closes its trace and lock on the way out) and the command ends with one
line saying what is kept and how to go on, exit 128 + the signal, as ``socium run`` does.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
import yaml
from typer.testing import CliRunner

from socium.cli.main import app

runner = CliRunner()


def _signal_self(sig: int) -> None:
    # without a handler of the command's, SIGTERM would end the test process itself: fail instead
    assert signal.getsignal(sig) not in (signal.SIG_DFL, signal.default_int_handler), "no handler installed"
    os.kill(os.getpid(), sig)
    time.sleep(5)  # the handler raises here


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_report_stopped_by_a_signal_says_so(tmp_path, monkeypatch, sig) -> None:
    import socium.experiments.report as report_mod

    monkeypatch.setattr(report_mod, "write_report", lambda path: _signal_self(sig))
    before = signal.getsignal(sig)
    r = runner.invoke(app, ["report", str(tmp_path)])
    assert r.exit_code == 128 + sig, (r.exit_code, r.output, r.exception)
    assert f"stopped by {signal.Signals(sig).name}" in r.output and "socium report" in r.output
    assert signal.getsignal(sig) == before  # the command's handler is gone again


def test_experiment_stopped_by_sigterm_says_what_is_kept(tmp_path, monkeypatch) -> None:
    import socium.experiments.phenomena as phen

    spec = tmp_path / "h.yaml"
    spec.write_text(yaml.safe_dump({"experiment": "herding", "n_items": 6, "base": {"policy": {"kind": "random"}}}))
    monkeypatch.setattr(phen, "prepare_experiment", lambda kind, f, out, sets: (None, tmp_path / "exp"))
    monkeypatch.setattr(phen, "run_prepared", lambda *a, **k: _signal_self(signal.SIGTERM))
    r = runner.invoke(app, ["experiment", "herding", str(spec), "--quiet"])
    assert r.exit_code == 128 + signal.SIGTERM, (r.exit_code, r.output, r.exception)
    assert "stopped by SIGTERM: finished runs and committed steps are kept" in " ".join(r.output.split())
