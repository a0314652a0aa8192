"""Which runs to set side by side, and how two runs' prompts for one agent and step differ.

Kept apart from the pages (no Solara here) so the comparison logic is tested without the UI extra.
"""

from __future__ import annotations

import difflib

from socium.explore.source import RunView
from socium.trace.queries import explore as q

MOST = 4
"""Runs shown side by side at most (columns narrower than this are unreadable)."""


def peers(labels: list[str], ref: str, most: int = MOST) -> list[str]:
    """``ref`` and the runs to set beside it: those whose label differs only in its first folder (a
    compare experiment's ``local/runs/X/model`` beside ``omniscient/runs/X/model``), else the others."""
    rest = ref.partition("/")[2]
    same = [label for label in labels if label != ref and label.partition("/")[2] == rest]
    return [ref, *(same or [label for label in labels if label != ref])][:most]


def prompt_text(calls: list[q.CallView]) -> list[str]:
    """The prompt messages of an activation's calls as lines, each message headed by its role."""
    lines: list[str] = []
    for c in calls:
        for m in c.messages:
            lines.append(f"[call {c.call_id} · {m.get('role', '?')}]")
            lines.extend(str(m.get("content", "")).splitlines())
    return lines


def prompt_diff(a: RunView, b: RunView, agent_id: int, step: int) -> str:
    """A unified diff of the prompts ``a`` and ``b`` sent for the agent at ``step`` ('' when equal)."""
    left, right = prompt_text(a(q.calls_at, agent_id, step)), prompt_text(b(q.calls_at, agent_id, step))
    return "\n".join(difflib.unified_diff(left, right, a.label, b.label, lineterm="", n=1))
