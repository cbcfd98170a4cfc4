"""Human baseline for ScalingLaw-Vocab-v0: the vocabulary scaling law.

Tao et al. 2024, "Scaling Laws with Vocabulary", Sec. 4: the unigram-normalised loss is
L_u = -E + A1 / N_nv^a1 + A2 / N_v^a2 + B / H^b, with N_nv the non-vocabulary parameters, N_v the
vocabulary parameters and H the training characters. The data give the vocabulary size V, not the
embedding width, so V stands for N_v here. Seven parameters (E, A1, a1, A2, a2, B, b), fitted by
least squares on log-coefficients.
"""
import numpy as np
from scipy.optimize import least_squares


def scaling_law(X, params):
    """Lossu of each row of X = [non_vocab_parameters, vocab_size, num_characters]."""
    ln = np.log(np.asarray(X, dtype=float))
    e, la1, a1, la2, a2, lb, b = params
    return -e + np.exp(la1 - a1 * ln[:, 0]) + np.exp(la2 - a2 * ln[:, 1]) + np.exp(lb - b * ln[:, 2])


def fit(X, y):
    """Least squares from a few starts; returns the 7 parameters of scaling_law."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    best = None
    for a in (0.2, 0.4, 0.7):
        x0 = np.array([6.0, np.log(30.0), a, np.log(3.0), a, np.log(300.0), a])
        res = least_squares(lambda p: scaling_law(X, p) - y, x0, method="trf", max_nfev=3000,
                            bounds=([-10, -20, 0, -20, 0, -20, 0], [20, 60, 3, 60, 3, 60, 3]))
        if best is None or res.cost < best.cost:
            best = res
    return best.x
