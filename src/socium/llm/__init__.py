"""LLM backends and the wrappers that make them dependable at simulation scale.

Each name is imported from the module that defines it (``socium.llm.base``, ``.types``, ``.wrappers``,
``.cache``, ``.factory``, ...). Heavy or optional backends (embedded llama.cpp, vLLM, HTTP) are imported
only by :func:`socium.llm.factory.build_backend` when a config names them, so ``import socium.llm`` stays
cheap and works without their extras installed.
"""
