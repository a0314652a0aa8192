"""Test doubles shipped with socium: fake policies, run invariants and a fault-injection server that breaks a
configurable fraction of its answers (:mod:`.fault_server`).

They let users and CI run whole simulations, benchmarks and failure drills without a model. The model-free
backends (``random``, ``scripted``, ``garbage``, ``latency``) and the fake OpenAI-compatible server are
backends a config can name, so they live in :mod:`socium.llm.model_free` and :mod:`socium.llm.fake_server`;
import each name from the module that defines it.
"""
