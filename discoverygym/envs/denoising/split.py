"""Molecular cross-validation split of a count matrix (OpenProblems v1 ``denoising/datasets/utils.py``).

Each molecule (UMI) of the count matrix goes to ``train`` with probability 0.9 and to ``test``
otherwise: ``train = Binomial(X, 0.9)`` drawn with ``numpy.random.RandomState(seed)`` on the dense
matrix (the same draws as molecular-cross-validation's ``split_molecules(X, 0.9, 0.0, rs)``), and
``test = X - train``. Genes with no train count are then dropped from both (Batson et al. 2019;
OpenProblems v1 seed 0, TTT-Discover seed 42 on pancreas).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["Split", "mcv_split"]


@dataclass(frozen=True)
class Split:
    """A train/test split of one count matrix.

    Attributes:
        train: float64 ``(cells, kept genes)`` dense train counts (what the denoiser sees).
        test: float64 ``(cells, kept genes)`` dense held-out counts (never leaves the parent process).
        genes: int64 indices of the kept genes in the input matrix.
        seed: the RandomState seed used.
        train_frac: probability of a molecule going to train.
    """

    train: np.ndarray
    test: np.ndarray
    genes: np.ndarray
    seed: int
    train_frac: float


def mcv_split(counts, train_frac: float = 0.9, seed: int = 0) -> Split:
    """Split integer counts into train and test molecules, dropping genes with no train count.

    Args:
        counts: ``(cells, genes)`` non-negative integer counts, dense or scipy sparse (any numeric
            dtype holding whole numbers).
        train_frac: probability of each molecule going to train (0.9 in OpenProblems v1).
        seed: seed of ``numpy.random.RandomState``.

    Returns:
        :class:`Split`.

    Raises:
        TypeError: the counts are not whole non-negative numbers (molecular cross-validation
            needs UMI counts).
        ValueError: ``train_frac`` outside (0, 1), or not a 2-D matrix.
    """
    if not 0 < train_frac < 1:
        raise ValueError(f"train_frac must be in (0, 1), got {train_frac}")
    x = counts.toarray() if sp.issparse(counts) else np.asarray(counts)
    if x.ndim != 2:
        raise ValueError(f"counts must be a (cells, genes) matrix, got shape {x.shape}")
    xi = np.rint(x).astype(np.int64)
    if not np.array_equal(xi, x) or (xi < 0).any():
        raise TypeError("molecular cross-validation needs non-negative integer counts")
    rs = np.random.RandomState(seed)
    train = rs.binomial(xi, train_frac)
    test = xi - train
    genes = np.flatnonzero(train.sum(axis=0) > 0)
    return Split(train[:, genes].astype(np.float64), test[:, genes].astype(np.float64), genes.astype(np.int64),
                 int(seed), float(train_frac))
