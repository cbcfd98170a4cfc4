"""Scoring of fitted scaling laws exactly as SLDBench computes it (R² on a split, NMSE per output).

Source: SLDBench ("Can Language Models Discover Scaling Laws?", Lin et al., 2025), repository
linhaowei1/SLD, ``evaluator.py`` ``calculate_final_metrics``: the predictions of every group of a
split are concatenated; for each output dimension NMSE = mean((y − ŷ)²) / var(y) with the
variance of the scored split (population variance; a dimension whose variance is ≤ 1e-9 has
NMSE = inf); R² = 1 − mean NMSE over dimensions. NaN or infinite predictions and shape mismatches
are failures (SLDBench gives them R² = −1; here they raise :class:`InvalidSolution`, which the env
turns into a failure reward strictly below −1).

Reward: R² clipped below at :data:`REWARD_FLOOR` (−1, SLDBench's failure value), so every valid
law earns at least −1 and a failed one :data:`FAILURE_REWARD` (−2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from discoverygym.errors import InvalidSolution

__all__ = ["FAILURE_REWARD", "REWARD_FLOOR", "check_params", "check_predictions", "r2_score", "reward"]

#: lowest reward of a valid law (SLDBench's R² of a failed evaluation).
REWARD_FLOOR = -1.0
#: reward of a failed candidate: strictly below every valid reward.
FAILURE_REWARD = -2.0
#: SLDBench's threshold below which a dimension's variance counts as zero.
_MIN_VARIANCE = 1e-9


def reward(r2: float) -> float:
    """Reward of a valid R²: ``max(r2, REWARD_FLOOR)`` (NaN is refused).

    Raises:
        ValueError: ``r2`` is NaN.
    """
    if math.isnan(r2):
        raise ValueError("R² is NaN")
    return max(float(r2), REWARD_FLOOR)


def check_params(value: Any, cap: int, group: str) -> list[float]:
    """The fitted parameters of one group, as returned (untrusted) by the program's ``fit``.

    Args:
        value: what the sandbox brought back: a flat list of numbers.
        cap: most parameters allowed for one group.
        group: group label, named in messages.

    Returns:
        The parameters as a list of Python floats (length 1..cap, all finite).

    Raises:
        InvalidSolution: not a flat list of real numbers, empty, more than ``cap`` entries, or a
            non-finite entry (an int beyond float64 included).
    """
    if not isinstance(value, list) or not value:
        raise InvalidSolution(f"fit() for group {group!r} must return a non-empty 1-D array of floats, got "
                              f"{type(value).__name__ if not isinstance(value, list) else 'an empty array'}")
    if len(value) > cap:
        raise InvalidSolution(f"fit() for group {group!r} returned {len(value)} parameters; at most {cap} are "
                              "allowed per group")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InvalidSolution(f"fit() for group {group!r}: params[{i}] is {type(v).__name__}, not a real number "
                                  "(params must be a flat 1-D array)")
        try:
            v = float(v)
        except OverflowError:  # a JSON int beyond float64 (the wrapper's conversion is the program's to patch)
            raise InvalidSolution(f"fit() for group {group!r}: params[{i}] is an integer too large for a "
                                  "float64") from None
        if not math.isfinite(v):
            raise InvalidSolution(f"fit() for group {group!r}: params[{i}] = {v} is not finite")
        out.append(v)
    return out


def check_predictions(value: Any, n: int, d: int, group: str, split: str) -> np.ndarray:
    """The predictions of one group, as returned (untrusted) by the program's ``scaling_law``.

    Args:
        value: nested lists of numbers: shape ``(n,)`` or ``(n, d)`` (``(n,)`` only when ``d == 1``).
        n: number of points of the group; d: output dimensions of the task.
        group, split: named in messages.

    Returns:
        float64 ``(n, d)``.

    Raises:
        InvalidSolution: wrong shape, non-numeric entries, NaN or infinite predictions.
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a JSON int beyond float64
        raise InvalidSolution(f"scaling_law() on the {split} points of group {group!r} returned something that is "
                              "not a numeric array") from None
    got = tuple(arr.shape)
    if arr.ndim == 1 and d == 1:
        arr = arr.reshape(-1, 1)
    if arr.shape != (n, d):
        want = f"({n},)" if d == 1 else f"({n}, {d})"
        raise InvalidSolution(f"scaling_law() on the {split} points of group {group!r} returned shape "
                              f"{got}; expected {want}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        raise InvalidSolution(f"scaling_law() on the {split} points of group {group!r}: prediction {i} = "
                              f"{arr[i]} is not finite")
    return arr


def r2_score(y_true: Sequence[np.ndarray], y_pred: Sequence[np.ndarray]) -> tuple[float, list[float]]:
    """SLDBench's R² of a split: the groups' points pooled, NMSE per output dimension, then averaged.

    Args:
        y_true: per group float64 ``(n_g, d)`` labels.
        y_pred: per group float64 ``(n_g, d)`` predictions (already checked).

    Returns:
        ``(r2, nmse_per_dim)``; ``r2`` may be any real number ≤ 1 (−inf when a dimension's
        variance is ≤ 1e-9 and the prediction is not exact).

    Raises:
        ValueError: no points, or shapes that differ (a programming error: check predictions first).
    """
    true = np.concatenate([np.asarray(t, dtype=np.float64) for t in y_true])
    pred = np.concatenate([np.asarray(p, dtype=np.float64) for p in y_pred])
    if true.size == 0 or true.shape != pred.shape:
        raise ValueError(f"cannot score predictions {pred.shape} against labels {true.shape}")
    mse = np.mean((true - pred) ** 2, axis=0)
    var = np.var(true, axis=0)
    nmse = np.divide(mse, var, out=np.full_like(mse, np.inf), where=var > _MIN_VARIANCE)
    return float(1.0 - np.mean(nmse)), [float(v) for v in nmse]
