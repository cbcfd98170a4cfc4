"""Plain data types shared by environments, search and agents (no behaviour beyond (de)serialising).

Source of the shapes: docs/architecture.md ("Environment contract"); tinker-cookbook's split of
data types from loops.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

import numpy as np


class Direction(str, Enum):
    """Whether a lower (``"min"``) or a higher (``"max"``) score is better: the one place that reads it.

    A ``str`` enum: ``Direction.MAX == "max"``, it prints and serialises as ``"max"``, and
    ``Direction(problem.direction)`` accepts the plain strings that run files and ``list --json``
    hold. Code outside ``envs/problem.py`` and this class compares scores through its methods, never
    by testing the direction string.

    Gap convention (the console's ``gap to record``, ``train --json``'s ``gap_to_record`` and
    TensorBoard's ``score/gap`` all use it): ``gap(value, record) = value − record`` in the score's
    own units, whatever the direction; read it with the direction: for ``MAX`` a positive gap beats
    the record, for ``MIN`` a negative one does (:meth:`improvement` gives the sign-aware form).

    Example:
        >>> d = Direction("min")
        >>> d.better(0.38, 0.39), d.best([0.39, 0.38, 0.4]), d.gap(0.39, 0.38), d.improvement(0.38, 0.39)
        (True, 0.38, 0.010000000000000009, 0.010000000000000009)
    """

    MIN = "min"
    MAX = "max"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def better(self, a: float, b: float) -> bool:
        """Whether score ``a`` is strictly better than score ``b``."""
        return a > b if self is Direction.MAX else a < b

    def best(self, values: Iterable[float]) -> float:
        """The best of ``values`` (``max`` or ``min``).

        Raises:
            ValueError: ``values`` is empty.
        """
        return max(values) if self is Direction.MAX else min(values)

    def gap(self, value: float, record: float) -> float:
        """``value − record``: the signed gap to the record (class docstring; direction-free by convention)."""
        return float(value) - float(record)

    def improvement(self, new: float, old: float) -> float:
        """How much better ``new`` is than ``old``: ``new − old`` (MAX) or ``old − new`` (MIN); positive = better."""
        return float(new) - float(old) if self is Direction.MAX else float(old) - float(new)

    @property
    def worst(self) -> float:
        """The score every real score beats: ``-inf`` (MAX) or ``inf`` (MIN)."""
        return -math.inf if self is Direction.MAX else math.inf

    @property
    def comparative(self) -> str:
        """``"higher"`` (MAX) or ``"lower"`` (MIN), as in "higher is better"."""
        return "higher" if self is Direction.MAX else "lower"


def new_state_id() -> str:
    """A fresh 16-hex-digit state id (random, unique for all practical purposes)."""
    return uuid.uuid4().hex[:16]


def to_jsonable(value: Any) -> Any:
    """Convert numpy arrays/scalars (nested in lists, tuples, dicts) to plain JSON data.

    Non-finite floats are kept as ``float('nan')``/``inf`` (JSON written with ``allow_nan``).
    """
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


@dataclass
class State:
    """A candidate solution with its verified score: one node of a search archive.

    Attributes:
        solution: the construction as plain JSON data (list of floats, list of [x, y, r] rows,
            ±1 matrix, integer list), ``None`` when no valid construction was produced. Always
            ``None`` in program envs (kernels, AtCoder, denoising: their action is a program, not a
            construction): the candidate there is ``code``, and what it achieved is ``score`` and
            ``metadata`` (e.g. per-case results under ``"cases"``).
        score: the problem's own number recomputed by the verifier (e.g. C5), ``None`` if invalid.
        reward: the env's reward for this state (higher is better; the failure reward if invalid).
        valid: whether the verifier accepted ``solution``.
        code: the program that produced the solution (``action_mode="code"``) or, in program envs,
            the program itself (the candidate); ``None`` for a construction proposed directly.
        id: unique string id.
        parent_ids: ids of the states this one was derived from (several for multi-inspiration
            prompts, empty for an initial state).
        error: the verifier's or sandbox's message when invalid, else ``None``.
        metadata: JSON-serialisable extras (verifier metrics, timings ``elapsed_s`` / ``sandbox_s``
            in seconds, program stdout/stderr tails, step index). Measurements, not identity: two
            states compare equal when all other fields are equal, whatever their metadata.
    """

    solution: Any
    score: float | None
    reward: float
    valid: bool
    code: str | None = None
    id: str = field(default_factory=new_state_id)
    parent_ids: tuple[str, ...] = ()
    error: str | None = None
    metadata: dict = field(default_factory=dict, compare=False)

    @property
    def unscored(self) -> bool:
        """Whether the candidate could not be scored here (``metadata["unscored"]``): e.g. a correct
        kernel on a machine without a GPU. Such a state is not valid and carries the failure reward,
        but it is no failure of the candidate: trainers leave it out of advantages, archives drop it."""
        return bool(self.metadata.get("unscored"))

    def to_dict(self) -> dict:
        """Plain-JSON dictionary (round-trips through :meth:`from_dict`)."""
        out = asdict(self)
        out["parent_ids"] = list(self.parent_ids)
        out["solution"] = to_jsonable(self.solution)
        out["metadata"] = to_jsonable(self.metadata)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> State:
        """Build a State from :meth:`to_dict` output.

        Raises:
            TypeError: unknown or missing keys.
        """
        data = dict(data)
        data["parent_ids"] = tuple(data.get("parent_ids", ()))
        score = data.get("score")
        if score is not None and not math.isfinite(score):
            data["score"] = None
        return cls(**data)
