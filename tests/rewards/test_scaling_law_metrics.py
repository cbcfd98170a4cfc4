"""SLDBench's R² (NMSE per output dimension on the scored split) and the checks on untrusted params / predictions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import r2_score as sklearn_r2

from discoverygym.errors import InvalidSolution
from discoverygym.rewards import scaling_laws as sl


def test_r2_matches_sklearn_on_pooled_groups_one_output():
    rng = np.random.default_rng(0)
    y = [rng.normal(size=(5, 1)), rng.normal(size=(3, 1))]
    p = [t + rng.normal(scale=0.3, size=t.shape) for t in y]
    r2, nmse = sl.r2_score(y, p)
    expected = sklearn_r2(np.concatenate(y)[:, 0], np.concatenate(p)[:, 0])
    assert r2 == pytest.approx(expected, rel=1e-12) and nmse == [pytest.approx(1 - expected, rel=1e-12)]


def test_r2_is_one_minus_mean_nmse_over_outputs():
    rng = np.random.default_rng(1)
    y = rng.normal(size=(20, 5)) * np.arange(1, 6)  # different scales per output: normalised per dimension
    p = y + rng.normal(scale=0.5, size=y.shape)
    r2, nmse = sl.r2_score([y[:12], y[12:]], [p[:12], p[12:]])
    assert r2 == pytest.approx(sklearn_r2(y, p, multioutput="uniform_average"), rel=1e-12)
    assert len(nmse) == 5 and r2 == pytest.approx(1 - np.mean(nmse))


def test_r2_can_be_very_negative_and_zero_variance_gives_minus_inf():
    y = [np.array([[1.0], [2.0], [3.0]])]
    assert sl.r2_score(y, [np.array([[100.0], [100.0], [100.0]])])[0] < -1000
    assert sl.r2_score([np.ones((3, 1))], [np.zeros((3, 1))])[0] == -math.inf


def test_reward_is_clipped_at_minus_one_and_failure_is_strictly_below():
    assert sl.reward(0.93) == 0.93 and sl.reward(-12.2) == sl.REWARD_FLOOR == -1.0
    assert sl.FAILURE_REWARD < sl.REWARD_FLOOR
    with pytest.raises(ValueError, match="NaN"):
        sl.reward(float("nan"))


@pytest.mark.parametrize("value, match", [
    ([1.0] * 8, "returned 8 parameters; at most 7"),
    ([], "non-empty"),
    (3.0, "non-empty 1-D array"),
    ([[1.0, 2.0]], "flat 1-D"),
    ([1.0, float("nan")], r"params\[1\] = nan is not finite"),
    ([True], "not a real number"),
    ([10 ** 400], r"params\[0\] is an integer too large for a float64"),  # a JSON int beyond float64 (a patched numpy in the sandbox)
])
def test_bad_params_are_refused(value, match):
    with pytest.raises(InvalidSolution, match=match):
        sl.check_params(value, 7, "all")


def test_params_within_the_cap_pass():
    assert sl.check_params([1, 2.5], 7, "all") == [1.0, 2.5]


@pytest.mark.parametrize("value, d, match", [
    ([1.0, 2.0], 1, r"shape \(2,\); expected \(3,\)"),
    ([[1.0] * 5] * 3, 1, r"shape \(3, 5\)"),
    ([1.0, 2.0, 3.0], 5, r"expected \(3, 5\)"),
    ([1.0, float("inf"), 3.0], 1, r"prediction \(1, 0\) = inf is not finite"),
    (["a", "b", "c"], 1, "not a numeric array"),
    ([10 ** 400, 1.0, 2.0], 1, "not a numeric array"),  # int beyond float64: refused, not an OverflowError
])
def test_bad_predictions_are_refused(value, d, match):
    with pytest.raises(InvalidSolution, match=match):
        sl.check_predictions(value, 3, d, "g", "test")


def test_scalar_predictions_become_one_column():
    assert sl.check_predictions([1, 2, 3], 3, 1, "g", "test").shape == (3, 1)
