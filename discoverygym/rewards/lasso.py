"""Verifier of the LASSO regularisation path (TES / AlgoTune ``lasso_path`` task): problems, grid, check.

Problem (facts from TES's evaluator, SimpleTES packaging): for each of 50 values λ of
scikit-learn's ``lasso_path`` grid (``eps = 1e-2``, decreasing), minimise

    obj_λ(w) = (1 / 2n) ‖y − X w‖² + λ ‖w‖₁          (no intercept; X and y as given)

This is exactly the objective scikit-learn's ``lasso_path`` / ``Lasso`` minimise (its docs:
``(1 / (2 * n_samples)) * ||y - Xw||^2_2 + alpha * ||w||_1``; checked in our tests by comparing
:func:`objective` with sklearn's own dual gap at its solution). A candidate path is correct when,
at every λ, ``obj_λ(candidate) <= obj_λ(reference) + 1e-6`` (:data:`GAP_TOL`), where the reference
is ``sklearn.linear_model.lasso_path`` with its default settings (``tol=1e-4``, ``max_iter=1000``,
``precompute="auto"``) on the same grid, as TES does. scikit-learn's default tolerance stops on a
duality gap of ``1e-4 · ‖y‖² / n``, so the reference is not exact and a tighter solver can beat it.

The 17 synthetic problems (:data:`PROBLEMS`) and their generators (:func:`generate`) follow the
TES task statement: ``g`` (iid N(0, 1) design, ``p // 20`` non-zero N(0, 1) coefficients,
y = Xw + 0.1 N(0, 1)), ``sparse`` (20 N(0, 1) non-zeros per row at random columns, columns scaled to unit standard
deviation, ``p // 100`` non-zero coefficients of 2 N(0, 1)), ``dense_sol`` (``g`` with ``p // 5``
non-zeros) and ``corr`` (rows N(0, Σ) with Toeplitz Σ_jk = ρ^|j−k|, ``p // 20`` non-zeros). The
random draws are ours (numpy PCG64 from the seed), so instances differ from TES's own.

Wire format of the program (:func:`encode_input`, :func:`decode_output`): stdin holds int32 n, p,
n_lambda, then float64 X (n × p, row-major), y (n), λ (n_lambda), all little-endian; stdout must
hold exactly ``p · n_lambda`` float64 values, the coefficient path (p × n_lambda, column-major:
the p coefficients of λ_0 first).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from discoverygym.errors import BackendUnavailable, InvalidSolution

__all__ = [
    "EPS",
    "GAP_TOL",
    "N_LAMBDA",
    "PROBLEMS",
    "LassoProblem",
    "check_path",
    "decode_output",
    "encode_input",
    "generate",
    "lambda_grid",
    "objective",
    "reference_path",
]

#: number of λ values on the path (TES).
N_LAMBDA = 50
#: λ_min / λ_max of the grid (sklearn ``lasso_path(eps=1e-2)``, TES).
EPS = 1e-2
#: largest excess of the candidate's objective over the reference's, at any λ (TES).
GAP_TOL = 1e-6


@dataclass(frozen=True)
class LassoProblem:
    """One synthetic problem size of the benchmark.

    Attributes:
        n: samples (rows of X); p: features (columns).
        kind: generator, ``"g"``, ``"sparse"``, ``"dense_sol"`` or ``"corr"``.
        rho: correlation of neighbouring features (``"corr"`` only; 0 otherwise).
    """

    n: int
    p: int
    kind: str
    rho: float = 0.0

    @property
    def name(self) -> str:
        """``"n×p kind"``, e.g. ``"500x200 corr0.5"``."""
        tail = f"{self.kind}{self.rho:g}" if self.kind == "corr" else self.kind
        return f"{self.n}x{self.p} {tail}"


#: the 17 problems of TES's LASSO task, in its order.
PROBLEMS: tuple[LassoProblem, ...] = (
    LassoProblem(200, 100, "g"), LassoProblem(200, 500, "g"), LassoProblem(500, 1000, "g"),
    LassoProblem(200, 2000, "g"), LassoProblem(50, 3000, "g"), LassoProblem(2000, 500, "g"),
    LassoProblem(100, 5000, "g"), LassoProblem(1000, 500, "sparse"), LassoProblem(500, 1000, "sparse"),
    LassoProblem(500, 1000, "dense_sol"), LassoProblem(500, 30, "g"), LassoProblem(1000, 50, "g"),
    LassoProblem(2000, 3000, "sparse"), LassoProblem(500, 200, "corr", 0.5), LassoProblem(500, 500, "corr", 0.9),
    LassoProblem(200, 1000, "corr", 0.5), LassoProblem(1000, 1000, "corr", 0.9),
)


def generate(problem: LassoProblem, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Draw one instance ``(X, y)`` of ``problem`` (deterministic in ``seed``).

    Args:
        problem: the size and generator.
        seed: any non-negative int (numpy ``default_rng``).

    Returns:
        ``X`` float64 ``(n, p)`` C-contiguous and ``y`` float64 ``(n,)``.

    Raises:
        ValueError: an unknown generator kind.
    """
    rng = np.random.default_rng(seed)
    n, p = problem.n, problem.p
    if problem.kind in ("g", "dense_sol"):
        X = rng.standard_normal((n, p))
        k = p // 5 if problem.kind == "dense_sol" else p // 20
        scale = 1.0
    elif problem.kind == "sparse":
        nnz = min(20, p)  # exactly 20 non-zeros per row, at distinct random columns
        cols = np.argpartition(rng.random((n, p)), nnz - 1, axis=1)[:, :nnz]
        X = np.zeros((n, p))
        X[np.arange(n)[:, None], cols] = rng.standard_normal((n, nnz))
        std = X.std(axis=0)
        X /= np.where(std > 1e-8, std, 1.0)
        k, scale = p // 100, 2.0
    elif problem.kind == "corr":
        z = rng.standard_normal((n, p))
        X = np.empty((n, p))
        X[:, 0] = z[:, 0]
        a, b = problem.rho, np.sqrt(1.0 - problem.rho**2)
        for j in range(1, p):  # AR(1) columns: Cov(x_j, x_k) = rho^|j-k| exactly
            X[:, j] = a * X[:, j - 1] + b * z[:, j]
        k, scale = p // 20, 1.0
    else:
        raise ValueError(f"unknown LASSO generator {problem.kind!r}")
    w = np.zeros(p)
    w[rng.choice(p, size=max(1, k), replace=False)] = scale * rng.standard_normal(max(1, k))
    y = X @ w + 0.1 * rng.standard_normal(n)
    return np.ascontiguousarray(X, dtype=np.float64), y.astype(np.float64)


def lambda_grid(X: np.ndarray, y: np.ndarray, n_lambda: int = N_LAMBDA, eps: float = EPS) -> np.ndarray:
    """scikit-learn's ``lasso_path`` grid (no intercept): ``n_lambda`` values, log-spaced, decreasing.

    λ_max = max_j |x_jᵀ y| / n (the smallest λ with w = 0), λ_min = eps · λ_max.

    Returns:
        float64 ``(n_lambda,)``, ``[λ_max, …, eps · λ_max]``.

    Raises:
        InvalidSolution: X'y = 0 (every λ would give w = 0).
    """
    lam_max = float(np.max(np.abs(X.T @ y))) / X.shape[0]
    if not lam_max > 0:
        raise InvalidSolution("X'y = 0: the LASSO path is identically zero")
    return np.geomspace(lam_max, lam_max * eps, num=n_lambda)


def objective(X: np.ndarray, y: np.ndarray, coef: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """obj_λ(w) = ‖y − Xw‖² / (2n) + λ ‖w‖₁ for every column of ``coef``.

    Args:
        X: ``(n, p)``; y: ``(n,)``; coef: ``(p, n_lambda)``; lambdas: ``(n_lambda,)``.

    Returns:
        float64 ``(n_lambda,)``.
    """
    resid = y[:, None] - X @ coef
    return (resid * resid).sum(axis=0) / (2.0 * X.shape[0]) + lambdas * np.abs(coef).sum(axis=0)


def reference_path(X: np.ndarray, y: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """scikit-learn's ``lasso_path`` on ``lambdas`` with its default settings (TES's reference).

    Returns:
        float64 ``(p, n_lambda)`` coefficients.

    Raises:
        BackendUnavailable: scikit-learn is not installed (``pip install discoverygym[lasso]``).
    """
    try:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import lasso_path
    except ImportError as exc:
        raise BackendUnavailable(f"the LASSO reference needs scikit-learn (pip install 'discoverygym[lasso]'): {exc}") \
            from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, coefs, _ = lasso_path(X, y, alphas=lambdas)
    return np.asarray(coefs, dtype=np.float64)


def encode_input(X: np.ndarray, y: np.ndarray, lambdas: np.ndarray) -> bytes:
    """The program's stdin: int32 n, p, n_lambda, then float64 X (row-major), y, λ (little-endian)."""
    n, p = X.shape
    head = np.array([n, p, len(lambdas)], dtype="<i4").tobytes()
    return head + b"".join(np.ascontiguousarray(a, dtype="<f8").tobytes() for a in (X, y, lambdas))


def decode_output(raw: bytes, p: int, n_lambda: int) -> np.ndarray:
    """The program's stdout as the ``(p, n_lambda)`` coefficient path.

    Raises:
        InvalidSolution: not exactly ``p · n_lambda`` float64 values, or a value that is not finite.
    """
    want = 8 * p * n_lambda
    if len(raw) != want:
        raise InvalidSolution(f"output has {len(raw)} bytes, expected {want} (p x n_lambda = {p} x {n_lambda} "
                              "float64 values)")
    coef = np.frombuffer(raw, dtype="<f8").reshape(n_lambda, p).T
    bad = np.argwhere(~np.isfinite(coef))
    if len(bad):
        j, k = (int(v) for v in bad[0])
        raise InvalidSolution(f"coef_path[{j}, {k}] = {coef[j, k]} is not finite")
    return np.array(coef, dtype=np.float64)


def check_path(X: np.ndarray, y: np.ndarray, lambdas: np.ndarray, coef: np.ndarray, ref_obj: np.ndarray,
               name: str = "problem", tol: float = GAP_TOL) -> np.ndarray:
    """Objective excess of a candidate path over the reference at each λ (TES's correctness rule).

    Args:
        X, y, lambdas: the instance; coef: candidate ``(p, n_lambda)``; ref_obj: reference
            objectives ``(n_lambda,)`` (:func:`objective` of :func:`reference_path`).
        name: the problem named in the error message.
        tol: largest excess accepted (default :data:`GAP_TOL`).

    Returns:
        float64 ``(n_lambda,)``: obj(candidate) − obj(reference) (negative = better than sklearn).

    Raises:
        InvalidSolution: an excess above ``tol``; the message names the problem, the first λ
            index over, λ and the two objectives (and how many λ are over, and the worst).
    """
    gaps = objective(X, y, coef, lambdas) - ref_obj
    over = np.flatnonzero(~(gaps <= tol))
    if len(over):
        k, worst = int(over[0]), int(np.argmax(np.where(np.isnan(gaps), np.inf, gaps)))
        more = f"; {len(over)} lambda(s) over, the worst index {worst} by {gaps[worst]:.3g}" if len(over) > 1 else ""
        raise InvalidSolution(
            f"{name}: lambda index {k} (lambda = {lambdas[k]:.6g}): objective {ref_obj[k] + gaps[k]:.12g} "
            f"exceeds the reference {ref_obj[k]:.12g} by {gaps[k]:.3g} > {tol:g}{more}")
    return gaps
