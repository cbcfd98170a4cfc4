"""Maximal determinant of a ±1 matrix of order 29 (SimpleTES, problems.md).

Score = |det H| / 29^(29/2) (the Hadamard bound is 1), with |det H| an exact integer from
fraction-free Gaussian elimination (Bareiss 1968), never a floating-point determinant.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score, as_float_array

ORDER = 29


def bareiss_determinant(matrix: np.ndarray) -> int:
    """Exact determinant of an integer square matrix by the Bareiss fraction-free algorithm.

    Args:
        matrix: (m, m) array of integers (any integer or integral-float dtype).

    Returns:
        The determinant as a Python ``int`` (arbitrary precision).

    Raises:
        ValueError: the matrix is not square.
    """
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix must be square, got shape {matrix.shape}")
    m = np.array([[int(v) for v in row] for row in matrix.tolist()], dtype=object)
    size = m.shape[0]
    sign, prev = 1, 1
    for k in range(size - 1):  # loop over pivots; each step updates the trailing block at once
        if m[k, k] == 0:
            nonzero = [i for i in range(k + 1, size) if m[i, k] != 0]
            if not nonzero:
                return 0
            i = nonzero[0]
            m[[k, i]] = m[[i, k]]
            sign = -sign
        block = m[k + 1 :, k + 1 :] * m[k, k] - np.outer(m[k + 1 :, k], m[k, k + 1 :])
        m[k + 1 :, k + 1 :] = block // prev  # exact division (Bareiss' identity)
        prev = m[k, k]
    return sign * int(m[size - 1, size - 1])


def hadamard_determinant(matrix: Any, order: int = ORDER) -> Score:
    """Score a ±1 matrix by its normalised absolute determinant (higher is better).

    Args:
        matrix: (order, order) nested list/array with every entry exactly +1 or -1.
        order: matrix order (29 for the registered env).

    Returns:
        :class:`Score` with ``value`` = |det| / order^(order/2) and metrics ``abs_det`` (the exact
        integer, as a decimal string) and ``order``.

    Raises:
        InvalidSolution: wrong shape, non-finite, or an entry other than ±1 (named by index).
    """
    arr = as_float_array(matrix, "H", ndim=2, row_len=order)
    if arr.shape != (order, order):
        raise InvalidSolution(f"H must be {order}×{order}, got shape {arr.shape}")
    bad = np.argwhere(np.abs(arr) != 1.0)
    if len(bad):
        i, j = (int(v) for v in bad[0])
        raise InvalidSolution(f"H[{i}, {j}] = {float(arr[i, j])!r} is not +1 or -1")
    det = abs(bareiss_determinant(arr))
    # |det| < 2^80 for order 29: float(det) is correctly rounded; divide by order^(order/2).
    value = float(det) / (order ** (order // 2) * math.sqrt(order) ** (order % 2))
    return Score(value, {"abs_det": str(det), "order": order})
