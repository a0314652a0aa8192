"""Reference workloads shared by tests and benchmarks: a benchmark's config is what a test pins (e.g. the
prompts' digest), so it lives here, not in ``benchmarks/`` (tests never load a benchmark script)."""

from __future__ import annotations

from typing import Any

from socium.core import actions


def bench_http_config(
    n: int, steps: int, url: str, executor: dict[str, Any] | None, concurrency: int, activity: float = 1.0
) -> dict[str, Any]:
    """``benchmarks/bench_http.py``'s run: ``n`` LLM agents on a random-out graph, a chronological feed of 5,
    an OpenAI-compatible server at ``url``, up to 500 seed posts."""
    return {
        "name": "bench-http",
        "seed": 1,
        "steps": steps,
        "population": {"n_agents": n, "activity": "uniform", "mean_activity": activity},
        "graph": {"kind": "random_out", "params": {"out_degree": min(20, n - 1)}},
        "recsys": {"kind": "chronological", "k": 5},
        "policy": {"kind": "llm"},
        "llm": {
            "backend": "openai",
            "base_urls": [url],
            "model": "fake-model",
            "max_concurrency": concurrency,
            "retries": 0,
        },
        "executor": executor or {"kind": "inprocess"},
        "seed_posts": [
            {
                "author": i,
                "content": f"Opening post number {i} about the city's new bike lanes and "
                "what they mean for parking on Main Street.",
            }
            for i in range(min(n, 500))
        ],
    }


#: OASIS's 13 Reddit actions (the OASIS-parity workload of issue 41), in the order the prompt lists them.
OASIS_REDDIT_ACTIONS: tuple[str, ...] = tuple(
    c.type_name
    for c in (
        actions.CreatePost,
        actions.LikePost,
        actions.DislikePost,
        actions.CreateComment,
        actions.LikeComment,
        actions.DislikeComment,
        actions.SearchPosts,
        actions.SearchUser,
        actions.Trend,
        actions.Refresh,
        actions.Follow,
        actions.Mute,
        actions.DoNothing,
    )
)


def oasis_reddit(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` on the reddit preset with OASIS's 13 Reddit actions and 5 comments per post (the
    OASIS-parity prompts of ``benchmarks/bench_http.py --reddit`` and the prompt digest test)."""
    return {
        **cfg,
        "platform": {"preset": "reddit"},
        "llm_agents": {"actions": list(OASIS_REDDIT_ACTIONS), "comments_per_post": 5},
    }
