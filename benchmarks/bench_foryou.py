"""foryou vs x: feed time per step at 10^4 and 10^5 active users, interleaved, with memory per agent.

Run: ``python benchmarks/bench_foryou.py`` (a few minutes on 2 cores; ``--quick`` for a smoke run).
Same world as ``bench_recsys.py`` (``--posts`` posts over the 48-step window, 100 synthetic topics,
20 followees per user, hashing embeddings): both recommenders share the embedded posts, interest
vectors and IVF index (one-time costs, excluded), and each has served one warm-up step (so foryou's
already-seen filter has history). Repetitions alternate x, foryou, x, foryou... so load changes on the
shared machine hit both alike; the table gives each one's median and the ratio of medians.
Memory: foryou's state between steps (served keys, impressions, engagement counts) per agent, and the
peak Python/numpy allocation during one feeds call (tracemalloc) per ranked user, beside x's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import tracemalloc

import numpy as np
from bench_recsys import build_world

from socium.recsys.embeddings import HashingEmbedder
from socium.recsys.foryou import ForYouRecommender
from socium.recsys.x import XRecommender


def load() -> str:
    return open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"


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


def peak_bytes(fn) -> int:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def bench(n_users: int, n_posts: int, reps: int, k: int = 5) -> list[tuple[str, str]]:
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
    times: dict[str, list[float]] = {"x": [], "foryou": []}
    for r in range(reps):
        for name, rec in (("x", x), ("foryou", fy)):
            t = time.perf_counter()
            rec.feeds(st, users, k, st.step, np.random.default_rng(r))
            times[name].append(time.perf_counter() - t)
    mx, mf = statistics.median(times["x"]), statistics.median(times["foryou"])
    h = fy.history
    state_bytes = h.seen.nbytes + h.impressions.nbytes + h.pair_keys.nbytes + h.pair_counts.nbytes + h.activity.nbytes
    sub = users[: min(n_users, 4096)]
    px = peak_bytes(lambda: x.feeds(st, sub, k, st.step, np.random.default_rng(0)))
    pf = peak_bytes(lambda: fy.feeds(st, sub, k, st.step, np.random.default_rng(0)))
    tag = f"{n_users:,} users x {n_posts:,} posts, k={k}"
    each = {name: ", ".join(f"{t:.2f}" for t in ts) for name, ts in times.items()}
    return [
        (f"x feeds, {tag} (median of {reps})", f"{mx:.2f} s/step  [{each['x']}]"),
        (f"foryou feeds, {tag} (median of {reps})", f"{mf:.2f} s/step  [{each['foryou']}]"),
        (f"  ratio foryou / x at {n_users:,} users (target <= 2)", f"{mf / mx:.2f}"),
        (f"  foryou state between steps, per agent ({n_users:,} agents, 1 served step)",
         f"{state_bytes / n_users:,.0f} bytes"),
        (f"  peak allocation in one feeds call, per ranked user ({len(sub):,} users): x / foryou",
         f"{px / len(sub):,.0f} / {pf / len(sub):,.0f} bytes"),
        ("  load average after this size", load()),
    ]  # fmt: skip


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
        f"socium foryou benchmark: {os.cpu_count()} CPUs visible, load average {load()} at start, "
        f"numpy {np.__version__}, python {sys.version.split()[0]}"
    )
    w = 82
    print(f"{'measure':<{w}}  value")
    print("-" * (w + 20))
    for n in a.users:  # each size's rows as soon as it is measured (10^5 users takes long on a busy machine)
        for name, val in bench(n, a.posts, a.reps):
            print(f"{name:<{w}}  {val}", flush=True)


if __name__ == "__main__":
    main()
