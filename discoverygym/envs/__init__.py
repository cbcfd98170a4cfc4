"""Discovery problems as Gymnasium environments: the shared base, problem specs, registration.

Build an env with ``gym.make(env_id, ...)``; judge a candidate with ``env.unwrapped.evaluate(...)``
(:class:`~discoverygym.envs.candidate.CandidateEnv`).
"""

from discoverygym.envs.candidate import CandidateEnv
from discoverygym.envs.construction import DiscoveryEnv
from discoverygym.envs.problem import Problem
from discoverygym.envs.registry import ENVS, get_problem, register_envs

__all__ = ["ENVS", "CandidateEnv", "DiscoveryEnv", "Problem", "get_problem", "register_envs"]
