"""Human baseline for ScalingLaw-LrBsz-v0: loss versus learning rate, batch size, data and model size.

Step Law (Li et al. 2025, "Predictable Scale: Part I"): the optimal learning rate falls with the
model size N and the optimal batch size grows with the data size D (both power laws), and the loss
is convex in log lr and log bsz around those optima. In our form:
L = E + A / N^alpha + B / D^beta + C (ln lr - l0 - l1 ln N)^2 + G (ln bsz - b0 - b1 ln D)^2,
eleven parameters, fitted by least squares.
"""
import numpy as np
from scipy.optimize import least_squares


def scaling_law(X, params):
    """Loss of each row of X = [lr, bsz, data_size, non_embedding_params]."""
    X = np.asarray(X, dtype=float)
    lnlr, lnb, lnd, lnn = (np.log(X[:, k]) for k in range(4))
    e, la, alpha, lb, beta, c, l0, l1, g, b0, b1 = params
    base = e + np.exp(la - alpha * lnn) + np.exp(lb - beta * lnd)
    return base + c * (lnlr - l0 - l1 * lnn) ** 2 + g * (lnb - b0 - b1 * lnd) ** 2


def fit(X, y):
    """Least squares from one start; returns the 11 parameters of scaling_law."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    best = None
    for alpha in (0.3,):
        x0 = np.array([1.5, np.log(30.0), alpha, np.log(30.0), 0.3, 0.02, 0.0, -0.5, 0.01, -4.0, 0.5])
        res = least_squares(lambda p: scaling_law(X, p) - y, x0, method="trf", max_nfev=1000, x_scale="jac",
                            bounds=([0, -20, 0, -20, 0, 0, -30, -3, 0, -40, -2], [5, 40, 3, 40, 3, 1, 30, 3, 1, 40, 3]))
        if best is None or res.cost < best.cost:
            best = res
    return best.x
