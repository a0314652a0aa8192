"""An experiment's own report and results, served beside its runs: ``/_socium/files/<path>``.

Why: an experiment folder holds more than runs (``results.json``, ``report/`` with its HTML and
figures), and an emulator-only study (a forecast or counterfactual) holds no run at all; the explorer
links to those files rather than showing absolute paths. Only files the experiment wrote are served:
``results.json`` (and a forecast's ``cascades.parquet`` and ``curves.parquet``) and the files directly in
``report/``, regular files with a known suffix, resolved
inside the folder (no ``..``, no symlink out). HTML is sent with a ``sandbox`` Content-Security-Policy:
a report quotes agent text, so its page runs no script and has no origin of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from socium.explore.guard import ASGIApp, Receive, Scope, Send

PREFIX = "/_socium/files/"
SUFFIXES = {".html": "text/html", ".png": "image/png", ".svg": "image/svg+xml", ".json": "application/json",
            ".csv": "text/csv", ".md": "text/markdown", ".txt": "text/plain", ".pdf": "application/pdf",
            ".parquet": "application/vnd.apache.parquet"}  # fmt: skip
RESULTS = ("results.json", "cascades.parquet", "curves.parquet")
"""An experiment's own result files at its top (``socium forecast`` writes the Parquet tables too)."""
FIGURES = (".png", ".svg")
"""Suffixes of the report's files the experiment page shows as pictures."""
MOST = 200
"""Files listed at most (a report folder holds tens)."""


def _regular(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def experiment_files(root: Path) -> list[str]:
    """The experiment's own files under ``root`` (relative paths): :data:`RESULTS` and ``report/*``."""
    found = [p for p in (root / name for name in RESULTS) if _regular(p)]
    report = root / "report"
    if report.is_dir() and not report.is_symlink():
        found += sorted(p for p in report.iterdir() if p.suffix.lower() in SUFFIXES and _regular(p))
    base = root.resolve()
    out = []
    for p in found[:MOST]:
        real = p.resolve()
        if real.is_relative_to(base) and p.suffix.lower() in SUFFIXES:
            out.append(p.relative_to(root).as_posix())
    return out


def file_link(rel: str) -> str:
    return PREFIX + quote(rel)


def shown_path(value: object, root: Path) -> object:
    """A config value as the experiment page shows it: an absolute path inside ``root`` relative to it, any
    other absolute path as its last two parts (``…/inputs/x.csv``), so no page shows where a folder lives."""
    if not isinstance(value, str) or not value.startswith("/"):
        return value
    path = Path(value)
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return "…/" + "/".join(path.parts[-2:])


class FolderFiles:
    """ASGI middleware: ``/_socium/files/<rel>`` serves ``rel`` if it is one of :func:`experiment_files`
    of the folder ``root_of()`` names (else 404); the rest goes to ``app``."""

    def __init__(self, app: ASGIApp, root_of: Callable[[], Path | None]) -> None:
        self.app = app
        self.root_of = root_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not path.startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        from starlette.responses import FileResponse, PlainTextResponse

        root = self.root_of()
        rel = unquote(path[len(PREFIX) :])
        response: Any
        if root is None or rel not in experiment_files(root):
            response = PlainTextResponse("no such file of this experiment\n", status_code=404)
        else:
            target = root / rel
            headers = {"content-security-policy": "sandbox", "x-content-type-options": "nosniff"}
            response = FileResponse(target, media_type=SUFFIXES[target.suffix.lower()], headers=headers)
        await response(scope, receive, send)
