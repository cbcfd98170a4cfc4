"""Input checks shared by every verifier: turning untrusted data into float64 arrays.

Every check raises :class:`~discoverygym.errors.InvalidSolution` with a message that names the
rule broken and the first offending entry, e.g. ``"h[17] = nan is not finite"``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from discoverygym.errors import InvalidSolution

#: Largest number of scalar entries a verifier accepts (guards against memory blow-ups).
MAX_ENTRIES = 10_000_000

#: (deadline on ``time.monotonic()``, budget in seconds) of the verification running in this context.
_BUDGET: ContextVar[tuple[float, float] | None] = ContextVar("discoverygym_verification_budget", default=None)


@contextlib.contextmanager
def verification_budget(seconds: float | None) -> Iterator[None]:
    """Give the input checks run inside this block a wall-clock budget of ``seconds``.

    The Python-level scans of untrusted input (:func:`as_float_array`) call
    :func:`check_budget`, which raises :class:`InvalidSolution` once the budget is spent, so a
    candidate built to be slow to check fails with a clear message instead of holding the caller.
    Vectorised numpy work between two checks is not interrupted (it is bounded by
    :data:`MAX_ENTRIES`). Context-local: concurrent threads keep their own budgets.

    Args:
        seconds: the budget (>= 0, finite), or ``None`` for none.

    Raises:
        ValueError: ``seconds`` negative or not finite.
    """
    if seconds is None:
        yield
        return
    seconds = float(seconds)
    if not (seconds >= 0 and seconds != float("inf")):
        raise ValueError(f"a verification budget must be a finite number of seconds >= 0, got {seconds!r}")
    token = _BUDGET.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def check_budget(what: str) -> None:
    """Raise :class:`InvalidSolution` when the :func:`verification_budget` in force is spent.

    Args:
        what: the stage, named in the message (e.g. ``"checking circles"``).
    """
    budget = _BUDGET.get()
    if budget is not None and time.monotonic() >= budget[0]:
        raise InvalidSolution(f"verification exceeded its time budget of {budget[1]:g} s ({what}); "
                              "the candidate is too costly to check")


def _entries_at_least(value: Any) -> int:
    """A lower bound on the scalar entries of a (nested) list, read along its first elements.

    Exact for rectangular data; O(depth), so it is checked before anything walks the value.
    """
    count, item, depth = 1, value, 0
    while isinstance(item, (list, tuple)) and depth < 64:
        count *= len(item)
        if not item:
            return count
        item, depth = item[0], depth + 1
    if isinstance(item, np.ndarray):
        count *= item.size
    return count


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
            if not i & 1023:
                check_budget(f"checking the entries of {name}")
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

    The work is bounded before the value is walked: the number of entries (read along the first
    elements, exact for rectangular data) is checked against :data:`MAX_ENTRIES` before any scan
    or conversion, and the scans honour the :func:`verification_budget` in force.

    Raises:
        InvalidSolution: wrong type, ragged or wrong shape, empty, too many entries, non-finite,
            or the verification budget spent.
    """
    if isinstance(value, np.ndarray):
        value = value.view(np.ndarray)
    elif not isinstance(value, (list, tuple)):
        raise InvalidSolution(
            f"{name} must be a list or array of numbers, got {type(value).__name__}"
        )
    check_budget(f"checking {name}")
    entries = value.size if isinstance(value, np.ndarray) else _entries_at_least(value)
    if entries > MAX_ENTRIES or len(value) > MAX_ENTRIES:
        raise InvalidSolution(f"{name} has at least {max(entries, len(value))} entries, more than the "
                              f"limit {MAX_ENTRIES} (refused before conversion)")
    _reject_bools_and_objects(value, name)
    check_budget(f"converting {name}")
    try:
        arr = np.array(value, dtype=np.float64)
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidSolution(f"{name} is not a rectangular array of real numbers ({exc})") from None
    check_budget(f"checking {name}")
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
