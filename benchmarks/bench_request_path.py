"""CPU per LLM call of the request path's pieces, best of N, for source trees side by side.

    python benchmarks/bench_request_path.py [--src before=/path/to/old/src] [--rounds 2] [--reps 5] [--calls 2000]

Why: on a shared machine (load 15-20 on 2 cores) the phase timers of ``bench_http.py --phases`` move by
10-20% from one run to the next, more than a few microseconds saved per call. Here each piece runs
``--calls`` times in a tight loop, ``--reps`` times, and the fastest repetition is kept (the one the
scheduler disturbed least); the trees alternate ``--rounds`` times, each in its own process with its
own ``PYTHONPATH``. The inputs are the bench_http workload's: the 'x' default actions' system prompt,
a persona and a feed of 5 posts, a schema with 5 posts and 3 users. Pieces (µs per call):

- ``schema``: ``action_prompts.action_schema`` of one observation;
- ``seed``: ``core.rng.component_seed31`` of (agent, step, attempt), agents cycling over 2,000;
- ``request``: an ``LLMRequest`` built from its messages;
- ``request + cache key``: the same plus ``cache_key`` (a fresh request each time);
- ``request body``: ``OpenAIBackend.encode_request``;
- ``response parse``: a chat.completion body read and checked (``parse_completion``);
- ``request + llm_calls strings``: a fresh request plus ``RenderedRequest`` (the call log's strings);
- ``answer JSON``: ``parse_json_lenient`` of the fake server's answer.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from tree_runs import alternate, machine_line, source_trees  # benchmarks/ is on sys.path when run as a script

HERE = Path(__file__).resolve()


def measure(calls: int, reps: int) -> dict[str, float]:
    """Child: best-of-``reps`` µs per call of each piece, with the tree on ``PYTHONPATH``."""
    from socium.agents import action_prompts as AP
    from socium.agents.call_log import RenderedRequest
    from socium.core import actions as A
    from socium.core.rng import component_seed31
    from socium.llm import openai_compat as OC
    from socium.llm.parsing import parse_json_lenient
    from socium.llm.types import ChatMessage, LLMRequest

    acts = list(A.DEFAULT_LLM_ACTIONS["x"])
    system = AP.system_prompt(acts, "x")
    feed = "\n".join(
        f"<<<{i} u{i * 7} @user{i}: Opening post number {i} about the city's new bike lanes and what they mean "
        f"for parking on Main Street.>>>"
        for i in range(5)
    )
    user = f"## You\nbio: likes cycling and city politics; interests: urbanism\n\n## Your feed (hour 09:00)\n{feed}"
    backend = OC.OpenAIBackend("http://127.0.0.1:9/v1", "fake-model")
    answer = {"content": '{"type": "like_post", "post_id": 3}'}
    body = json.dumps(
        {
            "choices": [{"message": answer, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 400, "completion_tokens": 12},
        }
    ).encode()
    loads = getattr(OC, "_loads", json.loads)  # an older tree parsed with json

    def schema(i: int) -> Any:
        return AP.action_schema(acts, [1, 2, 3, 4, 5], [7, 14, 21], 280, ids_for={"like_post": [1, 2, 4]})

    shared = schema(0)
    msgs = [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]

    def request(i: int) -> Any:
        return LLMRequest(
            request_id=f"s1-a{i}-0", messages=msgs, json_schema=shared, max_tokens=256, temperature=0.7, seed=i,
            metadata={"step": 1, "agent_id": i},
        )  # fmt: skip

    req = request(0)
    pieces = {
        "schema": schema,
        "seed": lambda i: component_seed31(1, 7, i % 2000, i // 2000, 0),
        "request": request,
        "request + cache key": lambda i: request(i).cache_key("fake-model"),
        "request body": lambda i: backend.encode_request(req),
        "response parse": lambda i: OC.parse_completion(loads(body)),
        "request + llm_calls strings": lambda i: RenderedRequest(request(i)),
        "answer JSON": lambda i: parse_json_lenient(answer["content"]),
    }
    out = {}
    for name, fn in pieces.items():
        best = float("inf")
        for rep in range(reps):
            c = time.process_time()
            for i in range(calls):
                fn(i + rep * calls)
            best = min(best, (time.process_time() - c) / calls)
        out[name] = 1e6 * best
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", action="append", default=[], metavar="NAME=PATH", help="another source tree")
    ap.add_argument("--rounds", type=int, default=2, help="runs per tree, the trees alternated")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per piece; the fastest is kept")
    ap.add_argument("--calls", type=int, default=2000, help="calls per repetition")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(measure(a.calls, a.reps)))
        return
    trees = source_trees(a.src, HERE)
    got, loads = alternate(trees, a.rounds, [str(HERE), "--child", "--calls", str(a.calls), "--reps", str(a.reps)])
    print(machine_line(loads))
    print(f"µs per call, best of {a.reps} x {a.calls:,} calls per run, the lowest of {a.rounds} runs per tree")
    print("| piece | " + " | ".join(n for n, _ in trees) + " |")
    print("|---|" + "---:|" * len(trees))
    for piece in got[trees[0][0]][0]:
        vals = [min(run[piece] for run in got[n]) for n, _ in trees]
        print(f"| {piece} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")


if __name__ == "__main__":
    main()
