"""Exact certificate of a circle packing's sum of radii (the float verifier: ``rewards/circle_packing.py``).

Rows [x, y, r] as integers over one power of ten (X = 10^D x, ...). Every rule is checked in
integers, with no square root: containment ``R ≤ X``, ``X + R ≤ 10^D`` (same for Y), ``R ≥ 0``;
non-overlap ``(X_i − X_j)² + (Y_i − Y_j)² ≥ (R_i + R_j)²``. The value is Σr, an exact decimal.

Tolerance convention: TTT-Discover and SimpleTES accept a slack ``tol = 1e-12`` on containment and
overlap (``r_i + r_j − |c_i − c_j| ≤ tol``), and some records need it. The certificate checks both
conventions exactly and says which holds: ``strict`` (no slack at all) or only ``within 1e-12``.
When only the slack holds, it also certifies a strictly valid lower bound: shrinking every radius by
tol (``r'_i = max(r_i − tol, 0)``) gives a packing with no overlap at all, whose sum is proved here.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.certify.exact import affordable, exact_vector, fraction_text, scaled_integers
from discoverygym.rewards.certify.result import Certified
from discoverygym.rewards.circle_packing import DEFAULT_TOL, MAX_CIRCLES

TOL = Fraction(str(DEFAULT_TOL))  # 1/10^12 exactly


def _violations(rows: list[tuple[int, int, int]], one: int, slack: int) -> str | None:
    """The first broken rule with slack ``slack`` (integers on the scale ``one`` = 10^D), or None."""
    for k, (x, y, r) in enumerate(rows):
        if r < 0:  # no tolerance for radii: the env refuses any r < 0, as here with or without slack
            return f"circle {k} has a negative radius (radii must be >= 0, with no tolerance, as the env reads them)"
        if r > x + slack or x + r > one + slack or r > y + slack or y + r > one + slack:
            return f"circle {k} extends outside the unit square"
    for i in range(len(rows)):
        xi, yi, ri = rows[i]
        for j in range(i + 1, len(rows)):
            xj, yj, rj = rows[j]
            reach = ri + rj - slack
            if reach > 0 and (xi - xj) ** 2 + (yi - yj) ** 2 < reach * reach:
                return f"circles {i} and {j} overlap"
    return None


def certify_circle_packing(circles: Any, n: int | None = None) -> Certified:
    """Certify Σr of a packing of circles in the unit square, in exact arithmetic.

    Args:
        circles: JSON list of n rows [x, y, r].
        n: the required number of circles (26, 32), or None.

    Returns:
        :class:`Certified`, exact Σr; facts ``strict_valid`` (no slack), ``tolerance`` (the slack the
        packing needs: ``"none"`` or ``"1e-12"``) and, when the slack is needed,
        ``strict_lower_bound`` (Σ max(r − 1e-12, 0), a strictly valid packing's sum).

    Raises:
        InvalidSolution: wrong shape or count, non-numbers (float64's range, as the env), or a rule
            broken even with the 1e-12 slack.
        CertifyLimit: the inputs cost too much even as float64 values (numbers that would, with
            every pair compared, are read as the env reads them and ``convention`` says so).
    """
    if not isinstance(circles, list) or not circles or not all(isinstance(r, list) and len(r) == 3 for r in circles):
        raise InvalidSolution("circles must be a non-empty list of rows [x, y, r]")
    if n is not None and len(circles) != n:
        raise InvalidSolution(f"expected {n} circles, got {len(circles)}")
    flat = exact_vector([v for row in circles for v in row], "circles", 3 * MAX_CIRCLES)
    # cost bound: every pair is compared with squared integers of the inputs' digits (issue 52, #5)
    flat, note = affordable(flat, "circles", pairwise_cost=max(1, len(circles) - 1))
    ints, own = scaled_integers(flat)
    scale = max(own, 12)  # the 1e-12 slack is an integer on this scale
    ints = [v * 10 ** (scale - own) for v in ints]
    one, slack = 10**scale, 10 ** (scale - 12)
    rows = [tuple(ints[3 * k : 3 * k + 3]) for k in range(len(circles))]
    strict_error = _violations(rows, one, 0)
    if strict_error is not None:
        loose_error = _violations(rows, one, slack)
        if loose_error is not None:
            slack_text = "" if "negative radius" in loose_error else " by more than the 1e-12 tolerance"
            raise InvalidSolution(f"{loose_error}{slack_text} (exact check)")
    total = Fraction(sum(r for _, _, r in rows), one)
    facts = {"n": len(rows), "strict_valid": strict_error is None,
             "tolerance": "none" if strict_error is None else "1e-12", "D": scale}
    if strict_error is not None:
        facts["strict_violation"] = strict_error
        lower = Fraction(sum(max(r - slack, 0) for _, _, r in rows), one)
        facts["strict_lower_bound"] = fraction_text(lower, 30)
    return Certified.rational(
        total,
        formula="Σ r_i",
        method=f"containment and all {len(rows) * (len(rows) - 1) // 2} pairwise non-overlap conditions in "
               "integers (squared distances, no square roots)",
        convention=("strictly valid (no tolerance)" if strict_error is None else
                    "valid only within the 1e-12 containment/overlap tolerance of TTT-Discover and SimpleTES "
                    f"({strict_error} without it); shrinking every radius by 1e-12 gives a strictly valid "
                    "packing (facts.strict_lower_bound)") + (f"; {note}" if note else ""),
        facts=facts,
        inputs={"circles": [[str(v) for v in flat[3 * k : 3 * k + 3]] for k in range(len(rows))]},
    )
