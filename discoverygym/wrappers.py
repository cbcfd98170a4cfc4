"""Gymnasium wrappers that let generic RL libraries (Stable-Baselines3, CleanRL, RLlib...) use the envs.

A :class:`~discoverygym.envs.construction.DiscoveryEnv` has a ``Dict`` observation (a prompt ``Text``, a
score, a variable-length ``Sequence`` construction) and a ``Sequence`` action: exact, but no
fixed-shape network can read or write it, ``action_space.sample()`` is a random-length array, and
``AsyncVectorEnv``'s shared memory cannot hold a ``Sequence`` (it has no static shape). Wrapped,
everything is a fixed-shape ``Box``:

* :class:`FixedShapeConstruction` — ``Box`` action of the problem's shape (``(n,)`` or
  ``(n, row_len)``), absolute (the construction itself, within bounds) or a bounded delta from the
  current construction; the current construction as a ``Box`` observation; ``n=`` chooses the
  size for variable-length problems (Erdős, autocorrelations).
* :class:`FlatObservation` — the observation flattened to 1-D, with the current score appended.
* :class:`DenseFailureReward` — an invalid candidate's reward graded by how far it is from valid
  (the problem's :attr:`~discoverygym.envs.problem.Problem.violation`), below every valid reward.

Example (Stable-Baselines3, README "Use with Stable-Baselines3")::

    env = make_box_env("CirclePacking-26-v0", mode="delta", dense=True)
    PPO("MlpPolicy", env, n_steps=64).learn(256)

    gym.make_vec("ErdosMinOverlap-v0", num_envs=2, vectorization_mode="async",
                 wrappers=[partial(FixedShapeConstruction, n=64)])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from discoverygym.rewards.autocorrelation import nonnegative_violation
from discoverygym.rewards.circle_packing import circle_violation
from discoverygym.rewards.erdos import step_height_violation

# the violation measures live beside their verifiers (rewards/); re-exported here for old imports
__all__ = ["DenseFailureReward", "FixedShapeConstruction", "FlatObservation", "circle_violation", "make_box_env",
           "nonnegative_violation", "step_height_violation"]


# ----------------------------------------------------------------------------- wrappers
class FixedShapeConstruction(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Fixed-shape ``Box`` action and observation over a construction env.

    Args:
        env: a construction env (``gym.make(id)`` of a :class:`~discoverygym.envs.construction.DiscoveryEnv`,
            ``action_mode="construction"``).
        n: the number of pieces / rows. Default: the problem's fixed size (its verifier's ``n``),
            else the length of its seed-0 initial construction.
        mode: ``"absolute"`` (the action is the construction, clipped to bounds) or ``"delta"``
            (the action in ``[-1, 1]`` moves the current construction by at most
            ``max_delta · (high − low)`` per entry, then clipped to bounds). With ``horizon > 1``
            (``gym.make(id, horizon=H)``) delta steps chain; with horizon 1 every episode restarts
            from the initial state.
        low, high: entry bounds (default the problem's ``bounds``, else the initial
            construction's range widened by its span on each side).
        max_delta: the delta mode's step as a fraction of ``high − low``.
        dtype: dtype of the spaces (float32 suits most libraries; the env judges float64).

    Spaces: ``action_space`` ``Box(low, high, shape)`` (absolute) or ``Box(-1, 1, shape)`` (delta);
    ``observation_space`` ``Box(low, high, shape)``: the current construction, resampled to
    ``shape`` (nearest piece along the first axis) when the env's state has another length.
    ``info`` is the env's, plus ``info["candidate"]`` (the float64 construction judged).

    Raises:
        ValueError: a program (code-mode) env; ``n < 1``; mode not absolute/delta; ``low >= high``;
            ``max_delta`` not in (0, 1].
    """

    def __init__(self, env: gym.Env, n: int | None = None, mode: Literal["absolute", "delta"] = "absolute",
                 low: float | None = None, high: float | None = None, max_delta: float = 0.05,
                 dtype: Any = np.float32) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, n=n, mode=mode, low=low, high=high, max_delta=max_delta,
                                                 dtype=dtype)
        super().__init__(env)
        base = env.unwrapped
        if getattr(base, "action_kind", None) != "construction":
            raise ValueError(f"{base} proposes programs, not constructions: FixedShapeConstruction needs "
                             "action_mode='construction'")
        if mode not in ("absolute", "delta"):
            raise ValueError(f"mode must be 'absolute' or 'delta', got {mode!r}")
        if not 0 < max_delta <= 1:
            raise ValueError(f"max_delta must be in (0, 1], got {max_delta!r}")
        problem = base.problem
        initial = np.asarray(problem.initial(np.random.default_rng(0)), dtype=np.float64)
        if n is None:
            n = getattr(problem.verifier, "keywords", {}).get("n") or len(initial)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be an integer >= 1, got {n!r}")
        row = getattr(problem, "row_len", None)
        self.shape = (int(n),) if row is None else (int(n), int(row))
        default = getattr(problem, "bounds", None)
        if default is None:
            span = float(np.ptp(initial)) or 1.0
            default = (float(initial.min()) - span, float(initial.max()) + span)
        self.low = float(default[0] if low is None else low)
        self.high = float(default[1] if high is None else high)
        if not self.low < self.high:
            raise ValueError(f"low must be below high, got {self.low} >= {self.high}")
        self.mode, self.max_delta = mode, float(max_delta)
        self.observation_space = spaces.Box(self.low, self.high, self.shape, dtype=dtype)
        self.action_space = (spaces.Box(self.low, self.high, self.shape, dtype=dtype) if mode == "absolute"
                             else spaces.Box(-1.0, 1.0, self.shape, dtype=dtype))
        self._current = np.clip(self._resample(initial), self.low, self.high)

    def _resample(self, construction: Any) -> np.ndarray:
        """``construction`` as a float64 array of ``self.shape`` (nearest piece along axis 0)."""
        arr = np.asarray(construction, dtype=np.float64)
        if arr.shape == self.shape:
            return arr.copy()
        if arr.ndim != len(self.shape) or arr.shape[1:] != self.shape[1:] or not len(arr):
            return np.full(self.shape, 0.5 * (self.low + self.high))
        return arr[(np.arange(self.shape[0]) * len(arr)) // self.shape[0]]

    def _obs(self) -> np.ndarray:
        return np.clip(self._current, self.low, self.high).astype(self.observation_space.dtype)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Reset the env; the observation is its start construction at ``shape``."""
        _, info = self.env.reset(seed=seed, options=options)
        solution = info["state"].solution
        if solution is not None:
            self._current = np.clip(self._resample(solution), self.low, self.high)
        return self._obs(), info

    def candidate(self, action: Any) -> np.ndarray:
        """The float64 construction of ``shape`` that ``action`` proposes (mode, bounds applied)."""
        a = np.asarray(action, dtype=np.float64).reshape(self.shape)
        if self.mode == "delta":
            a = self._current + self.max_delta * (self.high - self.low) * np.clip(a, -1.0, 1.0)
        return np.clip(a, self.low, self.high)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Judge :meth:`candidate` ``(action)``; a valid one becomes the current construction."""
        cand = self.candidate(action)
        _, reward, terminated, truncated, info = self.env.step(cand)
        if info.get("valid") and self.env.unwrapped.horizon > 1:
            self._current = cand
        info = {**info, "candidate": cand}
        return self._obs(), float(reward), terminated, truncated, info


class FlatObservation(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A ``Box`` observation flattened to 1-D, followed by the current score.

    Args:
        env: an env with a ``Box`` observation (e.g. :class:`FixedShapeConstruction`).
        include_score: append ``info["score"]`` of the current state (0.0 while it has none).

    ``observation_space``: ``Box`` of shape ``(size + include_score,)``, dtype of the inner space.

    Raises:
        ValueError: the inner observation space is not a ``Box`` (wrap with
            :class:`FixedShapeConstruction` first).
    """

    def __init__(self, env: gym.Env, include_score: bool = True) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, include_score=include_score)
        super().__init__(env)
        inner = env.observation_space
        if not isinstance(inner, spaces.Box):
            raise ValueError(f"FlatObservation needs a Box observation, got {inner}: wrap the env with "  # noqa: TRY004
                             "FixedShapeConstruction first")
        self.include_score = bool(include_score)
        extra = [-np.inf] if include_score else []
        low = np.concatenate([inner.low.ravel(), extra]).astype(inner.dtype)
        high = np.concatenate([inner.high.ravel(), [np.inf] if include_score else []]).astype(inner.dtype)
        self.observation_space = spaces.Box(low, high, dtype=inner.dtype)
        self._score = 0.0

    def _flat(self, obs: np.ndarray) -> np.ndarray:
        parts = [np.asarray(obs).ravel()] + ([np.array([self._score])] if self.include_score else [])
        return np.concatenate(parts).astype(self.observation_space.dtype)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Reset; the score is the start state's."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._score = float(info.get("score") or 0.0)
        return self._flat(obs), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Step; the score is the current state's (the env's state after the step)."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        state = getattr(self.env.unwrapped, "state", None)
        self._score = float(state.score) if state is not None and state.score is not None else self._score
        return self._flat(obs), reward, terminated, truncated, info


class DenseFailureReward(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """An invalid candidate's reward graded by how far it is from valid.

    ``reward = failure_reward − scale · v / (1 + v)`` with ``v`` = ``violation(candidate) ≥ 0``:
    in ``(failure_reward − scale, failure_reward]``, so still below every valid reward, and higher
    the closer the candidate is to valid. Valid candidates keep their reward. ``info["violation"]``
    holds ``v`` (0.0 for a valid candidate).

    Args:
        env: a construction env, wrapped or not.
        violation: construction -> ``v``; default the problem's ``violation``.
        scale: the largest penalty below the failure reward (> 0).

    Raises:
        ValueError: no violation measure is known for the problem and none is given; ``scale <= 0``.
    """

    def __init__(self, env: gym.Env, violation: Callable[[Any], float] | None = None, scale: float = 1.0) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, violation=violation, scale=scale)
        super().__init__(env)
        problem = env.unwrapped.problem
        self.violation = violation or getattr(problem, "violation", None)
        if self.violation is None:
            raise ValueError(f"problem {problem.name!r} declares no violation measure (Problem.violation); "
                             "pass violation=")
        if not scale > 0:
            raise ValueError(f"scale must be > 0, got {scale!r}")
        self.scale = float(scale)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        """Step; an invalid candidate's reward is graded (class docstring)."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        v = 0.0
        if not info.get("valid", True):
            cand = info.get("candidate")
            if cand is None:
                cand = info["state"].solution
            v = float(self.violation(cand))
            frac = 1.0 if math.isinf(v) or math.isnan(v) else v / (1.0 + v)
            reward = float(info["failure_reward"]) - self.scale * frac
        return obs, float(reward), terminated, truncated, {**info, "violation": v}


def make_box_env(env_id: str, *, n: int | None = None, mode: Literal["absolute", "delta"] = "absolute",
                 flatten: bool = False, dense: bool = False, max_delta: float = 0.05, **kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **kwargs)`` wrapped in :class:`FixedShapeConstruction` (``n``, ``mode``,
    ``max_delta``), then :class:`DenseFailureReward` if ``dense`` and :class:`FlatObservation` if ``flatten``.

    Raises:
        ValueError: as the wrappers; gymnasium's error for an unknown id.
    """
    env: gym.Env = FixedShapeConstruction(gym.make(env_id, **kwargs), n=n, mode=mode, max_delta=max_delta)
    if dense:
        env = DenseFailureReward(env)
    if flatten:
        env = FlatObservation(env)
    return env
