"""Example program for ErdosMinOverlap-v0 (numpy only): a smoothed indicator step function.

h is close to 1 on the middle of [0, 2] and close to 0 near the ends, with linear ramps; the
verifier rescales it to integral 1 and recomputes C5 itself.
"""

import numpy as np


def construct(seed: int = 0, budget_s: float = 10.0, parent=None):
    n = 200
    x = (np.arange(n) + 0.5) / n * 2.0  # piece centres on [0, 2]
    h = np.clip(1.5 - 2.0 * np.abs(x - 1.0), 0.0, 1.0)
    return h * (n / 2) / h.sum()
