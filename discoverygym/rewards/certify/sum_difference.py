"""Certificate of the sum-difference exponent (the float verifier: ``rewards/sum_difference.py``).

|A|, |A+A| and |A−A| are exact integer counts: Python sets of Python ints up to 512 elements, above
that the supports of the exact integer convolutions 1_A * 1_A and 1_A * 1_{−A} of A's indicator
(big-number multiplication, :func:`~discoverygym.rewards.certify.exact.integer_convolution`); C(A) =
log(|A+A|/|A|) / log(|A−A|/|A|) is irrational, so it is enclosed in a rigorous interval from
``decimal``'s correctly rounded ``ln`` at 60 digits (:func:`~discoverygym.rewards.certify.exact.enclose`).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.certify.exact import enclose, exact_vector, integer_convolution, precise
from discoverygym.rewards.certify.result import Certified
from discoverygym.rewards.common import MAX_ENTRIES
from discoverygym.rewards.sum_difference import MAX_ABS, MAX_SIZE, require_size


def exact_set_sizes(a: list[int]) -> tuple[int, int]:
    """|A+A| and |A−A| in exact integer arithmetic (module docstring).

    Args:
        a: sorted distinct Python ints (non-empty).

    Returns:
        ``(sumset, diffset)``.

    Raises:
        InvalidSolution: A's range too long to convolve exactly (over ~10^7 integers).
    """
    if len(a) <= MAX_SIZE:
        return len({x + y for x in a for y in a}), len({x - y for x in a for y in a})
    indicator = [0] * (a[-1] - a[0] + 1)
    for x in a:
        indicator[x - a[0]] = 1
    sums = integer_convolution(indicator, indicator)
    diffs = integer_convolution(indicator, indicator[::-1])
    return sum(1 for c in sums if c), sum(1 for c in diffs if c)


def certify_sum_difference(values: Any, max_size: int | None = MAX_SIZE) -> Certified:
    """Certify C(A) of a finite integer set A (duplicates removed, as the verifier does).

    Args:
        values: the construction (a list of integers, |a| <= 10^6).
        max_size: most distinct elements (SimpleTES: 512; ``None`` for ``SumDifference-Large-v0``).

    Returns:
        :class:`Certified` (interval); facts ``size``, ``sumset``, ``diffset`` (exact counts).

    Raises:
        InvalidSolution: a non-integer or out-of-range entry, |A| outside [2, max_size], a ratio ≤ 1.
    """
    numbers = exact_vector(values, "A", MAX_ENTRIES)  # the verifier's limit on entries (duplicates included)
    for i, v in enumerate(numbers):
        if v != v.to_integral_value() or abs(v) > MAX_ABS:
            raise InvalidSolution(f"A[{i}] = {v} is not an integer in [-{MAX_ABS}, {MAX_ABS}]")
    a = sorted({int(v) for v in numbers})
    require_size(len(a), max_size)
    sums, diffs = exact_set_sizes(a)
    if not (sums > len(a) and diffs > len(a)):
        raise InvalidSolution(f"|A+A|/|A| = {sums}/{len(a)} and |A−A|/|A| = {diffs}/{len(a)} must both exceed 1")
    facts = {"size": len(a), "sumset": sums, "diffset": diffs, "duplicates": len(numbers) - len(a)}
    formula = f"C(A) = log({sums}/{len(a)}) / log({diffs}/{len(a)})"
    method = ("exact set counts in integers" + ("" if len(a) <= MAX_SIZE else
              " (supports of exact big-integer convolutions of A's indicator)"))
    if sums == diffs:  # log(x)/log(x) with x > 1: exactly 1 (an arithmetic progression, for one)
        return Certified.rational(Fraction(1), formula=formula, method=method + "; equal counts, so exactly 1",
                                  facts=facts, inputs={"A": a})
    ctx = precise()
    value = ctx.divide(ctx.ln(ctx.divide(Decimal(sums), Decimal(len(a)))),
                       ctx.ln(ctx.divide(Decimal(diffs), Decimal(len(a)))))
    return Certified(
        None, enclose(value), formula=formula,
        method=method + "; logarithms correctly rounded to 60 digits, enclosed in ±1e-50 relative",
        facts=facts, inputs={"A": a},
    )
