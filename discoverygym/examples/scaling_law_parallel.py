"""Human baseline for the hub-only parallel task: the parallel scaling law.

Chen et al. 2025, "Parallel Scaling Law for Language Models": running a model of N parameters with
P parallel streams acts like scaling N by (k log P + 1): L = (A / (N (k log P + 1)))^alpha + E.
Four parameters (log A, k, alpha, E) per corpus, fitted by least squares.
"""
import numpy as np
from scipy.optimize import least_squares


def scaling_law(X, params):
    """Loss of each row of X = [num_params, parallel_size]."""
    X = np.asarray(X, dtype=float)
    la, k, alpha, e = params
    n_eff = X[:, 0] * (k * np.log(X[:, 1]) + 1.0)
    return np.exp(alpha * (la - np.log(np.maximum(n_eff, 1.0)))) + e


def fit(X, y):
    """Least squares; returns the 4 parameters of scaling_law."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    x0 = np.array([np.log(1e8), 0.3, 0.2, 0.8 * y.min()])
    res = least_squares(lambda p: scaling_law(X, p) - y, x0, method="trf", max_nfev=3000,
                        bounds=([-10, 0.0, 0.01, -5], [60, 10, 3, 10]))
    return res.x
