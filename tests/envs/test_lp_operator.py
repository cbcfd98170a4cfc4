"""The ``lp`` operator of the step-function problems: exact gradients and verified progress."""

from __future__ import annotations

import numpy as np
import pytest

from discoverygym.envs.operators import lp
from discoverygym.envs.registry import ENVS
from discoverygym.rewards.autocorrelation import first_autocorrelation
from discoverygym.rewards.erdos import erdos_min_overlap

MODELS = {"erdos": (lp.ERDOS, erdos_min_overlap), "ac1": (lp.AC1, first_autocorrelation)}


def _start(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.2, 0.8, n)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gradient_rows_equal_central_differences(name):
    model, _ = MODELS[name]
    x = model.prepare(_start(23, 0))
    c = model.values(x)
    ms = np.arange(c.size)
    cols = np.arange(3, 17)
    rows = model.rows(x, ms, cols)
    eps = 1e-4  # c is bilinear: central differences are exact up to rounding
    for k, j in enumerate(cols):
        e = np.zeros_like(x)
        e[j] = eps
        fd = (model.values(x + e) - model.values(x - e)) / (2 * eps)
        np.testing.assert_allclose(rows[:, k], fd, atol=1e-8, err_msg=f"{name} column {j}")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_slp_lowers_the_verified_bound(name):
    model, verify = MODELS[name]
    x = _start(60, 1)
    before = verify(x).value
    out = lp.slp(model, x, np.random.default_rng(0), width=1.0, delta=0.05, margin=0.01)
    after = verify(out).value  # the env's verifier, not the operator's own value
    assert after < before - 1e-4, (before, after)
    block = lp.slp(model, x, np.random.default_rng(0), width=0.2, delta=0.05, margin=0.01)
    assert verify(block).value <= before


def test_lp_operator_is_declared_by_erdos_and_ac1_only():
    names = {env: [o.name for o in ENVS[env].operators] for env in
             ("ErdosMinOverlap-v0", "FirstAutocorrelation-v0", "SecondAutocorrelation-v0")}
    assert "lp" in names["ErdosMinOverlap-v0"] and "lp" in names["FirstAutocorrelation-v0"]
    assert "lp" not in names["SecondAutocorrelation-v0"]  # AC2's bound is not a max of bilinear forms


def test_erdos_prepare_projects_heights_that_scaling_pushes_above_one():
    # 25 pieces near 1 and 35 near 0: scaled to Σh = n/2 they exceed 1, where a plain clip
    # would lower Σh and the verifier's rescaling would push them above 1 again (an invalid child)
    x = np.r_[np.full(25, 0.99), np.full(35, 0.05)]  # scaled by 30 / 26.5
    h = lp.ERDOS.prepare(x)
    assert h.sum() == pytest.approx(30.0, abs=1e-9) and h.min() >= 0 and h.max() <= 1 - lp.UPPER_SLACK
    assert 0 < erdos_min_overlap(h).value < 1  # raises when invalid
    assert 0 < erdos_min_overlap(lp.slp(lp.ERDOS, x, np.random.default_rng(0), 1.0, 0.02, 0.02)).value < 1
    inside = _start(40, 4)  # heights that scaling keeps inside [0, 1] are only scaled
    np.testing.assert_allclose(lp.ERDOS.prepare(inside), inside * 20 / inside.sum(), rtol=0, atol=1e-15)
