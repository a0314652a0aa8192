"""Draw random values that satisfy a (simple) JSON schema.

Lets the ``random`` backend and the fake server answer any action schema the simulator sends
without a model, so whole runs can be exercised in CI at full speed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_WORDS = (
    "agree",
    "news",
    "today",
    "really",
    "think",
    "great",
    "post",
    "why",
    "people",
    "vote",
    "climate",
    "policy",
    "love",
    "hate",
    "maybe",
    "facts",
    "story",
    "read",
    "share",
    "wow",
)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        return _resolve(node, root)
    return schema


def sample_from_schema(
    schema: dict[str, Any], rng: np.random.Generator, *, root: dict[str, Any] | None = None, depth: int = 0
) -> Any:
    """A random instance of ``schema``; covers the subset action schemas use.

    Supported: type (object/array/string/integer/number/boolean/null), enum, const, anyOf/oneOf,
    $ref to local $defs, required, min/maxLength, minimum/maximum, min/maxItems. Optional object
    properties are included with probability 1/2.
    """
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        options = list(schema["enum"])
        return options[int(rng.integers(len(options)))]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = schema[key]
            return sample_from_schema(options[int(rng.integers(len(options)))], rng, root=root, depth=depth + 1)
    if "allOf" in schema and schema["allOf"]:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, root))
        return sample_from_schema(merged, rng, root=root, depth=depth + 1)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = typ[int(rng.integers(len(typ)))]
    if typ is None:
        typ = "object" if "properties" in schema else "string"
    if typ == "object":
        props: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or (depth < 4 and rng.random() < 0.5):
                out[name] = sample_from_schema(sub, rng, root=root, depth=depth + 1)
        return out
    if typ == "array":
        lo = int(schema.get("minItems", 0))
        hi = int(schema.get("maxItems", max(lo, 3)))
        n = int(rng.integers(lo, hi + 1)) if depth < 4 else lo
        items = schema.get("items", {"type": "string"})
        return [sample_from_schema(items, rng, root=root, depth=depth + 1) for _ in range(n)]
    if typ == "string":
        lo = int(schema.get("minLength", 1))
        hi = int(schema.get("maxLength", max(lo, 40)))
        words = [_WORDS[int(i)] for i in rng.integers(len(_WORDS), size=8)]
        text = " ".join(words)
        while len(text) < lo:
            text += " " + text
        return text[: max(lo, min(hi, len(text)))]
    if typ == "integer":
        lo = int(schema.get("minimum", 0))
        hi = int(schema.get("maximum", lo + 100))
        return int(rng.integers(lo, hi + 1))
    if typ == "number":
        flo = float(schema.get("minimum", -1.0))
        fhi = float(schema.get("maximum", 1.0))
        return float(rng.uniform(flo, fhi))
    if typ == "boolean":
        return bool(rng.random() < 0.5)
    if typ == "null":
        return None
    raise ValueError(f"schema type {typ!r} is not supported by the sampler")
