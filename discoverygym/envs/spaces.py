"""Spaces used by discoverygym environments.

:class:`UnicodeText` is Gymnasium's ``Text`` for any Unicode string. Gymnasium's vector envs keep
``Text`` observations in shared memory as indices into the space's charset, which a prompt's
characters (``#``, newlines, ``≤``) are not in: ``gym.make_vec(ID, vectorization_mode="async")``
failed with ``KeyError('#')`` (issue 41). This module registers shared-memory handlers for
:class:`UnicodeText` that store each character's code point instead (``int32``, ``max_length`` per
env, 0 = padding), so async vector envs of program envs (``TriMul-H100-v0``...) work with the default
``shared_memory=True``. Construction envs observe the construction as a ``Sequence`` of dynamic
length, which no shared memory can hold: Gymnasium says so in one line and they run with
``gym.make_vec(ID, num_envs=2, vectorization_mode="async", vector_kwargs={"shared_memory": False})``.

:class:`StackedSequence` is that construction space: Gymnasium's stacked ``Sequence`` of ``Box``
elements, with a membership test on the whole array (Gymnasium's tests each element with
``Box.contains``, which warns "Casting input x to numpy array" for every numpy scalar: ~900 warnings
in one ``check_env`` of ``ErdosMinOverlap-v0``, issue 41).
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import shared_memory as _shm


class StackedSequence(spaces.Sequence):
    """A Gymnasium ``Sequence(feature_space, stack=True)`` of :class:`~gymnasium.spaces.Box` elements
    whose :meth:`contains` checks the stacked array at once.

    An element is a ``Box`` of shape ``row`` (``()`` for a 1-D construction of ``n`` numbers, or
    ``(row_len,)`` for ``n`` rows); a member is an array-like of shape ``(n, *row)``, any ``n >= 0``.
    Sampling, equality, vector-env batching and (the refused) shared memory are Gymnasium's
    ``Sequence``'s, which this subclasses.

    Args:
        feature_space: the element ``Box``.
        seed: optional seed of the space's generator.

    Raises:
        TypeError: ``feature_space`` is not a ``Box``.
    """

    def __init__(self, feature_space: spaces.Box, seed: Any = None) -> None:
        if not isinstance(feature_space, spaces.Box):
            raise TypeError(f"StackedSequence needs a Box element space, not {type(feature_space).__name__}")
        super().__init__(feature_space, seed=seed, stack=True)

    def contains(self, x: Any) -> bool:
        """True when ``x`` (an ndarray, list or tuple) is ``n >= 0`` elements of the ``Box``.

        The same verdict as Gymnasium's per-element test (an array-like is read as the Box's dtype;
        an ndarray's dtype must cast safely to it; every value within ``[low, high]``), without its
        per-element "Casting input x to numpy array" warning. A 0-d value is not a member.
        """
        box = self.feature_space
        if not isinstance(x, np.ndarray):
            try:
                x = np.asarray(x, dtype=box.dtype)
            except (ValueError, TypeError, OverflowError):
                return False
        if x.ndim == 0:
            return False
        if x.shape[0] == 0:
            return True
        return bool(
            x.shape[1:] == box.shape
            and np.can_cast(x.dtype, box.dtype)
            and np.all(x >= box.low)
            and np.all(x <= box.high)
        )


class UnicodeText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` that contains any Unicode string up to ``max_length``.

    Gymnasium's ``Text`` only contains strings over its charset (alphanumeric by default), which
    rejects prompts and programs. Sampling still draws from the alphanumeric charset. In shared
    memory (async vector envs) a string is its code points plus one, zero-padded to ``max_length``.
    """

    def contains(self, x: Any) -> bool:
        """True for any ``str`` with ``min_length <= len(x) <= max_length``."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"


@_shm.create_shared_memory.register(UnicodeText)
def _create(space: UnicodeText, n: int = 1, ctx: Any = mp) -> Any:
    """``n × max_length`` int32 slots (code point + 1; 0 = padding)."""
    return ctx.Array(np.dtype(np.int32).char, n * space.max_length)


@_shm.write_to_shared_memory.register(UnicodeText)
def _write(space: UnicodeText, index: int, values: str, shared_memory: Any) -> None:
    """Store env ``index``'s string as code points + 1, zero-padded.

    Raises:
        ValueError: a string longer than ``max_length`` (outside the space).
    """
    size = space.max_length
    codes = np.frombuffer(values.encode("utf-32-le"), dtype="<u4").astype(np.int32) + 1
    if codes.size > size:
        raise ValueError(f"a text of {codes.size} characters does not fit {space!r}")
    row = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * size:(index + 1) * size]
    row[:codes.size] = codes
    row[codes.size:] = 0


class SharedTexts(Sequence):
    """The ``n`` strings of a :class:`UnicodeText` in shared memory, read live (like the numpy views
    Gymnasium's ``AsyncVectorEnv`` keeps of a ``Box``: it reads its shared memory once, at
    construction, so a snapshot tuple would never change). ``copy.deepcopy`` (the vector env's
    default ``copy=True``) and ``tuple(...)`` give plain strings."""

    def __init__(self, shared_memory: Any, n: int, max_length: int) -> None:
        self._data = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape(n, max_length)

    def __len__(self) -> int:
        return self._data.shape[0]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        row = self._data[index]
        return (row[row > 0] - 1).astype("<u4").tobytes().decode("utf-32-le")

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (SharedTexts, tuple, list)) else other)

    def __repr__(self) -> str:
        return repr(tuple(self))


@_shm.read_from_shared_memory.register(UnicodeText)
def _read(space: UnicodeText, shared_memory: Any, n: int = 1) -> SharedTexts:
    """The ``n`` strings stored by :func:`_write`, as a live :class:`SharedTexts`."""
    return SharedTexts(shared_memory, n, space.max_length)
