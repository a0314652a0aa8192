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


def test_a_stop_turned_into_another_error_is_still_the_stop() -> None:
    """DuckDB interrupted mid-insert raised ``RuntimeError: Query interrupted`` over the stop: a traceback and
    exit 1 in 1 of 9 stopped runs. Once the signal came, what leaves the block is the stop."""
    from socium.cli.signals import Stopped, stop_on_signals

    with pytest.raises(Stopped) as info:
        with stop_on_signals():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            except Stopped:
                raise RuntimeError("Query interrupted") from None
    assert info.value.signum == signal.SIGTERM
    with pytest.raises(ValueError):  # without a signal, an error stays itself
        with stop_on_signals():
            raise ValueError("x")


def test_the_llm_loop_does_not_log_the_stop_signal(caplog) -> None:
    """Under uvloop the stop raised inside aiohttp's callbacks was also logged with a traceback ("Fatal error on
    transport", "Task exception was never retrieved") in 4 of 18 stopped runs."""
    import logging

    from socium.cli.signals import Stopped
    from socium.llm.base import new_event_loop

    loop = new_event_loop()
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            loop.call_exception_handler({"message": "Fatal error on transport", "exception": Stopped(signal.SIGINT)})
            assert not caplog.records
            loop.call_exception_handler({"message": "Fatal error on transport", "exception": ValueError("real")})
        assert any("real" in r.getMessage() or r.exc_info for r in caplog.records)
    finally:
        loop.close()


def test_a_stop_the_loop_swallowed_still_ends_the_loop() -> None:
    """A transport's fatal-error path logs the stop and goes on; the run then ran to its end (exit 0)."""
    import asyncio

    from socium.cli.signals import Stopped
    from socium.llm.base import new_event_loop

    loop = new_event_loop()
    try:
        loop.call_soon(loop.call_exception_handler, {"message": "Fatal error", "exception": Stopped(signal.SIGTERM)})
        t0 = time.monotonic()
        with pytest.raises(RuntimeError):  # "Event loop stopped before Future completed": the caller unwinds
            loop.run_until_complete(asyncio.sleep(30))
        assert time.monotonic() - t0 < 10
    finally:
        loop.close()


def test_a_stop_lost_in_a_callback_that_cannot_raise_still_ends_the_loop(capsys) -> None:
    """A signal that lands inside uvloop's getaddrinfo callback (or any ``__del__``) cannot leave it: Python
    printed "Exception ignored in" with a traceback and the run went on until its requests timed out. Now the
    loop ends and the block raises the stop, with nothing printed."""
    import asyncio

    from socium.cli.signals import Stopped, stop_on_signals
    from socium.llm.base import new_event_loop

    class SignalledOnDrop:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises here, inside __del__: an unraisable exception

    loop = new_event_loop()
    try:
        loop.call_soon(SignalledOnDrop)  # made and dropped inside a loop callback
        t0 = time.monotonic()
        with pytest.raises(Stopped) as info:
            with stop_on_signals():
                loop.run_until_complete(asyncio.sleep(60))
        assert time.monotonic() - t0 < 30  # the loop ended on the stop, not after the 60 s sleep
    finally:
        loop.close()
    assert info.value.signum == signal.SIGTERM
    assert "Exception ignored" not in capsys.readouterr().err


def test_the_traceback_cython_prints_before_losing_a_stop_is_quiet(capsys) -> None:
    """uvloop's callbacks are Cython ``noexcept``: a stop raised there is first printed through
    ``sys.excepthook`` (a traceback in the run's log, seen under load), then handed to the unraisable hook."""
    import sys

    from socium.cli.signals import Stopped, stop_on_signals

    with stop_on_signals():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except Stopped as exc:
            sys.excepthook(type(exc), exc, exc.__traceback__)  # what Cython's PyErr_PrintEx does with it
        sys.excepthook(ValueError, ValueError("real"), None)  # anything else is printed as always
    err = capsys.readouterr().err
    assert "Stopped" not in err and "SIGINT" not in err and "ValueError: real" in err
