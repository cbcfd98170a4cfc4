"""The contract every selection rule meets, and the commit step they share (a leaf module).

A rule answers two questions and keeps its own statistics:

* ``select(archive, k, rng)``: which ``k`` kept states should the next prompt start from (the
  first is the parent, the others are extra inspirations);
* ``update(archive, parents, children)``: a batch that started from ``parents`` finished with
  ``children`` (already added to ``archive``); update the statistics and return the committed state
  (the best valid child, resolved to the kept state that stands for it) or ``None``.

Rules are pure given their inputs: ``select`` changes nothing, and all randomness comes from the
``rng`` argument, so seeded searches repeat exactly.

This module imports only the archive and the data types; the rules (:mod:`~discoverygym.search.puct`,
:mod:`~discoverygym.search.rpucg`, the baselines of :mod:`~discoverygym.search.selectors`) import it,
and the one registry of rule names (:mod:`~discoverygym.search.selectors`) imports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from discoverygym.search.archive import Archive
from discoverygym.types import State

__all__ = ["Selector", "best_child", "commit"]


@runtime_checkable
class Selector(Protocol):
    """What the reuse wrappers and the evolutionary-search runner need from a selection rule.

    Attributes:
        name: registry name (``"puct"``, ``"rpucg"``...).
        default_inspirations: states per prompt when the caller does not say (1 = parent only).
        dag: whether a child lists every inspiration of its prompt as a parent (TES) instead of
            only the state it started from.
    """

    name: str
    default_inspirations: int
    dag: bool

    def new_archive(self) -> Archive:
        """An empty archive with this rule's caps (paper defaults)."""

    def select(self, archive: Archive, k: int, rng: np.random.Generator) -> list[State]:
        """Up to ``k`` kept valid states to start from (no change to any state)."""

    def update(self, archive: Archive, parents: Sequence[State], children: Sequence[State]) -> State | None:
        """Account for a finished batch; returns the committed state or ``None``."""

    def state_dict(self) -> dict:
        """JSON-serialisable statistics (for exact resume)."""

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` output."""


def best_child(children: Sequence[State]) -> State | None:
    """The valid child with the highest reward (ties: the first in ``children``), or ``None``.

    Example:
        >>> a, b = State([0], 1.0, 1.0, True, id="a"), State([1], 1.0, 1.0, True, id="b")
        >>> best_child([a, b]).id
        'a'
    """
    best: State | None = None
    for child in children:
        if child.valid and (best is None or child.reward > best.reward):
            best = child
    return best


def commit(archive: Archive, children: Sequence[State]) -> State | None:
    """The state a finished batch commits: its :func:`best_child`, resolved in ``archive``.

    Args:
        archive: the archive the children were already added to.
        children: every rollout of the batch, failures included.

    Returns:
        The kept state standing for the best valid child (the child itself, or its kept duplicate);
        the child itself when the archive kept neither (e.g. evicted by a cap right away); ``None``
        when no child is valid.
    """
    best = best_child(children)
    if best is None:
        return None
    return archive.resolve(best) or best
