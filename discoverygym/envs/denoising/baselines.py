"""Baseline denoisers of the OpenProblems v1 denoising task, as functions and as program sources.

* :func:`no_denoising`: the train counts themselves (OpenProblems' "No denoising" baseline).
* :func:`magic_reversed`: "MAGIC (reversed normalization)" of OpenProblems v1: square root of
  the counts, then each cell scaled to sum 1, MAGIC diffusion (van Dijk et al. 2018, *Cell*
  174:716), squaring back and multiplying by the library sizes. The diffusion follows MAGIC's
  exact solver with its defaults (graphtools kernel): 100 principal components, the 15 nearest
  neighbours (self included) of each cell, adaptive bandwidth = distance to the 5th of them,
  affinity ``exp(-(d / bandwidth) ** decay)`` with ``decay = 1`` dropped below 1e-4, symmetrised
  as ``(K + K.T) / 2``, row-normalised to a Markov matrix ``P``, and ``P ** 3 @ X``. As in
  OpenProblems, the result is multiplied back by the library size ``L`` of the square-rooted
  counts, not ``L ** 2``, so each cell comes back divided by ``L`` (harmless for the per-cell
  normalised MSE; it is what OpenProblems scores). Written here
  on numpy/scipy/scikit-learn (the ``magic-impute`` package installs on numpy 2 too, but pulls
  graphtools, scprep, pygsp and matplotlib, which candidate programs are not given).
* :func:`knn_smoothing`: OpenProblems v1's "KNN smoothing" (``knn_naive``): cells scaled to sum 1,
  ``log1p``, each cell replaced by the mean over its 5 nearest cells (self included; the kNN
  connectivity graph symmetrised and row-normalised, one step), ``expm1`` and library sizes back.

:func:`program_source` turns each into a self-contained candidate program defining
``denoise(X_train, seed=0, budget_s=None)``; the env uses MAGIC's as its initial state.
"""

from __future__ import annotations

import inspect

import numpy as np

__all__ = ["BASELINES", "knn_smoothing", "magic_reversed", "no_denoising", "program_source"]


def _diffuse(x, knn=5, knn_max=15, decay=1.0, t=3, n_pca=100, seed=0):
    """MAGIC's data diffusion (exact solver) of a ``(cells, genes)`` float matrix.

    Args:
        x: ``(cells, genes)`` float64 normalised expression.
        knn: neighbours defining the adaptive bandwidth (MAGIC default 5, self included).
        knn_max: neighbours searched per cell (MAGIC default ``3 * knn``).
        decay: alpha-decay exponent; ``None`` gives the binary kNN graph of ``knn`` neighbours.
        t: diffusion steps.
        n_pca: principal components the distances are computed in (MAGIC default 100).
        seed: random state of the randomized PCA.

    Returns:
        float64 ``(cells, genes)``: ``P ** t @ x``.
    """
    import scipy.sparse as sp
    from sklearn.decomposition import PCA

    n_cells, n_genes = x.shape
    n_comp = min(n_pca, n_cells - 1, n_genes - 1)
    if n_comp >= 1 and n_comp < n_genes:
        y = PCA(n_components=n_comp, svd_solver="randomized", random_state=seed).fit_transform(x)
    else:
        y = x
    k = min(knn, n_cells)
    search = min(knn_max if decay is not None else k, n_cells)
    # exact Euclidean neighbours by blocks (sklearn's NearestNeighbors needs threadpoolctl, which
    # reads /proc/self/maps: refused by the sandbox)
    sq = np.einsum("ij,ij->i", y, y)
    dist = np.empty((n_cells, search))
    idx = np.empty((n_cells, search), dtype=np.int64)
    for lo in range(0, n_cells, 1024):
        d2 = sq[lo:lo + 1024, None] + sq[None, :] - 2.0 * (y[lo:lo + 1024] @ y.T)
        np.maximum(d2, 0.0, out=d2)
        d2[np.arange(d2.shape[0]), np.arange(lo, lo + d2.shape[0])] = 0.0  # self first
        part = np.argpartition(d2, search - 1, axis=1)[:, :search]
        order = np.argsort(np.take_along_axis(d2, part, axis=1), axis=1, kind="stable")
        idx[lo:lo + 1024] = np.take_along_axis(part, order, axis=1)
        dist[lo:lo + 1024] = np.sqrt(np.take_along_axis(d2, idx[lo:lo + 1024], axis=1))
    rows = np.repeat(np.arange(n_cells), search)
    if decay is None:
        weights = np.ones(n_cells * search)
    else:
        bandwidth = np.maximum(dist[:, k - 1], np.finfo(float).eps)
        aff = np.exp(-((dist / bandwidth[:, None]) ** decay))
        aff[aff < 1e-4] = 0.0
        weights = aff.ravel()
    kern = sp.csr_matrix((weights, (rows, idx.ravel())), shape=(n_cells, n_cells))
    kern = (kern + kern.T) / 2
    inv_deg = 1.0 / np.asarray(kern.sum(axis=1)).ravel()
    markov = sp.diags(inv_deg) @ kern
    out = np.asarray(x, dtype=np.float64)
    for _ in range(t):
        out = markov @ out
    return np.asarray(out)


def no_denoising(X_train, seed=0):
    """OpenProblems' "No denoising": return the train counts (float64 copy).

    Args:
        X_train: ``(cells, genes)`` counts.
        seed: unused.
    """

    return np.array(X_train, dtype=np.float64)


def magic_reversed(X_train, seed=0, t=3, knn=5, decay=1.0):
    """OpenProblems v1 "MAGIC (reversed normalization)": sqrt, library-size to 1, diffuse, square, x libsize.

    Args:
        X_train: ``(cells, genes)`` non-negative counts.
        seed: random state of the PCA.
        t, knn, decay: MAGIC parameters (defaults of MAGIC 3.0).

    Returns:
        float64 ``(cells, genes)`` non-negative denoised counts.
    """

    x = np.sqrt(np.asarray(X_train, dtype=np.float64))
    libsize = x.sum(axis=1)
    x = x / np.where(libsize > 0, libsize, 1.0)[:, None]
    y = _diffuse(x, knn=knn, knn_max=3 * knn, decay=decay, t=t, seed=seed)
    return np.square(y) * libsize[:, None]


def knn_smoothing(X_train, seed=0, knn=5):
    """OpenProblems v1 "KNN smoothing": library-size to 1, log1p, mean of 5 nearest cells, expm1, x libsize.

    Args:
        X_train: ``(cells, genes)`` non-negative counts.
        seed: random state of the PCA.
        knn: neighbours averaged (self included).

    Returns:
        float64 ``(cells, genes)`` non-negative denoised counts.
    """

    x = np.asarray(X_train, dtype=np.float64)
    libsize = x.sum(axis=1)
    x = np.log1p(x / np.where(libsize > 0, libsize, 1.0)[:, None])
    y = _diffuse(x, knn=knn, decay=None, t=1, seed=seed)
    return np.expm1(y) * libsize[:, None]


#: baseline name -> function (``denoise``-compatible: ``fn(X_train, seed=...)``).
BASELINES = {"no-denoising": no_denoising, "magic-reversed": magic_reversed, "knn-smoothing": knn_smoothing}


def program_source(name: str) -> str:
    """Self-contained program text of a baseline, defining ``denoise(X_train, seed=0, budget_s=None)``.

    Args:
        name: a key of :data:`BASELINES`.

    Raises:
        ValueError: unknown baseline name.
    """
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}")
    fn = BASELINES[name]
    parts = [f'"""Baseline denoiser: {name} (OpenProblems v1), from discoverygym.envs.denoising.baselines."""',
             "import numpy as np", ""]
    if fn is not no_denoising:
        parts += [inspect.getsource(_diffuse), ""]
    parts += [inspect.getsource(fn), "",
              "def denoise(X_train, seed=0, budget_s=None):",
              '    """Return denoised counts of the same shape as X_train (cells x genes)."""',
              f"    return {fn.__name__}(X_train, seed=seed)", ""]
    return "\n".join(parts)
