"""Trace-level invariants any LLM run must satisfy, checked from its trace alone.

Why: "who saw what" claims (cascades, exposure-response curves, perspective comparisons) rest on the
``exposures`` table; it is only evidence if every row is a post that was really put in front of the
agent. ``llm_calls`` keeps each prompt verbatim, so the claim can be checked after the fact.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from socium.platform.text import quote_untrusted
from socium.trace.queries.calls import step_prompts
from socium.trace.queries.exposures import shown as shown_exposures
from socium.trace.queries.posts import post_texts
from socium.trace.queries.runs import open_run


def exposures_not_in_prompts(run_dir: str | Path, limit: int = 20) -> list[str]:
    """Exposure rows of LLM agents whose post does not appear in any prompt of that agent at that step.

    A post "appears" when the prompt holds its ``id=N`` marker and (for posts with text) the start of
    its quoted text. A call covers the agent it was made for and, for narrator / group calls, every
    member listed in its metadata. Returns up to ``limit`` descriptions; empty means the invariant holds.
    """
    with open_run(run_dir) as con:
        calls = step_prompts(con)
        texts = post_texts(con)
        rows = shown_exposures(con)
    prompts: dict[tuple[int, int], list[str]] = {}
    for step, agent, prompt, md in calls:
        meta = json.loads(md) if md else {}
        if meta.get("survey") or meta.get("interview"):
            continue
        text = "\n".join(m["content"] for m in json.loads(prompt))
        for a in meta.get("group") or [agent]:
            prompts.setdefault((step, a), []).append(text)
    bad: list[str] = []
    for step, agent, pid, source in rows:
        shown = prompts.get((step, agent))
        if shown is None:
            continue  # not an LLM activation (e.g. a rule-based or manual agent)
        body = quote_untrusted(texts.get(pid) or "", 40)[:30]
        marker = re.compile(rf"<<<(?:shared |comment )?{pid} u\d")  # an item's header (prompts.render_post)
        if not any(marker.search(t) for t in shown) or (body and not any(body in t for t in shown)):
            bad.append(f"step {step} agent {agent}: post {pid} ({source}) is an exposure but not in its prompt")
            if len(bad) >= limit:
                break
    return bad
