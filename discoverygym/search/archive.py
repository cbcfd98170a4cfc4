"""The state archive: evaluated states with their lineage, deduplicated and capped.

One :class:`Archive` holds the states a reuse rule may start from (TTT-Discover App. A.2: "keep the
top 2 children per parent; at most 1000 states, initial seeds always kept, otherwise highest
reward; drop duplicate solutions") or the node population of one TES trajectory (no caps).

Ordering contract (used by every rule for tie-breaking, so that results are deterministic):
states are kept in insertion order; "earlier" always means inserted earlier. Rules break ties
in favour of the earlier state. Compacting the storage or saving/loading preserves this order.

Reward order: the kept valid states are also kept ranked (highest reward first, ties: earlier
first, NaN rewards last as numpy sorts them) in a :class:`sortedcontainers.SortedList`, so an
insertion or an eviction costs O(log n) amortised (insertions are handed to the sorted list in
bulk when the order is next needed: a cap, :meth:`Archive.best`, a read). The numpy view of that order that the rules read in bulk
(:meth:`Archive.sorted_valid`) is brought up to date lazily, on the next read: the states inserted
since the previous read are merged into it in one vectorised pass.

Lineage is kept for every state ever added, including evicted ones, so ancestors and
descendants are exact even after caps removed intermediate states (TTT-Discover's sampler keeps
each state's full ancestor list for the same reason).

Example:
    >>> from discoverygym.types import State
    >>> a = Archive(max_states=3, children_per_parent=1)
    >>> a.add(State([0.0], 0.0, 0.0, True, id="root"), initial=True)
    'root'
    >>> a.add_batch([State([1.0], 1.0, 1.0, True, id="x", parent_ids=("root",)),
    ...              State([2.0], 2.0, 2.0, True, id="y", parent_ids=("root",))])
    [None, 'y']
    >>> [s.id for s in a]
    ['root', 'y']
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
from sortedcontainers import SortedList

from discoverygym.io import MAX_RUN_FILE_BYTES, atomic_write_json, read_input_text
from discoverygym.types import State, to_jsonable

__all__ = ["Archive", "atomic_write_json", "solution_key", "state_record"]


def solution_key(state: State) -> bytes | None:
    """The deduplication key of a state: a digest of its solution, else of its code, else ``None``.

    Numeric solutions are compared as float64 arrays (so ``[1, 2]`` and ``[1.0, 2.0]`` are the
    same solution); other JSON data by its canonical JSON text. ``None`` (no solution, no code,
    e.g. a program that crashed) is never deduplicated.
    """
    if state.solution is not None:
        try:
            arr = np.asarray(state.solution, dtype=np.float64)
            payload = b"a" + repr(arr.shape).encode() + arr.tobytes()
        except (TypeError, ValueError, OverflowError):
            payload = b"j" + json.dumps(to_jsonable(state.solution), sort_keys=True).encode()
        return hashlib.blake2b(payload, digest_size=16).digest()
    if state.code:
        return hashlib.blake2b(b"c" + state.code.encode(), digest_size=16).digest()
    return None


def _rank_key(reward: float, slot: int) -> tuple[bool, float, int]:
    """Sort key of the reward order: ``-reward`` ascending, then slot; NaN rewards after all others."""
    if math.isnan(reward):  # numpy sorts NaN last; ties among NaNs by slot
        return (True, 0.0, slot)
    return (False, -reward, slot)


def state_record(state: State) -> dict:
    """``state.to_dict()``, faster (no deep copy of the solution); the output is identical."""
    return {
        "solution": to_jsonable(state.solution),
        "score": state.score,
        "reward": state.reward,
        "valid": state.valid,
        "code": state.code,
        "id": state.id,
        "parent_ids": list(state.parent_ids),
        "error": state.error,
        "metadata": to_jsonable(state.metadata),
    }


class Archive:
    """Evaluated states with lineage, deduplicated by solution, under optional caps.

    Args:
        max_states: the most states kept (``None`` = unbounded). When exceeded, the lowest-reward
            unprotected states are evicted (ties: the later-inserted goes first). Initial seeds and
            protected states are never evicted. TTT-Discover App. A.2: 1000.
        children_per_parent: the most children kept per parent, grouped by each child's first
            parent id (``None`` = unbounded); the lowest-reward children are evicted first (ties:
            the later-inserted). TTT-Discover App. A.2: 2.
        keep_invalid: whether invalid states (failures) are stored. TTT-Discover's archive holds
            valid states only (``False``); a TES population keeps failures as nodes whose value is
            -inf (``True``).
        dedup: whether a state whose :func:`solution_key` equals a kept state's is dropped in favour
            of its kept twin (``True``, the default). ``False`` keeps every duplicate as its own
            state, as SimpleTES's node database does (RPUCG ``compat="simpletes"``).
        reward_rtol: also treat a valid, non-initial state as a duplicate of a kept valid state
            whose reward equals its own to ``reward_rtol · max(|reward|, 1)`` (``None``, the
            default and the papers' archives: off). Meant for continuous constructions ending in
            a local optimiser, where a move that falls back into a known basin returns the same
            optimum with other coordinates (a permutation, a reflection, float noise), which the
            exact :func:`solution_key` misses: measured on CirclePacking-26-v0 after 300 s of
            ``discoverygym train``, 118 of the 309 kept states were such copies (35 of one basin),
            crowding PUCT's rank prior and the per-parent slots. It does not follow that removing
            them helps: with it, ``discoverygym train CirclePacking-26-v0`` reached the record in 0 of
            4 seeds within 300 s, against 3 of 5 without (the copies make PUCT keep shaking the best
            basin, which is how the record is found). Never use it where different solutions often
            tie (integer scores, programs). Only applies when ``dedup`` is on.

    Adding a batch (:meth:`add_batch`): each state is (1) dropped if invalid and
    ``keep_invalid`` is false, or if unscored (never judged here, so no failure either), (2) dropped if its :func:`solution_key` equals that of a state
    currently kept (or an earlier state of the same batch), or, with ``reward_rtol``, if its reward
    matches a kept valid state's — the *resolved* id is then the kept twin's id, (3) otherwise inserted; then (4) the per-parent cap and (5) the global cap are
    enforced. (TTT-Discover's code filters the top-k of a batch before deduplicating; we
    deduplicate first, so that a duplicate never takes a slot from a new solution.)

    Rules read the storage in bulk through slot arrays (:attr:`rewards`, :attr:`alive`...):
    slot ``i`` is the i-th inserted state until a compaction renumbers slots
    (:attr:`layout` changes; relative order is preserved).

    Attributes:
        version: increases on every change (rules cache derived arrays by it).
        layout: increases whenever slot numbers change (compaction, load).
        evictions: total number of states evicted so far.
    """

    def __init__(
        self,
        max_states: int | None = 1000,
        children_per_parent: int | None = 2,
        keep_invalid: bool = False,
        dedup: bool = True,
        reward_rtol: float | None = None,
    ) -> None:
        if max_states is not None and max_states < 1:
            raise ValueError(f"max_states must be >= 1 or None, got {max_states}")
        if children_per_parent is not None and children_per_parent < 1:
            raise ValueError(f"children_per_parent must be >= 1 or None, got {children_per_parent}")
        self.max_states = max_states
        self.children_per_parent = children_per_parent
        self.keep_invalid = keep_invalid
        self.dedup = bool(dedup)
        self.reward_rtol = reward_rtol
        self.version = 0
        self.layout = 0
        self.evictions = 0
        self._init_storage(16)
        self._lineage: dict[str, tuple[str, ...]] = {}  # every id ever added -> parent ids
        self._children: dict[str, list[str]] = {}  # every id ever added -> child ids (all)
        self._initial_ids: list[str] = []
        self._protected: set[str] = set()

    @property
    def reward_rtol(self) -> float | None:
        """The relative reward tolerance of deduplication (``None``: off); see the class docstring.

        Raises:
            ValueError: on assignment, a value that is not ``None`` or a finite number >= 0.
        """
        return self._reward_rtol

    @reward_rtol.setter
    def reward_rtol(self, value: float | None) -> None:
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise ValueError(f"reward_rtol must be a finite number >= 0 or None, got {value}")
        self._reward_rtol = None if value is None else float(value)

    # ------------------------------------------------------------------ storage
    def _init_storage(self, capacity: int) -> None:
        self._states: list[State | None] = []
        self._rewards = np.zeros(capacity)
        self._valid = np.zeros(capacity, dtype=bool)
        self._alive = np.zeros(capacity, dtype=bool)
        self._initial = np.zeros(capacity, dtype=bool)
        self._prot = np.zeros(capacity, dtype=bool)
        self._slot: dict[str, int] = {}
        self._keys: dict[bytes, str] = {}
        self._key_of: dict[str, bytes] = {}
        self._first_kids: dict[str, list[str]] = {}
        # the reward order of the kept valid states: _rank_key tuples, exact once _unranked is merged
        self._ranked: SortedList = SortedList()
        self._unranked: list[int] = []  # valid slots inserted since _ranked was last brought up to date
        # its numpy view, brought up to date by sorted_valid(): slots (reward desc) and -reward
        self._order = np.zeros(0, dtype=np.int64)
        self._neg = np.zeros(0)
        self._view_ok = True  # False: rebuild the view from _ranked on the next read
        self._view_stale = False  # True: the view holds evicted slots (filtered on the next read)
        self._pending: list[int] = []  # valid slots inserted since the view was last brought up to date
        self._n_alive = 0

    def _grow(self) -> None:
        cap = 2 * len(self._rewards)
        for name in ("_rewards", "_valid", "_alive", "_initial", "_prot"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    @property
    def size(self) -> int:
        """Number of slots in use (alive states plus tombstones of evicted ones)."""
        return len(self._states)

    @property
    def rewards(self) -> np.ndarray:
        """float64 array (:attr:`size`,): reward of the state in each slot (stale for dead slots)."""
        return self._rewards[: self.size]

    @property
    def valid(self) -> np.ndarray:
        """bool array (:attr:`size`,): the slot's state is valid."""
        return self._valid[: self.size]

    @property
    def alive(self) -> np.ndarray:
        """bool array (:attr:`size`,): the slot holds a kept (not evicted) state."""
        return self._alive[: self.size]

    @property
    def initial(self) -> np.ndarray:
        """bool array (:attr:`size`,): the slot holds an initial seed."""
        return self._initial[: self.size]

    def sorted_valid(self) -> tuple[np.ndarray, np.ndarray]:
        """Slots of the kept valid states sorted by reward, highest first (ties: earlier first).

        NaN rewards come last (in insertion order), as numpy sorts them.

        Returns:
            ``(slots, neg_rewards)``: int64 and float64 arrays of the same length; ``neg_rewards``
            is ascending (``-reward``). Read-only views: do not modify.

        Cost: O(1) when nothing changed since the last call; O(n + m log m) after m insertions
        (one vectorised merge); O(n) after a compaction or a load.
        """
        if not self._view_ok or len(self._pending) > len(self._order):
            self._rank_pending()
            self._rebuild_view()
            return self._order, self._neg
        if self._view_stale:
            keep = self._alive[self._order]
            self._order = self._order[keep]
            self._neg = self._neg[keep]
            self._view_stale = False
        if self._pending:
            new = [s for s in self._pending if self._alive[s]]
            self._pending = []
            if new:
                new.sort(key=lambda s: _rank_key(float(self._rewards[s]), s))
                slots = np.asarray(new, dtype=np.int64)
                neg = -self._rewards[slots]
                # every new slot is later than every slot of the view: a tie goes after the view's
                pos = np.searchsorted(self._neg, neg, side="right")
                self._order = np.insert(self._order, pos, slots)
                self._neg = np.insert(self._neg, pos, neg)
        return self._order, self._neg

    def _rank_pending(self) -> None:
        """Hand the slots inserted since the last call to the sorted list (in bulk: one sort)."""
        if self._unranked:
            rewards = self._rewards
            self._ranked.update(_rank_key(float(rewards[s]), s) for s in self._unranked)
            self._unranked = []

    def _rebuild_view(self) -> None:
        self._order = np.fromiter((key[2] for key in self._ranked), dtype=np.int64, count=len(self._ranked))
        self._neg = -self._rewards[self._order]
        self._pending = []
        self._view_ok = True
        self._view_stale = False

    def slot_state(self, slot: int) -> State | None:
        """The state in a slot, ``None`` for an evicted slot (:meth:`state_at` raises instead)."""
        return self._states[slot]

    def slot(self, state_id: str) -> int | None:
        """Current slot of a kept state, ``None`` if it is not kept."""
        return self._slot.get(state_id)

    def state_at(self, slot: int) -> State:
        """The state in a slot (raises ``KeyError`` for an evicted slot)."""
        state = self._states[slot]
        if state is None:
            raise KeyError(f"slot {slot} was evicted")
        return state

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return self._n_alive

    def __contains__(self, state_id: object) -> bool:
        return state_id in self._slot

    def __iter__(self) -> Iterator[State]:
        """Kept states in insertion order."""
        return (s for s in self._states if s is not None)

    def states(self) -> list[State]:
        """Kept states in insertion order."""
        return list(self)

    def get(self, state_id: str) -> State | None:
        """The kept state with this id, or ``None`` (never added, or evicted)."""
        slot = self._slot.get(state_id)
        return None if slot is None else self._states[slot]

    def known(self, state_id: str) -> bool:
        """Whether a state with this id was ever added (kept or evicted)."""
        return state_id in self._lineage

    @property
    def initial_ids(self) -> list[str]:
        """Ids of the initial seeds, in insertion order."""
        return list(self._initial_ids)

    def best(self) -> State | None:
        """The kept valid state with the highest reward (ties: the earliest), ``None`` if none."""
        self._rank_pending()
        return self._states[self._ranked[0][2]] if self._ranked else None

    def parents(self, state_id: str) -> tuple[str, ...]:
        """Parent ids of any state ever added (``()`` when unknown)."""
        return self._lineage.get(state_id, ())

    def children(self, state_id: str, kept_only: bool = True) -> list[str]:
        """Ids of the states listing ``state_id`` among their parents (insertion order)."""
        kids = self._children.get(state_id, [])
        return [k for k in kids if k in self._slot] if kept_only else list(kids)

    def ancestors(self, state_id: str) -> set[str]:
        """Ids of every ancestor (transitively through all parents, evicted ones included)."""
        out: set[str] = set()
        stack = list(self._lineage.get(state_id, ()))
        while stack:
            pid = stack.pop()
            if pid in out:
                continue
            out.add(pid)
            stack.extend(self._lineage.get(pid, ()))
        return out

    def descendants(self, state_id: str, kept_only: bool = True) -> set[str]:
        """Ids of every descendant (transitively through all children)."""
        out: set[str] = set()
        stack = list(self._children.get(state_id, ()))
        while stack:
            cid = stack.pop()
            if cid in out:
                continue
            out.add(cid)
            stack.extend(self._children.get(cid, ()))
        return {d for d in out if d in self._slot} if kept_only else out

    def resolve(self, state: State) -> State | None:
        """The kept state standing for ``state``: itself if kept, else its kept duplicate, else ``None``."""
        kept = self.get(state.id)
        if kept is not None:
            return kept
        key = solution_key(state)
        twin = self._keys.get(key) if key is not None else None
        if twin is None and state.valid and not state.unscored:
            twin = self._reward_twin(state.reward)
        return None if twin is None else self.get(twin)

    def _reward_twin(self, reward: float) -> str | None:
        """Id of a kept valid state whose reward is within ``reward_rtol`` of ``reward`` (the
        highest such), or ``None`` (also when ``reward_rtol`` or ``dedup`` is off). O(log n)."""
        if self.reward_rtol is None or not self.dedup or not math.isfinite(reward):
            return None
        self._rank_pending()
        tol = self.reward_rtol * max(abs(reward), 1.0)
        i = self._ranked.bisect_left((False, -(reward + tol), -1))
        if i == len(self._ranked):
            return None
        nan, neg, slot = self._ranked[i]
        if nan or -neg < reward - tol:
            return None
        return self._states[slot].id  # type: ignore[union-attr]

    def is_protected(self, state_id: str) -> bool:
        """Whether the state is exempt from eviction (initial seeds and :meth:`protect`-ed states)."""
        return state_id in self._protected

    # ------------------------------------------------------------------ changes
    def protect(self, state_id: str) -> None:
        """Exempt a state from eviction by the caps (e.g. a TES trajectory's committed history)."""
        self._protected.add(state_id)
        slot = self._slot.get(state_id)
        if slot is not None:
            self._prot[slot] = True

    def add(self, state: State, initial: bool = False) -> str | None:
        """Add one state; see :meth:`add_batch`."""
        return self.add_batch([state], initial=initial)[0]

    def add_batch(self, states: Sequence[State], initial: bool = False) -> list[str | None]:
        """Add states (dedup, then caps), as one batch.

        Args:
            states: evaluated states; their ``parent_ids`` define the lineage.
            initial: mark them as initial seeds (kept whatever the caps).

        Returns:
            For each input, the id of the kept state that stands for it: its own id, the id of its
            kept duplicate, or ``None`` (invalid and not kept, unscored — see
            :attr:`State.unscored <discoverygym.types.State.unscored>` — or evicted by a cap right away).

        Raises:
            ValueError: a state id that was already added (ids must be unique).
        """
        resolved: list[str | None] = []
        inserted: list[str] = []
        touched: list[str] = []
        for state in states:
            if state.id in self._lineage:
                raise ValueError(f"state id {state.id!r} was already added to this archive")
            if not initial and (state.unscored or (not state.valid and not self.keep_invalid)):
                resolved.append(None)  # an unscored state (not judged here) is never kept, not even as a failure
                continue
            key = solution_key(state) if self.dedup else None
            if key is not None and key in self._keys:
                resolved.append(self._keys[key])
                continue
            twin = None if initial or not state.valid else self._reward_twin(state.reward)
            if twin is not None:  # the same optimum in other coordinates (reward_rtol)
                resolved.append(twin)
                continue
            self._insert(state, key, initial)
            inserted.append(state.id)
            resolved.append(state.id)
            if state.parent_ids and state.parent_ids[0] not in touched:
                touched.append(state.parent_ids[0])
        evicted: set[str] = set()
        if self.children_per_parent is not None:
            for pid in touched:
                evicted |= self._cap_children(pid)
        if self.max_states is not None and self._n_alive > self.max_states:
            evicted |= self._cap_total()
        if evicted:
            self._maybe_compact()
        if inserted:
            self.version += 1
        return [None if r in evicted else r for r in resolved]

    def _insert(self, state: State, key: bytes | None, initial: bool) -> None:
        slot = len(self._states)
        if slot >= len(self._rewards):
            self._grow()
        self._states.append(state)
        self._rewards[slot] = state.reward
        self._valid[slot] = state.valid
        self._alive[slot] = True
        self._initial[slot] = initial
        self._slot[state.id] = slot
        self._n_alive += 1
        if key is not None:
            self._keys[key] = state.id
            self._key_of[state.id] = key
        self._lineage[state.id] = tuple(state.parent_ids)
        self._children.setdefault(state.id, [])
        for pid in state.parent_ids:
            self._children.setdefault(pid, []).append(state.id)
        if state.parent_ids:
            self._first_kids.setdefault(state.parent_ids[0], []).append(state.id)
        if initial:
            self._initial_ids.append(state.id)
            self._protected.add(state.id)
        if state.id in self._protected:
            self._prot[slot] = True
        if state.valid:
            self._unranked.append(slot)
            self._pending.append(slot)

    def _evict(self, state_id: str) -> None:
        self._rank_pending()
        slot = self._slot.pop(state_id)
        state = self._states[slot]
        assert state is not None
        self._states[slot] = None
        self._alive[slot] = False
        if state.valid:
            self._ranked.remove(_rank_key(float(self._rewards[slot]), slot))
            self._view_stale = True
        self._n_alive -= 1
        key = self._key_of.pop(state_id, None)
        if key is not None and self._keys.get(key) == state_id:
            del self._keys[key]
        if state.parent_ids:
            kids = self._first_kids.get(state.parent_ids[0])
            if kids is not None:
                kids.remove(state_id)
        self.evictions += 1

    def _cap_children(self, parent_id: str) -> set[str]:
        kids = [k for k in self._first_kids.get(parent_id, []) if k not in self._protected]
        assert self.children_per_parent is not None
        if len(kids) <= self.children_per_parent:
            return set()
        slots = [self._slot[k] for k in kids]
        # keep highest reward, ties: earlier slot
        ranked = sorted(zip(kids, slots), key=lambda t: (-self._rewards[t[1]], t[1]))
        out = {k for k, _ in ranked[self.children_per_parent :]}
        for k in out:
            self._evict(k)
        return out

    def _cap_total(self) -> set[str]:
        assert self.max_states is not None
        excess = self._n_alive - self.max_states
        out: set[str] = set()
        # invalid states first (their reward is the failure reward, below every valid one)
        n = self.size
        bad = np.flatnonzero(self._alive[:n] & ~self._valid[:n] & ~self._prot[:n])
        if bad.size:
            ranked = sorted(bad.tolist(), key=lambda s: (self._rewards[s], -s))
            for s in ranked[:excess]:
                out.add(self._states[s].id)  # type: ignore[union-attr]
        excess -= len(out)
        self._rank_pending()
        for _, _, s in reversed(self._ranked):  # lowest reward first (ties: the later-inserted)
            if excess <= 0:
                break
            if not self._prot[s] and self._alive[s]:
                out.add(self._states[s].id)  # type: ignore[union-attr]
                excess -= 1
        for k in out:
            self._evict(k)
        return out

    def _maybe_compact(self) -> None:
        dead = self.size - self._n_alive
        if dead <= max(64, self._n_alive):
            return
        alive_slots = np.flatnonzero(self._alive[: self.size])
        remap = np.full(self.size, -1, dtype=np.int64)
        remap[alive_slots] = np.arange(len(alive_slots))
        states = [self._states[s] for s in alive_slots]
        arrays = {
            n: getattr(self, n)[alive_slots] for n in ("_rewards", "_valid", "_alive", "_initial", "_prot")
        }
        cap = max(16, 2 * len(states))
        for name, arr in arrays.items():
            new = np.zeros(cap, dtype=arr.dtype)
            new[: len(arr)] = arr
            setattr(self, name, new)
        self._states = states
        self._slot = {s.id: i for i, s in enumerate(states)}  # type: ignore[union-attr]
        # the renumbering keeps relative order, so the ranked keys stay sorted
        self._rank_pending()
        self._ranked = SortedList((flag, neg, int(remap[s])) for flag, neg, s in self._ranked)
        self._view_ok = False
        self.layout += 1

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict:
        """Plain-JSON snapshot (kept states in order, lineage of every id, flags, config)."""
        return {
            "config": {
                "max_states": self.max_states,
                "children_per_parent": self.children_per_parent,
                "keep_invalid": self.keep_invalid,
                **({} if self.dedup else {"dedup": False}),
                **({} if self.reward_rtol is None else {"reward_rtol": self.reward_rtol}),
            },
            "states": [state_record(s) for s in self],
            "initial_ids": list(self._initial_ids),
            "protected": sorted(self._protected),
            "lineage": {k: list(v) for k, v in self._lineage.items()},
            "evictions": self.evictions,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Archive:
        """Rebuild an archive from :meth:`to_dict` output; selection results are unchanged."""
        archive = cls(**data["config"])
        archive._protected = set(data.get("protected", ()))
        initial = set(data.get("initial_ids", ()))
        for d in data["states"]:
            state = State.from_dict(d)
            archive._insert(state, solution_key(state) if archive.dedup else None, state.id in initial)
        # lineage of every id ever added (evicted ones included), in the original order
        archive._lineage = {sid: tuple(parents) for sid, parents in data.get("lineage", {}).items()}
        for state in archive:
            archive._lineage.setdefault(state.id, tuple(state.parent_ids))
        archive._children = {}
        for sid, parents in archive._lineage.items():
            archive._children.setdefault(sid, [])
            for pid in parents:
                archive._children.setdefault(pid, []).append(sid)
        archive._initial_ids = list(data.get("initial_ids", ()))
        archive.evictions = int(data.get("evictions", 0))
        archive.layout += 1
        archive.version += 1
        return archive

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_dict` atomically to ``path`` (JSON)."""
        atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> Archive:
        """Read an archive written by :meth:`save`.

        The file is opened once and checked on the descriptor (a regular file of at most
        :data:`~discoverygym.io.MAX_RUN_FILE_BYTES`; :func:`~discoverygym.io.read_input_text`).

        Raises:
            ValueError: not such a file, not UTF-8, not JSON; KeyError/TypeError: not an archive.
        """
        return cls.from_dict(json.loads(read_input_text(path, MAX_RUN_FILE_BYTES)))

    # ------------------------------------------------------------------ misc
    def extend(self, states: Iterable[State]) -> list[str | None]:
        """Alias of :meth:`add_batch` for any iterable."""
        return self.add_batch(list(states))

    def __repr__(self) -> str:
        return (
            f"Archive({len(self)} states, max_states={self.max_states}, "
            f"children_per_parent={self.children_per_parent}, keep_invalid={self.keep_invalid}"
            + ("" if self.dedup else ", dedup=False")
            + ")"
        )
