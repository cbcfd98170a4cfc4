"""Fast linear convolutions with a certified error bound, and the exact maximum of |a * b|.

Autocorrelation and overlap verifiers need either ``max_k |(a * b)_k|`` or the whole of ``a * b``
for step functions with up to ~10^5 pieces. Direct summation (``np.convolve``) is exact to
float64 rounding but costs O(n^2); an FFT costs O(n log n) but its error must be accounted for.

Error bound (first-order, radix-2 FFT; Higham, *Accuracy and Stability of Numerical Algorithms*,
2nd ed., Thm 24.2): a computed length-L FFT satisfies ``||ŷ - y||_2 <= e ||y||_2`` with
``e = log2(L) * eta`` and ``eta = mu + gamma_4 (sqrt(2) + mu) ≈ 6.66 u`` (u = 2^-53). Following the
forward transforms, the pointwise product and the inverse transform gives, for every entry k,

    |ĉ_k - c_k| <= (2e + u) * max(||a||_2 ||B||_inf, ||A||_inf ||b||_2) + e ||ĉ||_2

(A, B the transforms of a, b). We use twice this value as ``bound`` to cover second-order terms
and the rounding in computing the bound itself.

``max_abs_convolution`` uses the bound as a guard: every index whose FFT value is within
``2 * bound`` of the FFT maximum is a candidate for the true maximum, and those candidates are
recomputed by direct dot products, so the returned maximum is the direct float64 value (the same
number ``np.convolve`` gives, up to summation order, ~1e-16 relative).
"""

from __future__ import annotations

import math

import numpy as np

from discoverygym.errors import InvalidSolution

_U = 2.0**-53
_ETA = _U + 4 * _U / (1 - 4 * _U) * (math.sqrt(2) + _U)
#: below this many pieces direct summation is as fast as the FFT and is used instead.
DIRECT_BELOW = 2048
#: window length from which the guard's dot products avoid BLAS (OpenBLAS threads a dot above 10,000).
BLAS_BELOW = 10_000
#: at most this many candidates are recomputed one slice at a time (no padded copy of the operand)
_FEW = 16
#: candidates recomputed per batch in the guard (memory: batch * n float64).
_BATCH = 256
#: most pieces a convolution-based verifier accepts. The published records use at most 50,000;
#: the cap bounds the worst case of the exact fallback (direct O(n^2) summation, ~1.5 s at the cap
#: on one core when idle), since verification runs in the parent process without a time limit.
MAX_PIECES = 100_000


def require_max_pieces(n: int, name: str, limit: int = MAX_PIECES) -> None:
    """Raise :class:`~discoverygym.errors.InvalidSolution` when a step function has more than ``limit`` pieces."""
    if n > limit:
        raise InvalidSolution(f"{name} has {n} pieces, more than the limit of {limit}")


def _fft_convolve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """FFT linear convolution of two 1-D float64 arrays with its certified entrywise error bound.

    Returns:
        ``(c, bound)``: ``c`` float64 of length ``len(a) + len(b) - 1``; ``bound`` (float) such that
        ``|c[k] - exact[k]| <= bound`` for every k (see the module docstring).
    """
    m = len(a) + len(b) - 1
    size = 1 << max(1, (m - 1).bit_length())
    fa = np.fft.rfft(a, size)
    fb = fa if b is a else np.fft.rfft(b, size)
    c = np.fft.irfft(fa * fb, size)[:m]
    e = math.log2(size) * _ETA
    peak_a = float(np.max(np.abs(fa)))
    peak_b = peak_a if b is a else float(np.max(np.abs(fb)))
    norm_a = _norm(a)
    scale = max(norm_a * peak_b, peak_a * (norm_a if b is a else _norm(b)))
    bound = 2.0 * ((2 * e + _U) * scale + e * _norm(c))
    return c, bound


def _norm(x: np.ndarray) -> float:
    """Euclidean norm by a plain numpy reduction: ``np.linalg.norm`` calls BLAS ``dot``, whose threads
    cost milliseconds per call on a loaded machine (measured: up to 28 ms for 65,536 entries)."""
    return math.sqrt(float(np.einsum("i,i->", x, x)))  # einsum's own loop: no BLAS, no temporary


def convolve(a: np.ndarray, b: np.ndarray, method: str = "auto") -> tuple[np.ndarray, float]:
    """Linear convolution ``a * b`` (``np.convolve(a, b, "full")``) with an entrywise error bound.

    Args:
        a, b: 1-D float64 arrays, lengths n_a, n_b >= 1.
        method: ``"direct"`` (np.convolve, bound 0 by convention: it is the reference),
            ``"fft"``, or ``"auto"`` (direct below :data:`DIRECT_BELOW` pieces, FFT above).

    Returns:
        ``(c, bound)``: float64 array of length n_a + n_b - 1 and the absolute entrywise bound of
        its difference from the direct float64 convolution.

    Raises:
        ValueError: unknown ``method``.
    """
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"method must be 'auto', 'direct' or 'fft', got {method!r}")
    if method == "direct" or (method == "auto" and max(len(a), len(b)) < DIRECT_BELOW):
        return np.convolve(a, b), 0.0
    return _fft_convolve(a, b)


def _direct_entries(a: np.ndarray, b: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """Entries ``(a * b)[k]`` for the given indices, by direct dot products (vectorised in batches).

    Args:
        a, b: 1-D float64 arrays of lengths n_a, n_b.
        ks: int array of indices in ``[0, n_a + n_b - 1)``.

    Returns:
        float64 array of the same length as ``ks``.
    """
    na, nb = len(a), len(b)
    if na >= BLAS_BELOW and len(ks) <= _FEW:  # a few long dots: slices, no padded copy of b, no BLAS
        out = np.empty(len(ks))
        for j, k in enumerate(ks.tolist()):
            lo, hi = max(0, k - nb + 1), min(k, na - 1)
            out[j] = np.einsum("i,i->", a[lo : hi + 1], b[k - hi : k - lo + 1][::-1])
        return out
    # (a * b)[k] = sum_i a[i] b[k - i] = sum_t bp[k + t] a[na - 1 - t] with bp = b zero-padded by
    # na - 1 on both sides, i.e. the length-na window of bp starting at k dotted with reversed a.
    padding = np.zeros(na - 1)
    windows = np.lib.stride_tricks.sliding_window_view(np.concatenate([padding, b, padding]), na)
    a_rev = np.ascontiguousarray(a[::-1])
    out = np.empty(len(ks))
    for lo in range(0, len(ks), _BATCH):
        rows = windows[ks[lo : lo + _BATCH]]
        # BLAS (np.convolve's own dot) below BLAS_BELOW; above, OpenBLAS splits a dot over threads
        # (its value then depends on the thread count, and under load each call can cost tens of ms):
        # einsum's single-threaded loop instead, the same products summed in another order.
        out[lo : lo + _BATCH] = rows @ a_rev if na < BLAS_BELOW else np.einsum("ij,j->i", rows, a_rev)
    return out


def max_abs_convolution(
    a: np.ndarray, b: np.ndarray, signed: bool = True, method: str = "auto"
) -> tuple[float, int, dict]:
    """Exact (direct float64) ``max_k |(a * b)_k|`` (or ``max_k (a * b)_k`` when ``signed=False``).

    The FFT is only used to find candidates: every index within ``2 * bound`` of the FFT maximum is
    recomputed by direct summation, so the value equals the direct computation's (see module
    docstring). If more than a quarter of all indices are candidates the whole convolution is
    computed directly.

    Args:
        a, b: 1-D float64 arrays of lengths n_a, n_b >= 1.
        signed: when True the maximum of absolute values is taken; when False the plain maximum.
        method: ``"auto"``, ``"fft"`` or ``"direct"`` as in :func:`convolve`.

    Returns:
        ``(value, argmax, stats)`` where ``stats`` has ``method`` and ``candidates`` (ints/str).
    """
    c, bound = convolve(a, b, method)
    vals = np.abs(c) if signed else c
    if bound == 0.0:
        k = int(np.argmax(vals))
        return float(vals[k]), k, {"method": "direct", "candidates": len(c)}
    top = float(np.max(vals))
    ks = np.flatnonzero(vals >= top - 2.0 * bound)
    if len(ks) > len(c) // 4:
        exact = np.convolve(a, b)
        vals = np.abs(exact) if signed else exact
        k = int(np.argmax(vals))
        return float(vals[k]), k, {"method": "direct-fallback", "candidates": len(ks)}
    exact = _direct_entries(a, b, ks)
    ev = np.abs(exact) if signed else exact
    j = int(np.argmax(ev))
    return float(ev[j]), int(ks[j]), {"method": "fft+guard", "candidates": len(ks)}
