"""One interval policy for every report and ``socium seeds`` (issue 29, item 6).

Reports used to print a 95% t interval whatever the n and whatever the quantity: with 2 seeds that is
a t with 1 degree of freedom (half-width 12.7 standard errors: "reach [-40, 95]"), with 1 seed a
zero-width "CI" ("0.99 [0.99, 0.99]"), and for a probability or an error measure bounds outside the
quantity's range (``[-0.61, 1.63]``, NRMSE clipped to ``[0.000, 1.277]``). The rules here:

* no interval below ``MIN_N`` = 3 independent units: the estimate is printed with "n too small";
* a mean of an unbounded (signed) quantity, e.g. a paired difference: a t interval from n >= 3;
* a proportion k of n: the Wilson score interval, always inside [0, 1], defined from n >= 1;
* a mean of a non-negative quantity (NRMSE, reach, counts): a percentile bootstrap of the mean, whose
  bounds lie between the smallest and largest value, so never below 0;
* every result carries its n and the method that made it, and prints them beside the interval.

Ground floor: numpy and scipy only, so every layer can use it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats

from socium.core.rng import component_rng
from socium.errors import UsageError

#: Fewest independent units (seeds, cascades, episodes) an interval is computed from. With 2 a t interval
#: has 1 degree of freedom (t = 12.7 for 95%), which says nothing; with 1 there is no spread at all.
MIN_N = 3
#: Resamples of a bootstrap interval: the 2.5% and 97.5% percentiles move by well under a standard
#: error of the mean at this count, and it stays fast for the few hundred units a report has.
N_BOOT = 2000
#: The most resamples a spec may ask for (``bootstrap``, ``counterfactual.bootstrap``, ...). Why a bound: the
#: resampled statistics are kept (8 bytes each, times arms and measures) and each costs a pass over the
#: units, so ``bootstrap: 1e12`` grew to out-of-memory after the experiment folder was written. At 10^5 the
#: Monte-Carlo error of a 2.5% percentile is ~1/7 of that at the default 2,000; more buys nothing visible.
MAX_BOOT = 100_000
#: Stream purpose of the bootstrap resampling (socium.core.rng.component_rng; apart from rng.py's 1..7).
BOOTSTRAP_PURPOSE = 29
TOO_SMALL = "n too small for an interval"

Method = Literal["t", "wilson", "bootstrap", "none"]


@dataclass(frozen=True)
class Interval:
    """An estimate with its interval, or with the reason it has none; ``n`` is always the count it used."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int
    method: Method
    note: str = ""
    level: float = 0.95

    @property
    def has_bounds(self) -> bool:
        return self.low is not None and self.high is not None

    def format(self, digits: int = 2, signed: bool = False) -> str:
        """``0.31 [0.12, 0.50] (n=5, t)``, ``0.99 (n=1: n too small for an interval)`` or ``n/a (n=0)``."""
        if self.estimate is None:
            return f"n/a (n={self.n}{': ' + self.note if self.note else ''})"
        f = f"{{:{'+' if signed else ''}.{digits}f}}"
        est = f.format(self.estimate)
        if not self.has_bounds:
            return f"{est} (n={self.n}: {self.note or TOO_SMALL})"
        return f"{est} [{f.format(self.low)}, {f.format(self.high)}] (n={self.n}, {self.method})"

    def bounds(self, digits: int = 2, signed: bool = False) -> str:
        """Just the interval part for a table column: ``[0.12, 0.50]`` or ``none (n=1: n too small ...)``."""
        if not self.has_bounds:
            return f"none (n={self.n}: {self.note or TOO_SMALL})"
        f = f"{{:{'+' if signed else ''}.{digits}f}}"
        return f"[{f.format(self.low)}, {f.format(self.high)}]"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the legacy ``mean``/``lo``/``hi`` keys the result files already use."""
        d = asdict(self)
        d.update(mean=self.estimate, lo=self.low, hi=self.high)
        return d


def _clean(values: Iterable[float | None]) -> np.ndarray:
    """The finite values; None and NaN are units that were not measured, not zeros."""
    return np.asarray([float(v) for v in values if v is not None and not math.isnan(float(v))], dtype=float)


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise UsageError(f"interval level {level!r} must lie strictly between 0 and 1")


def _no_interval(v: np.ndarray, method: Method, level: float) -> Interval:
    if len(v) == 0:
        return Interval(None, None, None, 0, "none", "no values", level)
    return Interval(float(v.mean()), None, None, int(len(v)), "none", TOO_SMALL, level)


def mean_interval(values: Iterable[float | None], level: float = 0.95, min_n: int = MIN_N) -> Interval:
    """Mean of a signed quantity (a paired difference, a stance) with a t interval from ``min_n`` units.

    ``min_n`` below 3 is refused: it is the policy, not a knob, that a 1-degree-of-freedom t is no interval."""
    _check_level(level)
    if min_n < MIN_N:
        raise UsageError(f"mean_interval: min_n={min_n} is below the policy's {MIN_N} units")
    v = _clean(values)
    if len(v) < min_n:
        return _no_interval(v, "t", level)
    m = float(v.mean())
    half = float(stats.t.ppf(0.5 + level / 2, len(v) - 1)) * float(v.std(ddof=1)) / math.sqrt(len(v))
    return Interval(m, m - half, m + half, int(len(v)), "t", "", level)


def proportion_interval(k: int, n: int, level: float = 0.95) -> Interval:
    """Share ``k / n`` with its Wilson score interval (inside [0, 1], sensible at k = 0 or k = n)."""
    _check_level(level)
    if n < 0 or k < 0 or k > n:
        raise UsageError(f"proportion_interval: need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return Interval(None, None, None, 0, "none", "no trials", level)
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return Interval(k / n, max(0.0, float(ci.low)), min(1.0, float(ci.high)), int(n), "wilson", "", level)


def nonnegative_interval(
    values: Iterable[float | None], level: float = 0.95, seed: int = 0, n_boot: int = N_BOOT
) -> Interval:
    """Mean of a quantity that cannot be negative (NRMSE, reach, counts): a percentile bootstrap of the
    mean over units, so the bounds stay within the values' range and never go below 0.

    Deterministic for a given ``seed`` (socium.core.rng stream). Refuses negative values: the
    caller has a signed quantity and wants :func:`mean_interval`."""
    _check_level(level)
    v = _clean(values)
    if len(v) and float(v.min()) < 0:
        raise UsageError(f"nonnegative_interval: value {float(v.min()):g} is negative; use mean_interval")
    if len(v) < MIN_N:
        return _no_interval(v, "bootstrap", level)
    rng = component_rng(seed, BOOTSTRAP_PURPOSE)
    means = v[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(axis=1)
    lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
    return Interval(float(v.mean()), max(0.0, float(lo)), float(hi), int(len(v)), "bootstrap", "", level)


def interval_from_dict(d: dict[str, Any] | None) -> Interval | None:
    """An :class:`Interval` back from :meth:`Interval.as_dict` (a result file), None for None. A result
    written before this policy (bounds at n < 3, e.g. the zero-width n = 1 "CI") loses its bounds here."""
    if d is None:
        return None
    n = int(d.get("n", 0))
    if n < MIN_N:
        est = d.get("estimate", d.get("mean"))
        return Interval(est, None, None, n, "none", TOO_SMALL if n else "no values", float(d.get("level", 0.95)))
    return Interval(
        d.get("estimate", d.get("mean")),
        d.get("low", d.get("lo")),
        d.get("high", d.get("hi")),
        n,
        d.get("method", "t"),
        d.get("note", ""),
        float(d.get("level", 0.95)),
    )
