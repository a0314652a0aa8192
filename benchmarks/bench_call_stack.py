"""Client CPU per LLM call through the backend stack, against the fake server, for source trees side by side.

    python benchmarks/bench_call_stack.py [--src before=/path/to/old/src] [--rounds 3] [--calls 3000]
        [--inflight 64]

Why: ``bench_http.py --phases`` can only give the LLM phase's "rest" (wrappers, HTTP, event loop) as what
is left after its timed parts, with the whole simulation's noise in it; here that rest is measured alone.
Each stack sends ``--calls`` prebuilt requests (the bench_http workload's: the 'x' default actions' system
prompt, a persona and a feed of 5 posts, an action schema) with ``--inflight`` tasks each awaiting one
``generate([request])`` at a time, as ``LLMPolicy.ask`` does, on the loop ``new_event_loop`` gives (uvloop
where installed), against ``python -m socium.testing.fault_server`` (this tree's, in its own process).
Stacks (``process_time`` of the client per call, µs; the stacks take turns in 3 slices of ``--calls``
requests each, and the first 200 calls of a slice are not timed; "minus bare" is a run's stack less the
same run's bare client, the wrappers' own cost):

- ``bare``: ``OpenAIBackend.generate`` alone;
- ``bench_http stack``: ``build_backend`` of bench_http's ``llm`` section (retries 0; usage, cache and
  call log, breaker, concurrency limit), with the policy's recording cache;
- ``default stack``: the same with the default 3 retries (adds the retry layer).

Each tree runs in its own process with its own ``PYTHONPATH``; the trees alternate ``--rounds`` times and
the median per tree is printed, with the 1-minute load during the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tree_runs import alternate, machine_line, source_trees  # benchmarks/ is on sys.path when run as a script

HERE = Path(__file__).resolve()

#: Slices per run: each stack sends ``--calls`` requests SLICES times, the stacks taking turns.
SLICES = 3


def _start_server() -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "socium.testing.fault_server", "--port", "0"]
    env = {**os.environ, "PYTHONPATH": str(HERE.parent.parent / "src")}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, line.split()[1]


def measure(url: str, calls: int, inflight: int) -> dict[str, float]:
    """Child: µs of client CPU per call for each stack, with the tree on ``PYTHONPATH``."""
    import asyncio

    from socium.agents import action_prompts as AP
    from socium.agents.call_recording import RecordingCache
    from socium.core import actions as A
    from socium.llm.base import new_event_loop
    from socium.llm.factory import build_backend
    from socium.llm.openai_compat import OpenAIBackend
    from socium.llm.types import ChatMessage, LLMRequest

    acts = list(A.DEFAULT_LLM_ACTIONS["x"])
    system = AP.system_prompt(acts, "x")
    feed = "\n".join(
        f"<<<{i} u{i * 7} @user{i}: Opening post number {i} about the city's new bike lanes and what they mean "
        f"for parking on Main Street.>>>"
        for i in range(5)
    )
    user = f"## You\nbio: likes cycling and city politics; interests: urbanism\n\n## Your feed (hour 09:00)\n{feed}"
    schema = AP.answer_schema(
        AP.action_schema(acts, [1, 2, 3, 4, 5], [7, 14, 21], 280, ids_for={"like_post": [1, 2, 4]}), 1, False, 280
    )
    msgs = [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]
    warm = 200

    def requests(tag: str, first_seed: int) -> list[Any]:  # distinct seeds: no answer comes from the cache
        return [
            LLMRequest(
                request_id=f"{tag}-{i}",
                messages=msgs,
                json_schema=schema,
                max_tokens=256,
                temperature=0.7,
                seed=first_seed + i,
                metadata={"step": 1, "agent_id": i},
            )  # fmt: skip
            for i in range(calls + warm)
        ]

    llm = {"backend": "openai", "base_urls": [url], "model": "fake-model", "max_concurrency": inflight}
    logs = [RecordingCache(), RecordingCache()]  # the policy's call log, drained after each slice (a step)
    stacks = {
        "bare": lambda: OpenAIBackend(url, "fake-model"),
        "bench_http stack": lambda: build_backend({**llm, "retries": 0}, cache=logs[0], typed_budget=True),
        "default stack": lambda: build_backend(llm, cache=logs[1], typed_budget=True),
    }

    async def drive(backend: Any, reqs: list[Any]) -> float:
        queue = iter(reqs)
        cpu = [0.0]
        done = [0]

        async def worker() -> None:
            for r in queue:
                res = (await backend.generate([r]))[0]
                assert res.ok, res.error
                done[0] += 1
                if done[0] == warm:
                    cpu[0] = time.process_time()

        await asyncio.gather(*(worker() for _ in range(inflight)))
        return time.process_time() - cpu[0]

    spent = dict.fromkeys(stacks, 0.0)
    loop = new_event_loop()
    try:  # the stacks alternate in slices, so that a change of the machine's load falls on all of them
        built = {name: make() for name, make in stacks.items()}
        for part in range(SLICES):
            for name, backend in built.items():
                spent[name] += loop.run_until_complete(
                    drive(backend, requests(f"{name}-{part}", part * (calls + warm)))
                )
                for log in logs:
                    log.drain()
        for backend in built.values():
            backend.close()
    finally:
        loop.close()
    out = {name: 1e6 * s / (calls * SLICES) for name, s in spent.items()}
    for name in list(out)[1:]:
        out[f"{name} minus bare"] = out[name] - out["bare"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", action="append", default=[], metavar="NAME=PATH", help="another source tree")
    ap.add_argument("--rounds", type=int, default=3, help="runs per tree, the trees alternated")
    ap.add_argument("--calls", type=int, default=1000, help="timed calls per stack and slice (3 slices a run)")
    ap.add_argument("--inflight", type=int, default=64, help="calls in flight (and llm.max_concurrency)")
    ap.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(measure(a.child, a.calls, a.inflight)))
        return
    trees = source_trees(a.src, HERE)
    proc, url = _start_server()
    try:
        child = [str(HERE), "--child", url, "--calls", str(a.calls), "--inflight", str(a.inflight)]
        got, loads = alternate(trees, a.rounds, child)
    finally:
        proc.kill()
    print(machine_line(loads))
    print(f"client CPU µs per call, {SLICES} x {a.calls:,} calls per stack and run, {a.inflight} in flight, "
          f"median of {a.rounds} runs per tree (each run's value in brackets)")  # fmt: skip
    print("| stack | " + " | ".join(n for n, _ in trees) + " |")
    print("|---|" + "---:|" * len(trees))
    for stack in got[trees[0][0]][0]:
        cells = []
        for n, _ in trees:
            runs = [run[stack] for run in got[n]]
            cells.append(f"{statistics.median(runs):.0f} ({', '.join(f'{v:.0f}' for v in runs)})")
        print(f"| {stack} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
