"""The mathematics problems (TTT-Discover §4.1, AlphaEvolve App. B, SimpleTES): data + verifiers.

Each problem is one :class:`~discoverygym.envs.problem.Problem` value; verifiers live in
``discoverygym/rewards/`` (one file per family). Records: ``discoverygym.records`` (docs/problems.md).
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial

import numpy as np

from discoverygym import records
from discoverygym.envs.operators.circles import CIRCLE_OPERATORS
from discoverygym.envs.operators.steps import AC1_OPERATORS, AC2_OPERATORS, AC3_OPERATORS, ERDOS_OPERATORS
from discoverygym.envs.polish import ac1_smooth_max, erdos_smooth_max, slsqp_circles
from discoverygym.envs.problem import Problem
from discoverygym.envs.render import circles, integer_set, sign_matrix, step_function
from discoverygym.rewards.autocorrelation import (
    first_autocorrelation,
    nonnegative_violation,
    second_autocorrelation,
    third_autocorrelation,
)
from discoverygym.rewards.circle_packing import circle_packing, circle_violation
from discoverygym.rewards.erdos import erdos_min_overlap, step_height_violation
from discoverygym.rewards.hadamard import hadamard_determinant
from discoverygym.rewards.sum_difference import sum_difference


# ----------------------------------------------------------------------------- initial states
def _erdos_initial(rng: np.random.Generator) -> list[float]:
    """Random step function with 50-200 pieces, values in [0.1, 0.9], Σh = n/2."""
    u = rng.uniform(0.0, 1.0, int(rng.integers(50, 201)))
    return (0.5 + 0.8 * (u - u.mean()) / max(1.0, 2 * np.abs(u - u.mean()).max())).tolist()


def _repeated_value(rng: np.random.Generator) -> list[float]:
    """A random positive value repeated 1000-8000 times (TTT-Discover's AC1/AC2 initial states)."""
    return [float(rng.uniform(0.1, 1.0))] * int(rng.integers(1000, 8001))


def _ac3_initial(rng: np.random.Generator) -> list[float]:
    """Random step function with 400 pieces in [0, 1] (SimpleTES used 400 pieces)."""
    return rng.uniform(0.0, 1.0, 400).tolist()


def _grid_circles(n: int, rng: np.random.Generator) -> list[list[float]]:
    """n small circles on a jittered grid: valid, far from optimal (Σr about 0.3 n / sqrt(n))."""
    k = math.ceil(math.sqrt(n))
    cell = 1.0 / k
    idx = np.arange(n)
    x = (idx % k + 0.5) * cell + rng.uniform(-0.1, 0.1, n) * cell
    y = (idx // k + 0.5) * cell + rng.uniform(-0.1, 0.1, n) * cell
    r = np.full(n, 0.3 * cell)
    return np.stack([x, y, r], axis=1).tolist()


def _random_set(rng: np.random.Generator) -> list[int]:
    """30 distinct random integers from [0, 100)."""
    return sorted(int(v) for v in rng.choice(100, size=30, replace=False))


def _random_signs(rng: np.random.Generator, order: int = 29) -> list[list[int]]:
    """Random ±1 matrix of the given order."""
    return rng.choice(np.array([-1, 1]), size=(order, order)).tolist()


# ----------------------------------------------------------------------------- problems
_STEP_RETURNS = "a 1-D list or numpy array of n floats (the step heights)"

ERDOS = Problem(
    name="erdos_min_overlap",
    title="Erdős minimum overlap problem",
    quantity="C5 (upper bound on the minimum overlap constant)",
    direction="min",
    verifier=erdos_min_overlap,
    initial=_erdos_initial,
    description=(
        "Find a step function h on [0, 2] with n equal pieces and values in [0, 1] whose integral "
        "is 1 (the verifier rescales the heights so that their sum is n/2, then requires every "
        "height to lie in [0, 1]). Its bound is C5 = (2/n) * max over shifts k of the full "
        "cross-correlation of h with 1 - h. Any n >= 1 is allowed. Lower C5 improves the upper "
        "bound on Erdős' minimum overlap constant."
    ),
    sota=records.sota("ErdosMinOverlap-v0", best_human=0.380927),
    row_len=None,
    returns=_STEP_RETURNS,
    render=step_function,
    polish=erdos_smooth_max,
    operators=ERDOS_OPERATORS,
    bounds=(0.0, 1.0),  # heights (rescaled by the verifier, which needs [0, 1] after)
    violation=step_height_violation,
    example="erdos_min_overlap.py",
)

AC1 = Problem(
    name="first_autocorrelation",
    title="First autocorrelation inequality (AC1)",
    quantity="C1 (upper bound)",
    direction="min",
    verifier=first_autocorrelation,
    initial=_repeated_value,
    description=(
        "Find a nonnegative step function f on [-1/4, 1/4] with n equal pieces (heights a_i >= 0, "
        "sum at least 0.01). Its bound is C1 = 2n * max_k (a*a)_k / (sum a)^2, where a*a is the "
        "discrete autoconvolution. Lower C1 improves the upper bound of the first autocorrelation "
        "inequality."
    ),
    sota=records.sota("FirstAutocorrelation-v0", best_human=1.50973),
    row_len=None,
    returns=_STEP_RETURNS,
    render=step_function,
    polish=ac1_smooth_max,
    operators=AC1_OPERATORS,
    bounds=(0.0, 1.0),  # nonnegative, scale invariant
    violation=nonnegative_violation,
    example="first_autocorrelation.py",
)

AC2 = Problem(
    name="second_autocorrelation",
    title="Second autocorrelation inequality (AC2)",
    quantity="C2 (lower bound)",
    direction="max",
    verifier=second_autocorrelation,
    initial=_repeated_value,
    description=(
        "Find a nonnegative step function f with n equal pieces, not identically 0. With c = f*f "
        "(2n - 1 values) placed with zeros at both ends on equispaced points of [-1/2, 1/2], the "
        "bound is C2 = ||c||_2^2 / (||c||_1 * ||c||_inf), the L2 norm taken of the piecewise-linear "
        "interpolant (Simpson-exact). Higher C2 improves the lower bound of the second "
        "autocorrelation inequality."
    ),
    sota=records.sota("SecondAutocorrelation-v0", best_human=0.9015),
    row_len=None,
    returns=_STEP_RETURNS,
    render=step_function,
    operators=AC2_OPERATORS,
    bounds=(0.0, 1.0),  # nonnegative, scale invariant
    violation=nonnegative_violation,
)

AC3 = Problem(
    name="third_autocorrelation",
    title="Third autocorrelation inequality (AC3)",
    quantity="C3′ (upper bound; AlphaEvolve's max|f∗f|, not EinsteinArena's |max f∗f|)",
    direction="min",
    verifier=third_autocorrelation,
    initial=_ac3_initial,
    description=(
        "Find a step function f on [-1/4, 1/4] with n equal pieces; heights may be negative. With "
        "dx = 0.5/n the bound is C3 = max_k |(f*f)_k * dx| / (sum f * dx)^2; the integral must not "
        "vanish. Lower C3 improves the upper bound of the third autocorrelation inequality."
    ),
    sota=records.sota("ThirdAutocorrelation-v0"),
    row_len=None,
    returns=_STEP_RETURNS,
    render=step_function,
    operators=AC3_OPERATORS,
    bounds=(-1.0, 1.0),
)


def circle_packing_problem(n: int, best_human: float) -> Problem:
    """The circle packing problem with n circles (sum of radii in the unit square); its record comes from
    :data:`discoverygym.records.RECORDS` (``CirclePacking-{n}-v0``)."""
    return Problem(
        name=f"circle_packing_{n}",
        title=f"Packing {n} circles in the unit square",
        quantity="sum of radii",
        direction="max",
        verifier=partial(circle_packing, n=n),
        initial=partial(_grid_circles, n),
        description=(
            f"Place {n} disjoint circles inside the unit square [0, 1] x [0, 1] so that the sum of "
            "their radii is as large as possible. Each circle is a row [x, y, r] with r >= 0; "
            "circles may touch. A slack of 1e-12 is tolerated on containment and overlap."
        ),
        sota=records.sota(f"CirclePacking-{n}-v0", best_human=best_human),
        row_len=3,
        returns=f"an array of shape ({n}, 3), rows [x, y, r]",
        render=circles,
        failure_reward=-1.0,  # Σr = 0 is a valid (if useless) packing with reward 0
        polish=slsqp_circles,
        operators=CIRCLE_OPERATORS,
        bounds=(0.0, 1.0),  # x, y in the unit square; r <= 0.5
        violation=circle_violation,
        example="circle_packing.py",
    )


CP26 = circle_packing_problem(26, 2.634)
CP32 = circle_packing_problem(32, 2.936)

SUM_DIFFERENCE = Problem(
    name="sum_difference",
    title="Sum-difference exponent of a finite integer set",
    quantity="C(A) = log(|A+A|/|A|) / log(|A-A|/|A|)",
    direction="max",
    verifier=sum_difference,
    initial=_random_set,
    description=(
        "Find a finite set A of integers (between 2 and 512 distinct elements, each of absolute "
        "value at most 10^6) making C(A) = log(|A+A|/|A|) / log(|A-A|/|A|) large, where A+A and "
        "A-A are the sets of pairwise sums and differences. Both ratios must exceed 1. "
        "Duplicates are ignored."
    ),
    sota=records.sota("SumDifference-v0", best_human=1.143975),
    row_len=None,
    returns="a 1-D list of integers",
    render=integer_set,
)

SUM_DIFFERENCE_LARGE = dataclasses.replace(
    SUM_DIFFERENCE,
    name="sum_difference_large",
    title="Sum-difference exponent of a finite integer set, any size",
    verifier=partial(sum_difference, max_size=None),
    description=(
        "Find a finite set A of integers (at least 2 distinct elements, any number of them, each of "
        "absolute value at most 10^6) making C(A) = log(|A+A|/|A|) / log(|A-A|/|A|) large, where "
        "A+A and A-A are the sets of pairwise sums and differences. Both ratios must exceed 1. "
        "Duplicates are ignored. SumDifference-v0 without SimpleTES's cap of 512 elements."
    ),
    sota=records.sota("SumDifference-Large-v0", best_human=1.143975),
)

HADAMARD_29 = Problem(
    name="hadamard_29",
    title="Maximal determinant of a ±1 matrix of order 29",
    quantity="|det H| / 29^(29/2)",
    direction="max",
    verifier=hadamard_determinant,
    initial=_random_signs,
    description=(
        "Find a 29 x 29 matrix H with every entry +1 or -1 maximising |det H| / 29^(29/2) (1 would "
        "meet Hadamard's bound, impossible for order 29). The determinant is computed exactly in "
        "integer arithmetic."
    ),
    sota=records.sota("Hadamard-29-v0"),
    row_len=29,
    returns="a 29 x 29 nested list or array of +1/-1",
    render=sign_matrix,
    failure_reward=-1.0,  # a singular matrix is valid with score (and reward) 0
    bounds=(-1.0, 1.0),
)

#: env id -> problem, in the order ``discoverygym list`` prints them.
MATH_ENVS: dict[str, Problem] = {
    "ErdosMinOverlap-v0": ERDOS,
    "FirstAutocorrelation-v0": AC1,
    "SecondAutocorrelation-v0": AC2,
    "ThirdAutocorrelation-v0": AC3,
    "CirclePacking-26-v0": CP26,
    "CirclePacking-32-v0": CP32,
    "SumDifference-v0": SUM_DIFFERENCE,
    "SumDifference-Large-v0": SUM_DIFFERENCE_LARGE,
    "Hadamard-29-v0": HADAMARD_29,
}
