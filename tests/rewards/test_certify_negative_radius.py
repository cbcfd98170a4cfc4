"""A radius of -1e-13 is invalid for certify as for the env (radii take no tolerance), and certify says
so truthfully: it said "negative radius by more than the 1e-12 tolerance" for a radius 1e-13 below 0."""

from __future__ import annotations

import pytest

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.certify.circle_packing import certify_circle_packing


def test_a_slightly_negative_radius_is_refused_without_a_tolerance_claim():
    circles = [[0.5, 0.5, 0.25], [0.1, 0.1, -1e-13]]
    with pytest.raises(InvalidSolution) as info:
        certify_circle_packing(circles)
    assert "negative radius" in str(info.value)
    assert "by more than the 1e-12 tolerance" not in str(info.value)


def test_a_circle_outside_by_more_than_the_tolerance_still_says_so():
    with pytest.raises(InvalidSolution, match="outside the unit square by more than the 1e-12 tolerance"):
        certify_circle_packing([[0.5, 0.5, 0.6]])
