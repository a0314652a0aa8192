"""Seeds for model calls, computed in pure Python, equal to what ``numpy`` would draw.

An LLM call's sampling seed is ``component_rng(seed, LLM, agent, step, attempt).integers(0,
2**31 - 1)``: a ``SeedSequence`` hashed from the key, a ``PCG64`` seeded from it, one bounded draw.
Building those numpy objects cost ~35-80 µs per call on the 2-core development machine, several
percent of a call's whole CPU against an instant server. :class:`SeedInts` gives the *same
integers* (the trace's seeds, and so a server's sampling, do not change; a test compares it with
numpy over many keys) by replaying the three algorithms on Python ints, and keeps the hash state of
the fixed key prefix (root seed, purpose) so a call only mixes in its own words:

- ``SeedSequence`` (numpy/random/bit_generator.pyx): entropy and spawn key as 32-bit words, mixed
  into a 4-word pool, then ``generate_state(4, uint64)``;
- ``PCG64`` seeding (``pcg64_set_seed``): state and increment from those words, two LCG steps;
- ``Generator.integers(0, high)`` for a range below 2**32: Lemire's bounded draw on the low
  then high halves of 64-bit XSL-RR outputs.
"""

from __future__ import annotations

_M32 = 0xFFFFFFFF
_M64 = (1 << 64) - 1
_M128 = (1 << 128) - 1
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_POOL = 4


def _words(value: int) -> list[int]:
    """A non-negative int as little-endian 32-bit words, as SeedSequence coerces it."""
    value = int(value)
    if value < 0:
        raise ValueError(f"seed key parts must be non-negative, got {value}")
    out = []
    while True:
        out.append(value & _M32)
        value >>= 32
        if not value:
            return out


class SeedInts:
    """``int(component_rng(seed, *prefix, *key).integers(0, high))`` for many keys, fast."""

    def __init__(self, seed: int, *prefix: int) -> None:
        if not prefix:
            raise ValueError("SeedInts needs a non-empty key prefix (the purpose)")
        entropy = _words(seed)
        entropy += [0] * (_POOL - len(entropy))  # a spawn key pads the run entropy to the pool size
        words = entropy + [w for k in prefix for w in _words(k)]
        h = _INIT_A
        pool = [0] * _POOL

        def hashmix(v: int) -> int:
            nonlocal h
            v = ((v ^ h) * ((h * _MULT_A) & _M32)) & _M32
            h = (h * _MULT_A) & _M32
            return v ^ (v >> 16)

        for i in range(_POOL):
            pool[i] = hashmix(words[i])
        for i in range(_POOL):
            for j in range(_POOL):
                if i != j:
                    pool[j] = _mix(pool[j], hashmix(pool[i]))
        for w in words[_POOL:]:
            for j in range(_POOL):
                pool[j] = _mix(pool[j], hashmix(w))
        self._pool, self._hash = pool, h

    def state(self, *key: int) -> list[int]:
        """``SeedSequence(seed, spawn_key=(*prefix, *key)).generate_state(4, uint64)`` as ints."""
        p0, p1, p2, p3 = self._pool
        h = self._hash
        for k in key:
            for w in _words(k) if k > _M32 or k < 0 else (k,):
                for j in range(_POOL):
                    v = ((w ^ h) * ((h * _MULT_A) & _M32)) & _M32
                    h = (h * _MULT_A) & _M32
                    v = (_MIX_L * (p0, p1, p2, p3)[j] - _MIX_R * (v ^ (v >> 16))) & _M32
                    v ^= v >> 16
                    if j == 0:
                        p0 = v
                    elif j == 1:
                        p1 = v
                    elif j == 2:
                        p2 = v
                    else:
                        p3 = v
        hb = _INIT_B
        out = []
        for x in (p0, p1, p2, p3, p0, p1, p2, p3):
            v = ((x ^ hb) * ((hb * _MULT_B) & _M32)) & _M32
            hb = (hb * _MULT_B) & _M32
            out.append(v ^ (v >> 16))
        return [out[0] | (out[1] << 32), out[2] | (out[3] << 32), out[4] | (out[5] << 32), out[6] | (out[7] << 32)]

    def integer(self, high: int, *key: int) -> int:
        """The draw ``integers(0, high)`` of the generator seeded with ``key``; ``1 <= high <= 2**32``."""
        if not 1 <= high <= 1 << 32:
            raise ValueError(f"high must be in [1, 2**32], got {high}")
        s = self.state(*key)
        inc = ((((s[2] << 64) | s[3]) << 1) | 1) & _M128
        st = (inc + ((s[0] << 64) | s[1])) & _M128  # srandom: from 0 one step (= inc), add the seed, step
        st = (st * _PCG_MULT + inc) & _M128
        rng = high - 1  # numpy's inclusive range
        if rng == 0:
            return 0
        excl = rng + 1
        spare = -1
        while True:  # Lemire's bounded draw over 32-bit halves (low first) of 64-bit XSL-RR outputs
            if spare >= 0:
                u, spare = spare, -1
            else:
                st = (st * _PCG_MULT + inc) & _M128
                rot = st >> 122
                x = ((st >> 64) ^ st) & _M64
                out = ((x >> rot) | (x << ((64 - rot) & 63))) & _M64
                u, spare = out & _M32, out >> 32
            if rng == _M32:
                return u
            m = u * excl
            if (m & _M32) >= excl or (m & _M32) >= (_M32 - rng) % excl:
                return m >> 32


def _mix(x: int, y: int) -> int:
    r = (_MIX_L * x - _MIX_R * y) & _M32
    return r ^ (r >> 16)
