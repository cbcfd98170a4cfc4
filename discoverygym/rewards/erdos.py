"""Erdős minimum overlap: the upper bound C5 of a step function (TTT-Discover §4.1, problems.md).

h: [0, 2] -> [0, 1] is a step function with n equal pieces. It is rescaled so that its integral
is 1 (Σh = n/2); then every value must lie in [0, 1]. The bound is

    C5 = max_k (h ⋆ (1 - h))_k · (2 / n),   ⋆ = full cross-correlation,

computed from the construction itself (TTT-Discover and TES accepted a self-reported value within
1e-4 of this; we never do).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score, as_float_array, require_range, scale_by_power_of_two
from discoverygym.rewards.convolution import max_abs_convolution, require_max_pieces


def erdos_min_overlap(h: Any, max_pieces: int | None = None, method: str = "auto") -> Score:
    """Score a step function for the Erdős minimum overlap problem (lower C5 is better).

    Args:
        h: 1-D list/array of n >= 1 finite reals, the step heights on [0, 2]. It is rescaled by
            ``(n / 2) / Σh`` before the range check (reported as ``metrics["rescale"]``).
        max_pieces: optional cap on n (TTT-Discover used 1000 as a search filter); ``None`` = only
            the general limit of 100,000 pieces (``convolution.MAX_PIECES``).
        method: convolution method, see :func:`discoverygym.rewards.convolution.convolve`.

    Returns:
        :class:`Score` with ``value`` = C5 (float64) and metrics ``n``, ``rescale``, ``method``.

    Raises:
        InvalidSolution: not a finite 1-D array, Σh <= 0, n above ``max_pieces`` or 100,000, or a rescaled value
            outside [0, 1] (the message names the first such index).
    """
    arr = as_float_array(h, "h", ndim=1)
    n = arr.size
    require_max_pieces(n, "h")
    if max_pieces is not None and n > max_pieces:
        raise InvalidSolution(f"h has {n} pieces, more than the cap of {max_pieces}")
    if not np.sum(arr) > 0:
        raise InvalidSolution(f"Σh = {float(np.sum(arr))!r} must be positive to rescale h to integral 1")
    arr = scale_by_power_of_two(arr)  # exact; the rescaled h is the same, without overflow
    total = float(np.sum(arr))
    rescale = (n / 2) / total
    with np.errstate(over="ignore", invalid="ignore"):
        arr = (arr / total) * (n / 2)  # dividing first keeps subnormal sums finite
    if not np.all(np.isfinite(arr)):
        raise InvalidSolution(f"Σh = {total!r} is too small to rescale h to integral 1 (overflow)")
    require_range(arr, "h (after rescaling to Σh = n/2)", 0.0, 1.0)
    # correlate(h, 1 - h, "full") == convolve(h, reversed(1 - h)); all terms are >= 0.
    peak, _, stats = max_abs_convolution(arr, (1.0 - arr)[::-1].copy(), signed=False, method=method)
    return Score(peak * 2.0 / n, {"n": n, "rescale": rescale, "method": stats["method"]})


def step_height_violation(h: Any) -> float:
    """How far step heights are from valid: mean distance of the rescaled heights (``Σh = n/2``) from ``[0, 1]``.

    ``1 + mean(|h|)`` when ``Σh ≤ 0`` (no rescale exists); ``inf`` for a non-finite or non-1-D input.
    The graded violation of the Erdős problem (:attr:`Problem.violation <discoverygym.envs.problem.Problem>`).
    """
    arr = np.asarray(h, dtype=np.float64)
    if arr.ndim != 1 or not arr.size or not np.isfinite(arr).all():
        return math.inf
    if not arr.sum() > 0:
        return float(1.0 + np.abs(arr).mean())
    arr = arr * (arr.size / 2) / arr.sum()
    return float((np.maximum(0, arr - 1) + np.maximum(0, -arr)).mean())
