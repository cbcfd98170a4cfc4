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


def test_anneal_is_deterministic_doubles_never_worse_and_verified_better_from_flat():
    op = _operator("FirstAutocorrelation-v0", "anneal")
    flat = np.full(100, 0.5)
    params = {"iterations": 3000, "grow": 2.0, "heat": 1.0}
    a = op.apply(flat, params, np.random.default_rng(5))
    b = op.apply(flat, params, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    assert a.size == 200 and np.all(a >= 0)  # a ladder rung doubles the parent's pieces
    start = first_autocorrelation(flat.tolist()).value  # a flat function: C1 = 2 (up to rounding)
    got = first_autocorrelation(a.tolist())
    assert np.isfinite(got.value) and got.value < start - 0.3, (start, got.value)  # flat is far from 1.5
    # from its own converged output, a short re-anneal (grow 1) at a low heat cannot make things worse
    again = op.apply(a, {"iterations": 200, "grow": 1.0, "heat": 1 / 3}, np.random.default_rng(1))
    assert again.size == a.size
    assert first_autocorrelation(again.tolist()).value <= got.value + 1e-12


def test_anneal_caps_the_pieces_and_follows_the_ladder_temperature(monkeypatch):
    from discoverygym.envs.operators import steps

    op = _operator("FirstAutocorrelation-v0", "anneal")
    # the env's seeded start has up to 8000 pieces: a rung resamples it down to the cap
    assert op.apply(np.full(5000, 0.5), {"iterations": 5, "grow": 2.0, "heat": 1.0},
                    np.random.default_rng(0)).size == steps.ANNEAL_PIECES[1] == 1600
    assert steps.anneal(np.full(5, 0.5), np.random.default_rng(0), 5, grow=2.0).size == steps.ANNEAL_PIECES[0]
    # 3 on 50 pieces, tripled per doubling (the measured ladder: 9, 27, 81, 243, 729)
    assert [round(steps.ladder_beta0(n), 6) for n in (50, 100, 200, 1600)] == [3.0, 9.0, 27.0, 729.0]
    seen = []
    monkeypatch.setattr(steps, "ac1_anneal", lambda f, rng, it, beta0, lr: seen.append((f.size, beta0, lr)) or f)
    steps.anneal(np.ones(100), np.random.default_rng(0), 10, grow=2.0, heat=3.0)
    steps.restart_anneal(np.ones(7), np.random.default_rng(0), 10, pieces=50, starts=1)
    assert seen[0][0] == 200 and seen[0][1] == pytest.approx(81.0)
    assert seen[0][2] == pytest.approx(0.3 * 81.0 ** -0.75)
    assert seen[1][:2] == (50, pytest.approx(3.0)) and seen[1][2] == steps.ANNEAL_MAX_LR


def test_restart_anneal_ignores_its_parent_and_is_verified():
    op = _operator("FirstAutocorrelation-v0", "restart_anneal")
    params = {"iterations": 2000, "pieces": 50, "starts": 4}
    a = op.apply(np.full(3000, 0.5), params, np.random.default_rng(7))
    b = op.apply(np.random.default_rng(1).uniform(0, 1, 20), params, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)  # the same draw whatever the parent
    c = op.apply(np.full(3000, 0.5), params, np.random.default_rng(8))
    assert a.size == 50 and not np.array_equal(a, c)
    got = first_autocorrelation(a.tolist()).value
    assert np.isfinite(got) and got < 1.6, got  # a 2000-step anneal already lands well below flat's 2
    with pytest.raises(ValueError):  # a declared parameter missing
        op.apply(np.ones(10), {"iterations": 10}, np.random.default_rng(0))


@pytest.mark.parametrize("bad", [np.zeros(10), np.array([1.0, np.nan, 2.0]), np.ones((2, 3, 3)), np.array([]),
                                 np.array([[1.0, 2.0], [0.0, 0.0]])])
def test_anneal_refuses_bad_heights(bad):
    with pytest.raises(ValueError, match="ac1_anneal"):
        A.ac1_anneal(bad, np.random.default_rng(0), 10, 10.0, 1e-2)


def test_batched_anneal_runs_each_row_as_its_own_start():
    rows = np.random.default_rng(4).uniform(0.5, 1.5, (3, 12))
    batch = A.ac1_anneal(rows, np.random.default_rng(9), 300, 3.0, 3e-2, jitter=0.0)
    assert batch.shape == rows.shape
    for r, got in zip(rows, batch):  # without jitter a row's result does not depend on the others
        alone = A.ac1_anneal(r, np.random.default_rng(0), 300, 3.0, 3e-2, jitter=0.0)
        np.testing.assert_allclose(got, alone, rtol=1e-9, atol=1e-12)
        assert A.ac1_bound(got) <= A.ac1_bound(r) + 1e-12
    # the batched gradient is the 1-D one row by row
    x = np.sqrt(rows)
    np.testing.assert_allclose(A.smoothed_gradient(x, 50.0), np.array([A.smoothed_gradient(r, 50.0) for r in x]),
                               rtol=1e-10, atol=1e-12)


def test_anneal_refuses_bad_schedule():
    with pytest.raises(ValueError, match="iterations"):
        A.ac1_anneal(np.ones(8), np.random.default_rng(0), 0, 10.0, 1e-2)
    with pytest.raises(ValueError, match="positive"):
        A.ac1_anneal(np.ones(8), np.random.default_rng(0), 10, -1.0, 1e-2)
    with pytest.raises(ValueError, match="lr_decay"):
        A.ac1_anneal(np.ones(8), np.random.default_rng(0), 10, 10.0, 1e-2, lr_decay=0.5)


def test_restart_anneal_keeps_the_best_of_its_starts(monkeypatch):
    from discoverygym.envs.operators import steps

    monkeypatch.setattr(steps, "ac1_anneal", lambda f, rng, it, beta0, lr: f)  # the starts themselves
    got = steps.restart_anneal(np.ones(3), np.random.default_rng(2), 10, pieces=30, starts=8)
    drawn = np.exp(np.random.default_rng(2).normal(0.0, 0.3, (8, 30)))  # the same draw
    values = [A.ac1_bound(r) for r in drawn]
    np.testing.assert_array_equal(got, drawn[int(np.argmin(values))])
    assert A.ac1_bound(got) == min(values) < max(values)
