"""AC1's ``lbfgs`` operator: L-BFGS on the smoothed bound, every piece at once, judged by the verifier."""

from __future__ import annotations

import time

import numpy as np
import pytest

from discoverygym.envs.operators import anneal as A
from discoverygym.envs.operators.deadline import deadline_at
from discoverygym.envs.operators.lbfgs import ac1_lbfgs
from discoverygym.envs.registry import ENVS
from discoverygym.rewards.autocorrelation import first_autocorrelation


def _lbfgs():
    return next(o for o in ENVS["FirstAutocorrelation-v0"].operators if o.name == "lbfgs")


def test_lbfgs_is_declared_by_ac1_only():
    assert "lbfgs" in [o.name for o in ENVS["FirstAutocorrelation-v0"].operators]
    for env in ("ErdosMinOverlap-v0", "SecondAutocorrelation-v0", "ThirdAutocorrelation-v0"):
        assert "lbfgs" not in [o.name for o in ENVS[env].operators]


@pytest.mark.parametrize("beta", [3.0, 300.0])
def test_smoothed_bound_value_is_the_log_sum_exp_and_its_gradient_differences(beta):
    x = np.random.default_rng(1).uniform(0.6, 1.4, 13)
    n = x.size

    def direct(xv):  # L_beta(x^2) written out from the verifier's C1 terms
        f = xv * xv
        c = 2 * n * np.convolve(f, f) / f.sum() ** 2
        return np.log(np.sum(np.exp(beta * c))) / beta

    value, grad = A.smoothed_bound(x, beta)
    assert value.shape == (1,) and value[0] == pytest.approx(direct(x), rel=1e-12)
    assert A.ac1_bound(x * x) <= value[0] <= A.ac1_bound(x * x) + np.log(2 * n - 1) / beta + 1e-12
    eps = 1e-6
    fd = np.array([(direct(x + eps * e) - direct(x - eps * e)) / (2 * eps) for e in np.eye(n)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)
    np.testing.assert_array_equal(A.smoothed_gradient(x, beta), grad)


def test_lbfgs_lowers_a_random_start_verified_and_is_deterministic():
    f = np.random.default_rng(0).uniform(0.2, 1.0, 300)
    start = first_autocorrelation(f.tolist()).value
    params = {"iterations": 300, "beta": 1e3}
    a = _lbfgs().apply(f, params, np.random.default_rng(0))
    b = _lbfgs().apply(f, params, np.random.default_rng(99))  # rng unused: deterministic
    np.testing.assert_array_equal(a, b)
    got = first_autocorrelation(a.tolist())
    assert a.shape == f.shape and np.all(a >= 0) and a.mean() == pytest.approx(1.0)
    assert got.value < start - 0.05, (start, got.value)


def test_lbfgs_never_returns_worse_than_its_parent():
    f = np.random.default_rng(2).uniform(0.2, 1.0, 64)
    # beta this low optimises a much smoother objective than the max: its minimiser may be worse
    out = ac1_lbfgs(f, np.random.default_rng(0), 200, 1e-3)
    assert A.ac1_bound(out) <= A.ac1_bound(f / f.mean())


def test_lbfgs_under_an_expired_deadline_returns_the_parent_unchanged():
    f = np.random.default_rng(3).uniform(0.2, 1.0, 50)
    with deadline_at(time.time() - 1):
        out = ac1_lbfgs(f, np.random.default_rng(0), 5000, 1e4)
    np.testing.assert_allclose(out, f / f.mean())


@pytest.mark.parametrize("bad", [{"f": []}, {"f": [0.0, 0.0]}, {"f": [1.0, np.nan]}, {"iterations": 0},
                                 {"beta": 0.0}, {"f": np.ones((2, 3))}])
def test_lbfgs_refuses_bad_input(bad):
    args = {"f": [1.0, 2.0, 3.0], "iterations": 10, "beta": 10.0, **bad}
    with pytest.raises(ValueError):
        ac1_lbfgs(np.asarray(args["f"], dtype=float), np.random.default_rng(0), args["iterations"], args["beta"])
