"""foryou vs x: feed time per step at 10^4 and 10^5 active users, interleaved, with memory per agent.

Run: ``python benchmarks/bench_foryou.py`` (~10 minutes on 2 busy cores; ``--quick`` for a smoke run).
Same world as ``bench_recsys.py`` (``--posts`` posts over the 48-step window, 100 synthetic topics,
20 followees per user, hashing embeddings): both recommenders share the embedded posts, interest
vectors and IVF index (one-time costs, excluded), and each has served one warm-up step (so foryou's
already-seen filter has history). ``x`` is the default ``recsys.kind: x`` (3 in-network + 2
out-of-network slots, recency half-life 12 steps, ``ann: auto``, so IVF with nprobe 8), called
exactly as the simulator calls it. Repetitions alternate x, foryou, x, foryou... so load changes on
the shared machine hit both alike; each repetition's ratio is foryou's time over the x time just
before it, and the table gives min / median / max of those ratios over the repetitions (n is small:
a range, no t interval).

Memory: the process's peak resident set (``VmHWM``, reset before each size where Linux allows) per
agent, which holds the world (posts, texts, follows), the shared vectors and both recommenders;
foryou's own state between steps (served keys, impressions, engagement counts) per agent; and the
peak Python/numpy allocation during one feeds call (tracemalloc) per ranked user, x beside foryou,
over up to three of foryou's 4,096-user chunks (it ranks two at once on two threads).

CPU: each repetition also records the process's CPU time (all threads): foryou ranks its chunks on two
threads, as x's IVF search does its clusters, so on a quiet machine wall time is below CPU time, and
on a loaded one (no idle core) the wall-time ratio tends to the CPU-time ratio.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
from bench_recsys import build_world

from socium.recsys.embeddings import HashingEmbedder
from socium.recsys.foryou import ForYouRecommender
from socium.recsys.foryou.recommender import CHUNK_USERS
from socium.recsys.x import XRecommender


def load() -> str:
    return open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"


def machine() -> str:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs visible"


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            line = next((ln for ln in fh if ln.startswith(field + ":")), None)
        return int(line.split()[1]) if line else None
    except OSError:
        return None


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux: write 5 to /proc/self/clear_refs); False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
    kib = _status_kib("VmHWM")
    if kib is None:
        import resource  # lazy: only where /proc is missing

        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib * 1024


def share(fy: ForYouRecommender, x: XRecommender) -> None:
    """foryou's retrieval reuses x's embedded posts, interests and index (one-time costs, paid once)."""
    r = fy.retrieval
    r.posts, r.interests, r.centroids, r.clusters = x.posts, x.interests, x.centroids, x.clusters
    r._trained_at, r._ranked_at_training, r._n_ranked_seen, r._seen_upto = (
        x._trained_at,
        x._ranked_at_training,
        x._n_ranked_seen,
        x._seen_upto,
    )


def peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def bench(n_users: int, n_posts: int, reps: int, k: int = 5) -> dict[str, object]:
    reset = reset_peak_rss()
    st, profiles = build_world(n_users, n_posts)
    emb = HashingEmbedder(384, bigrams=False)
    x = XRecommender(48, embedder=emb, profile_texts=profiles)
    x.observe(st, range(0, n_posts), 47)
    fy = ForYouRecommender(48, embedder=emb, profile_texts=profiles)
    share(fy, x)
    fy.history.observe(st, range(0, n_posts))
    users = np.arange(n_users)
    x.interests.rows(users)
    warm = fy.feeds(st, users, k, st.step, np.random.default_rng(0))
    shown_u = np.repeat(users, [len(f.post_ids) for f in warm])
    shown_p = np.asarray([p for f in warm for p in f.post_ids], np.int64)
    fy.served(st, st.step, shown_u, shown_p)
    del warm
    x.feeds(st, users, k, st.step, np.random.default_rng(0))  # x's warm-up too
    loads = [load()]
    times: dict[str, list[float]] = {"x": [], "foryou": []}
    cpu: dict[str, list[float]] = {"x": [], "foryou": []}
    for r in range(reps):
        for name, rec in (("x", x), ("foryou", fy)):
            t, c = time.perf_counter(), time.process_time()
            rec.feeds(st, users, k, st.step, np.random.default_rng(r))
            times[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)  # all of the process's threads
        loads.append(load())
    ratios = [f / x_ for f, x_ in zip(times["foryou"], times["x"])]
    h = fy.history
    state_bytes = h.seen.nbytes + h.impressions.nbytes + h.pair_keys.nbytes + h.pair_counts.nbytes + h.activity.nbytes
    rss = peak_rss_bytes()
    sub = users[: min(n_users, 3 * CHUNK_USERS)]  # three chunks: two ranked at once, as in a step
    px = peak_bytes(lambda: x.feeds(st, sub, k, st.step, np.random.default_rng(0)))
    pf = peak_bytes(lambda: fy.feeds(st, sub, k, st.step, np.random.default_rng(0)))
    return {
        "users": n_users,
        "posts": n_posts,
        "k": k,
        "x": times["x"],
        "foryou": times["foryou"],
        "ratios": ratios,
        "cpu_x": cpu["x"],
        "cpu_fy": cpu["foryou"],
        "rss": rss,
        "rss_reset": reset,
        "state": state_bytes / n_users,
        "peak_x": px / len(sub),
        "peak_fy": pf / len(sub),
        "sub": len(sub),
        "loads": loads,
    }


def lines(b: dict) -> list[tuple[str, str]]:
    """One size's detail rows (``bench_foryou_ab.py`` reads the first three and the load)."""
    tag = f"{b['users']:,} users x {b['posts']:,} posts, k={b['k']}"
    reps = len(b["x"])
    each = {name: ", ".join(f"{t:.2f}" for t in b[name]) for name in ("x", "foryou")}
    mx, mf = statistics.median(b["x"]), statistics.median(b["foryou"])
    cx, cf = statistics.median(b["cpu_x"]), statistics.median(b["cpu_fy"])
    return [
        (f"x feeds, {tag} (median of {reps})", f"{mx:.2f} s/step  [{each['x']}]"),
        (f"foryou feeds, {tag} (median of {reps})", f"{mf:.2f} s/step  [{each['foryou']}]"),
        (f"  ratio foryou / x at {b['users']:,} users (target <= 2)", f"{mf / mx:.2f}"),
        ("  CPU time per step (all threads), x / foryou, median (ratio)", f"{cx:.2f} / {cf:.2f} s  ({cf / cx:.2f})"),
        (f"  foryou state between steps, per agent ({b['users']:,} agents, 1 served step)",
         f"{b['state']:,.0f} bytes"),
        (f"  peak allocation in one feeds call, per ranked user ({b['sub']:,} users): x / foryou",
         f"{b['peak_x']:,.0f} / {b['peak_fy']:,.0f} bytes"),
        ("  load average after this size", b["loads"][-1]),
    ]  # fmt: skip


def _span(loads: list[str]) -> str:
    nums = sorted(float(v) for v in loads if v != "?")
    return f"{nums[0]:.1f}-{nums[-1]:.1f}" if nums else "?"


def table(results: list[dict]) -> str:
    """The summary: per size, medians, each repetition's ratio as min / median / max, memory, load."""
    head = (
        "| users | posts | x s/step, median (min-max) | foryou s/step, median (min-max) "
        "| ratio foryou/x per rep: median (min-max), n | CPU s/step x / foryou (ratio) "
        "| peak RSS (per agent) | foryou state / agent | load |"
    )
    out = [head, "|" + "---|" * 9]
    for b in results:
        x, f, r = b["x"], b["foryou"], b["ratios"]
        rss = f"{b['rss'] / 2**20:,.0f} MiB ({b['rss'] / b['users'] / 1024:,.1f} KiB)"
        if not b["rss_reset"]:
            rss += " (process peak so far)"
        out.append(
            f"| {b['users']:,} | {b['posts']:,} "
            f"| {statistics.median(x):.2f} ({min(x):.2f}-{max(x):.2f}) "
            f"| {statistics.median(f):.2f} ({min(f):.2f}-{max(f):.2f}) "
            f"| **{statistics.median(r):.2f}** ({min(r):.2f}-{max(r):.2f}), n = {len(r)} "
            f"| {statistics.median(b['cpu_x']):.2f} / {statistics.median(b['cpu_fy']):.2f} "
            f"({statistics.median(b['cpu_fy']) / statistics.median(b['cpu_x']):.2f}) "
            f"| {rss} | {b['state']:,.0f} B | {_span(b['loads'])} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--posts", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2,000 users x 20,000 posts, 2 repetitions")
    a = ap.parse_args()
    if a.quick:
        a.users, a.posts, a.reps = [2000], 20_000, 2
    print(
        f"socium foryou benchmark: {machine()}, load average {load()} at start, "
        f"numpy {np.__version__}, python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    w = 82
    print(f"{'measure':<{w}}  value")
    print("-" * (w + 20))
    results = []
    for n in a.users:  # each size's rows as soon as it is measured (10^5 users takes long on a busy machine)
        b = bench(n, a.posts, a.reps)
        results.append(b)
        for name, val in lines(b):
            print(f"{name:<{w}}  {val}", flush=True)
    print()
    print(table(results))
    print(f"(finished {time.strftime('%H:%M UTC', time.gmtime())}; peak RSS includes the world and both recommenders)")


if __name__ == "__main__":
    main()
