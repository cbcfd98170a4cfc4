"""The state archive: dedup, caps, lineage, persistence, and its reward order.

The reward order (``sorted_valid``, ``best``) and the caps are checked against a reference model
written in the test from the documented rules: a plain list in insertion order, sorted with
``sorted()`` by ``(reward is NaN, -reward, insertion index)``; caps applied by sorting candidates
by ``(reward, -insertion index)`` (lowest reward first, ties: the later-inserted first).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pytest

from discoverygym.search.archive import Archive, solution_key
from discoverygym.search.puct import PUCT
from discoverygym.types import State
from tests.search.states import S, ids


def test_archive_children_cap_keeps_best_with_earlier_on_ties():
    a = Archive(max_states=None, children_per_parent=2)
    a.add(S("root", 0.0), initial=True)
    assert a.add_batch([S("c1", 1.0, ("root",)), S("c2", 3.0, ("root",)), S("c3", 2.0, ("root",))]) == [
        None,
        "c2",
        "c3",
    ]
    assert a.add(S("c4", 3.0, ("root",))) == "c4"  # ties c2 (earlier, kept) and evicts c3
    assert ids(a) == ["root", "c2", "c4"]
    assert a.evictions == 2


def test_archive_global_cap_keeps_initial_and_highest():
    a = Archive(max_states=3, children_per_parent=None)
    a.add(S("root", 0.0), initial=True)
    a.add_batch([S("a", 5.0, ("root",)), S("b", 1.0, ("root",)), S("c", 3.0, ("a",))])
    assert ids(a) == ["root", "a", "c"]  # b (lowest, not initial) evicted; root kept though lowest
    assert a.add(S("d", 0.5, ("c",))) is None  # evicted right away
    assert ids(a) == ["root", "a", "c"]


def test_archive_global_cap_tie_evicts_later_state():
    a = Archive(max_states=3, children_per_parent=None)
    a.add(S("root", 0.0), initial=True)
    a.add_batch([S("a", 5.0, ("root",)), S("c", 3.0, ("a",))])
    assert a.add(S("e", 3.0, ("c",))) is None  # same reward as c, inserted later: evicted
    assert ids(a) == ["root", "a", "c"]


def test_archive_dedup_and_invalid_and_lineage_survive_eviction():
    a = Archive(max_states=3, children_per_parent=None)
    a.add(S("root", 0.0), initial=True)
    a.add_batch([S("a", 5.0, ("root",)), S("b", 1.0, ("root",))])
    dup = State(list(a.get("a").solution), 5.0, 5.0, True, id="a2", parent_ids=("b",))
    assert solution_key(dup) == solution_key(a.get("a"))
    assert a.add(dup) == "a"  # resolved to its kept twin, not inserted
    assert a.resolve(dup).id == "a"
    assert a.add(S("x", 0.0, ("a",), valid=False)) is None  # failures not kept (TTT archive)
    a.add(S("g", 2.0, ("b",)))  # evicts b (lowest non-initial)
    assert "b" not in a and a.known("b")
    assert a.ancestors("g") == {"b", "root"}  # through the evicted parent
    assert a.descendants("root") == {"a", "g"}
    with pytest.raises(ValueError, match="already added"):
        a.add(S("g", 9.0))


def test_archive_keep_invalid_evicts_failures_first():
    a = Archive(max_states=3, children_per_parent=None, keep_invalid=True)
    a.add(S("root", 0.0), initial=True)
    a.add_batch([S("f", 0.0, ("root",), valid=False), S("a", 1.0, ("root",))])
    assert ids(a) == ["root", "f", "a"]
    a.add(S("b", 0.5, ("root",)))
    assert ids(a) == ["root", "a", "b"]


def test_archive_round_trip_and_compaction(tmp_path):
    a = Archive(max_states=5, children_per_parent=None)
    a.add(S("root", 0.0), initial=True)
    for i in range(200):  # forces evictions and at least one compaction
        a.add(S(f"s{i}", float((i * 37) % 101), (f"s{i - 1}" if i else "root",)))
    assert a.layout >= 1 and len(a) == 5
    a.save(tmp_path / "archive.json")
    b = Archive.load(tmp_path / "archive.json")
    assert b.states() == a.states() and b.initial_ids == a.initial_ids == ["root"]
    assert b.ancestors("s199") == a.ancestors("s199") and len(a.ancestors("s199")) == 200
    p, q = PUCT(), PUCT()
    assert ids(p.select(a, 3)) == ids(q.select(b, 3))


def test_archive_snapshot_format():
    a = Archive(max_states=2, children_per_parent=None)
    a.add(State([0.0], 0.0, 0.0, True, id="r"), initial=True)
    a.add_batch(
        [
            State([1.0], 1.0, 1.0, True, id="x", parent_ids=("r",)),
            State([2.0], 2.0, 2.0, True, id="y", parent_ids=("r",)),
        ]
    )
    record = {"score": None, "code": None, "error": None, "metadata": {}}
    assert a.to_dict() == {
        "config": {"max_states": 2, "children_per_parent": None, "keep_invalid": False},
        "states": [
            {
                **record,
                "solution": [0.0],
                "score": 0.0,
                "reward": 0.0,
                "valid": True,
                "id": "r",
                "parent_ids": [],
            },
            {
                **record,
                "solution": [2.0],
                "score": 2.0,
                "reward": 2.0,
                "valid": True,
                "id": "y",
                "parent_ids": ["r"],
            },
        ],
        "initial_ids": ["r"],
        "protected": ["r"],
        "lineage": {"r": [], "x": ["r"], "y": ["r"]},
        "evictions": 1,
    }


# ============================================================================= reward order vs a reference model
@dataclass
class _Entry:
    id: str
    reward: float
    valid: bool
    parent: str | None
    solution: tuple
    seq: int


class _Reference:
    """The documented archive rules on a plain list (quadratic, obviously right)."""

    def __init__(self, max_states, children_per_parent, keep_invalid):
        self.max_states, self.cpp, self.keep_invalid = max_states, children_per_parent, keep_invalid
        self.kept: list[_Entry] = []
        self.protected: set[str] = set()
        self.seq = 0

    def add_batch(self, states, initial=False):
        resolved, touched = [], []
        for st in states:
            if not st.valid and not self.keep_invalid and not initial:
                resolved.append(None)
                continue
            twin = next((e for e in self.kept if e.solution == tuple(st.solution)), None)
            if twin is not None:
                resolved.append(twin.id)
                continue
            parent = st.parent_ids[0] if st.parent_ids else None
            self.kept.append(_Entry(st.id, st.reward, st.valid, parent, tuple(st.solution), self.seq))
            self.seq += 1
            if initial:
                self.protected.add(st.id)
            resolved.append(st.id)
            if parent is not None and parent not in touched:
                touched.append(parent)
        evicted: set[str] = set()
        worst_first = lambda e: (e.reward, -e.seq)
        if self.cpp is not None:
            for pid in touched:
                kids = [e for e in self.kept if e.parent == pid and e.id not in self.protected]
                best_first = sorted(kids, key=lambda e: (-e.reward, e.seq))
                evicted |= {e.id for e in best_first[self.cpp :]}
                self.kept = [e for e in self.kept if e.id not in evicted]
        if self.max_states is not None and len(self.kept) > self.max_states:
            excess = len(self.kept) - self.max_states
            free = [e for e in self.kept if e.id not in self.protected]
            bad = sorted((e for e in free if not e.valid), key=worst_first)[:excess]
            good = sorted((e for e in free if e.valid), key=worst_first)[: excess - len(bad)]
            evicted |= {e.id for e in bad + good}
            self.kept = [e for e in self.kept if e.id not in evicted]
        return [None if r in evicted else r for r in resolved]

    def ranked(self) -> list[str]:
        valid = [e for e in self.kept if e.valid]
        key = lambda e: (math.isnan(e.reward), 0.0 if math.isnan(e.reward) else -e.reward, e.seq)
        return [e.id for e in sorted(valid, key=key)]


def _assert_same(archive: Archive, ref: _Reference) -> None:
    assert ids(archive) == [e.id for e in ref.kept]  # insertion order
    slots, neg = archive.sorted_valid()
    ranked = [archive.state_at(int(s)).id for s in slots]
    assert ranked == ref.ranked()
    rewards = {e.id: e.reward for e in ref.kept}
    np.testing.assert_array_equal(neg, [-rewards[i] for i in ranked])
    assert (archive.best().id if archive.best() else None) == (ranked[0] if ranked else None)
    assert len(archive) == len(ref.kept)


CAPS = [
    (None, None, False),  # a TES-like population without caps
    (None, None, True),
    (30, 2, False),  # TTT-Discover-like caps, small enough to compact often
    (25, None, True),
    (None, 1, True),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("caps", CAPS, ids=lambda c: f"max{c[0]}-cpp{c[1]}-inv{c[2]}")
def test_order_caps_and_dedup_match_the_reference(caps, seed):
    rng = np.random.default_rng(seed)
    archive, ref = Archive(*caps), _Reference(*caps)
    root = State([0.0, 0.0], 0.0, 0.0, True, id="root")
    assert archive.add(root, initial=True) == ref.add_batch([root], initial=True)[0]
    every_id = ["root"]
    rewards = [0.0, 0.5, 1.0, 1.0, 2.0, 3.0, -math.inf, math.inf]  # many ties
    for b in range(150):
        batch = []
        for k in range(int(rng.integers(1, 5))):
            sid = f"b{b}k{k}"
            parent = every_id[int(rng.integers(len(every_id)))]
            valid = bool(rng.random() < 0.8)
            reward = rewards[int(rng.integers(len(rewards)))] if valid else -1.0
            solution = [float(rng.integers(0, 40)), float(rng.integers(0, 3))]  # duplicates happen
            batch.append(
                State(solution, reward if valid else None, reward, valid, id=sid, parent_ids=(parent,))
            )
            every_id.append(sid)
        assert archive.add_batch(batch) == ref.add_batch(batch)
        if rng.random() < 0.1:  # a trajectory protecting its committed state
            sid = every_id[int(rng.integers(len(every_id)))]
            archive.protect(sid)
            ref.protected.add(sid)
        if rng.random() < 0.05:  # a resumed run continues from the snapshot
            archive = Archive.from_dict(json.loads(json.dumps(archive.to_dict())))
        if rng.random() < 0.3:  # reads after one batch or after many (the view is merged or rebuilt)
            _assert_same(archive, ref)
    _assert_same(archive, ref)
    if caps[0] is not None:
        assert archive.evictions > 64 and archive.layout >= 1  # compactions happened along the way


def test_nan_rewards_rank_last_in_insertion_order():
    archive = Archive(max_states=None, children_per_parent=None)
    rewards = [1.0, math.nan, 2.0, math.nan, 1.0, -math.inf, math.nan, 2.0]
    for i, r in enumerate(rewards):
        archive.add(State([float(i)], r, r, True, id=f"s{i}"), initial=i == 0)
        slots, _ = archive.sorted_valid()  # read after every insertion: merged into the view
    assert [archive.state_at(int(s)).id for s in slots] == ["s2", "s7", "s0", "s4", "s5", "s1", "s3", "s6"]
    fresh = Archive.from_dict(archive.to_dict())  # rebuilt in one go: the same order
    assert [fresh.state_at(int(s)).id for s in fresh.sorted_valid()[0]] == [
        "s2",
        "s7",
        "s0",
        "s4",
        "s5",
        "s1",
        "s3",
        "s6",
    ]
    assert archive.best().id == "s2"


def test_a_large_archive_keeps_the_reference_order():
    rng = np.random.default_rng(5)
    archive = Archive(max_states=None, children_per_parent=None)
    rewards = np.round(rng.random(20_000), 3)  # about 1,000 distinct values: many ties
    for i, r in enumerate(rewards):
        archive.add(State([float(i)], float(r), float(r), True, id=f"s{i}"))
        if i in (0, 7, 4_000):
            archive.sorted_valid()
    slots, neg = archive.sorted_valid()
    expected = sorted(range(len(rewards)), key=lambda i: (-rewards[i], i))
    assert slots.tolist() == expected
    assert np.all(np.diff(neg) >= 0)


# ----------------------------------------------------------------------------- reward_rtol
def test_reward_rtol_off_by_default_keeps_equal_rewards():
    a = Archive(max_states=None, children_per_parent=None)
    a.add(S("root", 0.0), initial=True)
    assert a.add_batch([S("x", 2.0, ("root",)), S("y", 2.0, ("root",))]) == ["x", "y"]


def test_reward_rtol_merges_a_child_into_the_kept_state_of_equal_reward():
    a = Archive(max_states=None, children_per_parent=None, reward_rtol=1e-9)
    a.add(S("root", 1.0), initial=True)
    assert a.add(S("x", 2.0, ("root",))) == "x"
    # within 1e-9 * max(|2|, 1) = 2e-9, from another parent too: the kept twin stands for it
    assert a.add(S("y", 2.0 + 1.5e-9, ("x",))) == "x"
    assert a.add(S("z", 2.0 - 1.9e-9, ("root",))) == "x"
    assert a.add(S("w", 2.0 + 2.1e-9, ("root",))) == "w"  # just outside: a state of its own
    assert a.add(S("v", 1.0, ("x",))) == "root"  # an initial state stands for its copies too
    assert sorted(ids(a)) == ["root", "w", "x"]
    assert a.resolve(S("u", 2.0 + 1e-10)).id == "w"  # the highest kept reward in the window
    # the same batch: the second of two equal rewards merges into the first
    assert a.add_batch([S("p", 5.0, ("w",)), S("q", 5.0, ("w",))]) == ["p", "p"]
    # a failure is never merged, and never kept here
    assert a.add(S("f", 2.0, ("root",), valid=False)) is None


def test_reward_rtol_keeps_every_initial_state_and_scales_below_one():
    a = Archive(max_states=None, children_per_parent=None, reward_rtol=1e-6)
    assert a.add_batch([S("i1", 0.001), S("i2", 0.001)], initial=True) == ["i1", "i2"]
    # |reward| < 1: the tolerance is absolute (1e-6 * 1), not 1e-6 * 0.001
    assert a.add(S("c", 0.001 + 9e-7, ("i1",))) == "i1"
    assert a.add(S("d", 0.001 + 1.1e-6, ("i1",))) == "d"


def test_reward_rtol_an_evicted_twin_no_longer_captures_and_the_option_persists(tmp_path):
    a = Archive(max_states=None, children_per_parent=1, reward_rtol=1e-12)
    a.add(S("root", 0.0), initial=True)
    assert a.add(S("lo", 1.0, ("root",))) == "lo"
    assert a.add(S("hi", 3.0, ("root",))) == "hi"  # evicts lo (one child per parent)
    assert "lo" not in a
    assert a.add(S("lo2", 1.0, ("hi",))) == "lo2"
    path = tmp_path / "archive.json"
    a.save(path)
    b = Archive.load(path)
    assert b.reward_rtol == 1e-12
    assert b.add(S("hi2", 3.0, ("lo2",))) == "hi"
    assert ids(b) == ids(a)


@pytest.mark.parametrize("bad", [-1e-9, math.nan, math.inf])
def test_reward_rtol_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="reward_rtol"):
        Archive(reward_rtol=bad)
    a = Archive()
    with pytest.raises(ValueError, match="reward_rtol"):
        a.reward_rtol = bad
