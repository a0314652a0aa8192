"""One error hierarchy so callers can catch everything socium raises with one ``except``."""

from __future__ import annotations


class SociumError(Exception):
    """Base class of every error socium raises on purpose."""


class ConfigError(SociumError):
    """A config file or override is invalid; the message names the key path, value and what is allowed."""


class InputFileError(SociumError):
    """An input file (CSV, JSON, edge list, tree) is missing or malformed; the message names file and line."""

    def __init__(self, path: object, line: int | None, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


class UsageError(SociumError):
    """A Python API call asks for something impossible (an unknown agent id, an agent not signed up)."""


class RunDirError(SociumError):
    """A run directory cannot be used as asked (already finished without --force, nothing to resume)."""


class TraceError(SociumError):
    """The trace store is inconsistent with what was asked of it."""


class BudgetExceeded(SociumError):
    """A token or call budget ran out; committed steps are kept."""


class LLMError(SociumError):
    """An LLM backend failed in a way the wrappers could not absorb."""


class LLMUnavailable(LLMError):
    """The model server is down or keeps failing: the step was not committed; ``--resume`` continues it."""


class UnusableModelOutput(LLMUnavailable):
    """The model answers, but too few answers are usable actions: the step was not committed (exit 4 like a
    failing server, since the run must not go on producing invalid rows); ``--resume`` continues it."""


class ReplayMiss(LLMError):
    """The replay backend was asked a request that is not in the recorded cache."""


class ExecutorError(SociumError):
    """A shard could not be computed even after re-creating its actor (the Ray executor)."""
