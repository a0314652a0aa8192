"""The ``socium`` typer app, its consoles and the output helpers its commands share (errors, result tables).

Commands are registered by the modules named for what they do (run, lookup, experiments, episodes, population);
:mod:`socium.cli.main` imports them in the order ``socium --help`` lists them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

import socium
from socium.core.console_text import SafeConsole, neutralise, plain
from socium.errors import SociumError

T = TypeVar("T")


def _as_flags(params: list[Any]) -> list[Any]:
    """Boolean options appear in --help as flags (``--resume``), not as options taking a ``<bool>``;
    ``--set`` shows what it takes (``<key.path=value>``), not the Python type ``<list[str]>``."""
    for p in params:
        if getattr(p, "is_flag", False):
            p.metavar = ""
        elif "--set" in getattr(p, "opts", ()):
            p.metavar = "<key.path=value>"
    return params


class _FlagCommand(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _as_flags(super().get_params(ctx))


class _Group(TyperGroup):
    """Every command of the app (whoever added it) renders its flags as flags."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for cmd in self.commands.values():
            if type(cmd) is TyperCommand:
                cmd.__class__ = _FlagCommand

    def get_params(self, ctx: Any) -> list[Any]:
        return _as_flags(super().get_params(ctx))


app = typer.Typer(
    add_completion=False, no_args_is_help=True, cls=_Group, help="socium: simulate societies of LLM agents."
)
# Everything printed may hold data (post text, names, paths): no markup, control characters neutralised.
console = SafeConsole()
err_console = SafeConsole(stderr=True, soft_wrap=True)  # one error, one line


def _duckdb_error() -> type[Exception]:
    import duckdb

    return duckdb.Error


def _version(value: bool) -> None:
    if value:
        console.print(f"socium {socium.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """socium: simulate societies of LLM agents."""


def _fail(exc: Exception) -> None:
    err_console.print(plain("error:", "bold red"), plain(exc))
    raise typer.Exit(2)


def _read_run(read: Callable[[Path], T], run_dir: Path) -> T:
    """``read(run_dir)``, with a clean one-line error (exit 2) for our errors and for a trace DuckDB cannot open."""
    try:
        return read(run_dir)
    except SociumError as exc:
        _fail(exc)
    except _duckdb_error() as exc:
        _fail(SociumError(f"{run_dir}: unreadable trace: {exc}"))
    raise AssertionError("unreachable: _fail raises")


def _result_table(cols: list[str], cells: list[list[str]], title: str | None = None, wider: str = "") -> Table:
    """A table of results that never splits a number: where every column fits at the width of its name
    and of its longest word (24 characters at most), those are its minimum widths (rich cut 'parent_id'
    to 'parent_…' and '[0.280, 0.803]' to '[0.2…'); a wider table keeps rich's layout, whose ellipsis at
    least shows a cut, where folding would print 0.667 as '0.66' over '7', and its caption says where
    the whole table is (``wider``). Names fold rather than cut."""

    def longest_word(i: int) -> int:
        return max((len(w) for row in cells for w in row[i].split()), default=0)

    need = [max(min(len(c), 24), min(longest_word(i), 24)) for i, c in enumerate(cols)]
    fits = sum(n + 3 for n in need) + 1 <= console.width
    caption = (
        None if fits else f"(cut to {console.width} columns where a value shows …; {wider or 'widen the terminal'})"
    )
    table = Table(title=title, caption=caption)
    for c, n in zip(cols, need):
        table.add_column(Text(neutralise(c), overflow="fold"), min_width=n if fits else None)
    for row in cells:
        table.add_row(*row)
    return table


def _print_report_tables(rep: Any) -> None:
    for b in rep.banners:
        console.print(plain(b, "bold red"))
    for t in rep.tables:
        if t.summary:
            cells = [list(r) for r in t.rows]
            console.print(_result_table(list(t.columns), cells, t.title, wider=f"the whole table is in {rep.html}"))
