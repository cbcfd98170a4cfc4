"""Human baseline for ScalingLaw-DataConstrained-v0: the data-constrained scaling law.

Muennighoff et al. 2023, "Scaling Data-Constrained Language Models", Sec. 3: Chinchilla's
L = E + A / N'^alpha + B / D'^beta with the effective data D' and effective parameters N' of
repeated data: D' = U + U R*_D (1 - exp(-R_D / R*_D)), R_D = D / U - 1 (epochs beyond the first);
N' = U_N + U_N R*_N (1 - exp(-R_N / R*_N)), U_N = min(N, U / 20) (the compute-optimal size for the
unique data, Chinchilla's ~20 tokens per parameter), R_N = N / U_N - 1. Seven parameters
(E, A, B, alpha, beta, R*_D, R*_N), fitted by least squares on log-parameters.
"""
import numpy as np
from scipy.optimize import least_squares


def _effective(X, rd, rn):
    tokens, n, unique = X[:, 0], X[:, 1], X[:, 2]
    r_d = np.maximum(tokens / unique - 1.0, 0.0)
    d_eff = unique + unique * rd * (1.0 - np.exp(-r_d / rd))
    u_n = np.minimum(n, unique / 20.0)
    r_n = np.maximum(n / u_n - 1.0, 0.0)
    n_eff = u_n + u_n * rn * (1.0 - np.exp(-r_n / rn))
    return n_eff, d_eff


def scaling_law(X, params):
    """Loss of each row of X = [tokens, params, unique_tokens]; params = [E, log A, log B, alpha, beta, log R*_D, log R*_N]."""
    X = np.asarray(X, dtype=float)
    e, la, lb, alpha, beta, lrd, lrn = params
    n_eff, d_eff = _effective(X, np.exp(lrd), np.exp(lrn))
    return e + np.exp(la - alpha * np.log(n_eff)) + np.exp(lb - beta * np.log(d_eff))


def fit(X, y):
    """Least squares from a few starts; returns the 7 parameters of scaling_law."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    best = None
    for alpha, beta in ((0.34, 0.28), (0.5, 0.5), (0.2, 0.2)):
        x0 = np.array([1.7, np.log(400.0), np.log(400.0), alpha, beta, np.log(15.0), np.log(5.0)])
        res = least_squares(lambda p: scaling_law(X, p) - y, x0, method="trf", max_nfev=4000,
                            bounds=([0, -10, -10, 0.01, 0.01, -5, -5], [10, 60, 60, 3, 3, 10, 10]))
        if best is None or res.cost < best.cost:
            best = res
    return best.x
