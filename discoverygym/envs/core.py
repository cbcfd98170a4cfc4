"""What every discoverygym environment shares, whatever its candidates are.

:class:`CandidateEnv` is the one base of :class:`~discoverygym.envs.base.DiscoveryEnv`
(constructions, and programs that return one) and :class:`~discoverygym.envs.program.ProgramEnv`
(programs judged by running them): argument checks, seeded state ids, the ``info`` dict, the
reward convention. :func:`reward_of` and :func:`problem_header` serve both kinds of problem.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from discoverygym.types import State

__all__ = ["MEASUREMENTS", "CandidateEnv", "problem_header", "reward_of"]

#: metadata keys that are measurements (vary run to run), kept out of ``info["metrics"]``.
MEASUREMENTS = ("stdout", "stderr", "elapsed_s", "sandbox_s")


def reward_of(direction: str, reward_scale: float, score: float) -> float:
    """Reward of a valid score (architecture.md, "Environment contract").

    Args:
        direction: ``"max"`` (reward = score) or ``"min"`` (reward = reward_scale / score, the
            papers' inverse-runtime / inverse-bound convention).
        reward_scale: numerator for minimised quantities (3000 μs for TriMul, 1 for bounds).
        score: the problem's own number.

    Raises:
        ValueError: a minimised score that is not positive (no valid candidate has one).
    """
    if direction == "max":
        return float(score)
    if not score > 0:
        raise ValueError(f"minimised score must be positive, got {score!r}")
    return reward_scale / float(score)


def problem_header(problem: Any) -> str:
    """The first part of every prompt: title, statement, what is scored and the published record."""
    better = "lower" if problem.direction == "min" else "higher"
    value = problem.sota["value"]
    if value is None or (isinstance(value, float) and value != value):  # noqa: PLR0124 - NaN test
        record = f"none for this configuration ({problem.sota['source']})"
    else:
        record = f"{value} ({problem.sota['source']})"
    return (
        f"# {problem.title}\n\n{problem.description}\n\nScore: {problem.quantity}; {better} is better. "
        f"Best published: {record}."
    )


class CandidateEnv(gym.Env):
    """Shared base: a state is a candidate with its verified score; an action proposes a new one.

    Subclasses set ``self.problem`` (anything with ``sota``, ``failure_reward``), ``self.horizon``,
    ``self.render_mode`` and ``self.failure_reward`` through :meth:`_init_common`, and implement
    ``reset``/``step`` with :meth:`_new_id`, :meth:`_new_seed` and :meth:`_info`.
    """

    metadata: ClassVar[dict] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}

    def _init_common(self, problem: Any, horizon: int, render_mode: str | None) -> None:
        """Check and store the arguments every env takes.

        Raises:
            ValueError: horizon < 1, or a render mode not in ``metadata["render_modes"]``.
        """
        if horizon < 1:
            raise ValueError(f"horizon must be >= 1, got {horizon}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.problem = problem
        self.horizon = horizon
        self.render_mode = render_mode
        self.failure_reward = problem.failure_reward
        self.state: State | None = None
        self._steps = 0

    def _finish_step(self, child: State) -> tuple[dict, float, bool, bool, dict]:
        """Record one evaluated candidate and build ``step``'s return value.

        A valid child becomes the current state (the parent of the next step when horizon > 1);
        ``terminated`` after ``horizon`` steps; ``truncated`` is always False.
        """
        self._steps += 1
        if child.valid:
            self.state = child
        terminated = self._steps >= self.horizon
        return self._observation(), float(child.reward), terminated, False, self._info(child)

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: a text summary; ``"rgb_array"``: a uint8 (256, 256, 3) picture of the state."""
        if self.render_mode is None or self.state is None:
            return None
        if self.render_mode == "ansi":
            return self.summary(self.state)
        return np.ascontiguousarray(self._picture(self.state, 256), dtype=np.uint8)

    def _new_id(self) -> str:
        """A state id drawn from ``self.np_random`` (so seeded episodes repeat exactly)."""
        return f"{int(self.np_random.integers(2**63)):016x}"

    def _new_seed(self) -> int:
        """A program seed drawn from ``self.np_random``."""
        return int(self.np_random.integers(2**31 - 1))

    def _info(self, state: State) -> dict:
        """The ``info`` dict of reset and step (deterministic given the seed and the action).

        Keys: ``score``, ``valid``, ``error``, ``state``, ``metrics`` (the state's metadata without
        the measurements in :data:`MEASUREMENTS`), ``sota`` (a NaN record, i.e. none published,
        becomes ``None``), ``failure_reward``.
        """
        return {
            "score": state.score,
            "valid": state.valid,
            "error": state.error,
            "state": state,
            "metrics": {k: v for k, v in state.metadata.items() if k not in MEASUREMENTS},
            "sota": {k: None if isinstance(v, float) and v != v else v  # noqa: PLR0124 - NaN test
                     for k, v in self.problem.sota.items()},
            "failure_reward": self.failure_reward,
        }
