"""Tiny states for the archive and rule tests."""

from __future__ import annotations

from discoverygym.types import State

FAIL = -1.0  # the failure reward of the invalid states below


def S(
    sid: str, reward: float, parents: tuple[str, ...] = (), valid: bool = True, tag: float | None = None
) -> State:
    """A state whose solution is unique per id (so nothing is deduplicated by accident)."""
    sol = [reward if valid else -1.0, float(abs(hash(sid)) % 10_000) if tag is None else tag]
    return State(sol, reward if valid else None, reward if valid else FAIL, valid, id=sid, parent_ids=parents)


def ids(states) -> list[str]:
    """The ids of ``states``, in order."""
    return [s.id for s in states]
