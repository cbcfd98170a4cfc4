"""AC1's ``anneal`` operator: a long annealed Adam on the smoothed bound, judged by the verifier."""

from __future__ import annotations

import numpy as np
import pytest

from discoverygym.envs.operators import anneal as A
from discoverygym.envs.registry import ENVS
from discoverygym.rewards.autocorrelation import first_autocorrelation


def _operator(env_id: str, name: str):
    return next(o for o in ENVS[env_id].operators if o.name == name)


def test_anneal_is_declared_by_ac1_only():
    names = {env: [o.name for o in ENVS[env].operators] for env in
             ("ErdosMinOverlap-v0", "FirstAutocorrelation-v0", "SecondAutocorrelation-v0", "ThirdAutocorrelation-v0")}
    assert "anneal" in names["FirstAutocorrelation-v0"]
    assert all("anneal" not in names[e] for e in names if e != "FirstAutocorrelation-v0")


def test_bound_matches_the_verifier():
    f = np.random.default_rng(3).uniform(0.0, 2.0, 37)
    assert A.ac1_bound(f) == pytest.approx(first_autocorrelation(f.tolist()).value, rel=1e-12)


@pytest.mark.parametrize("beta", [5.0, 200.0])
def test_smoothed_gradient_equals_central_differences(beta):
    # L_beta(x^2) written out directly (log-sum-exp of the verifier's C1 terms), differenced
    x = np.random.default_rng(0).uniform(0.6, 1.4, 15)
    n = x.size

    def smoothed(xv):
        f = xv * xv
        c = 2 * n * np.convolve(f, f) / f.sum() ** 2
        return c.max() + np.log(np.sum(np.exp(beta * (c - c.max())))) / beta

    eps = 1e-6
    fd = np.array([(smoothed(x + eps * e) - smoothed(x - eps * e)) / (2 * eps) for e in np.eye(n)])
    np.testing.assert_allclose(A.smoothed_gradient(x, beta), fd, rtol=1e-5, atol=1e-8)


def test_anneal_is_deterministic_capped_never_worse_and_verified_better_from_flat():
    op = _operator("FirstAutocorrelation-v0", "anneal")
    flat = np.full(1000, 0.5)
    params = {"iterations": 3000, "beta0": 10.0, "pieces": 200}
    a = op.apply(flat, params, np.random.default_rng(5))
    b = op.apply(flat, params, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    assert a.size == 200 and np.all(a >= 0)  # resampled to `pieces` pieces
    start = first_autocorrelation(flat.tolist()).value  # a flat function: C1 = 2 (up to rounding)
    got = first_autocorrelation(a.tolist())
    assert np.isfinite(got.value) and got.value < start - 0.3, (start, got.value)  # flat is far from 1.5
    # from its own converged output, a short call at a low starting temperature cannot make things worse
    again = op.apply(a, {"iterations": 200, "beta0": 3.0, "pieces": 200}, np.random.default_rng(1))
    assert first_autocorrelation(again.tolist()).value <= got.value + 1e-12


def test_anneal_caps_the_pieces():
    from discoverygym.envs.operators.steps import ANNEAL_PIECES, anneal

    op = _operator("FirstAutocorrelation-v0", "anneal")
    up = op.apply(np.full(20, 0.5), {"iterations": 5, "beta0": 10.0, "pieces": 1600}, np.random.default_rng(0))
    assert up.size == 1600 == ANNEAL_PIECES[1]
    # the operator function itself clamps a count outside the declared range
    assert anneal(np.full(20, 0.5), np.random.default_rng(0), 5, 10.0, pieces=10).size == ANNEAL_PIECES[0]
    assert anneal(np.full(20, 0.5), np.random.default_rng(0), 5, 10.0, pieces=10**5).size == ANNEAL_PIECES[1]


@pytest.mark.parametrize("bad", [np.zeros(10), np.array([1.0, np.nan, 2.0]), np.ones((3, 3)), np.array([])])
def test_anneal_refuses_bad_heights(bad):
    with pytest.raises(ValueError, match="ac1_anneal"):
        A.ac1_anneal(bad, np.random.default_rng(0), 10, 10.0, 1e-2)


def test_anneal_refuses_bad_schedule():
    with pytest.raises(ValueError, match="iterations"):
        A.ac1_anneal(np.ones(8), np.random.default_rng(0), 0, 10.0, 1e-2)
    with pytest.raises(ValueError, match="positive"):
        A.ac1_anneal(np.ones(8), np.random.default_rng(0), 10, -1.0, 1e-2)
    with pytest.raises(ValueError, match="lr_decay"):
        A.ac1_anneal(np.ones(8), np.random.default_rng(0), 10, 10.0, 1e-2, lr_decay=0.5)
