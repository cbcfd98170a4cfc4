"""Human baseline for ScalingLaw-MoE-v0: the unified scaling law of routed language models.

Clark et al. 2022, "Unified Scaling Laws for Routed Language Models", Sec. 4-5:
log L = a log N + b log E' + c log N log E' + d, with the saturated expert count
1/E' = 1/(E - 1 + (1/E_start - 1/E_max)^-1) + 1/E_max. Six parameters (a, b, c, d, E_start, E_max),
fitted by least squares on log L (N in units of 1e8 parameters to keep the problem well scaled).
"""
import numpy as np
from scipy.optimize import least_squares


def _saturated(e, e_start, e_max):
    return 1.0 / (1.0 / (e - 1.0 + 1.0 / (1.0 / e_start - 1.0 / e_max)) + 1.0 / e_max)


def scaling_law(X, params):
    """Validation loss of each row of X = [num_experts, dense_parameter_count]."""
    X = np.asarray(X, dtype=float)
    a, b, c, d, e_start, e_max = params
    ln_n = np.log(X[:, 1] / 1e8)
    ln_e = np.log(_saturated(X[:, 0], e_start, e_max))
    return np.exp(a * ln_n + b * ln_e + c * ln_n * ln_e + d)


def fit(X, y):
    """Least squares on log-loss from a few starts; returns the 6 parameters of scaling_law."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    best = None
    for e_start, e_max in ((1.5, 300.0), (2.0, 100.0), (1.2, 1000.0)):
        x0 = np.array([-0.08, -0.03, 0.005, 1.2, e_start, e_max])
        res = least_squares(lambda p: np.log(scaling_law(X, p)) - np.log(y), x0, method="trf", max_nfev=3000,
                            bounds=([-2, -2, -1, -5, 1.0001, 2.0], [2, 2, 1, 5, 50.0, 1e6]))
        if best is None or res.cost < best.cost:
            best = res
    return best.x
