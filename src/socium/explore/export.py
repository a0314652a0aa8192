"""A view's rows as a file, CSV (the writer ``socium query --out`` uses) or Parquet, streamed.

Why through the page's own query functions: the file then holds exactly the rows the view pages
through (same filters, same order), not a second SQL that could drift from it. Nested values (a
call's messages, a post's labels) become JSON text in a cell. Agent text stays data: a spreadsheet
may read a cell starting with ``=`` as a formula, so open CSV files as text, or use Parquet.

Why streamed: a view may hold 10^6 rows. Built whole (rows, then an Arrow table, then its Python
rows, then one CSV string, then its bytes, then Solara's download widget sending them over the
page's WebSocket) a 142 MB CSV took the server from 196 MB to 1.6 GB. Here rows come in batches of
:data:`BATCH` (the query functions' own ``limit``/``offset``), each written and dropped: a CSV goes
out over HTTP as it is written, a Parquet file is written batch by batch to a temporary file that is
sent and deleted. The browser gets each file from ``/_socium/export/TOKEN/NAME``: the page registers
what the link exports (:func:`register`) under an unguessable token, and :class:`ExportRoute` serves it.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import secrets
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from socium.explore.guard import ASGIApp, Receive, Scope, Send
from socium.trace.query_output import format_rows

MAX_ROWS = 1_000_000
"""Rows one download holds at most (a 10^5-agent run's timeline is 1.5 * 10^5)."""
BATCH = 5_000
"""Rows fetched, converted and written at a time: what an export holds in memory at once."""
REGISTERED = 2_000
"""Exports remembered (the newest); an older link answers 404 and the page's own link is current."""
PREFIX = "/_socium/export/"
FORMATS = ("csv", "parquet")

Rows = list[dict[str, Any]]
"""Rows of an export: one dict per row, its keys the columns."""
Batches = Iterable[Rows]
"""An export's rows, a batch at a time."""


def _cell(v: Any) -> Any:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (list, tuple, dict)) else v


def fields_of(cls: type) -> list[str]:
    """A view dataclass's columns, in declaration order."""
    return [f.name for f in dataclasses.fields(cls)]


def records(items: Sequence[Any], cls: type, **fixed: Any) -> Rows:
    """Dataclass rows as dicts, after the ``fixed`` columns that say where they were shown (the step of an
    agent's activation, the run of a side-by-side column), which the dataclass does not hold."""
    names = fields_of(cls)
    return [{**fixed, **{k: getattr(i, k) for k in names}} for i in items]


def tuples(items: Sequence[Sequence[Any]], columns: Sequence[str], **fixed: Any) -> Rows:
    """Tuple rows (what a query returns) as dicts under ``columns``, after the ``fixed`` columns."""
    return [{**fixed, **dict(zip(columns, r, strict=True))} for r in items]


def paged(page: Callable[[int, int], Sequence[Any]], convert: Callable[[Sequence[Any]], Rows]) -> Iterator[Rows]:
    """Batches of a paged query: ``page(limit, offset)`` until it runs dry or :data:`MAX_ROWS` are out."""
    offset = 0
    while offset < MAX_ROWS:
        limit = min(BATCH, MAX_ROWS - offset)
        items = page(limit, offset)
        if items:
            yield convert(items)
        if len(items) < limit:
            return
        offset += len(items)


def capped(batches: Batches) -> Iterator[Rows]:
    """At most :data:`MAX_ROWS` rows of ``batches``."""
    left = MAX_ROWS
    for b in batches:
        if left <= 0:
            return
        yield b[:left]
        left -= len(b)


def flatten(batches: Batches) -> Rows:
    """All rows of ``batches`` in one list (tests, small views)."""
    return [r for b in batches for r in b]


def csv_chunks(batches: Batches, columns: Sequence[str]) -> Iterator[bytes]:
    """The CSV file of ``batches`` (header first), one chunk per batch, in ``format_rows``' dialect."""
    cols = list(columns)
    yield format_rows(cols, [], "csv").encode("utf-8")
    for rows in capped(batches):
        text = format_rows(cols, [tuple(_cell(r.get(k)) for k in cols) for r in rows], "csv")
        yield text.split("\n", 1)[1].encode("utf-8")  # the rows, without the header again


def _arrow_batch(rows: Rows, cols: list[str], schema: pa.Schema | None) -> pa.Table:
    data = {k: [_cell(r.get(k)) for r in rows] for k in cols}
    if schema is None:
        t = pa.table(data)
        return t.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_null(f.type) else f for f in t.schema]))
    arrays = []
    for f in schema:
        try:
            arrays.append(pa.array(data[f.name], f.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            if not pa.types.is_string(f.type):
                raise
            arrays.append(pa.array([None if v is None else str(v) for v in data[f.name]], pa.string()))
    return pa.Table.from_arrays(arrays, schema=schema)


def write_parquet(batches: Batches, columns: Sequence[str], out: str | IO[bytes]) -> int:
    """Write ``batches`` as one Parquet file, a row group per batch (types from the first batch; a column
    empty there is text); returns the rows written. No rows still give the columns, as text."""
    cols = list(columns)
    writer: pq.ParquetWriter | None = None
    n = 0
    try:
        for rows in capped(batches):
            if not rows:
                continue
            t = _arrow_batch(rows, cols, None if writer is None else writer.schema)
            if writer is None:
                writer = pq.ParquetWriter(out, t.schema)
            writer.write_table(t)
            n += t.num_rows
        if writer is None:
            pq.write_table(pa.table({k: pa.array([], pa.string()) for k in cols}), out)
    finally:
        if writer is not None:
            writer.close()
    return n


def file_bytes(items: Sequence[Any], cls: type, fmt: str) -> bytes:
    """Dataclass rows (``PostView``, ``CallView``...) as a ``csv`` or ``parquet`` file's bytes (small views, tests)."""
    return rows_bytes([records(items, cls)], fields_of(cls), fmt)


def rows_bytes(batches: Batches, columns: Sequence[str], fmt: str) -> bytes:
    """``batches`` as a ``csv`` or ``parquet`` file's bytes, through the same writers the download uses."""
    if fmt == "parquet":
        buf = io.BytesIO()
        write_parquet(batches, columns, buf)
        return buf.getvalue()
    return b"".join(csv_chunks(batches, columns))


@dataclasses.dataclass(frozen=True)
class Registered:
    """What one export link serves: its file name (without extension), its batches, its columns."""

    name: str
    fetch: Callable[[], Batches]
    columns: list[str]


_registry: OrderedDict[str, Registered] = OrderedDict()
_registry_lock = threading.Lock()


def register(name: str, fetch: Callable[[], Batches], columns: Sequence[str]) -> str:
    """Remember an export under a fresh unguessable token (the newest :data:`REGISTERED` are kept)."""
    token = secrets.token_urlsafe(16)
    with _registry_lock:
        _registry[token] = Registered(name, fetch, list(columns))
        while len(_registry) > REGISTERED:
            _registry.popitem(last=False)
    return token


def link(token: str, name: str, fmt: str) -> str:
    return f"{PREFIX}{token}/{name}.{fmt}"


def _disposition(filename: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in filename)
    return f'attachment; filename="{safe}"'


class ExportRoute:
    """ASGI middleware: ``/_socium/export/TOKEN/NAME.csv|parquet`` streams that registered export; the rest
    goes to ``app``. The queries run in Starlette's thread pool, as the pages' own do in theirs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not path.startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        from anyio import to_thread
        from starlette.background import BackgroundTask
        from starlette.responses import FileResponse, PlainTextResponse, StreamingResponse

        token, _, filename = path[len(PREFIX) :].partition("/")
        fmt = filename.rsplit(".", 1)[-1]
        with _registry_lock:
            got = _registry.get(token)
        response: Any
        if got is None or fmt not in FORMATS:
            response = PlainTextResponse("no such export (reload the page for a fresh link)\n", status_code=404)
        elif fmt == "csv":
            response = StreamingResponse(
                csv_chunks(got.fetch(), got.columns),
                media_type="text/csv; charset=utf-8",
                headers={"content-disposition": _disposition(f"{got.name}.csv")},
            )
        else:
            fd, tmp = tempfile.mkstemp(prefix="socium-export-", suffix=".parquet")
            os.close(fd)
            try:
                await to_thread.run_sync(lambda: write_parquet(got.fetch(), got.columns, tmp))
            except BaseException:
                os.unlink(tmp)
                raise
            response = FileResponse(
                tmp,
                media_type="application/vnd.apache.parquet",
                filename=f"{got.name}.parquet",
                background=BackgroundTask(os.unlink, tmp),
            )
        await response(scope, receive, send)


def export_rows(name: str, fetch: Callable[[], Batches], columns: Sequence[str], label: str = "export") -> None:
    """CSV and Parquet download links for rows fetched only when a link is followed (a page shows them on
    every render; the file costs its queries only when someone asks for it)."""
    import solara
    from solara import v as vue

    token = register(name, fetch, columns)
    with solara.Row(style="gap: 0.5em; align-items: center"):
        for fmt in FORMATS:
            vue.Html(
                tag="a",
                class_="export-link",
                attributes={"href": link(token, name, fmt), "download": f"{name}.{fmt}"},
                style_="color: #1d4ed8; text-decoration: underline; cursor: pointer",
                children=[f"{label} {fmt}"],
            )
