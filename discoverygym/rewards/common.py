"""Input checks shared by every verifier: turning untrusted data into float64 arrays.

Every check raises :class:`~discoverygym.errors.InvalidSolution` with a message that names the
rule broken and the first offending entry, e.g. ``"h[17] = nan is not finite"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from discoverygym.errors import InvalidSolution

#: Largest number of scalar entries a verifier accepts (guards against memory blow-ups).
MAX_ENTRIES = 10_000_000


def _index(flat_pos: int, shape: tuple[int, ...]) -> str:
    """Format a flat position as ``[i]`` or ``[i, j]`` for error messages."""
    idx = np.unravel_index(flat_pos, shape) if shape else ()
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


_NUMBER_TYPES = (int, float, np.integer, np.floating)


def _is_plain_number_type(t: type) -> bool:
    """True for exactly ``int``/``float`` and numpy's own integer/float scalar types.

    Subclasses are refused: a subclass can override ``__float__``/``__index__`` so that the value
    the verifier scores differs from the value stored and shown.
    """
    if t is int or t is float:
        return True
    return issubclass(t, (np.integer, np.floating)) and t.__module__ == "numpy"


def _reject_bools_and_objects(value: Any, name: str) -> None:
    """Reject bools and non-real scalars anywhere in a (nested) list; arrays are checked by dtype.

    Rows are scanned with ``set(map(type, row))`` (C speed), so a flat list of 10^5 floats costs
    about a millisecond; the slow per-item path only runs to name the offending entry.
    """
    if isinstance(value, np.ndarray):
        if value.dtype == np.bool_:
            raise InvalidSolution(f"{name} has boolean entries; numbers are required")
        if value.dtype.kind not in "iuf":
            raise InvalidSolution(f"{name} has dtype {value.dtype}; real numbers are required")
        return
    types = set(map(type, value))
    nested = [t for t in types if issubclass(t, (list, tuple, np.ndarray))]
    if all(_is_plain_number_type(t) for t in types):
        return
    if nested and len(nested) == len(types):
        for i, row in enumerate(value):
            _reject_bools_and_objects(row, f"{name}[{i}]")
        return
    for i, item in enumerate(value):
        if isinstance(item, (bool, np.bool_)):
            raise InvalidSolution(f"{name}[{i}] = {item!r} is a boolean; numbers are required")
        if not _is_plain_number_type(type(item)):
            kind = "a subclass of a number type" if isinstance(item, _NUMBER_TYPES) else "not a real number"
            raise InvalidSolution(
                f"{name}[{i}] = {item!r:.60} is a {type(item).__name__} ({kind}); "
                "plain int or float values are required"
            )


def as_float_array(value: Any, name: str, ndim: int, row_len: int | None = None) -> np.ndarray:
    """Convert untrusted input to a finite float64 array of a given rank.

    Args:
        value: list (possibly nested), tuple or numpy array of real numbers. List entries must be
            exactly ``int``/``float`` or numpy's own scalar types: booleans, strings, ``None``,
            complex numbers and subclasses of number types are rejected. numpy array subclasses
            are read through a plain ``np.ndarray`` view, never through overridden methods.
        name: name used in error messages (``"h"``, ``"circles"``).
        ndim: required rank (1 for step functions, 2 for circle rows / matrices).
        row_len: for ``ndim == 2``, the required length of each row (``3`` for ``[x, y, r]``).

    Returns:
        ``np.ndarray`` of dtype float64, C-contiguous, a copy owned by the caller.

    Raises:
        InvalidSolution: wrong type, ragged or wrong shape, empty, too many entries, non-finite.
    """
    if isinstance(value, np.ndarray):
        value = value.view(np.ndarray)
    elif not isinstance(value, (list, tuple)):
        raise InvalidSolution(
            f"{name} must be a list or array of numbers, got {type(value).__name__}"
        )
    _reject_bools_and_objects(value, name)
    try:
        arr = np.array(value, dtype=np.float64)
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidSolution(f"{name} is not a rectangular array of real numbers ({exc})") from None
    if arr.ndim != ndim:
        raise InvalidSolution(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidSolution(f"{name} is empty")
    if arr.size > MAX_ENTRIES:
        raise InvalidSolution(f"{name} has {arr.size} entries, more than the limit {MAX_ENTRIES}")
    if row_len is not None and arr.shape[1] != row_len:
        raise InvalidSolution(f"{name} rows must have {row_len} entries, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        pos = int(bad[0])
        raise InvalidSolution(
            f"{name}{_index(pos, arr.shape)} = {float(arr.flat[pos])!r} is not finite"
        )
    return np.ascontiguousarray(arr)


def require_range(arr: np.ndarray, name: str, lo: float | None, hi: float | None) -> None:
    """Raise :class:`InvalidSolution` naming the first entry of ``arr`` outside ``[lo, hi]``.

    Args:
        arr: float64 array of any shape.
        name: name used in the message.
        lo, hi: inclusive bounds; ``None`` means unbounded on that side.
    """
    mask = np.zeros(arr.shape, dtype=bool)
    if lo is not None:
        mask |= arr < lo
    if hi is not None:
        mask |= arr > hi
    bad = np.flatnonzero(mask)
    if bad.size:
        pos = int(bad[0])
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "inf" if hi is None else f"{hi:g}"
        raise InvalidSolution(
            f"{name}{_index(pos, arr.shape)} = {float(arr.flat[pos])!r} is outside [{lo_s}, {hi_s}]"
            + (f" ({bad.size} entries in all)" if bad.size > 1 else "")
        )


@dataclass(frozen=True)
class Score:
    """What a verifier returns for a valid construction.

    Attributes:
        value: the problem's own number (e.g. C5 = 0.38087), float64, never self-reported.
        metrics: extra facts about the evaluation (JSON-serialisable scalars/strings), e.g. the
            number of pieces, the rescaling factor applied, the method used, a certified bound.
    """

    value: float
    metrics: dict = field(default_factory=dict)


def scale_by_power_of_two(arr: np.ndarray) -> np.ndarray:
    """Rescale ``arr`` by the power of two that brings max|arr| into [0.5, 1).

    Multiplying by a power of two is exact in binary floating point (unless entries fall into
    the subnormal range, i.e. below max|arr| * 2^-1021), so scale-invariant quantities (C1, C2,
    C3, C5) keep their float64 value while sums and squares of huge inputs cannot overflow.

    Args:
        arr: float64 array of finite values.

    Returns:
        A new float64 array (``arr`` itself when it is all zeros).
    """
    peak = float(np.max(np.abs(arr)))
    if peak == 0.0:
        return arr
    _, exponent = np.frexp(peak)
    return np.ldexp(arr, -int(exponent))
