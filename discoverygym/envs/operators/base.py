"""The operator type: a named deterministic move with declared continuous parameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Operator", "ParamSpec", "apply_operator"]


@dataclass(frozen=True)
class ParamSpec:
    """One continuous operator parameter on ``[low, high]``.

    Attributes:
        name: the keyword the operator's function receives.
        low, high: bounds (``low < high``); a policy samples a value inside them.
        log: sample on a log scale (``low > 0``): the policy's unit value ``u ∈ [0, 1]`` maps to
            ``low · (high/low)^u`` instead of ``low + u (high − low)``.
        doc: what the parameter does (units).
        default: the usual value (inside the bounds) or ``None``: a policy starts with its
            proposal distribution peaked there (:meth:`unit`), else uniform.
    """

    name: str
    low: float
    high: float
    log: bool = False
    doc: str = ""
    default: float | None = None

    def __post_init__(self) -> None:
        if not self.low < self.high or (self.log and self.low <= 0):
            raise ValueError(f"parameter {self.name!r}: need low < high (and low > 0 on a log scale)")

    def unit(self, value: float) -> float:
        """The unit value ``u ∈ [0, 1]`` of a parameter value (the inverse of :meth:`value`)."""
        v = min(max(float(value), self.low), self.high)
        if self.log:
            return float(np.log(v / self.low) / np.log(self.high / self.low))
        return float((v - self.low) / (self.high - self.low))

    def value(self, unit: float) -> float:
        """The parameter value of a unit value ``unit ∈ [0, 1]`` (clipped to the interval)."""
        u = min(max(float(unit), 0.0), 1.0)
        if self.log:
            return float(self.low * (self.high / self.low) ** u)
        return float(self.low + u * (self.high - self.low))


@dataclass(frozen=True)
class Operator:
    """A deterministic move of a construction, declared by a problem.

    Attributes:
        name: unique within its problem, e.g. ``"shake_slsqp"``.
        fn: ``fn(x, rng, **params) -> x'``; ``x`` a float64 numpy array (the parent's shape),
            ``rng`` a ``np.random.Generator``, params the values of :attr:`params` by name. It must
            be a module-level function (operators travel to worker processes by pickling).
        params: the declared parameters (possibly none).
        doc: one line on what it does and its source.
    """

    name: str
    fn: Callable[..., np.ndarray]
    params: tuple[ParamSpec, ...] = field(default_factory=tuple)
    doc: str = ""

    def apply(self, construction: Any, params: Mapping[str, float] | Sequence[float], rng: np.random.Generator) -> np.ndarray:
        """Apply the operator (deterministic given ``params`` and the state of ``rng``).

        Args:
            construction: the parent, anything ``np.asarray`` turns into float64.
            params: values by name, or unit values ``[0, 1]`` in :attr:`params` order (mapped by
                :meth:`ParamSpec.value`).
            rng: the only randomness the operator may use.

        Returns:
            The child as a float64 numpy array (not verified here: the env verifies it).

        Raises:
            ValueError: missing or unknown parameter names.
        """
        if not isinstance(params, Mapping):
            units = list(params)
            if len(units) != len(self.params):
                raise ValueError(f"operator {self.name!r} takes {len(self.params)} parameters, got {len(units)}")
            params = {p.name: p.value(u) for p, u in zip(self.params, units)}
        names = {p.name for p in self.params}
        if set(params) != names:
            raise ValueError(f"operator {self.name!r} takes parameters {sorted(names)}, got {sorted(params)}")
        x = np.array(construction, dtype=np.float64)
        return np.asarray(self.fn(x, rng, **params), dtype=np.float64)


def apply_operator(operator: Operator, construction: Any, units: Sequence[float], seed: int) -> np.ndarray:
    """``operator.apply(construction, units, default_rng(seed))``: a picklable job for a worker process.

    Args:
        operator: the operator; construction: the parent; units: unit parameter values in
        ``[0, 1]``; seed: seeds the operator's generator (drawn by the policy from its own).
    """
    return operator.apply(construction, units, np.random.default_rng(seed))
