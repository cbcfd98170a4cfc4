"""discoverygym: scientific-discovery problems as Gymnasium environments, with exact verifiers.

Importing the package registers every environment, and every policy backend::

    import gymnasium as gym, discoverygym
    env = gym.make("ErdosMinOverlap-v0")
"""

from discoverygym.envs import ENVS, DiscoveryEnv, Problem, register_envs
from discoverygym.errors import BackendUnavailable, DiscoveryGymError, InvalidSolution, SandboxError
from discoverygym.types import State

__version__ = "0.1.0"

register_envs()
# the one backend table fills the ground-floor policy registry (discoverygym.policy.POLICIES, LLM_BACKENDS)
import discoverygym.agents.policies.backends  # noqa: F401

__all__ = [
    "ENVS",
    "BackendUnavailable",
    "DiscoveryEnv",
    "DiscoveryGymError",
    "InvalidSolution",
    "Problem",
    "SandboxError",
    "State",
    "__version__",
]
