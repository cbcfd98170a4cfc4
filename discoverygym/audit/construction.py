"""Exploits against construction envs (``action_kind == "construction"``): bad numbers, shapes and types.

Each one starts from the honest initial construction (``ctx.base.solution``) and breaks it in one
way, so that a verifier that skips one check accepts it: NaN and infinite entries, huge values
(overflow), wrong rank, ragged rows, empty, strings, booleans, ``None``, complex numbers, number
subclasses, object arrays, lazy array-likes, list subclasses that lie when iterated, and a dict or
:class:`~discoverygym.types.State` carrying a self-reported score.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from discoverygym.audit.exploits import AuditContext, Exploit
from discoverygym.types import State

__all__ = ["EXPLOITS"]


def _applies(env: Any) -> bool:
    return env.action_kind == "construction"


def _base(ctx: AuditContext) -> np.ndarray:
    return np.array(ctx.base.solution, dtype=np.float64)


def _with_first(ctx: AuditContext, value: Any) -> list:
    """The base construction as nested lists with its first scalar replaced by ``value``."""
    data = copy.deepcopy(ctx.base.solution)
    row = data
    while isinstance(row[0], list):
        row = row[0]
    row[0] = value
    return data


class _LyingFloat(float):
    """A float whose ``float()`` reads differ from its value (a verifier must not trust the subclass)."""

    def __float__(self) -> float:
        return 1e9


class _LazyArray:
    """An array-like whose first read is the base construction and every later read is NaN."""

    def __init__(self, base: np.ndarray) -> None:
        self.base, self.reads = base, 0

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        self.reads += 1
        return self.base.copy() if self.reads == 1 else np.full_like(self.base, np.nan)

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: int) -> Any:
        return np.asarray(self)[i].tolist()


class _IterLies(list):
    """A list holding NaN entries whose ``__iter__`` yields the honest construction."""

    def __init__(self, honest: list, stored: list) -> None:
        super().__init__(stored)
        self.honest = honest

    def __iter__(self):
        return iter(self.honest)


def _iter_lies(ctx: AuditContext) -> list:
    base = _base(ctx)
    honest = base.tolist()
    stored = np.full_like(base, np.nan).tolist()
    return _IterLies(honest, stored)


def _ragged(ctx: AuditContext) -> list:
    data = copy.deepcopy(ctx.base.solution)
    if isinstance(data[0], list):
        data[0] = data[0][:-1]
        return data
    return [data[:2], data[:1]]


def _make(name: str, description: str, build, bar: str = "failure") -> Exploit:
    return Exploit(name, "construction", description, _applies, build, bar=bar,
                   expected="rejected or no gain" if bar == "baseline" else "rejected")


EXPLOITS: list[Exploit] = [
    _make("nan-entry", "the initial construction with one entry NaN", lambda c: _with_first(c, float("nan"))),
    _make("all-nan", "every entry NaN", lambda c: np.full_like(_base(c), np.nan).tolist()),
    _make("inf-entry", "one entry +inf", lambda c: _with_first(c, float("inf"))),
    _make("neg-inf-entry", "one entry -inf", lambda c: _with_first(c, float("-inf"))),
    _make("huge-scale", "every entry times 1e300 (overflow in sums and squares)",
          lambda c: (_base(c) * 1e300).tolist(), bar="baseline"),
    _make("huge-entry", "one entry 1e308", lambda c: _with_first(c, 1e308), bar="baseline"),
    _make("wrong-rank", "the construction wrapped in one more list", lambda c: [copy.deepcopy(c.base.solution)]),
    _make("ragged", "rows of different lengths", _ragged),
    _make("empty", "an empty list", lambda c: []),
    _make("scalar", "a bare number instead of a list", lambda c: 1.0),
    _make("strings", "every entry a numeric string", lambda c: np.vectorize(repr)(_base(c)).tolist()),
    _make("bool-entry", "one entry True (a bool, not a number)", lambda c: _with_first(c, True)),
    _make("none-entry", "one entry None", lambda c: _with_first(c, None)),
    _make("complex-entry", "one entry a complex number", lambda c: _with_first(c, complex(0.5, 1.0))),
    _make("float-subclass", "one entry a float subclass whose float() says 1e9",
          lambda c: _with_first(c, _LyingFloat(0.5))),
    _make("object-array", "a numpy object array of the entries", lambda c: np.array(c.base.solution, dtype=object)),
    _make("nested-dicts", "entries replaced by dicts", lambda c: [{"value": v} for v in _base(c).ravel().tolist()]),
    _make("lazy-array", "an array-like: first read the honest construction, later reads NaN",
          lambda c: _LazyArray(_base(c))),
    _make("list-subclass-iter", "a list of NaN whose __iter__ yields the honest construction "
          "(accepted only if what is stored is what was scored)", _iter_lies, bar="baseline"),
    _make("self-reported-dict", "{'construction': honest, 'score': 1e9, 'reward': 1e9, 'valid': True}",
          lambda c: {"construction": copy.deepcopy(c.base.solution), "score": 1e9, "reward": 1e9, "valid": True},
          bar="baseline"),
    _make("self-reported-state", "a State object claiming score and reward 1e9",
          lambda c: State(solution=copy.deepcopy(c.base.solution), score=1e9, reward=1e9, valid=True),
          bar="baseline"),
]
