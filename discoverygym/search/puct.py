"""PUCT state reuse, exactly as TTT-Discover App. A.2 (and its released ``PUCTSampler``).

For every kept valid state s of the archive H::

    score(s) = Q(s) + c · scale · P(s) · sqrt(1 + T) / (1 + n(s))

* ``Q(s) = m(s)`` (best reward among s's children seen so far) if ``n(s) > 0`` and s has a valid
  child, else ``R(s)``;
* ``scale = max R − min R`` over the non-initial states (all states when there are none),
  floored at 1e-6;
* ``P(s) = (|H| − rank(s)) / Σ_{s'} (|H| − rank(s'))``, rank 0 = highest reward;
* after a batch: for each expanded parent p with best valid child reward y,
  ``m(p) ← max(m(p), y)``; ``n(a) += 1`` for p and every ancestor a; ``T += 1``.

Counting unit (``counting``): ``"rollout"`` (the released code: every rollout counts once, a failed
one too — n and T grow, m does not) or ``"parent"`` (the paper: once per expanded parent; a parent
whose children all failed still counts once).

Batch selection sorts by ``(score, R)`` descending; picking a state blocks its whole lineage
(ancestors and descendants) for the rest of the batch.

Deterministic tie-breaking (documented deviation): rank ties and score ties go to the earlier
inserted state. (The released code breaks rank ties with numpy's unstable argsort.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from discoverygym.search.archive import Archive
from discoverygym.search.rule import commit
from discoverygym.types import State

__all__ = ["PUCT", "PUCTConfig", "PUCTScores"]


@dataclass
class PUCTConfig:
    """Hyper-parameters of PUCT state reuse (paper defaults)."""

    c: float = 1.0  # TTT-Discover App. A.2 exploration constant
    max_states: int | None = 1000  # TTT-Discover App. A.2 archive size
    children_per_parent: int | None = 2  # TTT-Discover App. A.2: top-2 children per parent
    counting: Literal["rollout", "parent"] = "rollout"  # released code: per rollout; paper: per parent
    scale_floor: float = 1e-6  # TTT-Discover sampler.py: max(R) - min(R) floored


@dataclass
class PUCTScores:
    """PUCT terms of every kept valid state, in rank order (highest reward first).

    All arrays have shape (|H|,). ``ids[i]`` has rank ``i``.
    """

    ids: list[str]
    reward: np.ndarray
    n: np.ndarray
    Q: np.ndarray
    P: np.ndarray
    score: np.ndarray
    scale: float
    T: int

    def as_dict(self) -> dict[str, float]:
        """``{state id: score}``."""
        return dict(zip(self.ids, self.score.tolist()))


class PUCT:
    """The PUCT reuse rule of TTT-Discover App. A.2 (implements :class:`~discoverygym.search.rule.Selector`).

    Args:
        config: hyper-parameters; keyword overrides are accepted instead (``PUCT(c=2.0)``).

    Statistics (all keyed by state id, kept for evicted states too):
        n: visit counts; m: best child reward; T: total count (see the counting unit).
    """

    name = "puct"
    default_inspirations = 1
    dag = False

    def __init__(self, config: PUCTConfig | None = None, **overrides: Any) -> None:
        self.config = config or PUCTConfig(**overrides)
        if self.config.counting not in ("rollout", "parent"):
            raise ValueError(f"counting must be 'rollout' or 'parent', got {self.config.counting!r}")
        self.n: dict[str, int] = {}
        self.m: dict[str, float] = {}
        self.T = 0
        self._cache_key: tuple[int, int, int] | None = None
        self._n_slot = np.zeros(0)
        self._m_slot = np.zeros(0)

    def new_archive(self) -> Archive:
        """Archive with the App. A.2 caps (valid states only)."""
        return Archive(self.config.max_states, self.config.children_per_parent, keep_invalid=False)

    # ------------------------------------------------------------------ statistics
    def _lineage(self, archive: Archive, parent_id: str, parent: State | None) -> list[str]:
        ids = [parent_id]
        if archive.known(parent_id):
            ids += sorted(archive.ancestors(parent_id))
        elif parent is not None:  # a start state that was never added to the archive
            seen = set()
            for pid in parent.parent_ids:
                for a in [pid, *sorted(archive.ancestors(pid))]:
                    if a not in seen:
                        seen.add(a)
                        ids.append(a)
        return ids

    def _visit(self, archive: Archive, parent_id: str, parent: State | None, y: float | None) -> None:
        if y is not None:
            self.m[parent_id] = max(self.m.get(parent_id, y), y)
            slot = archive.slot(parent_id)
            if slot is not None and slot < len(self._m_slot):
                self._m_slot[slot] = self.m[parent_id]
        for sid in self._lineage(archive, parent_id, parent):
            self.n[sid] = self.n.get(sid, 0) + 1
            slot = archive.slot(sid)
            if slot is not None and slot < len(self._n_slot):
                self._n_slot[slot] += 1
        self.T += 1

    def update(self, archive: Archive, parents: Sequence[State], children: Sequence[State]) -> State | None:
        """Account for finished rollouts (TTT-Discover App. A.2 back-propagation).

        Args:
            archive: the archive the children were added to (gives the ancestors).
            parents: the states the batch started from (used for lineage when a parent is not in
                the archive).
            children: every rollout of the batch, failures included; each child's parent is its
                first parent id.

        Returns:
            The committed state: the best valid child, resolved to the kept state standing for it.
        """
        by_id = {p.id: p for p in parents}
        self._sync(archive)
        if self.config.counting == "rollout":
            for child in children:
                pid = child.parent_ids[0]
                self._visit(archive, pid, by_id.get(pid), child.reward if child.valid else None)
        else:
            groups: dict[str, float | None] = {}
            for child in children:
                pid = child.parent_ids[0]
                best = groups.get(pid)
                if child.valid and (best is None or child.reward > best):
                    groups[pid] = child.reward
                else:
                    groups.setdefault(pid, best)
            for pid, y in groups.items():
                self._visit(archive, pid, by_id.get(pid), y)
        return commit(archive, children)

    def _sync(self, archive: Archive) -> None:
        """Keep per-slot copies of n and m aligned with the archive's slots."""
        size = archive.size
        if (
            self._cache_key is None
            or self._cache_key[0] != id(archive)
            or self._cache_key[1] != archive.layout
        ):
            self._n_slot = np.zeros(max(16, size))
            self._m_slot = np.full(max(16, size), np.nan)
            start = 0
        else:
            start = self._cache_key[2]
            if size > len(self._n_slot):
                cap = max(2 * len(self._n_slot), size)
                n_new = np.zeros(cap)
                m_new = np.full(cap, np.nan)
                n_new[: len(self._n_slot)] = self._n_slot
                m_new[: len(self._m_slot)] = self._m_slot
                self._n_slot, self._m_slot = n_new, m_new
        for slot in range(start, size):
            state = archive.slot_state(slot)
            if state is not None:
                self._n_slot[slot] = self.n.get(state.id, 0)
                self._m_slot[slot] = self.m.get(state.id, np.nan)
        self._cache_key = (id(archive), archive.layout, size)

    # ------------------------------------------------------------------ scores
    def _terms(self, archive: Archive) -> tuple[np.ndarray, ...] | None:
        """Arrays in rank order: (slots, R, n, Q, P, score) and the scale; ``None`` if H is empty."""
        self._sync(archive)
        order, neg = archive.sorted_valid()
        N = len(order)
        if N == 0:
            return None
        R = -neg
        non_init = ~archive.initial[order]
        pool = R[non_init] if non_init.any() else R
        scale = max(float(pool[0] - pool[-1]), self.config.scale_floor)  # R is sorted descending
        P = (N - np.arange(N)) / (N * (N + 1) / 2)
        n = self._n_slot[order]
        m = self._m_slot[order]
        Q = np.where((n > 0) & ~np.isnan(m), m, R)
        score = Q + self.config.c * scale * P * math.sqrt(1.0 + self.T) / (1.0 + n)
        return order, R, n, Q, P, score, scale

    def scores(self, archive: Archive) -> PUCTScores:
        """The PUCT terms of every kept valid state (rank order). See the module docstring."""
        terms = self._terms(archive)
        if terms is None:
            empty = np.zeros(0)
            return PUCTScores([], empty, empty, empty, empty, empty, 1.0, self.T)
        order, R, n, Q, P, score, scale = terms
        ids = [archive.state_at(int(s)).id for s in order]
        return PUCTScores(ids, R, n, Q, P, score, float(scale), self.T)

    def select(self, archive: Archive, k: int, rng: np.random.Generator | None = None) -> list[State]:
        """The ``k`` start states of a batch: sort by ``(score, R)`` descending (ties: earlier
        state), pick greedily, each pick blocking its ancestors and descendants.

        ``rng`` is unused (PUCT selection is deterministic); it is accepted for the protocol.
        Cost: O(|H|) numpy work plus O(picks × lineage depth) Python work.
        """
        terms = self._terms(archive)
        if terms is None or k <= 0:
            return []
        order, R, _, _, _, score, _ = terms
        N = len(order)

        picked: list[State] = []
        blocked: set[str] = set()
        picked_ids: set[str] = set()
        visited = 0
        top = min(N, max(4 * k, 32))
        while True:
            if top < N:
                thresh = np.partition(score, N - top)[N - top]
                cand = np.flatnonzero(score >= thresh)
            else:
                cand = np.arange(N)
            # primary: score desc; secondary: R desc; tertiary: insertion order (slot asc)
            cand = cand[np.lexsort((order[cand], -R[cand], -score[cand]))]
            for pos in cand[visited:]:
                visited += 1
                state = archive.state_at(int(order[pos]))
                if k == 1:
                    return [state]
                if state.id in blocked:
                    continue
                anc = archive.ancestors(state.id)
                if anc & picked_ids:  # a descendant of a picked state
                    continue
                picked.append(state)
                picked_ids.add(state.id)
                blocked.add(state.id)
                blocked |= anc
                if len(picked) >= k:
                    return picked
            if top >= N:
                return picked
            top = min(N, 4 * top)

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict:
        """``{"config", "n", "m", "T"}`` (plain JSON)."""
        return {"config": asdict(self.config), "n": dict(self.n), "m": dict(self.m), "T": self.T}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` output (the config is not changed)."""
        self.n = {str(k): int(v) for k, v in state.get("n", {}).items()}
        self.m = {str(k): float(v) for k, v in state.get("m", {}).items()}
        self.T = int(state.get("T", 0))
        self._cache_key = None
