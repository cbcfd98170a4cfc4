"""Verifiers against independent, loop-based reference formulas, and their rejections.

The reference implementations below are written from docs/problems.md with plain Python loops
(no shared code with discoverygym.rewards), so a wrong formula or indexing in the package fails.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.autocorrelation import (
    first_autocorrelation,
    second_autocorrelation,
    third_autocorrelation,
)
from discoverygym.rewards.circle_packing import circle_packing
from discoverygym.rewards.convolution import convolve, max_abs_convolution
from discoverygym.rewards.erdos import erdos_min_overlap
from discoverygym.rewards.hadamard import bareiss_determinant, hadamard_determinant
from discoverygym.rewards.sum_difference import sum_difference


# ----------------------------------------------------------------------------- references
def ref_conv(a, b):
    out = [0.0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def ref_erdos(h):
    n = len(h)
    s = sum(h)
    h = [v * (n / 2) / s for v in h]
    g = [1 - v for v in h]
    best = max(sum(h[i] * g[i - k] for i in range(n) if 0 <= i - k < n) for k in range(-(n - 1), n))
    return best * 2 / n


def ref_ac1(f):
    return 2 * len(f) * max(ref_conv(f, f)) / sum(f) ** 2


def ref_ac2(f):
    c = ref_conv(f, f)
    m = len(c)
    h = 1 / (m + 1)
    y = [0.0] + c + [0.0]
    l2 = sum(h / 3 * (y[i] ** 2 + y[i] * y[i + 1] + y[i + 1] ** 2) for i in range(m + 1))
    l1 = sum(abs(v) for v in c) / (m + 1)
    return l2 / (l1 * max(abs(v) for v in c))


def ref_ac3(f):
    dx = 0.5 / len(f)
    return max(abs(v * dx) for v in ref_conv(f, f)) / (sum(f) * dx) ** 2


def ref_det(m):
    """Exact determinant by Gaussian elimination over the rationals."""
    a = [[Fraction(int(v)) for v in row] for row in m]
    n, det = len(a), Fraction(1)
    for k in range(n):
        p = next((i for i in range(k, n) if a[i][k] != 0), None)
        if p is None:
            return 0
        if p != k:
            a[k], a[p] = a[p], a[k]
            det = -det
        det *= a[k][k]
        for i in range(k + 1, n):
            factor = a[i][k] / a[k][k]
            a[i] = [x - factor * y for x, y in zip(a[i], a[k])]
    return int(det)


# ----------------------------------------------------------------------------- values
RNG = np.random.default_rng(12345)


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_values_match_loop_references(n):
    f = RNG.uniform(0, 1, n).tolist()
    signed = RNG.normal(0.3, 1, n).tolist()
    assert math.isclose(first_autocorrelation(f).value, ref_ac1(f), rel_tol=1e-12)
    assert math.isclose(second_autocorrelation(f).value, ref_ac2(f), rel_tol=1e-12)
    assert math.isclose(third_autocorrelation(signed).value, ref_ac3(signed), rel_tol=1e-12)
    h = RNG.uniform(0.3, 0.7, n).tolist()
    assert math.isclose(erdos_min_overlap(h).value, ref_erdos(h), rel_tol=1e-12)


@pytest.mark.parametrize("n", [3000, 9000])
@pytest.mark.parametrize("shape", ["uniform", "spiky", "flat-top"])
def test_fft_guard_returns_the_direct_maximum(n, shape):
    if shape == "uniform":
        a = RNG.uniform(0, 1, n)
    elif shape == "spiky":
        a = RNG.uniform(0, 1e-6, n)
        a[RNG.integers(n, size=5)] = 1.0
    else:  # many near-ties at the maximum, the hard case for a guard
        a = np.ones(n) + RNG.normal(0, 1e-14, n)
    direct = np.convolve(a, a)
    value, k, stats = max_abs_convolution(a, a, signed=False, method="fft")
    assert stats["method"] in ("fft+guard", "direct-fallback")
    assert math.isclose(value, direct.max(), rel_tol=1e-15, abs_tol=0)
    assert math.isclose(direct[k], direct.max(), rel_tol=1e-15)


def test_fft_bound_really_bounds_the_error():
    for n in (2048, 5000, 20000):
        a = RNG.uniform(0, 1, n) ** 4
        c, bound = convolve(a, a, "fft")
        assert bound > 0
        assert np.max(np.abs(c - np.convolve(a, a))) <= bound


def test_ac2_fft_and_direct_agree_and_bound_is_reported():
    f = RNG.uniform(0, 1, 6000)
    fft = second_autocorrelation(f, method="fft")
    direct = second_autocorrelation(f, method="direct")
    assert fft.metrics["method"] == "fft" and direct.metrics["method"] == "direct"
    assert abs(fft.value - direct.value) <= fft.metrics["rel_error_bound"] * direct.value
    assert math.isclose(fft.value, direct.value, rel_tol=1e-12)


def test_hadamard_exact_determinant_matches_rational_elimination():
    for order in (1, 2, 5, 12, 29):
        m = RNG.choice([-1, 1], size=(order, order))
        assert bareiss_determinant(m) == ref_det(m.tolist())
    singular = np.ones((29, 29), dtype=int)
    assert hadamard_determinant(singular).value == 0.0
    sylvester = np.array([[1]])
    for _ in range(2):
        sylvester = np.block([[sylvester, sylvester], [sylvester, -sylvester]])
    assert bareiss_determinant(sylvester) == 4**2  # |det H_4| = 4^(4/2)
    assert hadamard_determinant(sylvester, order=4).value == 1.0


def test_circle_packing_tolerance_and_strict_verdict():
    touching = [[0.25, 0.5, 0.25], [0.75, 0.5, 0.25]]  # tangent to each other and to the walls
    s = circle_packing(touching)
    assert s.value == 0.5 and s.metrics["strict_valid"]
    nudged = [[0.3, 0.5, 0.2], [0.7, 0.5, 0.2 + 5e-13]]  # overlap 5e-13 < 1e-12, well inside
    s = circle_packing(nudged)
    assert not s.metrics["strict_valid"] and s.value == pytest.approx(0.4 + 5e-13, rel=1e-15)
    with pytest.raises(InvalidSolution, match="circles 0 and 1 overlap"):
        circle_packing(nudged, tol=0.0)
    nudged[1][2] += 1e-11
    with pytest.raises(InvalidSolution, match="circles 0 and 1 overlap by 1.05e-11"):
        circle_packing(nudged)


def test_sum_difference_counts_sumset_and_difference_set():
    a = [0, 1, 3, 7]
    sums = {x + y for x in a for y in a}
    diffs = {x - y for x in a for y in a}
    expected = math.log(len(sums) / 4) / math.log(len(diffs) / 4)
    s = sum_difference(a + [3, 3.0])
    assert s.value == pytest.approx(expected, rel=1e-15)
    assert s.metrics["duplicates"] == 2 and s.metrics["size"] == 4


# ----------------------------------------------------------------------------- rejections
@pytest.mark.parametrize(
    "func, bad, message",
    [
        (erdos_min_overlap, [0.1, 0.1, 1.3], r"h \(after rescaling to Σh = n/2\)\[2\] = 1.3 is outside \[0, 1\]"),
        (erdos_min_overlap, [0.0, 0.0], "Σh = 0.0 must be positive"),
        (erdos_min_overlap, [0.5, float("nan")], r"h\[1\] = nan is not finite"),
        (first_autocorrelation, [1.0, -0.5, 1.0], r"f\[1\] = -0.5 is outside \[0, inf\]"),
        (first_autocorrelation, [0.001, 0.001], "below 0.01"),
        (first_autocorrelation, [[1.0, 2.0]], "must have 1 dimension"),
        (first_autocorrelation, [], "empty"),
        (first_autocorrelation, [1.0, True], r"f\[1\] = True is a boolean"),
        (first_autocorrelation, "1,2,3", "must be a list or array"),
        (second_autocorrelation, [0.0, 0.0], "identically 0"),
        (second_autocorrelation, [1.0, float("inf")], "not finite"),
        (third_autocorrelation, [1.0, -1.0], "below 1e-12"),
        (circle_packing, [[0.5, 0.5, -0.1]], r"r\[0\] = -0.1 is outside \[0, inf\]"),
        (circle_packing, [[0.1, 0.5, 0.2]], "circle 0 .* outside the unit square"),
        (circle_packing, [[0.5, 0.5]], "rows must have 3 entries"),
        (sum_difference, [1, 2.5, 4], r"A\[1\] = 2.5 is not an integer"),
        (sum_difference, [5, 5, 5], r"\|A\| = 1 distinct integers"),
        (sum_difference, [0, 2_000_000], r"A\[1\] = 2000000.0 is outside"),
        (hadamard_determinant, np.ones((28, 28)), "H must be 29×29|rows must have 29 entries"),
        (hadamard_determinant, np.where(np.eye(29) > 0, 0.5, 1.0), r"H\[0, 0\] = 0.5 is not \+1 or -1"),
    ],
)
def test_rejections_name_the_rule(func, bad, message):
    with pytest.raises(InvalidSolution, match=message):
        func(bad)


def test_erdos_piece_cap_is_optional():
    h = [0.5] * 1200
    assert erdos_min_overlap(h).metrics["n"] == 1200
    with pytest.raises(InvalidSolution, match="more than the cap of 1000"):
        erdos_min_overlap(h, max_pieces=1000)


def test_numpy_subclass_is_read_as_plain_data():
    class Liar(np.ndarray):
        def tolist(self):
            return [0.5] * len(self)

        def __array__(self, *args, **kwargs):
            return np.full(len(self), 0.5)

    f = np.array([1.0, 0.0, 0.0, 1.0]).view(Liar)
    assert first_autocorrelation(f).value == pytest.approx(ref_ac1([1.0, 0.0, 0.0, 1.0]), rel=1e-15)


@pytest.mark.parametrize("func", [first_autocorrelation, second_autocorrelation, third_autocorrelation,
                                  erdos_min_overlap])
def test_piece_limit_bounds_verification_time(func):
    """Verification runs in the parent without a time limit: the O(n^2) fallback needs a cap."""
    from discoverygym.rewards.convolution import MAX_PIECES

    assert func(np.full(MAX_PIECES, 0.5)).metrics["n"] == MAX_PIECES
    with pytest.raises(InvalidSolution, match=f"{MAX_PIECES + 1} pieces, more than the limit of {MAX_PIECES}"):
        func(np.full(MAX_PIECES + 1, 0.5))


def test_number_subclasses_are_refused():
    """A subclass can make the scored value differ from the stored one."""

    class Liar(int):
        def __float__(self):
            return 0.25

    with pytest.raises(InvalidSolution, match=r"f\[0\] = 1 is a Liar \(a subclass of a number type\)"):
        first_autocorrelation([Liar(1), 5, 1])
    assert first_autocorrelation([np.float32(1), np.int64(5), 1]).value == pytest.approx(ref_ac1([1, 5, 1]))


def test_entry_cap_is_checked_before_any_scan_or_conversion(monkeypatch):
    """Issue 14, item 5: 15M one-entry rows cost the parent 110 s and 2 GB before the cap was seen."""
    from discoverygym.rewards import common

    def scanned(*args, **kwargs):
        raise AssertionError("the value was walked before its size was checked")

    monkeypatch.setattr(common, "_reject_bools_and_objects", scanned)
    rows = [[0.0]] * (common.MAX_ENTRIES + 1)  # one list object repeated: cheap to build
    with pytest.raises(InvalidSolution, match="more than the limit"):
        common.as_float_array(rows, "circles", 2, 3)
    with pytest.raises(InvalidSolution, match="more than the limit"):
        common.as_float_array([[0.0] * 1000] * (common.MAX_ENTRIES // 1000 + 1), "m", 2)


def test_verification_budget_fails_clearly():
    from discoverygym.rewards import common

    with common.verification_budget(0.0), pytest.raises(InvalidSolution, match="time budget of 0 s"):
        common.as_float_array([[0.0, 1.0]] * 10, "x", 2)
    assert common.as_float_array([[0.0, 1.0]] * 10, "x", 2).shape == (10, 2)  # budget gone
    with pytest.raises(ValueError, match="budget"), common.verification_budget(float("nan")):
        pass
