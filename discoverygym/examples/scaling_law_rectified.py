"""Human baseline for ScalingLaw-Rectified-v0: the rectified scaling law of fine-tuning.

Lin et al. 2024, "Selecting Large Language Model to Fine-tune via Rectified Scaling Law", Sec. 3:
the fine-tuning loss after D examples is L(D) = B / (D_l + D^beta) + E, where D_l is the "pre-learned
data size" that bends the curve at small D. Four parameters (B, log D_l, beta, E) per (dataset,
model) group. For fixed (D_l, beta) the law is linear in (B, E): a grid over (log D_l, beta) with
linear least squares gives the start of a final least-squares refinement.
"""
import numpy as np
from scipy.optimize import least_squares


def scaling_law(X, params):
    """Loss at each data size X[:, 0]."""
    d = np.asarray(X, dtype=float)[:, 0]
    b, ldl, beta, e = params
    return b / (np.exp(ldl) + d ** beta) + e


def fit(X, y):
    """Grid + linear least squares, then refinement; returns the 4 parameters of scaling_law."""
    d, y = np.asarray(X, dtype=float)[:, 0], np.asarray(y, dtype=float)
    ldl, beta = (g.ravel() for g in np.meshgrid(np.linspace(-4.0, 16.0, 41), np.linspace(0.05, 1.5, 30)))
    f = 1.0 / (np.exp(ldl)[:, None] + d[None, :] ** beta[:, None])          # (grid, n)
    fc, yc = f - f.mean(axis=1, keepdims=True), y - y.mean()
    b = (fc @ yc) / np.maximum(np.sum(fc * fc, axis=1), 1e-300)              # slope of y on f
    e = y.mean() - b * f.mean(axis=1)
    sse = np.sum((b[:, None] * f + e[:, None] - y) ** 2, axis=1)
    k = int(np.nanargmin(sse))
    best = (sse[k], np.array([b[k], ldl[k], beta[k], e[k]]))
    res = least_squares(lambda p: scaling_law(X, p) - y, best[1], method="lm", max_nfev=200)
    return res.x if np.isfinite(res.cost) and 2 * res.cost <= best[0] else best[1]
