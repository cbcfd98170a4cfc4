"""The problem contract: what environments, search and agents need of a problem (typing only).

Two kinds of problem exist (:class:`~discoverygym.envs.problem.Problem`, scored constructions;
:class:`~discoverygym.envs.program.ProgramTask`, programs judged by running them), and code above
``envs/`` (prompts, policies, search, trainers) must treat them alike. These protocols say what
"alike" means, so that code can type against them without importing ``envs/``. They sit on the
ground floor (they import only :class:`~discoverygym.types.Direction`, from the ground floor).

Source: PEP 544 structural typing; the attribute names are those the two problem kinds share
(docs/architecture.md, "Environment contract").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from discoverygym.types import Direction

__all__ = ["ConstructionProblemProtocol", "ProblemProtocol", "ProgramTaskProtocol", "ScoreProtocol"]


@runtime_checkable
class ScoreProtocol(Protocol):
    """A verifier's verdict on a valid candidate (:class:`~discoverygym.rewards.common.Score`).

    Attributes:
        value: the problem's own number (float; its unit is the problem's ``quantity``).
        metrics: JSON-serialisable facts about the candidate (per-case scores, timings...).
    """

    value: float
    metrics: dict


@runtime_checkable
class ProblemProtocol(Protocol):
    """What every problem offers, whatever its candidates are.

    Attributes:
        name: short identifier, e.g. ``"erdos_min_overlap"`` or ``"ahc039"``.
        title: human title for prompts, ``list`` and renders.
        quantity: what ``score`` measures (and its unit).
        direction: :class:`~discoverygym.types.Direction` (``"min"`` or ``"max"``): whether a lower or
            higher score is better; compare scores with its methods, never by testing the string.
        sota: best published value, ``{"value": float, "source": str}`` plus optional extras
            (``value`` is NaN when none is published).
        failure_reward: reward of an invalid candidate; strictly below every valid reward.
        reward_scale: for a minimised score (``Direction.MIN``), reward = reward_scale / score.
        entry: the function a program must define.
        language: ``"python"`` or ``"cpp"``, the language of a program (always ``"python"`` for a
            construction problem's programs).
        example: file name of the bundled example program in ``discoverygym/examples/``, or ``None``.
        row_len: ``None`` for 1-D constructions and for program problems, else the row length.
    """

    name: str
    title: str
    quantity: str
    direction: Direction
    language: Literal["python", "cpp"]
    example: str | None
    failure_reward: float
    reward_scale: float
    entry: str
    row_len: int | None

    @property
    def sota(self) -> Mapping[str, Any]:
        """Best published value ``{"value": float, "source": str, ...}``."""

    def reward(self, score: float) -> float:
        """Reward of a valid score (higher is better).

        Raises:
            ValueError: a minimised score that is not positive.
        """

    def prompt(self) -> str:
        """The problem statement followed by the program contract (what an LLM policy reads)."""


@runtime_checkable
class ConstructionProblemProtocol(ProblemProtocol, Protocol):
    """A problem whose candidates are constructions scored by a verifier (``DiscoveryEnv``).

    Attributes:
        verifier: ``construction -> Score``; raises ``InvalidSolution`` for an invalid one.
        initial: ``np.random.Generator -> construction`` (plain lists), the initial state.
        render: ``(construction float64 ndarray, size px) -> uint8 (size, size, 3)`` picture.
        description: the problem statement, returns: what a program must return (prompt text).
        bounds: ``(low, high)`` of every construction entry, or ``None`` (unbounded).
        violation: ``construction -> v >= 0``, how far an invalid construction is from valid, or ``None``.
    """

    description: str
    returns: str
    bounds: tuple[float, float] | None
    violation: Callable[[Any], float] | None
    verifier: Callable[[Any], ScoreProtocol]
    initial: Callable[[np.random.Generator], Any]
    render: Callable[[np.ndarray, int], np.ndarray]


@runtime_checkable
class ProgramTaskProtocol(ProblemProtocol, Protocol):
    """A problem whose candidates are programs judged by running them (``ProgramEnv``).

    Attributes:
        contract: what the program must define/read/print and the limits it runs under.
        evaluate_initial: whether ``reset()`` scores the initial program.
        nondeterministic: scores are measurements (timings) that vary between runs.
        thread_safe: ``evaluate`` may run in several threads of one process at once.
    """

    contract: str
    evaluate_initial: bool
    nondeterministic: bool
    thread_safe: bool

    def initial_program(self) -> str:
        """Source of the initial state (a baseline program in :attr:`language`)."""

    def evaluate(self, source: str, *, seed: int) -> ScoreProtocol:
        """Run and judge one program (raises ``InvalidSolution`` with the reason when it fails)."""

    def render(self, state: Any, size: int) -> np.ndarray:
        """uint8 ``(size, size, 3)`` picture of a state."""

    def report(self, state: Any) -> list[tuple[str, str]]:
        """Rows ``(label, value)`` printed under a result."""
