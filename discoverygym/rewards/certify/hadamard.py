"""Certificate of |det H| / 29^(29/2) for a ±1 matrix (the float verifier: ``rewards/hadamard.py``).

|det H| is an exact integer (Bareiss, shared with the verifier); the value's square det² / 29^29
is an exact rational, and the value itself is enclosed from ``decimal``'s correctly rounded square
root at 60 digits.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.certify.exact import enclose, exact_number, precise
from discoverygym.rewards.certify.result import Certified
from discoverygym.rewards.hadamard import ORDER, bareiss_determinant


def certify_hadamard(matrix: Any, order: int = ORDER) -> Certified:
    """Certify |det H| / order^(order/2) of an order × order matrix of ±1 entries.

    Returns:
        :class:`Certified` (interval); facts ``abs_det`` (exact integer, as a string) and
        ``value_squared`` (the exact fraction det² / order^order, as a string).

    Raises:
        InvalidSolution: wrong shape or an entry other than ±1 (named by index).
    """
    if not isinstance(matrix, list) or len(matrix) != order or not all(
            isinstance(row, list) and len(row) == order for row in matrix):
        raise InvalidSolution(f"H must be a {order} x {order} list of rows")
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            if exact_number(v, f"H[{i}, {j}]") not in (1, -1):
                raise InvalidSolution(f"H[{i}, {j}] = {v} is not +1 or -1")
    det = abs(bareiss_determinant(np.array([[int(v) for v in row] for row in matrix], dtype=object)))
    square = Fraction(det * det, order**order)
    ctx = precise()
    value = ctx.sqrt(ctx.divide(Decimal(square.numerator), Decimal(square.denominator)))
    return Certified(
        None, enclose(value),
        formula=f"|det H| / {order}^({order}/2) = sqrt(det² / {order}^{order})",
        method="exact integer determinant (Bareiss fraction-free elimination); square root correctly "
               "rounded to 60 digits, enclosed in ±1e-50 relative",
        facts={"abs_det": str(det), "value_squared": f"{square.numerator}/{square.denominator}", "order": order},
        inputs={"H": [[int(v) for v in row] for row in matrix]},
    )
