"""GaussianMutation: a frozen numeric policy that perturbs the parent construction.

It proposes; the verifier decides. Nothing is repaired, clamped or rescaled to make a proposal
valid (a circle packing move that creates an overlap is simply an invalid candidate).

Moves, by the parent's data type:

* float constructions: a random subset of units (entries of a 1-D array, rows of a 2-D array,
  e.g. one circle [x, y, r]) each move by ``N(0, (sigma * spread_j)^2)`` per column j, where
  ``spread_j = max(std_j, mean |x_j|, 1e-12)`` is the column's scale (so step sizes follow the
  problem: about 1% of the square's side for circle centres, 2% of a radius);
* ±1 matrices/arrays (Hadamard): the selected entries flip sign;
* other integer constructions (sum-difference sets): the selected entries move by a nonzero
  rounded Gaussian step of scale ``max(1, sigma * spread)``.

Each unit is selected with probability ``fraction`` (at least one unit per proposal).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from discoverygym.policy import Sample, SamplingContext

__all__ = ["GaussianMutation", "MutationConfig"]


@dataclass
class MutationConfig:
    """Hyper-parameters of :class:`GaussianMutation` (our defaults; no paper prescribes them)."""

    sigma: float = 0.02  # step, as a fraction of each column's spread
    fraction: float = 0.1  # probability that a unit (entry or row) moves


class GaussianMutation:
    """Perturb the parent construction with Gaussian moves (see the module docstring).

    Args:
        sigma: relative step size (> 0).
        fraction: probability that each unit moves, in (0, 1].

    ``sample(contexts, n, rng)`` returns ``n`` :class:`~discoverygym.policy.Sample` per context
    whose ``action`` is a numpy array (float64, or int64 for integer constructions) of the parent's
    shape. Only ``context.parent`` is used.

    Raises:
        ValueError: bad hyper-parameters; a parent without a numeric construction (in ``sample``).
    """

    name = "mutation"

    #: this policy proposes constructions (checked by the search runner before a run starts)
    action_modes = ("construction",)

    def __init__(self, sigma: float = 0.02, fraction: float = 0.1) -> None:
        if not sigma > 0 or not 0 < fraction <= 1:
            raise ValueError(f"need sigma > 0 and 0 < fraction <= 1, got sigma={sigma}, fraction={fraction}")
        self.config = MutationConfig(sigma=sigma, fraction=fraction)

    def sample(
        self, contexts: Sequence[SamplingContext], n: int, rng: np.random.Generator
    ) -> list[list[Sample]]:
        """``n`` mutated copies of each context's parent, as :class:`~discoverygym.policy.Sample` s."""
        return [[Sample(action=self.mutate(ctx.parent.solution, rng), context=c, parent_id=ctx.parent.id)
                 for _ in range(n)] for c, ctx in enumerate(contexts)]

    def _select(self, units: int, rng: np.random.Generator) -> np.ndarray:
        mask = rng.random(units) < self.config.fraction
        if not mask.any():
            mask[int(rng.integers(units))] = True
        return mask

    def mutate(self, solution: Any, rng: np.random.Generator) -> np.ndarray:
        """One proposal from ``solution`` (a 1-D or 2-D numeric construction)."""
        if solution is None:
            raise ValueError("the parent has no construction to mutate")
        x = np.asarray(solution)
        if x.dtype.kind not in "iuf" or x.ndim not in (1, 2) or x.size == 0:
            raise ValueError(
                f"GaussianMutation needs a 1-D or 2-D numeric construction, got {x.dtype} {x.shape}"
            )
        sigma = self.config.sigma
        if x.dtype.kind in "iu":
            flat = x.astype(np.int64).ravel().copy()
            mask = self._select(flat.size, rng)
            if np.all(np.abs(flat) == 1):  # ±1 entries: flip signs
                flat[mask] *= -1
            else:
                scale = max(1.0, sigma * max(float(flat.std()), float(np.abs(flat).mean())))
                step = np.rint(rng.normal(0.0, scale, int(mask.sum()))).astype(np.int64)
                step[step == 0] = rng.choice(np.array([-1, 1]), int((step == 0).sum()))
                flat[mask] += step
            return flat.reshape(x.shape)
        y = x.astype(np.float64).copy()
        cols = y if y.ndim == 2 else y[:, None]
        spread = np.maximum(np.maximum(cols.std(axis=0), np.abs(cols).mean(axis=0)), 1e-12)
        mask = self._select(cols.shape[0], rng)
        cols[mask] += rng.normal(0.0, 1.0, (int(mask.sum()), cols.shape[1])) * (sigma * spread)
        return y
