"""The declarative description of a discovery problem: what an environment needs besides the base.

A problem is data plus three functions (verifier, initial construction, picture); the shared
:class:`~discoverygym.envs.construction.DiscoveryEnv` does everything else. Adding a variant such as
``CirclePacking-32-v0`` is one :class:`Problem` value, not a new class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from discoverygym.envs.candidate import problem_header, reward_of
from discoverygym.rewards.common import Score
from discoverygym.types import Direction

__all__ = ["PROGRAM_CONTRACT", "Direction", "Problem", "example_file"]

PROGRAM_CONTRACT = """\
Write a Python program that defines

    def {entry}(seed: int, budget_s: float, parent):
        ...
        return construction

It is called once, in a separate process without network access and with limited time and
memory. `seed` seeds any randomness; `budget_s` is the wall-clock time (seconds) you may use,
stop before it; `parent` is the current construction ({parent_desc}) as a numpy array, a
starting point you may improve. Any subset of the three parameters may be declared. numpy
(and scipy when installed) are available. Return {returns}. Only the returned construction
counts: its score is recomputed by the verifier; printed or claimed scores are ignored."""


@dataclass(frozen=True)
class Problem:
    """Everything problem-specific about a discovery environment.

    Attributes:
        name: short identifier, e.g. ``"erdos_min_overlap"``.
        title: human title for prompts, ``list`` and renders.
        quantity: what ``score`` measures, e.g. ``"C5 (upper bound)"``.
        direction: :class:`~discoverygym.types.Direction` (``"min"`` or ``"max"`` accepted): whether a
            lower or higher score is better; compare scores with its methods (``better``, ``best``, ``gap``).
        verifier: ``construction -> Score``; raises ``InvalidSolution`` (rewards/).
        initial: ``np.random.Generator -> construction`` (plain lists), the papers' initial state.
        description: the problem statement for prompts, in our own words.
        sota: best published value: ``{"value": float, "source": str}`` plus optional extras.
        row_len: ``None`` for a 1-D construction, else the length of each row (3 for [x, y, r]).
        returns: what the program must return (for the prompt), e.g. "a list of n floats".
        render: ``(construction ndarray, size px) -> uint8 RGB image (size, size, 3)``.
        reward_scale: for ``direction == "min"`` reward = reward_scale / score.
        failure_reward: reward of an invalid candidate; strictly below every valid reward.
        entry: name of the program's entry function.
        polish: the problem's deterministic local optimiser, ``x -> x'`` (float64 arrays of the
            construction's shape; :mod:`~discoverygym.envs.polish`), or ``None``; numeric
            policies apply it with ``polish="auto"``.
        operators: the problem's search moves (:mod:`~discoverygym.envs.operators`), the choices of
            the ``operators`` policy; empty when the problem declares none.
        bounds: ``(low, high)`` of every construction entry, the default range of fixed-shape ``Box``
            spaces (:class:`~discoverygym.wrappers.FixedShapeConstruction`); ``None`` when unbounded.
        violation: ``construction -> v >= 0``, how far an invalid construction is from valid (0 = no
            measured violation; ``inf`` when not even of the right shape), the grade of
            :class:`~discoverygym.wrappers.DenseFailureReward`; ``None`` when the problem has none.
        example: file name of the bundled example program in ``discoverygym/examples/``
            (:func:`example_file`; ``discoverygym evaluate ID`` without a FILE), or ``None``.
        language: ``"python"``: programs of a construction problem (``action_mode="code"``) are Python.
    """

    language: ClassVar[Literal["python"]] = "python"

    name: str
    title: str
    quantity: str
    direction: Direction
    verifier: Callable[[Any], Score]
    initial: Callable[[np.random.Generator], Any]
    description: str
    sota: dict
    row_len: int | None
    returns: str
    render: Callable[[np.ndarray, int], np.ndarray]
    reward_scale: float = 1.0
    failure_reward: float = 0.0
    entry: str = "construct"
    polish: Callable[..., np.ndarray] | None = None
    operators: tuple[Any, ...] = ()
    bounds: tuple[float, float] | None = None
    violation: Callable[[Any], float] | None = None
    example: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "direction", Direction(self.direction))  # "min"/"max" accepted

    def reward(self, score: float) -> float:
        """Reward of a valid score: ``score`` when maximised, ``reward_scale / score`` when minimised.

        Raises:
            ValueError: a minimised score that is not positive (no valid construction has one).
        """
        return reward_of(self.direction, self.reward_scale, score)

    def prompt(self) -> str:
        """The problem statement followed by the program contract (``action_mode="code"``)."""
        parent_desc = "1-D array" if self.row_len is None else f"2-D array with rows of {self.row_len}"
        contract = PROGRAM_CONTRACT.format(entry=self.entry, parent_desc=parent_desc, returns=self.returns)
        return f"{problem_header(self)}\n\n{contract}\n"


def example_file(problem: Any) -> Path | None:
    """Path of ``problem.example`` (a :class:`Problem` or a program task) in ``discoverygym/examples/``, or ``None``."""
    name = getattr(problem, "example", None)
    return Path(str(resources.files("discoverygym") / "examples" / name)) if name else None
