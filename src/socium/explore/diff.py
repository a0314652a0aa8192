"""Which runs to set side by side, and how two runs' prompts for one agent and step differ.

Kept apart from the pages (no Solara here) so the comparison logic is tested without the UI extra.
"""

from __future__ import annotations

import difflib

from socium.explore.source import RunView
from socium.trace.queries import explore as q

MOST = 4
"""Runs shown side by side at most (columns narrower than this are unreadable)."""


def arm_level(labels: list[str], ref: str) -> int | None:
    """The folder level of ``ref``'s label at which its experiment's arms differ, or None.

    Why: an experiment folder nests runs by arm and item, and only runs that differ from ``ref`` in the
    arm alone are like with like (the same cascade, item or seed under another arm). socium's layouts
    put the arm first (``local/runs/<cascade>/model`` beside ``omniscient/...``; a design's
    ``<cell>/seed<k>``) or last (a propagation study's ``runs/<cascade>/model`` beside
    ``runs/<cascade>/null``, where ``runs/<other cascade>/model`` differs in one folder too, but in the
    item). So: the first folder if some run differs from ``ref`` there alone, else the last, else the
    level with the fewest distinct values (there are fewer arms than items)."""
    parts = ref.split("/")
    levels: set[int] = set()
    for label in labels:
        other = label.split("/")
        if label == ref or len(other) != len(parts):
            continue
        diff = [k for k, (a, b) in enumerate(zip(parts, other, strict=True)) if a != b]
        if len(diff) == 1:
            levels.add(diff[0])
    for k in (0, len(parts) - 1):
        if k in levels:
            return k
    if not levels:
        return None
    width = {k: len({label.split("/")[k] for label in labels if label.count("/") == ref.count("/")}) for k in levels}
    return min(levels, key=lambda k: (width[k], k))


def peers(labels: list[str], ref: str, most: int = MOST) -> list[str]:
    """``ref`` and the runs that differ from it in its arm alone (:func:`arm_level`), in label order;
    none when no run does (the page then says nothing is paired, and lets the user pick)."""
    level = arm_level(labels, ref)
    if level is None:
        return [ref]
    parts = ref.split("/")
    same = [
        label
        for label in labels
        if label != ref
        and label.count("/") == ref.count("/")
        and all(a == b or k == level for k, (a, b) in enumerate(zip(parts, label.split("/"), strict=True)))
    ]
    return [ref, *same][:most]


def pairing(labels: list[str], ref: str) -> str:
    """What the side-by-side columns share and what differs, in words."""
    level = arm_level(labels, ref)
    if level is None:
        return "no other run here differs from this one in one folder only: pick runs to compare (they are not paired)"
    parts = ref.split("/")
    kept = "/".join("*" if k == level else p for k, p in enumerate(parts))
    return f"paired: the runs {kept}, which differ only in folder level {level + 1} (the arm: {parts[level]} here)"


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
