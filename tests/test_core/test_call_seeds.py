"""A model call's seed is one draw of the counter-based stream of (run seed, LLM, agent, step, attempt).

The LLM policy used to replay numpy's SeedSequence and PCG64 in pure Python to save ~50 µs per call
against an instant fake server; it now asks numpy itself (socium.core.rng.component_rng), so a call's
seed is what the documented stream gives, depends on its key only, and differs between keys.
"""

from __future__ import annotations

import numpy as np

from conftest import small_config
from socium.agents.llm_policy import LLMPolicy
from socium.core.rng import LLM, component_rng


def test_call_seed_is_the_documented_stream_draw():
    cfg = small_config(steps=1, seed=2**40 + 3, llm={"backend": "random"}, policy={"kind": "llm"})
    pol = LLMPolicy(cfg)
    keys = [(a, s, t) for a in (0, 1, 17, 10**6) for s in (0, 3) for t in (0, 1, 1000)]
    got = [pol.seed(*k) for k in keys]
    assert got == [int(component_rng(cfg.seed, LLM, *k).integers(0, 2**31 - 1)) for k in keys]
    assert len(set(got)) == len(keys)  # distinct keys, distinct seeds
    assert all(0 <= g < 2**31 - 1 for g in got)
    # the same key asked again (another shard, another order) gives the same seed
    assert [pol.seed(*k) for k in reversed(keys)] == list(reversed(got))
    assert np.unique(np.array(got) % 97).size > 20  # not a degenerate stream
