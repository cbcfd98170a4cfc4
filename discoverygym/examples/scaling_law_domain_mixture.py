"""Human baseline for ScalingLaw-DomainMixture-v0: the data mixing law.

Ye et al. 2024, "Data Mixing Laws", Sec. 3: the loss on domain i of a mixture with proportions
r_1..r_5 is L_i(r) = c_i + k_i exp(sum_j t_ij r_j). Seven parameters per domain (c_i, k_i,
t_i1..t_i5), 35 per model size, stored domain after domain; each domain fitted by least squares.
"""
import numpy as np
from scipy.optimize import least_squares

_PER_DOMAIN = 7


def _one(R, p):
    return p[0] + p[1] * np.exp(R @ p[2:])


def scaling_law(X, params):
    """(n, 5) losses of the (n, 5) mixtures X; params: 35 numbers (7 per domain)."""
    R = np.asarray(X, dtype=float)
    P = np.asarray(params, dtype=float).reshape(-1, _PER_DOMAIN)
    return np.stack([_one(R, p) for p in P], axis=1)


def fit(X, y):
    """Fit each domain's 7 parameters; returns the 35 of scaling_law."""
    R, Y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    out = []
    for i in range(Y.shape[1]):
        yi = Y[:, i]
        x0 = np.concatenate([[0.8 * yi.min(), 0.2 * yi.min()], np.zeros(R.shape[1])])
        res = least_squares(lambda p, yi=yi: _one(R, p) - yi, x0, method="trf", max_nfev=2000,
                            bounds=([-10, 1e-6] + [-20] * R.shape[1], [10, 20] + [20] * R.shape[1]))
        out.append(res.x)
    return np.concatenate(out)
