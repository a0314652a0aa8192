"""Agent memory: a bounded window of recent lines, or a Generative-Agents memory stream.

Why a stream (Park et al. 2023): over a long run an agent's recent actions say little about what
it has learnt; a stream keeps every observation, own action, message and reflection with a time
and an importance, and retrieves for each prompt the entries that score highest on
recency x importance x relevance to what the agent is looking at now, within a token budget.
Reflection (an LLM call writing insights back into the stream) turns many small observations
into a few durable beliefs.

Storage is columnar (one numpy row per entry, texts in one list, an embedding matrix grown in
chunks) because a per-entry Python object would cost far more than the few KB per agent socium
budgets at scale. Every entry is also a row of the trace's ``memories`` table, written in its
step's transaction, so a resumed run rebuilds the same stream by re-adding those rows in order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from socium.config.agents import MemoryConfig
from socium.core.actions import ACTION_CLASSES
from socium.platform.text import clean_text
from socium.recsys.embeddings import make_embedder

MemoryKind = Literal["observation", "action", "message", "reflection"]
KINDS: tuple[str, ...] = ("observation", "action", "message", "reflection")
MAX_ENTRY_CHARS = 300

# Heuristic importance on Generative Agents' 1..10 scale (the action table's ``importance``): what the
# agent did itself weighs more than what it merely saw; writing weighs more than clicking; a reflection
# is a conclusion, so it is high.
ACTION_IMPORTANCE = {c.type_name: c.meta.importance for c in ACTION_CLASSES}
REFLECTION_IMPORTANCE = 8.0
MESSAGE_IMPORTANCE = 5.0


def heuristic_importance(kind: str, action_type: str | None = None, engagement: int = 0) -> float:
    """1..10: see ACTION_IMPORTANCE; an observation is 2 plus up to 3 for the post's engagement."""
    if kind == "action":
        return ACTION_IMPORTANCE.get(action_type or "", 3.0)
    if kind == "reflection":
        return REFLECTION_IMPORTANCE
    if kind == "message":
        return MESSAGE_IMPORTANCE
    return 2.0 + min(3.0, math.log1p(max(engagement, 0)))


def approx_tokens(text: str) -> int:
    """~4 characters per token for English with a BPE tokenizer; cheap and deterministic."""
    return max(1, (len(text) + 3) // 4)


class WindowMemory:
    """The last ``size`` lines per agent (the original socium memory), stored columnar.

    One slot per agent id in a numpy object array (grown by doubling), holding the agent's lines as
    one string joined by ``SEP``: a dict of per-agent tuples cost ~270 bytes for one 84-character
    line and ~850 for five, this ~145 and ~500 (what a 10^5-agent run keeps per LLM agent;
    benchmarks/bench_scale.py, issue 17). A ``SEP`` inside a line becomes a space.
    """

    kind = "window"
    SEP = "\x1e"  # ASCII record separator: never part of a prompt line

    def __init__(self, size: int, n_agents: int = 0) -> None:
        self.size = max(size, 1)
        self._slots: np.ndarray = np.full(max(n_agents, 16), None, dtype=object)

    def add(self, agent: int, step: int, kind: str, text: str, importance: float | None = None, **_: Any) -> None:
        if kind != "action" and kind != "message":
            return
        if agent >= len(self._slots):
            grown = np.full(max(2 * len(self._slots), agent + 1), None, dtype=object)
            grown[: len(self._slots)] = self._slots
            self._slots = grown
        text = text.replace(self.SEP, " ")
        old = self._slots[agent]
        if old is None:
            self._slots[agent] = text
            return
        lines = old.split(self.SEP)
        self._slots[agent] = self.SEP.join([*lines[max(len(lines) - self.size + 1, 0) :], text])

    def _get(self, agent: int) -> list[str] | None:
        joined = self._slots[agent] if 0 <= agent < len(self._slots) else None
        return None if joined is None else joined.split(self.SEP)

    def recall(self, agent: int, step: int, query: str = "", hours_per_step: float = 1.0) -> list[str]:
        return self._get(agent) or []

    def drain_rows(self) -> dict[str, list] | None:
        return None

    def get(self, agent: int, default: Sequence[str] = ()) -> list[str]:
        """The agent's lines (surveys and interviews read memory this way)."""
        lines = self._get(agent)
        return list(default) if lines is None else lines

    def __getitem__(self, agent: int) -> tuple[str, ...]:
        lines = self._get(agent)
        if lines is None:
            raise KeyError(agent)
        return tuple(lines)

    def __len__(self) -> int:
        """Agents with at least one line."""
        return int(np.count_nonzero(self._slots != None))  # noqa: E711 - elementwise comparison


class MemoryStream:
    """All agents' streams in one columnar store; see the module docstring."""

    kind = "stream"
    _CHUNK = 4096

    def __init__(self, cfg: MemoryConfig, k: int, embedder: Any | None = None) -> None:
        self.cfg = cfg
        self.k = max(k, 1)
        self._embedder = embedder
        self.step = np.zeros(self._CHUNK, np.int32)
        self.kind_code = np.zeros(self._CHUNK, np.int8)
        self.importance = np.zeros(self._CHUNK, np.float32)
        self.texts: list[str] = []
        self._vecs: np.ndarray | None = None
        self._n_embedded = 0
        self.by_agent: dict[int, list[int]] = {}
        self.since_reflection: dict[int, float] = {}
        self.active_steps: dict[int, int] = {}
        self._rows: dict[str, list] = _empty_rows()
        self._qvecs: dict[str, np.ndarray] = {}  # this step's query embeddings (prime_queries)
        self._text_vecs: dict[str, np.ndarray] = {}  # distinct entry texts already embedded (bounded, FIFO)
        self._pending: dict[int, list[int]] = {}  # entry indices per agent since the last drain
        self._row_of: dict[int, int] = {}  # entry index -> position in the pending rows

    # ---- writing ----------------------------------------------------------------------------
    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            self._embedder = make_embedder(self.cfg.embedder)
        return self._embedder

    def __len__(self) -> int:
        return len(self.texts)

    def holds(self, agent: int, kind: str, text: str, last: int = 200) -> bool:
        """Whether one of the agent's ``last`` entries is this ``kind`` with this text (as :meth:`add` stores it)."""
        code, want = KINDS.index(kind), clean_text(" ".join(str(text).split()), MAX_ENTRY_CHARS).text
        return any(self.kind_code[i] == code and self.texts[i] == want for i in self.by_agent.get(agent, ())[-last:])

    def add(
        self,
        agent: int,
        step: int,
        kind: str,
        text: str,
        importance: float | None = None,
        action_type: str | None = None,
        engagement: int = 0,
        ref_post_id: int | None = None,
        record: bool = True,
    ) -> int:
        """Append one entry (text cleaned and bounded); ``record=False`` when rebuilding from the trace."""
        if kind not in KINDS:
            raise ValueError(f"memory kind {kind!r} is not one of {KINDS}")
        text = clean_text(" ".join(str(text).split()), MAX_ENTRY_CHARS).text
        imp = float(importance if importance is not None else heuristic_importance(kind, action_type, engagement))
        imp = float(min(10.0, max(1.0, imp)))
        i = len(self.texts)
        if i >= len(self.step):
            grow = max(self._CHUNK, len(self.step))
            self.step = np.concatenate([self.step, np.zeros(grow, np.int32)])
            self.kind_code = np.concatenate([self.kind_code, np.zeros(grow, np.int8)])
            self.importance = np.concatenate([self.importance, np.zeros(grow, np.float32)])
        self.step[i], self.kind_code[i], self.importance[i] = step, KINDS.index(kind), imp
        self.texts.append(text)
        self.by_agent.setdefault(agent, []).append(i)
        if kind != "reflection":
            self.since_reflection[agent] = self.since_reflection.get(agent, 0.0) + imp
        else:
            self.since_reflection[agent] = 0.0
        if record:
            if kind != "reflection":
                self._pending.setdefault(agent, []).append(i)
            self._row_of[i] = len(self._rows["seq"])
            r = self._rows
            for col, v in (
                ("step", step),
                ("agent_id", agent),
                ("seq", len(r["seq"])),
                ("kind", kind),
                ("text", text),
                ("importance", imp),
                ("ref_post_id", ref_post_id),
            ):
                r[col].append(v)
        return i

    def drain_rows(self) -> dict[str, list] | None:
        """The step's new ``memories`` rows (for the step's transaction)."""
        rows, self._rows = self._rows, _empty_rows()
        self._pending, self._row_of = {}, {}
        return rows if rows["step"] else None

    def pending_by_agent(self) -> dict[int, list[int]]:
        """Entries added since the last drain (not reflections), per agent: what an LLM rater scores."""
        return {a: list(ix) for a, ix in self._pending.items() if ix}

    def set_importance(self, entries: Sequence[int], values: Sequence[float]) -> None:
        """Replace heuristic importance by rated values (before the rows are written)."""
        for i, v in zip(entries, values):
            v = float(min(10.0, max(1.0, v)))
            agent_delta = v - float(self.importance[i])
            self.importance[i] = v
            if i in self._row_of:
                self._rows["importance"][self._row_of[i]] = v
            agent = self._rows["agent_id"][self._row_of[i]] if i in self._row_of else None
            if agent is not None and KINDS[int(self.kind_code[i])] != "reflection":
                self.since_reflection[agent] = self.since_reflection.get(agent, 0.0) + agent_delta

    def get(self, agent: int, default: Sequence[str] = ()) -> list[str]:
        """The agent's most relevant-by-default lines (recency and importance; surveys and interviews)."""
        return self.recall(
            agent, max(self.step[self.by_agent[agent][-1]], 0) if self.by_agent.get(agent) else 0
        ) or list(default)

    def restore(self, rows: Iterable[tuple[int, int, str, str, float]]) -> None:
        """Rebuild from ``memories`` rows ``(step, agent_id, kind, text, importance)`` in (step, seq) order."""
        for step, agent, kind, text, imp in rows:
            self.add(agent, step, kind, text, imp, record=False)

    # ---- reading ----------------------------------------------------------------------------
    def _embed_pending(self) -> None:
        n = len(self.texts)
        if self._n_embedded >= n:
            return
        texts = self.texts[self._n_embedded : n]
        # a post seen by many agents is one text: embed each distinct text once (and remember it)
        todo = sorted({t for t in texts if t not in self._text_vecs})
        if todo:
            for t, v in zip(todo, self.embedder.encode(todo).astype(np.float32)):
                if len(self._text_vecs) >= 100_000:
                    self._text_vecs.pop(next(iter(self._text_vecs)))
                self._text_vecs[t] = v
        new = np.stack([self._text_vecs[t] for t in texts])
        if self._vecs is None:
            self._vecs = np.zeros((max(self._CHUNK, n), new.shape[1]), np.float32)
        elif n > len(self._vecs):
            self._vecs = np.concatenate(
                [self._vecs, np.zeros((max(self._CHUNK, n - len(self._vecs)), new.shape[1]), np.float32)]
            )
        self._vecs[self._n_embedded : n] = new
        self._n_embedded = n

    def scores(self, agent: int, step: int, query: str, hours_per_step: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """Entry indices of ``agent`` and their retrieval scores (GA: each component min-max scaled)."""
        idx = np.asarray(self.by_agent.get(agent, ()), dtype=np.int64)
        if not len(idx):
            return idx, np.zeros(0)
        wr, wi, wv = self.cfg.weights
        hours = np.maximum(step - self.step[idx], 0) * hours_per_step
        recency = _minmax(self.cfg.recency_decay**hours)
        importance = _minmax(self.importance[idx].astype(np.float64))
        relevance = np.zeros(len(idx))
        if wv and query.strip():
            self._embed_pending()
            assert self._vecs is not None
            q = self._qvecs.get(query)
            if q is None:
                q = self.embedder.encode([clean_text(query, 4000).text]).astype(np.float32)[0]
            relevance = _minmax(self._vecs[idx] @ q)
        return idx, wr * recency + wi * importance + wv * relevance

    def prime_queries(self, queries: Sequence[str]) -> None:
        """Embed a step's queries (and pending entries) in one batch each; per-agent calls would pay the
        model's per-call overhead once per agent (MiniLM: most of the cost at batch size 1)."""
        self._embed_pending()
        todo = sorted({q for q in queries if q.strip()})
        vecs = self.embedder.encode([clean_text(q, 4000).text for q in todo]).astype(np.float32) if todo else []
        self._qvecs = dict(zip(todo, vecs))

    def recall(self, agent: int, step: int, query: str = "", hours_per_step: float = 1.0) -> list[str]:
        """The top entries for this prompt, within the token budget, oldest first (a readable story)."""
        idx, score = self.scores(agent, step, query, hours_per_step)
        if not len(idx):
            return []
        order = np.lexsort((-idx, -score))[: self.k]  # best first; ties: newer first
        chosen, budget = [], self.cfg.max_tokens
        for j in order:
            line = self.line(int(idx[j]))
            cost = approx_tokens(line) + 1
            if cost > budget:
                continue
            chosen.append(int(idx[j]))
            budget -= cost
        return [self.line(i) for i in sorted(chosen)]

    def line(self, i: int) -> str:
        kind = KINDS[int(self.kind_code[i])]
        return f"step {int(self.step[i])} [{kind}] {self.texts[i]}"

    def recent(self, agent: int, n: int) -> list[str]:
        return [self.texts[i] for i in self.by_agent.get(agent, ())[-n:]]

    # ---- reflection -------------------------------------------------------------------------
    def note_active(self, agents: Iterable[int]) -> None:
        for a in agents:
            self.active_steps[a] = self.active_steps.get(a, 0) + 1

    def due_for_reflection(self, agents: Iterable[int]) -> list[int]:
        """Agents whose accumulated importance or active-step count calls for a reflection now."""
        c = self.cfg
        out = []
        for a in sorted(set(agents)):
            if not self.by_agent.get(a):
                continue
            by_count = c.reflect_every is not None and self.active_steps.get(a, 0) % c.reflect_every == 0
            by_importance = c.reflect_threshold is not None and self.since_reflection.get(a, 0.0) >= c.reflect_threshold
            if by_count or by_importance:
                out.append(a)
        return out


def _minmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if not len(x):
        return x
    lo, hi = float(x.min()), float(x.max())
    return np.ones_like(x) if hi - lo < 1e-12 else (x - lo) / (hi - lo)


def _empty_rows() -> dict[str, list]:
    return {k: [] for k in ("step", "agent_id", "seq", "kind", "text", "importance", "ref_post_id")}


REFLECTION_SCHEMA_MAX = 200


def reflection_schema(n: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "insights": {
                "type": "array",
                "minItems": 1,
                "maxItems": n,
                "items": {"type": "string", "maxLength": REFLECTION_SCHEMA_MAX},
            }
        },
        "required": ["insights"],
        "additionalProperties": False,
    }


def importance_schema(n: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "ratings": {
                "type": "array",
                "minItems": n,
                "maxItems": n,
                "items": {"type": "integer", "minimum": 1, "maximum": 10},
            }
        },
        "required": ["ratings"],
        "additionalProperties": False,
    }


def parse_insights(data: Any, n: int) -> list[str]:
    """Validated insights from a reflection answer; raises ValueError on anything else."""
    if not isinstance(data, dict) or not isinstance(data.get("insights"), list):
        raise ValueError('expected {"insights": [text, ...]}')
    out = [clean_text(" ".join(s.split()), REFLECTION_SCHEMA_MAX).text for s in data["insights"] if isinstance(s, str)]
    out = [s for s in out if s]
    if not out:
        raise ValueError("no insight text")
    return out[:n]


def parse_ratings(data: Any, n: int) -> list[float]:
    if not isinstance(data, dict) or not isinstance(data.get("ratings"), list) or len(data["ratings"]) != n:
        raise ValueError(f'expected {{"ratings": [{n} integers 1..10]}}')
    vals = []
    for v in data["ratings"]:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 1 <= v <= 10:
            raise ValueError(f"rating {v!r} is not a number from 1 to 10")
        vals.append(float(v))
    return vals


def make_memory(
    cfg: MemoryConfig, size: int, embedder: Any | None = None, n_agents: int = 0
) -> WindowMemory | MemoryStream:
    return MemoryStream(cfg, size, embedder) if cfg.kind == "stream" else WindowMemory(size, n_agents)


def feed_query(texts: Sequence[str]) -> str:
    """What the agent is looking at now, as the retrieval query."""
    return " ".join(t for t in texts if t)[:2000]
