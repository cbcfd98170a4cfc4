"""Human baseline for the hub-only U-shape task (SLDBench's easy-question scaling).

The Brier score on easy questions first worsens, then improves with compute (a U shape in log
compute). Baseline: a quadratic in x = log10 FLOPs, b0 + b1 x + b2 x^2 (three parameters per group,
fitted by linear least squares).
"""
import numpy as np


def _features(X):
    x = np.asarray(X, dtype=float)[:, 0]
    return np.stack([np.ones_like(x), x, x * x], axis=1)


def scaling_law(X, params):
    """Brier score at each log10 FLOPs X[:, 0]."""
    return _features(X) @ np.asarray(params, dtype=float)


def fit(X, y):
    """Linear least squares; returns the 3 coefficients."""
    return np.linalg.lstsq(_features(X), np.asarray(y, dtype=float), rcond=None)[0]
