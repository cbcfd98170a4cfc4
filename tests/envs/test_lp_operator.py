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


@pytest.mark.parametrize("op", ["lp", "hop"])
def test_lp_and_hop_operators_are_declared_by_erdos_and_ac1_only(op):
    names = {env: [o.name for o in ENVS[env].operators] for env in
             ("ErdosMinOverlap-v0", "FirstAutocorrelation-v0", "SecondAutocorrelation-v0")}
    assert op in names["ErdosMinOverlap-v0"] and op in names["FirstAutocorrelation-v0"]
    assert op not in names["SecondAutocorrelation-v0"]  # AC2's bound is not a max of bilinear forms


def _operator(env_id: str, name: str):
    return next(o for o in ENVS[env_id].operators if o.name == name)


def test_slp_stops_once_the_trust_radius_is_below_min_delta():
    x = _start(40, 2)
    calls = []
    real = lp._lp_step

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lp, "_lp_step", counting)
        lp.slp(lp.ERDOS, x, np.random.default_rng(0), 1.0, 1e-4, 0.02, iterations=50, min_delta=1e-3)
        assert calls == []  # the start radius is already below min_delta
        lp.slp(lp.ERDOS, x, np.random.default_rng(0), 1.0, 0.05, 0.02, iterations=1000, min_delta=1e-6)
    assert 0 < len(calls) < 1000  # stopped on convergence, not on the iteration cap


@pytest.mark.parametrize("env_id, verify", [("ErdosMinOverlap-v0", erdos_min_overlap),
                                            ("FirstAutocorrelation-v0", first_autocorrelation)])
def test_hop_is_deterministic_capped_and_verified_valid(env_id, verify):
    from discoverygym.envs.operators.steps import HOP_MAX_PIECES

    hop = _operator(env_id, "hop")
    x = _start(400, 3)
    params = {"factor": 1.0}
    a = hop.apply(x, params, np.random.default_rng(7))
    b = hop.apply(x, params, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert a.size == HOP_MAX_PIECES  # 400 pieces are resampled down to the cap
    verify(a)  # raises on an invalid construction
    small = hop.apply(x[:60], {"factor": 0.5}, np.random.default_rng(7))
    assert small.size == 30 and np.isfinite(verify(small).value)


def _converged(seed: int) -> np.ndarray:
    return lp.slp(lp.ERDOS, _start(50, seed), np.random.default_rng(0), 1.0, 0.05, 0.02, iterations=200)


def test_one_hop_moves_to_another_local_minimum(monkeypatch):
    # lp alone stays at the bottom of its basin; a hop jumps away and ends near the bottom of another
    # (at share 0.3: from the largest shares, 40 LP solves may stop short of the bottom)
    from discoverygym.envs.operators import steps
    from discoverygym.envs.operators.steps import _hop_once

    monkeypatch.setattr(steps, "HOP_SCALE", (0.3, 0.3))

    x = _converged(4)
    start = erdos_min_overlap(x).value
    again = lp.slp(lp.ERDOS, x, np.random.default_rng(1), 1.0, 0.05, 0.02, iterations=50)
    assert erdos_min_overlap(again).value > start - 1e-9
    random_start = erdos_min_overlap(_start(50, 5)).value
    for seed in range(3):
        child = _hop_once(x, np.random.default_rng(seed), lp.ERDOS)
        value = erdos_min_overlap(child).value
        assert np.abs(child - x).max() > 0.05  # it left the parent
        polished = lp.slp(lp.ERDOS, child, np.random.default_rng(2), 1.0, 0.05, 0.02, iterations=50)
        assert erdos_min_overlap(polished).value > value - 1e-4  # and ends near a local minimum
        assert value < start + 0.2 * (random_start - start)  # a good one, not a random function


def test_hop_is_greedy_never_worse_and_sometimes_better():
    hop = _operator("ErdosMinOverlap-v0", "hop")
    x = _converged(5)
    start = erdos_min_overlap(x).value
    values = [erdos_min_overlap(hop.apply(x, {"factor": 1.0}, np.random.default_rng(s))).value
              for s in range(6)]
    assert max(values) <= start + 1e-12  # a failed hop is not kept
    assert min(values) < start - 1e-7, (start, values)  # 24 hops from a converged start find a better basin
