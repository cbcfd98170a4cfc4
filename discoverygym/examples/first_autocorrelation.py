"""Example program for FirstAutocorrelation-v0 (numpy only): a few rounds of random local search.

Starts from the parent construction (or a constant function), tries 300 random perturbations of a
block of heights and keeps the change when the bound C1 = 2n max(f*f) / (sum f)^2 goes down. The
program's own C1 is only a guide; the environment recomputes the score.
"""

import time

import numpy as np


def c1(f):
    return 2 * len(f) * np.max(np.convolve(f, f)) / np.sum(f) ** 2


def construct(seed: int = 0, budget_s: float = 10.0, parent=None):
    rng = np.random.default_rng(seed)
    f = np.ones(200) if parent is None else np.asarray(parent, dtype=float)[:600].copy()
    best = c1(f)
    deadline = time.time() + budget_s * 0.5
    for _ in range(300):  # a fixed number of tries keeps the result reproducible for a seed
        if time.time() > deadline:
            break
        g = f.copy()
        i = rng.integers(len(g))
        g[i : i + 8] = np.maximum(0.0, g[i : i + 8] + rng.normal(0, 0.1, len(g[i : i + 8])))
        value = c1(g)
        if value < best:
            f, best = g, value
    return f
