"""Hypothesis properties: verifiers never crash on arbitrary input, never score invalid input."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from discoverygym.envs.mathematics import MATH_ENVS
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.autocorrelation import first_autocorrelation, second_autocorrelation
from discoverygym.rewards.circle_packing import circle_packing
from discoverygym.rewards.erdos import erdos_min_overlap
from discoverygym.rewards.hadamard import hadamard_determinant
from discoverygym.rewards.sum_difference import sum_difference

VERIFIERS = [p.verifier for p in MATH_ENVS.values()]

scalars = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.complex_numbers(allow_nan=True),
)
anything = st.recursive(scalars, lambda inner: st.lists(inner, max_size=6), max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(value=anything, which=st.integers(min_value=0, max_value=len(VERIFIERS) - 1))
def test_verifiers_never_crash(value, which):
    """Any input either scores (a finite float) or raises InvalidSolution, nothing else."""
    try:
        score = VERIFIERS[which](value)
    except InvalidSolution:
        return
    assert math.isfinite(score.value)


finite_list = st.lists(st.floats(-10, 10, allow_nan=False), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(f=finite_list, pos=st.integers(0, 59), bad=st.sampled_from([float("nan"), float("inf"), -float("inf")]))
def test_non_finite_entries_are_always_rejected(f, pos, bad):
    f = list(f)
    f[pos % len(f)] = bad
    for verifier in VERIFIERS[:4] + [sum_difference]:
        try:
            verifier(f)
        except InvalidSolution:
            continue
        raise AssertionError(f"{verifier.__name__} scored a construction containing {bad}")


@settings(max_examples=200, deadline=None)
@given(f=st.lists(st.floats(0, 10), min_size=1, max_size=60), pos=st.integers(0, 59),
       neg=st.floats(-100, -1e-300))
def test_negative_heights_never_score_in_ac1_ac2(f, pos, neg):
    f = list(f)
    f[pos % len(f)] = neg
    for verifier in (first_autocorrelation, second_autocorrelation):
        try:
            verifier(f)
        except InvalidSolution:
            continue
        raise AssertionError("negative height accepted")


@settings(max_examples=200, deadline=None)
@given(h=st.lists(st.floats(0, 1), min_size=2, max_size=80))
def test_erdos_accepts_only_rescaled_values_in_unit_interval(h):
    n = len(h)
    total = sum(h)
    try:
        s = erdos_min_overlap(h)
    except InvalidSolution:
        assert total <= 0 or max(h) * (n / 2) / total > 1.0 - 1e-12
        return
    assert max(h) * (n / 2) / total <= 1.0 + 1e-12
    assert 0.0 < s.value <= 2.0


circle = st.tuples(st.floats(-0.5, 1.5), st.floats(-0.5, 1.5), st.floats(-0.1, 0.6))


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(circle, min_size=1, max_size=12))
def test_circle_packing_valid_means_really_disjoint_and_inside(rows):
    try:
        s = circle_packing([list(r) for r in rows])
    except InvalidSolution:
        return
    for i, (x, y, r) in enumerate(rows):
        assert r >= 0 and x - r >= -1e-12 and x + r <= 1 + 1e-12 and y - r >= -1e-12 and y + r <= 1 + 1e-12
        for x2, y2, r2 in rows[i + 1 :]:
            assert math.hypot(x - x2, y - y2) >= r + r2 - 1e-12
    assert s.value == sum(r for _, _, r in rows) or math.isclose(s.value, sum(r for _, _, r in rows), rel_tol=1e-12)


@settings(max_examples=100, deadline=None)
@given(m=st.lists(st.lists(st.sampled_from([-1, 1, 0, 2]), min_size=29, max_size=29), min_size=29, max_size=29))
def test_hadamard_valid_only_for_sign_matrices(m):
    arr = np.array(m)
    try:
        hadamard_determinant(m)
    except InvalidSolution:
        assert np.any(np.abs(arr) != 1)
        return
    assert np.all(np.abs(arr) == 1)
