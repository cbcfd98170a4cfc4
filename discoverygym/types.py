"""Plain data types shared by environments, search and agents (no behaviour beyond (de)serialising).

Source of the shapes: docs/architecture.md ("Environment contract"); tinker-cookbook's split of
data types from loops.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


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
