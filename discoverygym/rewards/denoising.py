"""Verifier of single-cell RNA-seq denoising: OpenProblems v1 metrics, normalisation and TTT's gate.

Protocol (OpenProblems v1, ``tasks/denoising``; Batson et al. 2019, molecular cross-validation):
the counts are split into ``train`` (given to the denoiser) and ``test`` (held out), and the
denoised matrix is compared with ``test``:

* **MSE**: both ``test`` and ``denoised`` are library-size normalised to 10,000 counts per cell and
  ``log1p``-transformed separately (scanpy ``normalize_total(target_sum=1e4)`` + ``log1p``; a cell
  summing to 0 stays 0), then the mean squared difference over all entries is taken.
* **Poisson**: ``denoised`` is rescaled by ``sum(test) / sum(train)`` and the loss is
  ``mean(test - scaled * log(test + 1e-6))``. OpenProblems v1 calls molecular-cross-validation's
  ``poisson_nll_loss(y_pred, y_true)`` with ``y_pred = test`` and ``y_true = denoised``, so the
  logarithm is of the *test* counts; this module keeps that argument order on purpose.
* **Normalised** scores: ``(baseline - x) / (baseline - perfect)`` where the baseline is "no
  denoising" (``denoised = train``) and "perfect" is ``denoised = test``: 0 = no better than the
  raw counts, 1 = as good as the held-out counts themselves. Their mean is OpenProblems' ranking
  score (the records quoted by TTT-Discover: PBMC 0.64 MAGIC -> 0.71).
* **TTT-Discover's gate**: the denoised matrix must be finite, non-negative and no entry may exceed
  the total train count; the raw metrics must be finite, non-negative and the Poisson loss may not
  beat the perfect denoiser; normalised Poisson must be >= 0.97. A candidate passing the gate is
  rewarded by its normalised MSE clipped to [0, 1] (TTT-Discover's reward).

Additionally (ours, not in either source) a normalised MSE above :data:`IMPLAUSIBLE_MSE_NORM` is
rejected: only a program that has seen the held-out counts gets that close (the best published
denoisers are below 0.5), so this stops the crude form of reading the raw data behind the split.

Everything is float64 numpy; the functions accept dense arrays or scipy sparse matrices for
``train``/``test`` and a dense array for ``denoised``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score

__all__ = [
    "IMPLAUSIBLE_MSE_NORM",
    "POISSON_GATE",
    "TARGET_SUM",
    "Baselines",
    "baselines",
    "check_denoised",
    "log_normalize",
    "mse",
    "poisson",
    "score_denoised",
]

#: normalised Poisson a candidate must reach (TTT-Discover's constraint).
POISSON_GATE = 0.97
#: counts per cell after library-size normalisation in the MSE (OpenProblems v1 ``mse``).
TARGET_SUM = 1e4
#: epsilon inside the Poisson loss's logarithm (molecular-cross-validation ``poisson_nll_loss``).
POISSON_EPS = 1e-6
#: normalised MSE above which an output is taken to reproduce the held-out counts (ours).
IMPLAUSIBLE_MSE_NORM = 0.9


def _dense(x) -> np.ndarray:
    """float64 dense copy-free view of an array or sparse matrix."""
    if sp.issparse(x):
        return np.asarray(x.toarray(), dtype=np.float64)
    return np.asarray(x, dtype=np.float64)


def log_normalize(x, target_sum: float = TARGET_SUM) -> np.ndarray:
    """``log1p`` of each cell scaled to ``target_sum`` counts (scanpy ``normalize_total`` + ``log1p``).

    Args:
        x: ``(cells, genes)`` non-negative counts or expression (dense or sparse).
        target_sum: counts per cell after scaling.

    Returns:
        float64 ``(cells, genes)`` array; rows summing to 0 stay 0 (as scanpy does).
    """
    x = _dense(x)
    totals = x.sum(axis=1, keepdims=True)
    scale = np.divide(target_sum, totals, out=np.zeros_like(totals), where=totals > 0)
    return np.log1p(x * scale)


def mse(test, denoised) -> float:
    """OpenProblems v1 ``mse``: mean squared error of the log-normalised matrices.

    Args:
        test: ``(cells, genes)`` held-out counts.
        denoised: ``(cells, genes)`` non-negative denoised values (any scale: each cell is
            normalised to 10,000 before comparison).

    Returns:
        The mean over all ``cells * genes`` entries of ``(log_normalize(test) - log_normalize(denoised))**2``.
    """
    diff = log_normalize(test) - log_normalize(denoised)
    return float(np.mean(diff * diff))


def poisson(train, test, denoised) -> float:
    """OpenProblems v1 ``poisson``: Poisson loss with the v1 argument order.

    ``scaled = denoised * sum(test) / sum(train)``; value ``mean(test - scaled * log(test + 1e-6))``
    (molecular-cross-validation's ``poisson_nll_loss(test, scaled)``).

    Args:
        train: ``(cells, genes)`` train counts (only their total is used).
        test: ``(cells, genes)`` held-out counts.
        denoised: ``(cells, genes)`` denoised values.

    Returns:
        The loss as a float (can be negative for absurd inputs; the gate rejects those).
    """
    train_total = float(train.sum())
    test_d = _dense(test)
    scaled = _dense(denoised) * (float(test_d.sum()) / train_total)
    return float(np.mean(test_d - scaled * np.log(test_d + POISSON_EPS)))


@dataclass(frozen=True)
class Baselines:
    """Raw metrics of the two reference denoisers of one split (OpenProblems v1 baselines).

    Attributes:
        mse_none: MSE of "no denoising" (``denoised = train``).
        poisson_none: Poisson loss of "no denoising".
        mse_perfect: MSE of "perfect denoising" (``denoised = test``; 0 by construction).
        poisson_perfect: Poisson loss of "perfect denoising".
    """

    mse_none: float
    poisson_none: float
    mse_perfect: float
    poisson_perfect: float

    def normalise(self, mse_value: float, poisson_value: float) -> tuple[float, float]:
        """``(mse_norm, poisson_norm)`` = ``(none - x) / (none - perfect)`` for each metric (1 = perfect).

        Raises:
            ValueError: a degenerate split where a baseline equals the perfect value.
        """
        mse_range = self.mse_none - self.mse_perfect
        poisson_range = self.poisson_none - self.poisson_perfect
        if not (mse_range > 0 and poisson_range > 0):
            raise ValueError(f"degenerate split: baselines {self} leave no room between none and perfect")
        return (self.mse_none - mse_value) / mse_range, (self.poisson_none - poisson_value) / poisson_range


def baselines(train, test) -> Baselines:
    """Compute :class:`Baselines` of a split (no denoising = train, perfect = test).

    Args:
        train: ``(cells, genes)`` train counts.
        test: ``(cells, genes)`` test counts.
    """
    return Baselines(mse(test, train), poisson(train, test, train), mse(test, test), poisson(train, test, test))


def check_denoised(denoised, shape: tuple[int, int], train_total: float) -> np.ndarray:
    """Validate a denoiser's output before scoring (TTT-Discover's checks).

    Args:
        denoised: the output (anything array-like).
        shape: expected ``(cells, genes)``.
        train_total: sum of the train counts; no entry may exceed it.

    Returns:
        The output as a float64 ``(cells, genes)`` array.

    Raises:
        InvalidSolution: not numeric, wrong shape, non-finite, negative or an entry above the
            total train count; the message names the first offending entry.
    """
    try:
        arr = np.asarray(denoised)
    except (ValueError, TypeError) as exc:  # ragged lists, objects
        raise InvalidSolution(f"denoised output is not an array ({type(exc).__name__}: {exc})") from None
    if arr.dtype.kind not in "iuf":
        raise InvalidSolution(f"denoised output has dtype {arr.dtype}; real numbers are required")
    if arr.shape != tuple(shape):
        raise InvalidSolution(f"denoised output has shape {arr.shape}; expected {tuple(shape)} (cells, genes) "
                              "like X_train")
    arr = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InvalidSolution(f"denoised[{i}, {j}] = {arr[i, j]} is not finite ({int(bad.sum())} non-finite entries)")
    neg = arr < 0
    if neg.any():
        i, j = np.argwhere(neg)[0]
        raise InvalidSolution(f"denoised[{i}, {j}] = {arr[i, j]:.6g} is negative ({int(neg.sum())} negative "
                              "entries); denoised expression must be >= 0")
    top = float(arr.max()) if arr.size else 0.0
    if top > train_total:
        i, j = np.unravel_index(int(np.argmax(arr)), arr.shape)
        raise InvalidSolution(f"denoised[{i}, {j}] = {top:.6g} exceeds the total train count {train_total:.6g}")
    return arr


def score_denoised(train, test, denoised, base: Baselines | None = None) -> Score:
    """Judge a denoised matrix: metrics, normalisation, gate and reward.

    Args:
        train: ``(cells, genes)`` train counts (what the denoiser saw).
        test: ``(cells, genes)`` held-out counts.
        denoised: the denoiser's ``(cells, genes)`` output.
        base: precomputed :func:`baselines` of this split (computed when ``None``).

    Returns:
        :class:`Score` whose value is TTT-Discover's reward, normalised MSE clipped to [0, 1], with
        metrics ``mse``, ``poisson``, ``mse_norm``, ``poisson_norm``, ``mean_score`` (OpenProblems'
        ranking score, unclipped), the baselines' raw values and ``gate = "pass"``.

    Raises:
        InvalidSolution: the output fails :func:`check_denoised`, a raw metric is non-finite or
            negative, normalised MSE is above :data:`IMPLAUSIBLE_MSE_NORM`, the Poisson loss beats
            the perfect denoiser, or normalised Poisson is below :data:`POISSON_GATE`. The
            exception's ``metrics`` carry whatever was computed.
    """
    shape = tuple(train.shape)
    if tuple(test.shape) != shape:
        raise ValueError(f"train {shape} and test {tuple(test.shape)} shapes differ")
    arr = check_denoised(denoised, shape, float(train.sum()))
    base = base or baselines(train, test)
    m, p = mse(test, arr), poisson(train, test, arr)
    metrics = {"mse": m, "poisson": p, "mse_none": base.mse_none, "poisson_none": base.poisson_none,
               "mse_perfect": base.mse_perfect, "poisson_perfect": base.poisson_perfect}
    for name, value in (("MSE", m), ("Poisson loss", p)):
        if not np.isfinite(value):
            raise InvalidSolution(f"{name} is not finite ({value})", metrics={**metrics, "gate": "fail"})
        if value < 0:
            raise InvalidSolution(f"{name} {value:.6g} is negative", metrics={**metrics, "gate": "fail"})
    mse_norm, poisson_norm = base.normalise(m, p)
    metrics.update(mse_norm=mse_norm, poisson_norm=poisson_norm, mean_score=(mse_norm + poisson_norm) / 2)
    if mse_norm > IMPLAUSIBLE_MSE_NORM:
        raise InvalidSolution(f"normalised MSE {mse_norm:.4f} is implausibly close to the held-out counts "
                              f"(> {IMPLAUSIBLE_MSE_NORM}); outputs derived from the test split are not allowed",
                              metrics={**metrics, "gate": "fail"})
    if p < base.poisson_perfect - 1e-12 * abs(base.poisson_perfect):
        raise InvalidSolution(f"Poisson loss {p:.6g} is below the perfect denoiser's {base.poisson_perfect:.6g}",
                              metrics={**metrics, "gate": "fail"})
    if poisson_norm < POISSON_GATE:
        raise InvalidSolution(f"normalised Poisson {poisson_norm:.4f} is below the gate {POISSON_GATE} "
                              f"(raw {p:.6g}; no denoising {base.poisson_none:.6g}, perfect "
                              f"{base.poisson_perfect:.6g})", metrics={**metrics, "gate": "fail"})
    metrics["gate"] = "pass"
    return Score(float(min(1.0, max(0.0, mse_norm))), metrics)
