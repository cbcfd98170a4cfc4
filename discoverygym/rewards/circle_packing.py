"""Circle packing in the unit square: maximise the sum of radii (AlphaEvolve B.12; problems.md).

A construction is an (n, 3) array of rows [x, y, r]. Rules: r >= 0; every circle inside
[0, 1]²; circles pairwise disjoint (touching allowed). TTT-Discover and TES accept a slack
``tol = 1e-12`` on containment and overlap (two TES records need it); this is the default and
``metrics["strict_valid"]`` tells whether the packing also holds with no slack at all.
Score = Σ r, from the returned radii.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score, as_float_array, require_range

#: slack accepted by TTT-Discover / TES on containment and overlap.
DEFAULT_TOL = 1e-12
#: most circles accepted when ``n`` is not fixed (the pairwise check holds n^2/2 distances).
MAX_CIRCLES = 2000


def slacks(xyr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-circle distance outside the square and per-pair overlap, both <= 0 when satisfied.

    Returns:
        ``(outside, i, j, overlap)``: outside[k] = max(r-x, x+r-1, r-y, y+r-1) of circle k;
        overlap[p] = r_i + r_j - |c_i - c_j| for the pair (i[p], j[p]), i < j.
    """
    x, y, r = xyr.T
    outside = np.max(np.stack([r - x, x + r - 1.0, r - y, y + r - 1.0]), axis=0)
    i, j = np.triu_indices(len(xyr), k=1)
    overlap = (r[i] + r[j]) - np.hypot(x[i] - x[j], y[i] - y[j])
    return outside, i, j, overlap


def circle_violation(circles: Any) -> float:
    """How far a packing is from valid, from the verifier's own :func:`slacks` (0 when it holds with no slack).

    ``Σ_k max(0, outside_k) + Σ_k max(0, −r_k) + Σ_pairs max(0, overlap_p)``, in units of the
    square's side; ``inf`` for a construction that is not a finite ``(n, 3)`` array. The graded
    violation of :attr:`Problem.violation <discoverygym.envs.problem.Problem>` for circle packing.
    """
    xyr = np.asarray(circles, dtype=np.float64)
    if xyr.ndim != 2 or xyr.shape[1] != 3 or not np.isfinite(xyr).all():
        return math.inf
    outside, _, _, overlap = slacks(xyr)
    return float(np.maximum(0.0, outside).sum() + np.maximum(0.0, -xyr[:, 2]).sum() + np.maximum(0.0, overlap).sum())


def circle_packing(circles: Any, n: int | None = None, tol: float = DEFAULT_TOL) -> Score:
    """Score a packing of circles in the unit square by the sum of radii (higher is better).

    Args:
        circles: (n, 3) nested list/array of rows [x, y, r], finite floats.
        n: required number of circles (26 or 32 for the registered envs); ``None`` = any n >= 1.
        tol: slack on containment and pairwise overlap (1e-12 as in TTT-Discover/TES; 0 = strict).

    Returns:
        :class:`Score`, ``value`` = Σ r; metrics ``n``, ``strict_valid`` (bool: valid with tol = 0),
        ``max_overlap`` and ``max_outside`` (largest violation in units of the square's side, <= 0
        means none).

    Raises:
        InvalidSolution: wrong shape or count (more than 2000 when ``n`` is None), non-finite,
            a negative radius, a circle sticking out
            of the square, or two circles overlapping (named by index and amount).
    """
    xyr = as_float_array(circles, "circles", ndim=2, row_len=3)
    if n is not None and len(xyr) != n:
        raise InvalidSolution(f"expected {n} circles, got {len(xyr)}")
    if len(xyr) > MAX_CIRCLES:
        raise InvalidSolution(f"{len(xyr)} circles is more than the limit of {MAX_CIRCLES}")
    require_range(xyr[:, 2], "r", 0.0, None)
    outside, i, j, overlap = slacks(xyr)
    bad = np.flatnonzero(outside > tol)
    if bad.size:
        k = int(bad[0])
        x, y, r = (float(v) for v in xyr[k])
        raise InvalidSolution(
            f"circle {k} (x={x!r}, y={y!r}, r={r!r}) extends {outside[k]:.3g} outside the unit square"
        )
    bad = np.flatnonzero(overlap > tol)
    if bad.size:
        a, b = int(i[bad[0]]), int(j[bad[0]])
        raise InvalidSolution(
            f"circles {a} and {b} overlap by {overlap[bad[0]]:.3g} (centre distance < r_{a} + r_{b})"
            + (f"; {bad.size} overlapping pairs in all" if bad.size > 1 else "")
        )
    max_overlap = float(np.max(overlap, initial=-np.inf))
    metrics = {
        "n": len(xyr),
        "strict_valid": bool(np.all(outside <= 0.0) and max_overlap <= 0.0),
        "max_overlap": max_overlap,
        "max_outside": float(np.max(outside)),
    }
    return Score(float(np.sum(xyr[:, 2])), metrics)
