"""Which named LLM backend answers for each agent (OASIS runs can mix models per agent).

``llms: {name: {...LLMConfig...}}`` declares the backends; ``population.llms`` assigns them
cyclically (agent i gets ``llms[i % len]``), or, without it, an ``llm`` column of an OASIS CSV names
one per row; agents left unrouted use the ``llm`` section (the name ``default``). The route is a
small integer array so it travels cheaply with the policy to Ray actors; each call records its
backend's model in ``llm_calls.model`` and the route name in ``metadata.llm``.
"""

from __future__ import annotations

import numpy as np

from socium.agents.profiles import Population
from socium.config.experiment import ExperimentConfig
from socium.errors import ConfigError


def llm_route(cfg: ExperimentConfig, pop: Population) -> tuple[list[str], np.ndarray | None]:
    """``(names, route)`` with ``names[route[i]]`` the backend of agent i; ``route`` is None without ``llms``."""
    if not cfg.llms:
        return ["default"], None
    names = ["default", *cfg.llms]
    index = {n: i for i, n in enumerate(names)}
    n = len(pop)
    if cfg.population.llms:
        chosen = [cfg.population.llms[i % len(cfg.population.llms)] for i in range(n)]
    else:
        chosen = [((pop.extra[i] if pop.extra else {}).get("llm") or "default") for i in range(n)]
        for i, name in enumerate(chosen):
            if name not in index:
                raise ConfigError(
                    f"{cfg.population.path}: agent {i}: column 'llm' names {name!r}, "
                    f"not a key of llms ({', '.join(cfg.llms)})"
                )
    return names, np.array([index[c] for c in chosen], dtype=np.int16)
