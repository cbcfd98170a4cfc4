"""Discovery problems as Gymnasium environments: the shared base, problem specs, registration."""

from discoverygym.envs.base import DiscoveryEnv
from discoverygym.envs.problem import Problem
from discoverygym.envs.registry import ENVS, get_problem, register_envs

__all__ = ["ENVS", "DiscoveryEnv", "Problem", "get_problem", "register_envs"]
