"""One progress display over a whole experiment, sweep or episodes run.

Why: an experiment is many runs (cascades x model/null, perspectives, ...) and an embedded-model
run can take minutes; a researcher needs to see runs done / total, the current run's step, LLM
calls and tokens so far and an ETA, and to be told when a finished run is reused rather than
silently skipped. The experiment code reports through :func:`current` (a no-op unless a display is
installed with :func:`reporting`), so library callers pay nothing and need no new parameters.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from socium.core.console_text import neutralise


class ExperimentProgress:
    """What experiment code reports; this base class ignores it all (the library default)."""

    def expect(self, n: int) -> None:
        """``n`` more runs (or episodes) will be done."""

    def start_item(self, label: str, steps: int, done_steps: int = 0) -> None:
        """A run starts (or resumes at ``done_steps``) and will go to ``steps``."""

    def step(self, step: int, llm_calls: int = 0, tokens: int = 0) -> None:
        """The current run committed ``step``, making ``llm_calls`` calls with ``tokens`` tokens."""

    def finish_item(self, label: str, reused: bool = False, llm_calls: int = 0, tokens: int = 0) -> None:
        """A run (or episode) is done; ``reused``: an identical finished run was found and kept."""

    def note(self, message: str) -> None:
        """A line of context printed above the display."""


_CURRENT: ContextVar[ExperimentProgress | None] = ContextVar("socium_experiment_progress", default=None)
_NULL = ExperimentProgress()


def current() -> ExperimentProgress:
    """The installed display, or a no-op."""
    return _CURRENT.get() or _NULL


@contextmanager
def reporting(progress: ExperimentProgress) -> Iterator[ExperimentProgress]:
    """Install ``progress`` for the code run inside the ``with`` block."""
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)


class RichProgress(ExperimentProgress):
    """The terminal display: one bar over all runs; the current run's step; LLM calls and tokens; ETA.

    The bar counts a run in progress by its fraction of steps, so the ETA moves while a long run runs.
    """

    def __init__(self, title: str, unit: str = "runs", console: Console | None = None, disable: bool = False) -> None:
        self.title = title
        self.unit = unit
        self.console = console or Console()
        self.total = 0
        self.expected = False  # an expect() call said how many there are (possibly none)
        self.done = 0
        self.reused = 0
        self.calls = 0
        self.tokens = 0
        self.label = ""
        self.steps = 0
        self.at = 0
        self.started = time.perf_counter()
        self._inflight: dict[str, tuple[int, int]] = {}
        self._inflight_usage: dict[str, tuple[int, int]] = {}
        self._progress = Progress(
            # run names and labels are data: shown literally (no markup), control characters neutralised
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            TextColumn("{task.fields[count]}", markup=False),
            TaskProgressColumn(),
            TextColumn("{task.fields[info]}", markup=False),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            # Without a terminal (CI logs, pipes) rich draws nothing until the end, then the bar once more
            # after the plain lines said it all: there the plain status lines below replace it.
            disable=disable or not self.console.is_terminal,
        )
        self._task = self._progress.add_task(neutralise(title), total=None, count="", info="")
        # A plain status line at most every PLAIN_EVERY_S seconds and one per finished run, once there is
        # something to count (no '0/? runs' line before the first run starts).
        self._plain = not disable and not self.console.is_terminal
        self._last_plain = 0.0

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._refresh()
        self._progress.stop()

    PLAIN_EVERY_S = 10.0

    def status_line(self) -> str:
        task = self._progress.tasks[0]
        parts = (task.fields["count"], task.fields["info"], f"{time.perf_counter() - self.started:.0f}s")
        return f"{self.title}: " + " · ".join(p for p in parts if p)

    def _refresh(self) -> None:
        frac = min(self.at / self.steps, 0.999) if self.steps else 0.0
        current = f"{self.label} step {self.at}/{self.steps} · " if self.label and self.steps else ""
        if self._inflight:
            frac = sum(min(a / s, 0.999) for a, s in self._inflight.values() if s)
            current = " ".join(f"{k} {a}/{s}" for k, (a, s) in sorted(self._inflight.items())) + " · "
        total = max(self.total, self.done + (1 if self.steps and self.at < self.steps else 0)) or None
        nothing = self.expected and not (self.total or self.done or self._inflight or self.steps)
        if nothing:  # everything was already done (reused): a full bar, not one pulsing over '0/?'
            total, frac = 1, 1.0
        calls = self.calls + sum(c for c, _ in self._inflight_usage.values())
        tokens = self.tokens + sum(t for _, t in self._inflight_usage.values())
        # rule-based runs make no calls: no '0 LLM calls · 0 tokens' on every line of a sweep of them
        info = f"{current}{calls:,} LLM calls · {tokens:,} tokens" if calls or tokens else current.rstrip(" ·")
        count = (
            "nothing left to run"
            if nothing
            # the number to do is not known yet: a count without a denominator while the bar pulses
            else f"{self.done}/{self.total} {self.unit}"
            if self.total
            else f"{self.unit} done: {self.done}"
        ) + (f" ({self.reused} reused)" if self.reused else "")
        self._progress.update(
            self._task, completed=self.done + frac, total=total, count=neutralise(count), info=neutralise(info)
        )
        started = self.total or self.done or self._inflight or self.steps
        if self._plain and started and time.perf_counter() - self._last_plain >= self.PLAIN_EVERY_S:
            self._last_plain = time.perf_counter()
            self.note(self.status_line())

    def expect(self, n: int) -> None:
        self.total += n
        self.expected = True
        self._refresh()

    def start_item(self, label: str, steps: int, done_steps: int = 0) -> None:
        self.label, self.steps, self.at = label, steps, done_steps
        if done_steps:
            self.note(f"resuming {label} at step {done_steps} of {steps}")
        self._refresh()

    def step(self, step: int, llm_calls: int = 0, tokens: int = 0) -> None:
        self.at = step + 1
        self.calls += llm_calls
        self.tokens += tokens
        self._refresh()

    def finish_item(self, label: str, reused: bool = False, llm_calls: int = 0, tokens: int = 0) -> None:
        self.done += 1
        self._inflight.pop(label, None)
        self._inflight_usage.pop(label, None)
        self.calls += llm_calls
        self.tokens += tokens
        if reused:
            self.reused += 1
            self.note(f"reused finished run {label} (same config, all steps committed)")
        self.label, self.steps, self.at = "", 0, 0
        if self._plain:
            self._last_plain = 0.0  # a finished run is always reported
        self._refresh()

    def inflight(self, runs: dict[str, tuple[int, int, int, int]]) -> None:
        """Runs in flight elsewhere (Ray tasks): label -> (steps done, steps, LLM calls, tokens)."""
        self._inflight = {k: (v[0], v[1]) for k, v in runs.items()}
        self._inflight_usage = {k: (v[2], v[3]) for k, v in runs.items()}
        self._refresh()

    def note(self, message: str) -> None:
        # soft_wrap: a status line in a log is one line, never cut at rich's 80 columns for non-terminals
        self.console.print(neutralise(message), markup=False, highlight=False, soft_wrap=True)

    def summary(self) -> str:
        wall = time.perf_counter() - self.started
        reused = f", {self.reused} reused" if self.reused else ""
        return (
            f"{self.done} {self.unit} done{reused} in {wall:.1f}s wall time; "
            f"{self.calls:,} LLM calls, {self.tokens:,} tokens"
        )


class StepProgress:
    """The progress of one ``socium run``, one committed step at a time.

    Why two displays: on a terminal a rich bar redrawn in place; anywhere else (a log file, a pipe, CI)
    rich draws nothing until the run ends, so a two-minute run was silent and a killed one left an empty
    log. There each committed step is one plain line, written and flushed as the step commits and never
    wrapped at rich's default 80 columns, so ``tail -f`` shows the run move and a log of a killed run
    names the last step it committed.
    """

    def __init__(self, title: str, total: int, done: int, console: Console, disable: bool = False) -> None:
        self.title = neutralise(title)
        self.total = total
        self.console = console
        self.plain = not disable and not console.is_terminal
        self._progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} steps"),
            TextColumn("{task.fields[info]}", markup=False),
            TimeRemainingColumn(),
            console=console,
            disable=disable or self.plain,
        )
        self._task = self._progress.add_task(self.title, total=total, completed=done, info="")

    def __enter__(self) -> StepProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._progress.stop()

    def step(self, step: int, info: str) -> None:
        """Step ``step`` (0-based) is committed; ``info`` says how the run stands (time, activity, calls)."""
        self._progress.update(self._task, advance=1, info=neutralise(info))
        if self.plain:
            line = f"{self.title}: step {step} committed ({step + 1}/{self.total}) {neutralise(info)}".rstrip()
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)
            self.console.file.flush()
