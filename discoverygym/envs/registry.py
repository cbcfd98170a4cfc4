"""Registration of every discoverygym environment with Gymnasium (data, not classes)."""

from __future__ import annotations

import gymnasium as gym

from discoverygym.envs.mathematics import MATH_ENVS
from discoverygym.envs.problem import Problem

ENTRY_POINT = "discoverygym.envs.base:DiscoveryEnv"

#: env id -> Problem for every registered environment.
ENVS: dict[str, Problem] = dict(MATH_ENVS)


def get_problem(name: str) -> Problem:
    """Look a problem up by its name (``"erdos_min_overlap"``) or env id (``"ErdosMinOverlap-v0"``).

    Raises:
        ValueError: no such problem (the message lists the known ones).
    """
    if name in ENVS:
        return ENVS[name]
    for problem in ENVS.values():
        if problem.name == name:
            return problem
    known = ", ".join(sorted(ENVS))
    raise ValueError(f"unknown problem {name!r}; known env ids: {known}")


def register_envs() -> None:
    """Register every env id with ``gymnasium.register`` (idempotent)."""
    for env_id, problem in ENVS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"problem": problem.name})
