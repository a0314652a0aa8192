"""Exposure-driven timing: *when* an agent reacts to a post, shared by null policies and LLM agents.

Why a separate layer: with one flat activation probability per step, a cascade's speed is an
artefact of the step grid (OASIS-style runs lag real Twitter cascades by many minutes, whatever the
agents decide). Here a post entering an agent's network schedules that agent to wake after a
response delay drawn from a heavy-tailed distribution fitted to real retweet delays
(:mod:`socium.experiments.propagation.fit.fit`). At its wake-up the agent sees its feed as usual and its policy
(independent cascade, LLM, ...) decides; so two policies on the same timing differ only in the
decision.

The delay of follower ``f`` to a post by author ``a`` (whose cascade root was written by ``r``)::

    log delay = log D(u)  +  b_author * log1p(followers(a))  +  b_root * log1p(followers(r))  +  z_f  +  g_r

``D`` is a base family (log-normal, Weibull, Lomax power law, or a mixture of log-normals), the two
``b`` terms are heterogeneous influence (large audiences react more slowly: the delay to a big
account's post is dominated by followers who are rarely online), and ``z_f ~ N(0, user_sigma^2)`` is
a per-user activity factor fixed for the whole run (some users are consistently fast), and ``g_r`` is
the fitted audience speed of the cascade's source author (``root_effects``, keyed by user id: the
accounts whose earlier cascades ran fast or slow; 0 for an author the fit never saw). Every draw is
a pure function of (seed, post id, follower id), so the schedule is rebuilt exactly on resume and does
not depend on Ray sharding. Scheduling costs one vectorised draw per (new post, follower): cheap for
10^4-10^5 agents at 1-minute steps, because only agents with something new in their network wake.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from socium.core.rng import TIMING, uniform
from socium.errors import ConfigError, InputFileError
from socium.platform.posts import COMMENT, ORIGINAL
from socium.trace.queries.cascades import RESHARE_AT

if TYPE_CHECKING:  # pragma: no cover
    from socium.config.agents import TimingConfig
    from socium.platform.state import PlatformState

FAMILIES = ("lognormal", "weibull", "lomax", "lognormal_mixture")
MIN_DELAY_MIN = 0.05
"""Delays are floored at 3 seconds: Twitter15 has retweets timed at 0.0 after their parent (clamped
children), whose log would be -inf; 3 s is below the data's 0.01-minute resolution in effect."""


@dataclass(frozen=True)
class DelayDistribution:
    """A response-delay distribution in minutes (before covariates and user factors).

    ``params``: lognormal ``{mu, sigma}`` (of log minutes); weibull ``{shape, scale}``; lomax
    ``{alpha, scale}`` (a shifted Pareto: power-law tail ``x^-(alpha+1)``); lognormal_mixture
    ``{weights, mus, sigmas}`` (lists of equal length).
    """

    family: str
    params: dict[str, Any]

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ConfigError(f"timing delay family {self.family!r} is not one of {', '.join(FAMILIES)}")
        need = {
            "lognormal": {"mu", "sigma"},
            "weibull": {"shape", "scale"},
            "lomax": {"alpha", "scale"},
            "lognormal_mixture": {"weights", "mus", "sigmas"},
        }[self.family]
        missing = need - set(self.params)
        if missing:
            raise ConfigError(f"timing delay ({self.family}): missing parameters {sorted(missing)}")
        if self.family == "lognormal_mixture":
            w = np.asarray(self.params["weights"], float)
            if not (len(w) == len(self.params["mus"]) == len(self.params["sigmas"])) or len(w) == 0:
                raise ConfigError("timing delay (lognormal_mixture): weights, mus and sigmas differ in length")
            if (w < 0).any() or not math.isclose(float(w.sum()), 1.0, rel_tol=1e-6):
                raise ConfigError(
                    f"timing delay (lognormal_mixture): weights must be >= 0 and sum to 1, got {w.tolist()}"
                )

    def log_quantile(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """log of the ``u``-quantile (``v``: a second uniform picking a mixture component)."""
        from scipy import special  # imported on first use: every run imports this module

        u = np.clip(u, 1e-12, 1 - 1e-12)
        p = self.params
        if self.family == "lognormal":
            return p["mu"] + p["sigma"] * special.ndtri(u)
        if self.family == "weibull":
            return math.log(p["scale"]) + np.log(-np.log1p(-u)) / p["shape"]
        if self.family == "lomax":
            return math.log(p["scale"]) + np.log(np.power(1 - u, -1.0 / p["alpha"]) - 1)
        w = np.cumsum(np.asarray(p["weights"], float))
        comp = np.minimum(np.searchsorted(w / w[-1], v, side="right"), len(w) - 1)
        return np.asarray(p["mus"], float)[comp] + np.asarray(p["sigmas"], float)[comp] * special.ndtri(u)

    def log_quantile_above(self, u: np.ndarray, v: np.ndarray, log_cut: np.ndarray) -> np.ndarray:
        """log of the ``u``-quantile of the law truncated to ``log D > log_cut`` (one cut per draw).

        Why: a follower of a post made before an observed minute ``m`` has not reacted by ``m`` (the
        forecast conditions on it); its delay is drawn exactly from the law above ``m - t_post``. Each
        family inverts its survival function (accurate far in the tail, where ``F + u (1 - F)`` rounds
        to 1); a mixture re-weights its components by their mass above the cut, picks one with ``v``
        under those weights, then inverts that component's tail. ``log_cut = -inf`` is no truncation.
        """
        from scipy import special

        u, c, v = np.broadcast_arrays(np.clip(np.asarray(u, float), 1e-12, 1 - 1e-12), log_cut, v)
        shape, u, c, v = u.shape, u.ravel(), c.astype(float).ravel(), v.astype(float).ravel()
        p = self.params
        if self.family == "weibull":
            k, lam = p["shape"], p["scale"]
            out = math.log(lam) + np.log(np.exp(k * (c - math.log(lam))) - np.log1p(-u)) / k
            return out.reshape(shape)
        if self.family == "lomax":
            a, lam = p["alpha"], p["scale"]
            return (math.log(lam) + np.log((1.0 + np.exp(c) / lam) * np.power(1.0 - u, -1.0 / a) - 1.0)).reshape(shape)
        if self.family == "lognormal":
            mus, sds, comp = np.array([p["mu"]], float), np.array([p["sigma"]], float), np.zeros(len(u), np.int64)
        else:
            mus, sds = np.asarray(p["mus"], float), np.asarray(p["sigmas"], float)
            logw = np.log(np.maximum(np.asarray(p["weights"], float), 1e-300))[None, :]
            logw = logw + special.log_ndtr((mus[None, :] - c[:, None]) / sds[None, :])
            w = np.exp(logw - special.logsumexp(logw, axis=1, keepdims=True))
            comp = np.minimum((v[:, None] >= np.cumsum(w, axis=1)).sum(1), len(mus) - 1)
        mu, sd = mus[comp], sds[comp]
        tail = special.ndtr((mu - c) / sd)  # mass of the picked component above the cut
        return (mu - sd * special.ndtri((1.0 - u) * tail)).reshape(shape)

    def _components(self) -> list[tuple[float, Any]]:
        """(weight, frozen scipy distribution) pairs; one pair for the single families."""
        from scipy import stats  # ~3 s to import: only fitting and plotting need densities

        p = self.params
        if self.family == "lognormal":
            return [(1.0, stats.lognorm(p["sigma"], scale=math.exp(p["mu"])))]
        if self.family == "weibull":
            return [(1.0, stats.weibull_min(p["shape"], scale=p["scale"]))]
        if self.family == "lomax":
            return [(1.0, stats.lomax(p["alpha"], scale=p["scale"]))]
        return [(w, stats.lognorm(s, scale=math.exp(m))) for w, m, s in zip(p["weights"], p["mus"], p["sigmas"])]

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        """Log density of delays ``x`` (minutes)."""
        from scipy import special

        parts = [math.log(max(w, 1e-300)) + d.logpdf(x) for w, d in self._components()]
        return parts[0] if len(parts) == 1 else special.logsumexp(np.stack(parts), axis=0)

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return sum(w * d.cdf(x) for w, d in self._components())

    def narrowed(self, user_sigma: float) -> DelayDistribution:
        """The within-user distribution once a per-user log factor of sd ``user_sigma`` is drawn apart.

        The fitted marginal already contains between-user spread; drawing ``z_f`` on top would count
        it twice. For log-normal families the component variances are reduced by ``user_sigma^2``
        (floored at 0.05^2); the other families have no log-variance parameter to reduce, so they
        are returned unchanged and callers must set ``user_sigma`` to 0 for them.
        """
        if user_sigma <= 0:
            return self
        p = dict(self.params)
        if self.family == "lognormal":
            p["sigma"] = math.sqrt(max(p["sigma"] ** 2 - user_sigma**2, 0.0025))
        elif self.family == "lognormal_mixture":
            p["sigmas"] = [math.sqrt(max(s**2 - user_sigma**2, 0.0025)) for s in p["sigmas"]]
        return DelayDistribution(self.family, p)


@dataclass(frozen=True)
class TimingParams:
    """Everything the exposure layer needs; what ``socium fit propagation`` writes (JSON)."""

    delay: DelayDistribution
    b_author: float = 0.0
    b_root: float = 0.0
    user_sigma: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)
    root_effects: dict[str, float] = field(default_factory=dict)
    """Log-delay shift of every edge of a cascade whose source was posted by this user (by user id)."""

    def __post_init__(self) -> None:
        bad = [k for k, v in self.root_effects.items() if not isinstance(v, (int, float)) or not math.isfinite(v)]
        if bad:
            raise ConfigError(f"timing root_effects: values must be finite numbers (bad for {bad[:3]})")
        if self.user_sigma < 0 or not math.isfinite(self.user_sigma):
            raise ConfigError(f"timing user_sigma must be a finite number >= 0, got {self.user_sigma}")
        if self.user_sigma > 0 and self.delay.family not in ("lognormal", "lognormal_mixture"):
            raise ConfigError(f"timing user_sigma > 0 needs a log-normal delay family, not {self.delay.family!r}")

    def to_dict(self) -> dict[str, Any]:
        out = {
            "delay": {"family": self.delay.family, **self.delay.params},
            "b_author": self.b_author,
            "b_root": self.b_root,
            "user_sigma": self.user_sigma,
            "meta": self.meta,
        }
        if self.root_effects:  # only when fitted: older parameter files (and their config hashes) stay as they were
            out["root_effects"] = dict(self.root_effects)
        return out

    def root_shift(self, user_ids: Sequence[Any] | None, n: int) -> np.ndarray:
        """Per-agent ``g`` (0 where unknown) from the agents' user ids.

        A ``#k`` suffix marks a replica copy of a user (``propcv.replicate_rows``): a key with the suffix
        (``"uid#3"``) wins when present, so each copy can carry its own cascade speed (the forecast's
        per-replica shift, ``propagation/sim/simforecast.py``); otherwise the bare id's effect is used, so
        every copy of a source author gets that author's fitted effect (fitted files have no ``#`` keys).
        """
        out = np.zeros(n)
        if not self.root_effects or user_ids is None:
            return out
        eff = self.root_effects
        for i, uid in enumerate(list(user_ids)[:n]):
            if uid is not None:
                key = str(uid)
                out[i] = eff[key] if key in eff else eff.get(key.split("#", 1)[0], 0.0)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "timing.params") -> TimingParams:
        if not isinstance(d, dict) or not isinstance(d.get("delay"), dict) or "family" not in d["delay"]:
            raise ConfigError(
                f"{where}: expected {{delay: {{family: ..., <parameters>}}, b_author, b_root, user_sigma}}"
            )
        delay = dict(d["delay"])
        family = delay.pop("family")
        unknown = set(d) - {"delay", "b_author", "b_root", "user_sigma", "meta", "root_effects"}
        if unknown:
            raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
        for key in ("b_author", "b_root", "user_sigma"):  # a hand-edited file: name the key, not float()'s error
            if not isinstance(d.get(key, 0.0), (int, float)) or isinstance(d.get(key), bool):
                raise ConfigError(f"{where}: {key}: expected a number, got {d[key]!r}")
        for key in ("meta", "root_effects"):
            if not isinstance(d.get(key) or {}, dict):
                raise ConfigError(f"{where}: {key}: expected a mapping, got {type(d[key]).__name__}")
        try:
            return cls(
                DelayDistribution(family, delay),
                float(d.get("b_author", 0.0)),
                float(d.get("b_root", 0.0)),
                float(d.get("user_sigma", 0.0)),
                dict(d.get("meta", {})),
                {str(k): v for k, v in dict(d.get("root_effects") or {}).items()},
            )
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> TimingParams:
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputFileError(p, None, f"cannot read timing parameters: {exc}") from exc
        # a JSON list or number was data.get's AttributeError traceback; from_dict names what is expected
        return cls.from_dict(data.get("timing", data) if isinstance(data, dict) else data, where=str(p))

    def log_delays(
        self,
        u: np.ndarray,
        v: np.ndarray,
        author_followers: float,
        root_followers: float,
        user_z: np.ndarray,
        root_shift: float = 0.0,
        log_cut: float | None = None,
    ) -> np.ndarray:
        """Log delays (minutes) for one post's followers from their uniforms, user factors and root effect.

        ``log_cut``: every delay is drawn from its own law truncated to ``log delay > log_cut``.
        """
        law = self.delay.narrowed(self.user_sigma)
        shift = self.b_author * math.log1p(author_followers) + self.b_root * math.log1p(root_followers) + root_shift
        if log_cut is None:
            base = law.log_quantile(u, v)
        else:
            base = law.log_quantile_above(u, v, log_cut - shift - user_z)
        return base + shift + user_z


def params_from_config(cfg: TimingConfig) -> TimingParams:
    """Inline ``timing.params`` win over ``timing.params_file`` (inline is what the config hash sees)."""
    if cfg.params:
        return TimingParams.from_dict(cfg.params)
    if cfg.params_file:
        return TimingParams.load(cfg.params_file)
    raise ConfigError("timing.kind 'exposure' needs timing.params or timing.params_file (see `socium fit propagation`)")


class ExposureTiming:
    """Wake-up schedule: post ``p`` by ``a`` at step ``s`` wakes follower ``f`` at ``s + ceil(delay/dt)``.

    ``observe`` is called with each step's new posts (also during resume replay), ``due`` returns the
    agents to wake at a step. Comments do not schedule anyone: feeds never show them.

    ``condition_minute`` (``timing.condition_minute``: None in every default run): a post made before
    minute ``m`` -- an original at the start of its step, a reshare at ``(step + RESHARE_AT) * dt``, the
    times the trace's cascade queries give them -- wakes each follower after a delay drawn from that
    follower's law truncated to ``delay > m - t_post``: the prefix up to ``m`` is taken as observed
    (replayed by ``seed_actions``) and nobody else reacts to it before ``m``.
    """

    def __init__(
        self,
        params: TimingParams,
        seed_key: int,
        n: int,
        step_minutes: float,
        max_delay_min: float | None = None,
        user_ids: Sequence[Any] | None = None,
        condition_minute: float | None = None,
    ) -> None:
        self.params = params
        self.condition_minute = condition_minute
        self.key = seed_key
        self.n = n
        self.dt = float(step_minutes)
        self.max_delay = max_delay_min
        self.schedule: dict[int, list[np.ndarray]] = {}
        self._rev: tuple[np.ndarray, np.ndarray] | None = None
        self._rev_edges = -1
        self.root_shift = params.root_shift(user_ids, n)
        from scipy import special

        ids = np.arange(n)
        self.user_z = params.user_sigma * special.ndtri(
            np.clip(uniform(seed_key, TIMING, 0, ids, sub=2), 1e-12, 1 - 1e-12)
        )

    def _followers(self, state: PlatformState) -> tuple[np.ndarray, np.ndarray]:
        """Reverse CSR (followers of each agent), rebuilt only when the follow graph changed size."""
        fi = state.follows
        if self._rev is None or fi.n_edges != self._rev_edges or fi._added or fi._removed:
            src, dst = fi.edges()
            order = np.argsort(dst, kind="stable")
            indptr = np.concatenate(([0], np.cumsum(np.bincount(dst, minlength=self.n)))).astype(np.int64)
            self._rev = (indptr, src[order].astype(np.int64))
            self._rev_edges = fi.n_edges
        return self._rev

    def observe(self, state: PlatformState, new_posts: range, step: int) -> None:
        if not len(new_posts):
            return
        indptr, followers = self._followers(state)
        posts = state.posts
        counts = state.follows.follower_counts
        for pid in new_posts:
            if posts.get("kind", pid) == COMMENT:
                continue
            a = posts.get("author", pid)
            fol = followers[indptr[a] : indptr[a + 1]]
            if not len(fol):
                continue
            r = posts.get("author", posts.get("root", pid))
            u = uniform(self.key, TIMING, pid, fol, sub=0)
            v = uniform(self.key, TIMING, pid, fol, sub=1)
            logd = self.params.log_delays(
                u, v, float(counts[a]), float(counts[r]), self.user_z[fol], float(self.root_shift[r]),
                self._log_cut(int(posts.get("kind", pid)), step),
            )  # fmt: skip
            delay = np.exp(np.minimum(logd, 50.0))
            keep = np.ones(len(fol), bool) if self.max_delay is None else delay <= self.max_delay
            wake = step + np.maximum(1, np.ceil(np.maximum(delay[keep], MIN_DELAY_MIN) / self.dt - 1e-9)).astype(
                np.int64
            )
            fol = fol[keep]
            for w in np.unique(wake).tolist():
                self.schedule.setdefault(int(w), []).append(fol[wake == w])

    def _log_cut(self, kind: int, step: int) -> float | None:
        """log of ``m - t_post`` for a post made before the condition minute ``m`` (else None: no truncation)."""
        if self.condition_minute is None:
            return None
        t_post = (step + (0.0 if kind == ORIGINAL else RESHARE_AT)) * self.dt
        return math.log(self.condition_minute - t_post) if t_post < self.condition_minute else None

    def due(self, step: int) -> np.ndarray:
        """Agents to wake at ``step`` (sorted, unique); the entry is dropped once read."""
        parts = self.schedule.pop(step, None)
        if not parts:
            return np.empty(0, dtype=np.int64)
        return np.unique(np.concatenate(parts))
