"""Counter-based per-agent random streams.

The design asks for one stream per agent spawned from the root seed. A million stateful
``Generator`` objects would cost ~1 KB each and would have to be checkpointed for resume. Instead a
draw is a pure function of (root seed, purpose, agent id, step): resume needs no saved state, and
the numbers an agent gets do not depend on how agents are sharded across Ray actors.

Two forms: :func:`uniform` hashes a whole vector of agent ids at once (SplitMix64 finaliser; numpy
has no vectorised keyed hash), and :func:`agent_rng` gives a full ``numpy.random.Generator`` for
one agent at one step, seeded through ``SeedSequence`` with the same key.
"""

from __future__ import annotations

import numpy as np

# Purposes: distinct streams for distinct decisions so adding one never shifts another.
ACTIVATION = 1
POLICY = 2
RECSYS = 3
GENERATOR = 4
LLM = 5
SURVEY = 6
TIMING = 7

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


def root_key(seed: int) -> int:
    """64-bit key derived from the root seed through SeedSequence (well mixed even for seed 0)."""
    return int(np.random.SeedSequence(seed).generate_state(1, dtype=np.uint64)[0])


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def uniform(key: int, purpose: int, step: int, ids: np.ndarray, sub: int = 0) -> np.ndarray:
    """One U[0,1) draw per id, a pure function of (key, purpose, step, id, sub)."""
    with np.errstate(over="ignore"):
        base = _mix(
            np.asarray([key ^ (purpose * 0x100000001B3) ^ (sub << 40)], dtype=np.uint64) + np.uint64(step) * _GOLD
        )
        z = _mix(base + (np.asarray(ids, dtype=np.uint64) + np.uint64(1)) * _GOLD)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def agent_rng(seed: int, purpose: int, agent_id: int, step: int) -> np.random.Generator:
    """A Generator private to one agent at one step (independent of shard and order)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(purpose, int(agent_id), int(step))))


def component_rng(seed: int, purpose: int, *extra: int) -> np.random.Generator:
    """A Generator for a non-agent component (graph generator, recommender, sampler)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(purpose, *extra)))


# ---- component_seed31: component_rng(...).integers(0, 2**31 - 1) without building a Generator ---------
# numpy's SeedSequence (pool of 4 uint32 words), PCG64 seeding and the bounded 32-bit Lemire draw,
# transcribed from numpy/random/bit_generator.pyx, pcg64.h and distributions.c. Why by hand: building a
# SeedSequence, a PCG64 and a Generator for a single draw costs ~35-40 us on an idle core (numpy's
# argument coercion and object set-up), once per LLM call; these few integer operations give the same
# number in a fraction of that. tests/test_core/test_rng_seed31.py checks it against numpy on many keys.
_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
_MASK128 = (1 << 128) - 1
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_BOUND31 = 2**31 - 1  # integers(0, 2**31 - 1): high exclusive, so numpy's rng is 2**31 - 2


def _words(x: int) -> list[int]:
    """numpy's ``_int_to_uint32_array``: little-endian 32-bit words, ``[0]`` for zero."""
    if x == 0:
        return [0]
    out = []
    while x:
        out.append(x & _MASK32)
        x >>= 32
    return out


def _hash_consts(init: int, mult: int, n: int) -> list[tuple[int, int]]:
    """The (xor, multiply) constants of the n first hashmix calls: they depend on the call's index only."""
    out, h = [], init
    for _ in range(n):
        nxt = (h * mult) & _MASK32
        out.append((h, nxt))
        h = nxt
    return out


_HASH_A = _hash_consts(_INIT_A, _MULT_A, 4 + 12 + 4 * 64)  # room for 64 spawn-key words
_HASH_B = _hash_consts(_INIT_B, _MULT_B, 8)
_PREFIX: dict[tuple[int, int], tuple[list[int], list[int]]] = {}  # (seed, purpose) -> (mixer, words so far)
#: (seed, purpose, first key word) -> the pool after mixing that word in (per agent, for LLM call seeds);
#: emptied when full, which bounds it at ~10 MB.
_FIRST_WORD: dict[tuple[int, int, int], list[int]] = {}
_FIRST_WORD_MAX = 1 << 16


def _prefix(seed: int, purpose: int) -> tuple[list[int], list[int]]:
    """The pool after mixing the seed's words (padded to 4) and ``purpose``: the same for every call
    of one component, so kept (a handful of entries per run)."""
    got = _PREFIX.get((seed, purpose))
    if got is None:
        run = _words(seed)
        run = run + [0] * (4 - len(run)) if len(run) < 4 else run
        got = _mix_in(_first_mix(run), run[4:] + _words(purpose), 16), run
        _PREFIX[(seed, purpose)] = got
    return got


def _first_mix(entropy: list[int]) -> list[int]:
    """SeedSequence.mix_entropy's first two loops (pool size 4; ``entropy`` holds >= 4 words)."""
    hashes = iter(_HASH_A)
    mixer = []
    for i in range(4):
        a, b = next(hashes)
        v = ((entropy[i] ^ a) * b) & _MASK32
        mixer.append(v ^ (v >> 16))
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                a, b = next(hashes)
                v = ((mixer[i_src] ^ a) * b) & _MASK32
                r = (_MIX_L * mixer[i_dst] - _MIX_R * (v ^ (v >> 16))) & _MASK32
                mixer[i_dst] = r ^ (r >> 16)
    return mixer


def _mix_in(mixer: list[int], words: list[int], used: int) -> list[int]:
    """SeedSequence.mix_entropy's last loop over ``words``, ``used`` hashmix calls already made."""
    mixer = list(mixer)
    for w in words:
        for i_dst in range(4):
            a, b = _HASH_A[used]
            used += 1
            v = ((w ^ a) * b) & _MASK32
            r = (_MIX_L * mixer[i_dst] - _MIX_R * (v ^ (v >> 16))) & _MASK32
            mixer[i_dst] = r ^ (r >> 16)
    return mixer


def component_seed31(seed: int, purpose: int, *extra: int) -> int:
    """``int(component_rng(seed, purpose, *extra).integers(0, 2**31 - 1))``, computed directly."""
    if (
        not isinstance(seed, int)
        or seed < 0
        or not isinstance(purpose, int)
        or purpose < 0
        or any(not isinstance(k, int) or k < 0 or k > _MASK32 for k in extra)
        or len(extra) > 32
    ):
        return int(component_rng(seed, purpose, *extra).integers(0, _BOUND31))  # numpy's own path
    mixer, run = _prefix(seed, purpose)
    used = 16 + 4 * (len(run) - 4 + len(_words(purpose)))
    if extra:  # the pool after the first key word (an LLM call's agent) is the same at every step: kept
        first = (seed, purpose, extra[0])
        head = _FIRST_WORD.get(first)
        if head is None:
            if len(_FIRST_WORD) >= _FIRST_WORD_MAX:
                _FIRST_WORD.clear()
            head = _FIRST_WORD[first] = _mix_in(mixer, [extra[0]], used)
        pool = _mix_in(head, list(extra[1:]), used + 4)
    else:
        pool = mixer
    w32 = []
    for i, (a, b) in enumerate(_HASH_B):  # generate_state(4, uint64): 8 words cycling over the pool
        v = ((pool[i & 3] ^ a) * b) & _MASK32
        w32.append(v ^ (v >> 16))
    initstate = (w32[0] | w32[1] << 32) << 64 | w32[2] | w32[3] << 32
    initseq = (w32[4] | w32[5] << 32) << 64 | w32[6] | w32[7] << 32
    inc = ((initseq << 1) | 1) & _MASK128  # pcg64_srandom_r: state 0, a step, add initstate, a step
    state = (((inc + initstate) & _MASK128) * _PCG_MULT + inc) & _MASK128
    words: list[int] = []
    while True:
        if not words:  # numpy's next_uint32: one 64-bit PCG64 (XSL RR) output, low word first
            state = (state * _PCG_MULT + inc) & _MASK128
            rot = state >> 122
            x = ((state >> 64) ^ state) & _MASK64
            out = ((x >> rot) | (x << ((-rot) & 63))) & _MASK64
            words = [out >> 32, out & _MASK32]
        m = words.pop() * _BOUND31  # Lemire's bounded draw; rejection threshold (2**32 - 1 - rng) % rng_excl = 2
        if (m & _MASK32) >= 2:
            return m >> 32
