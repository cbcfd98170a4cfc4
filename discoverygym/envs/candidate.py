"""What every discoverygym environment shares, whatever its candidates are.

:class:`CandidateEnv` is the one base of :class:`~discoverygym.envs.construction.DiscoveryEnv`
(constructions, and programs that return one) and :class:`~discoverygym.envs.program.ProgramEnv`
(programs judged by running them): argument checks, seeded state ids, the public
:meth:`~CandidateEnv.evaluate` and :meth:`~CandidateEnv.admit`, ``step``, the ``info`` dict, the
reward convention. :func:`reward_of` and :func:`problem_header` serve both kinds of problem.

Code outside ``envs/`` never asks which kind of env it holds: it reads
``env.unwrapped.action_kind`` (what an action is) and ``env.unwrapped.thread_safe_evaluate``
(whether :meth:`~CandidateEnv.evaluate` may run in threads), and calls
``env.unwrapped.evaluate(...)``.
"""

from __future__ import annotations

import dataclasses
import operator
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeVar

import gymnasium as gym
import numpy as np

from discoverygym.protocols import ProblemProtocol
from discoverygym.types import Direction, State

ObsType = TypeVar("ObsType")
ActType = TypeVar("ActType")

#: what an env's actions are: ``"construction"`` (array/list) or ``"code"`` (program text).
ActionKind = Literal["construction", "code"]

__all__ = ["MEASUREMENTS", "ActType", "ActionKind", "CandidateEnv", "ObsType", "positive_int", "problem_header",
           "reward_of"]

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
    if Direction(direction) is Direction.MAX:
        return float(score)
    if not score > 0:
        raise ValueError(f"minimised score must be positive, got {score!r}")
    return reward_scale / float(score)


def problem_header(problem: ProblemProtocol) -> str:
    """The first part of every prompt: title, statement, what is scored and the published record."""
    better = Direction(problem.direction).comparative
    value = problem.sota["value"]
    if value is None or (isinstance(value, float) and value != value):  # noqa: PLR0124 - NaN test
        record = f"none for this configuration ({problem.sota['source']})"
    else:
        record = f"{value} ({problem.sota['source']})"
    return (
        f"# {problem.title}\n\n{problem.description}\n\nScore: {problem.quantity}; {better} is better. "
        f"Best published: {record}."
    )


class CandidateEnv(gym.Env[ObsType, ActType], ABC):
    """Shared base: a state is a candidate with its verified score; an action proposes a new one.

    Generic over the observation and action types as :class:`gymnasium.Env` is
    (``DiscoveryEnv``: ``CandidateEnv[dict, Any]``; ``ProgramEnv``: ``CandidateEnv[dict, str]``).

    Public contract (beyond Gymnasium's):

    * :attr:`action_kind` — ``"construction"`` or ``"code"``: what :meth:`step` and
      :meth:`evaluate` accept.
    * :attr:`thread_safe_evaluate` — whether :meth:`evaluate` may be called from several threads
      of one process at once (with explicit ``id`` and ``seed`` the results do not depend on the
      thread order).
    * :meth:`evaluate` — judge one candidate without touching the episode.
    * :meth:`admit` — the state as this env would start an episode from it (``reset(options=
      {"state": s})`` and the reuse wrappers' archive seeds use it); never mutates its argument.
    * :attr:`problem` — the problem (:class:`~discoverygym.protocols.ProblemProtocol`).
    * :attr:`program_language`, :attr:`program_entry` — in code mode, the language of a program
      action and the function it must define (``None`` for constructions).

    Rule for initial states: the state ``reset()`` returned can always be passed back to
    :meth:`admit` (and so to a reuse wrapper's ``initial_states``) at no cost beyond a
    construction's re-verification: a program env trusts a :class:`State` object it is given
    and never re-runs its program; a ``dict`` (read from disk) is judged again.

    Subclasses set ``self.problem`` (anything with ``sota``, ``failure_reward``), ``self.horizon``,
    ``self.render_mode`` and ``self.failure_reward`` through :meth:`_init_common`, and implement
    :meth:`_judge` (evaluation), :meth:`admit`, ``reset``, ``summary``, ``_observation`` and
    ``_picture``.
    """

    metadata: ClassVar[dict] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}
    #: what an action is (see the class docstring); a subclass or instance attribute.
    action_kind: ActionKind
    #: whether :meth:`evaluate` may run in several threads at once.
    thread_safe_evaluate: bool = False
    problem: Any

    def _init_common(self, problem: Any, horizon: int, render_mode: str | None) -> None:
        """Check and store the arguments every env takes.

        Raises:
            ValueError: horizon not an integer >= 1 (NaN, 2.5, a bool included), or a render mode
                not in ``metadata["render_modes"]``.
        """
        if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise ValueError(f"horizon must be an integer >= 1 (steps per episode), got {horizon!r}")
        horizon = int(horizon)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.problem = problem
        self.horizon = horizon
        self.render_mode = render_mode
        self.failure_reward = problem.failure_reward
        self.state: State | None = None
        self._steps = 0

    @property
    def program_language(self) -> str | None:
        """The language of program actions (``"python"``, ``"cpp"``); ``None`` when actions are constructions.

        Programs of construction problems (``action_mode="code"``) are Python; a program task
        names its own (:attr:`ProgramTask.language <discoverygym.envs.program.ProgramTask>`).
        """
        if self.action_kind != "code":
            return None
        return str(self.problem.language)

    @property
    def program_entry(self) -> str | None:
        """The function a program action must define (``"construct"``, ``"custom_kernel"``, ``"main"``...);
        ``None`` when actions are constructions."""
        if self.action_kind != "code":
            return None
        return str(getattr(self.problem, "entry", "construct"))

    # ----------------------------------------------------------------- evaluation
    def evaluate(
        self,
        action: ActType,
        *,
        parent: State | None = None,
        seed: int | None = None,
        id: str | None = None,
        parent_ids: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> State:
        """Judge one candidate without touching the episode (no ``reset`` needed; ``state`` unchanged).

        This is what :meth:`step` does to its action, and what search executors, the CLI, the
        reuse wrappers and the trainers call. It never raises for a bad candidate: an invalid
        one becomes a :class:`State` with the failure reward and the reason in ``error``.

        Args:
            action: a construction (``action_kind == "construction"``) or program text (``"code"``).
            parent: the state the candidate was derived from: its id is the child's parent, and in
                code mode of a construction problem its solution is passed to the program as
                ``parent``.
            seed: the program's seed (code); ``None`` draws one from ``self.np_random``. Ignored
                for constructions.
            id: the child's id; ``None`` draws one from ``self.np_random`` (as ``step`` does, id
                first, then the seed).
            parent_ids: the child's parents (default ``(parent.id,)``, or ``()`` without parent);
                several for multi-inspiration prompts.
            metadata: extra metadata for the child (e.g. ``{"step": 3}``), merged under the
                verifier's facts and timings.

        Returns:
            The child :class:`State`: valid with ``score`` and ``reward``, or invalid with the
            failure reward (the stub program of a response without code, from
            :func:`~discoverygym.agents.responses.failed_program`, is not run: its ``error`` is
            ``"no code in the response: <the parser's reason>"``); ``code`` is the program in code mode; ``metadata`` holds the timings
            (``elapsed_s``, ``sandbox_s``, seconds) and the verifier's metrics.
        """
        fields = {
            "id": self._new_id() if id is None else str(id),
            "parent_ids": tuple(parent_ids) if parent_ids is not None else ((parent.id,) if parent is not None else ()),
            "metadata": dict(metadata or {}),
        }
        if seed is None and self.action_kind == "code":
            seed = self._new_seed()
        if self.action_kind == "code":
            from discoverygym.outcomes import NO_CODE_ERROR, unread_reason

            reason = unread_reason(action)
            if reason is not None:  # the stub of a response without a program: say so, run nothing
                return State(None, None, self.failure_reward, False, code=action,
                             error=f"{NO_CODE_ERROR}: {reason}", **fields)
        return self._judge(action, parent, 0 if seed is None else int(seed), fields)

    @abstractmethod
    def _judge(self, action: Any, parent: State | None, seed: int, fields: dict) -> State:
        """Score ``action`` into a :class:`State` built with ``fields`` (``id``, ``parent_ids``, ``metadata``)."""

    @abstractmethod
    def admit(self, state: State | dict) -> State:
        """A copy of ``state`` as this env starts an episode from it (the argument is never mutated).

        Raises:
            ValueError: the state fails when judged again (the message says why).
        """

    def step(self, action: ActType) -> tuple[ObsType, float, bool, bool, dict]:
        """Evaluate one proposed candidate against the current state (:meth:`evaluate`).

        Returns:
            ``(obs, reward, terminated, truncated, info)``; ``terminated`` after ``horizon`` steps;
            ``truncated`` is True only for an *unscored* candidate (``info["unscored"]``: it could
            not be judged on this machine, e.g. a correct kernel without a GPU; its reward is the
            failure reward). The new candidate is ``info["state"]``; when valid and the horizon
            is > 1, it becomes the current state.

        Raises:
            RuntimeError: ``step`` before ``reset``.
        """
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        child = self.evaluate(action, parent=self.state, metadata={"step": self._steps})
        return self._finish_step(child)

    def _copy_given(self, state: State, **changes: Any) -> State:
        """A copy of a caller's state (its metadata dict copied too), with ``changes`` applied."""
        return dataclasses.replace(state, metadata=dict(state.metadata), **changes)

    def _finish_step(self, child: State) -> tuple[ObsType, float, bool, bool, dict]:
        """Record one evaluated candidate and build ``step``'s return value.

        A valid child becomes the current state (the parent of the next step when horizon > 1);
        ``terminated`` after ``horizon`` steps; ``truncated`` when the child is unscored.
        """
        self._steps += 1
        if child.valid:
            self.state = child
        terminated = self._steps >= self.horizon
        return self._observation(), float(child.reward), terminated, child.unscored, self._info(child)

    @abstractmethod
    def _observation(self) -> ObsType:
        """The observation of the current state."""

    @abstractmethod
    def _picture(self, state: State, size: int) -> np.ndarray:
        """uint8 ``(size, size, 3)`` picture of a state."""

    @abstractmethod
    def summary(self, state: State) -> str:
        """One-paragraph text description of a state (the ``ansi`` render mode)."""

    def picture(self, state: State, size: int = 256) -> np.ndarray:
        """A uint8 ``(size, size, 3)`` RGB picture of any state of this env (a construction's plot, a
        program's timing bars): what ``render_mode="rgb_array"`` shows for the current state, and
        what trainers log to TensorBoard for the best one. ``size`` is in pixels."""
        return np.ascontiguousarray(self._picture(state, size), dtype=np.uint8)

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: a text summary; ``"rgb_array"``: a uint8 (256, 256, 3) picture of the state."""
        if self.render_mode is None or self.state is None:
            return None
        if self.render_mode == "ansi":
            return self.summary(self.state)
        return self.picture(self.state, 256)

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
        becomes ``None``; beside a CPU-proxy score it carries ``comparable: False`` and a ``note``),
        ``failure_reward``, ``unscored`` (the candidate could not be judged on
        this machine; see :attr:`State.unscored <discoverygym.types.State.unscored>`) and
        ``unscored_reason`` (one line, ``None`` when scored).
        """
        sota = {k: None if isinstance(v, float) and v != v else v  # noqa: PLR0124 - NaN test
                for k, v in self.problem.sota.items()}
        if state.metadata.get("proxy"):  # a CPU-proxy score is no peer of the GPU record (issue 50)
            sota.update(comparable=False, note=state.metadata.get("proxy_note"))
        return {
            "unscored": state.unscored,
            "unscored_reason": state.metadata.get("unscored_reason") if state.unscored else None,
            "score": state.score,
            "valid": state.valid,
            "error": state.error,
            "state": state,
            "metrics": {k: v for k, v in state.metadata.items() if k not in MEASUREMENTS},
            "sota": sota,
            "failure_reward": self.failure_reward,
        }


def positive_int(name: str, value: Any) -> int:
    """``value`` as an int >= 1, for a task option named ``name`` (bools and floats refused).

    Raises:
        TypeError: not an integer; ValueError: < 1.
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {value!r}") from None
    if number < 1:
        raise ValueError(f"{name} must be >= 1, got {number}")
    return number
