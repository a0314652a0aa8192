"""Is a downloaded body the kind of file it should be? Checked before any hash is pinned to it.

Why: a file whose sha256 is recorded at its first fetch (OASIS's per-topic CSVs, SNAP's gzip) is only as
good as that first body. A host answering 200 with an HTML error or login page had that page pinned and
"verified" on every later fetch, and the propagation experiment then reported real profiles. So a body
must look like its file's type (by name: ``.csv`` with the columns socium reads, ``.json``/``.jsonl``,
``.gz`` whose content may be pinned) and never like an HTML page; the checks read the head of the file
(all of a gzip whose content is pinned) and raise :class:`BodyError` with what was wrong.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import hashlib
import zlib
from pathlib import Path

HEAD = 1 << 16


class BodyError(ValueError):
    """The body is not the expected kind of file (the message says what it looks like instead)."""


def _looks_like_html(head: bytes) -> bool:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return text.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml", b"<!--"))


def _text_head(head: bytes, name: str) -> str:
    try:  # incremental: a multi-byte character cut by the head's end is not an error
        return codecs.getincrementaldecoder("utf-8-sig")().decode(head, final=False)
    except UnicodeDecodeError as exc:
        raise BodyError(f"not UTF-8 text, as {name} should be (byte {exc.start})") from exc


def _check_gzip(path: Path, content_sha256: str | None) -> None:
    h = hashlib.sha256()
    try:
        with gzip.open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except (OSError, EOFError, zlib.error) as exc:
        raise BodyError(f"not a readable gzip file ({exc})") from exc
    if content_sha256 is not None and h.hexdigest() != content_sha256:
        raise BodyError(f"decompressed content has sha256 {h.hexdigest()}, expected {content_sha256}")


def check_body(path: Path, name: str, *, columns: tuple[str, ...] = (), content_sha256: str | None = None) -> None:
    """Raise :class:`BodyError` unless the file at ``path`` is what a file called ``name`` should be."""
    with path.open("rb") as fh:
        head = fh.read(HEAD)
    base = Path(name).name
    if not head:
        raise BodyError("empty body")
    if _looks_like_html(head) and not base.endswith((".html", ".htm", ".xml", ".svg")):
        raise BodyError(f"an HTML page, not {base}")
    if base.endswith(".gz"):
        if not head.startswith(b"\x1f\x8b"):
            raise BodyError(f"not a gzip file, as {base} should be")
        _check_gzip(path, content_sha256)
    elif base.endswith(".csv"):
        text = _text_head(head, base)
        header = next(csv.reader(text.splitlines()[:1]), [])
        missing = [c for c in columns if c not in header]
        if missing:
            raise BodyError(f"a CSV without the column(s) {', '.join(missing)} that {base} has")
    elif base.endswith((".json", ".jsonl")):
        text = _text_head(head, base).lstrip()
        if not text.startswith(("{", "[")):
            raise BodyError(f"not JSON, as {base} should be")
