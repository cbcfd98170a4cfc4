"""The LASSO-path verifier: scikit-learn's grid and objective, generators, wire format, the 1e-6 rule."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from discoverygym.errors import InvalidSolution
from discoverygym.rewards import lasso as L

sklearn_lm = pytest.importorskip("sklearn.linear_model")


def _small(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    return L.generate(L.LassoProblem(80, 40, "g"), seed)


def test_seventeen_problems_of_tes():
    assert len(L.PROBLEMS) == 17
    assert [(q.n, q.p) for q in L.PROBLEMS[:3]] == [(200, 100), (200, 500), (500, 1000)]
    assert {q.kind for q in L.PROBLEMS} == {"g", "sparse", "dense_sol", "corr"}
    assert sorted(q.rho for q in L.PROBLEMS if q.kind == "corr") == [0.5, 0.5, 0.9, 0.9]


def test_grid_is_sklearns_lasso_path_grid():
    X, y = _small()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # n_alphas: deprecated in sklearn 1.9, TES's spelling
        alphas, _, _ = sklearn_lm.lasso_path(X, y, eps=1e-2, n_alphas=50)  # TES's call
    np.testing.assert_allclose(L.lambda_grid(X, y), alphas, rtol=1e-12)
    assert len(alphas) == L.N_LAMBDA


def test_sklearn_minimises_the_same_objective():
    """sklearn's tight solution satisfies the KKT conditions of (1/2n)||y - Xw||^2 + λ||w||_1 (the 1/n is there)."""
    X, y = _small(1)
    n = X.shape[0]
    lam = L.lambda_grid(X, y)[20]
    w = sklearn_lm.Lasso(alpha=lam, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(X, y).coef_
    grad = X.T @ (y - X @ w) / n
    on = w != 0
    assert on.any() and (~on).any()
    np.testing.assert_allclose(grad[on], lam * np.sign(w[on]), atol=1e-8)
    assert np.all(np.abs(grad[~on]) <= lam + 1e-8)
    # and it is the minimiser of our objective: moving any coordinate increases it
    base = L.objective(X, y, w[:, None], np.array([lam]))[0]
    for j in range(X.shape[1]):
        for step in (1e-3, -1e-3):
            moved = w.copy()
            moved[j] += step
            assert L.objective(X, y, moved[:, None], np.array([lam]))[0] > base


def test_reference_uses_sklearn_defaults_and_is_not_exact():
    X, y = L.generate(L.LassoProblem(50, 200, "g"), 5)  # p > n: sklearn's default tol stops early
    lam = L.lambda_grid(X, y)
    ref = L.objective(X, y, L.reference_path(X, y, lam), lam)
    _, tight, _ = sklearn_lm.lasso_path(X, y, alphas=lam, tol=1e-10, max_iter=100_000)
    better = L.objective(X, y, tight, lam)
    assert np.all(better <= ref + 1e-12) and (ref - better).max() > 1e-6


@pytest.mark.parametrize("index", range(17))
def test_generators_shapes_and_structure(index):
    problem = L.PROBLEMS[index]
    small = L.LassoProblem(min(problem.n, 300), min(problem.p, 400), problem.kind, problem.rho)
    X, y = L.generate(small, 7)
    assert X.shape == (small.n, small.p) and y.shape == (small.n,) and X.flags.c_contiguous
    assert np.isfinite(X).all() and np.isfinite(y).all()
    X2, y2 = L.generate(small, 7)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    if small.kind == "sparse":
        assert np.all((X != 0).sum(axis=1) == 20)
        std = X.std(axis=0)
        np.testing.assert_allclose(std[std > 0], 1.0, rtol=1e-12)


def test_corr_generator_has_toeplitz_correlation():
    X, _ = L.generate(L.LassoProblem(20000, 6, "corr", 0.9), 3)
    C = np.corrcoef(X, rowvar=False)
    for lag in (1, 2, 3):
        assert abs(np.diag(C, lag).mean() - 0.9**lag) < 0.02


def test_wire_format_round_trip():
    X, y = _small()
    lam = L.lambda_grid(X, y)
    raw = L.encode_input(X, y, lam)
    n, p, k = np.frombuffer(raw[:12], dtype="<i4")
    assert (n, p, k) == (80, 40, 50) and len(raw) == 12 + 8 * (80 * 40 + 80 + 50)
    np.testing.assert_array_equal(np.frombuffer(raw[12:12 + 8 * 80 * 40]).reshape(80, 40), X)
    coef = np.arange(40 * 50, dtype=float).reshape(40, 50)
    out = np.asfortranarray(coef).tobytes(order="F")
    np.testing.assert_array_equal(L.decode_output(out, 40, 50), coef)


def test_bad_outputs_are_refused():
    with pytest.raises(InvalidSolution, match="expected 16000"):
        L.decode_output(b"\0" * 15992, 40, 50)
    bad = np.zeros((40, 50))
    bad[3, 7] = np.nan
    with pytest.raises(InvalidSolution, match=r"coef_path\[3, 7\] = nan"):
        L.decode_output(bad.tobytes(order="F"), 40, 50)


def test_check_path_names_the_lambda_off_by_1e5():
    X, y = _small(2)
    lam = L.lambda_grid(X, y)
    ref_coef = L.reference_path(X, y, lam)
    ref = L.objective(X, y, ref_coef, lam)
    _, tight, _ = sklearn_lm.lasso_path(X, y, alphas=lam, tol=1e-12, max_iter=100_000)
    gaps = L.check_path(X, y, lam, tight, ref, name="toy")
    assert gaps.max() <= 1e-12
    off = tight.copy()  # move the largest coefficient at λ index 31 so that the objective is ~1e-5 above sklearn's
    j = int(np.argmax(np.abs(tight[:, 31])))
    v = X[:, j] @ X[:, j] / X.shape[0]
    off[j, 31] += np.sqrt(2.0 * (ref[31] - L.objective(X, y, tight, lam)[31] + 1e-5) / v)
    excess = L.objective(X, y, off, lam) - ref
    assert 5e-6 < excess[31] < 2e-5 and np.delete(excess, 31).max() <= 1e-12
    with pytest.raises(InvalidSolution, match=r"toy: lambda index 31 .*> 1e-06"):
        L.check_path(X, y, lam, off, ref, name="toy")
