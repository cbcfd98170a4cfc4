"""Exact certificate of the Erdős minimum overlap bound C5 (the float verifier: ``rewards/erdos.py``).

With the heights written as integers over one power of ten, ``h_i = H_i / 10^D``, the verifier's
rescaling to Σh = n/2 gives ``h_i = n H_i / (2S)`` (S = ΣH) and ``1 − h_j = G_j / (2S)`` with
``G_j = 2S − n H_j``. Then

    C5 = (2/n) · max_k (h ⋆ (1 − h))_k = max_k (H ⋆ G)_k / (2 S²),

a ratio of integers: the whole cross-correlation ``H ⋆ G`` is computed exactly
(:func:`~discoverygym.rewards.certify.exact.integer_convolution`) and its maximum taken over every
shift. Validity is exact too: ``H_j ≥ 0`` and ``G_j ≥ 0`` (every rescaled height in [0, 1]), S > 0.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.certify.exact import affordable, exact_vector, integer_convolution, scaled_integers
from discoverygym.rewards.certify.result import Certified
from discoverygym.rewards.convolution import MAX_PIECES


def certify_erdos(h: Any) -> Certified:
    """Certify C5 of a step function h on [0, 2] (n equal pieces), exactly.

    Args:
        h: JSON list of n numbers (``Decimal`` as parsed from the file, int, or float taken exactly).

    Returns:
        :class:`Certified` with the exact rational C5; facts ``n``, ``argmax`` (the shift index k in
        ``numpy.correlate(h, 1 − h, "full")`` order), ``max_correlation`` and ``S`` (integers as strings).

    Raises:
        InvalidSolution: not a list of finite numbers (float64's range, as the env), more than
            100,000 pieces, Σh ≤ 0, or a rescaled height outside [0, 1] (named by index).
        CertifyLimit: the inputs cost too much even as float64 values (:func:`.exact.affordable`;
            heights that would, are read as the env reads them and ``convention`` says so).
    """
    values, note = affordable(exact_vector(h, "h", MAX_PIECES), "h")
    big_h, scale = scaled_integers(values)
    n, s = len(big_h), sum(big_h)
    if s <= 0:
        raise InvalidSolution(f"Σh = {sum(values)} must be positive to rescale h to integral 1")
    g = [2 * s - n * v for v in big_h]
    for j, (hv, gv) in enumerate(zip(big_h, g)):
        if hv < 0 or gv < 0:
            raise InvalidSolution(f"h[{j}] = {values[j]} rescaled to Σh = n/2 is {Fraction(n * hv, 2 * s)} "
                                  "(exactly), outside [0, 1]")
    corr = integer_convolution(big_h, g[::-1])  # correlate(H, G, "full") = convolve(H, reversed(G))
    top = max(corr)
    k = corr.index(top)
    return Certified.rational(
        Fraction(top, 2 * s * s),
        formula="C5 = max_k (H ⋆ G)_k / (2 S²), H_i = 10^D h_i, S = ΣH, G_j = 2S − n H_j",
        method=f"exact integer cross-correlation of all {2 * n - 1} shifts (big-integer product); "
               "rescaled heights checked in [0, 1] exactly",
        convention=note,
        facts={"n": n, "argmax": k, "max_correlation": str(top), "S": str(s), "D": scale},
        inputs={"heights": [str(v) for v in values]},
    )
