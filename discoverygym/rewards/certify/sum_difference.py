"""Certificate of the sum-difference exponent (the float verifier: ``rewards/sum_difference.py``).

|A|, |A+A| and |A−A| are exact integer counts (Python sets of Python ints); C(A) =
log(|A+A|/|A|) / log(|A−A|/|A|) is irrational, so it is enclosed in a rigorous interval from
``decimal``'s correctly rounded ``ln`` at 60 digits (:func:`~discoverygym.rewards.certify.exact.enclose`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.certify.exact import enclose, exact_vector, precise
from discoverygym.rewards.certify.result import Certified
from discoverygym.rewards.sum_difference import MAX_ABS, MAX_SIZE, MIN_SIZE


def certify_sum_difference(values: Any) -> Certified:
    """Certify C(A) of a finite integer set A (duplicates removed, as the verifier does).

    Returns:
        :class:`Certified` (interval); facts ``size``, ``sumset``, ``diffset`` (exact counts).

    Raises:
        InvalidSolution: a non-integer or out-of-range entry, |A| outside [2, 512], a ratio ≤ 1.
    """
    numbers = exact_vector(values, "A", 10 * MAX_SIZE)
    for i, v in enumerate(numbers):
        if v != v.to_integral_value() or abs(v) > MAX_ABS:
            raise InvalidSolution(f"A[{i}] = {v} is not an integer in [-{MAX_ABS}, {MAX_ABS}]")
    a = sorted({int(v) for v in numbers})
    if not MIN_SIZE <= len(a) <= MAX_SIZE:
        raise InvalidSolution(f"|A| = {len(a)} distinct integers is outside [{MIN_SIZE}, {MAX_SIZE}]")
    sums = len({x + y for x in a for y in a})
    diffs = len({x - y for x in a for y in a})
    if not (sums > len(a) and diffs > len(a)):
        raise InvalidSolution(f"|A+A|/|A| = {sums}/{len(a)} and |A−A|/|A| = {diffs}/{len(a)} must both exceed 1")
    ctx = precise()
    value = ctx.divide(ctx.ln(ctx.divide(Decimal(sums), Decimal(len(a)))),
                       ctx.ln(ctx.divide(Decimal(diffs), Decimal(len(a)))))
    return Certified(
        None, enclose(value),
        formula=f"C(A) = log({sums}/{len(a)}) / log({diffs}/{len(a)})",
        method="exact set counts in integers; logarithms correctly rounded to 60 digits, enclosed in ±1e-50 relative",
        facts={"size": len(a), "sumset": sums, "diffset": diffs, "duplicates": len(numbers) - len(a)},
        inputs={"A": a},
    )
