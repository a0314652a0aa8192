"""Steps as simulated time: every step label of the explorer says when the step happened on the platform.

Why from the run's config and not a query: a step's simulated time is ``step x step_minutes x
time_magnification`` from ``start_hour`` (or from ``start_datetime``, when the run stands for real dates),
the formula the simulator itself uses (:class:`socium.simulator.world.Clock`, which writes
``steps.sim_time_s``), so a label costs no query, also for a live run's steps not yet committed. Keys at
their default are left out of a dumped config, so the defaults come from :class:`ExperimentConfig` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from socium.config.experiment import ExperimentConfig

_DEFAULTS = ExperimentConfig.model_fields


def _default(name: str) -> Any:
    return _DEFAULTS[name].default


@dataclass(frozen=True)
class StepClock:
    """A run's clock: when each step stands for, as a short label."""

    step_minutes: float = float(_default("step_minutes"))
    magnification: float = float(_default("time_magnification"))
    start_hour: int = int(_default("start_hour"))
    start: datetime | None = None

    @classmethod
    def of(cls, config: dict[str, Any]) -> StepClock:
        """The clock of a run's dumped config (defaults where a key is left out; bad values: the defaults)."""
        try:
            start = config.get("start_datetime")
            return cls(
                float(config.get("step_minutes", _default("step_minutes"))),
                float(config.get("time_magnification", _default("time_magnification"))),
                int(config.get("start_hour", _default("start_hour"))),
                datetime.fromisoformat(start) if isinstance(start, str) else None,
            )
        except (TypeError, ValueError):
            return cls()

    def minutes(self, step: int) -> float:
        """Simulated minutes from step 0 to ``step``."""
        return step * self.step_minutes * self.magnification

    def time(self, step: int) -> str:
        """When ``step`` happened: ``day 1 09:00`` (from ``start_hour``) or ``2024-05-01 09:00`` (a real date)."""
        if step < 0:
            return "set-up"
        if self.start is not None:
            return (self.start + timedelta(minutes=self.minutes(step))).strftime("%Y-%m-%d %H:%M")
        total = self.start_hour * 60 + self.minutes(step)
        day, rest = divmod(int(round(total * 60)), 86_400)
        return f"day {day + 1} {rest // 3600:02d}:{rest % 3600 // 60:02d}"

    def label(self, step: int | None) -> str:
        """``step 3 · day 1 12:00``; ``set-up`` before step 0; ``no step`` for none."""
        if step is None:
            return "no step"
        return "set-up" if step < 0 else f"step {step} · {self.time(step)}"
