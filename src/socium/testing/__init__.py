"""Test doubles shipped with socium: model-free backends, a fake OpenAI-compatible server and a
fault-injection one that breaks a configurable fraction of its answers.

They let users and CI run whole simulations, benchmarks and failure drills without a model.
"""

from __future__ import annotations

from socium.llm.fake_server import FakeOpenAIServer, FakeReply, default_responder, schema_from_body
from socium.llm.model_free import GarbageBackend, LatencyBackend, RandomBackend, ScriptedBackend, schema_answer
from socium.llm.schema_sample import sample_from_schema
from socium.testing.fault_server import FAULT_KINDS, FaultyOpenAIServer

__all__ = [
    "FAULT_KINDS",
    "FakeOpenAIServer",
    "FakeReply",
    "FaultyOpenAIServer",
    "GarbageBackend",
    "LatencyBackend",
    "RandomBackend",
    "ScriptedBackend",
    "default_responder",
    "sample_from_schema",
    "schema_answer",
    "schema_from_body",
]
