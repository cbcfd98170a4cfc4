"""Example program for CirclePacking-26-v0 / -32-v0 (numpy only): a staggered layout.

Centres go on rows with alternating offsets; each radius is then the largest that keeps the
circle inside the square and at most half the distance to every other centre, so the packing is
valid by construction. The verifier recomputes the sum of radii from what is returned.
"""

import numpy as np


def construct(seed: int = 0, budget_s: float = 10.0, parent=None):
    n = 26 if parent is None else len(parent)
    rows = int(np.ceil(np.sqrt(n)))
    per_row = [n // rows + (1 if i < n % rows else 0) for i in range(rows)]
    centres = []
    for i, k in enumerate(per_row):
        y = (i + 0.5) / rows
        offset = 0.25 / k if i % 2 else -0.25 / k
        xs = (np.arange(k) + 0.5) / k + offset
        centres += [(float(np.clip(x, 0.05, 0.95)), y) for x in xs]
    c = np.array(centres[:n])
    d = np.linalg.norm(c[:, None, :] - c[None, :, :], axis=-1)
    np.fill_diagonal(d, np.inf)
    border = np.min(np.concatenate([c, 1.0 - c], axis=1), axis=1)
    r = np.minimum(border, d.min(axis=1) / 2.0)
    return np.column_stack([c, r])
