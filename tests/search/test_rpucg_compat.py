"""RPUCG ``compat="simpletes"``: the released SimpleTES selector's three behaviours, on hand-built histories.

Each test builds the same tiny history twice, with the default (``compat="discoverygym"``) and with
``compat="simpletes"``, and checks both against numbers written out by hand.
"""

from __future__ import annotations

import argparse
import math

import pytest

from discoverygym.search.config import SearchConfig
from discoverygym.search.rpucg import RPUCG
from discoverygym.types import State
from tests.search.states import S, ids

SQ2 = math.sqrt(2)


def fail(sid: str, reward: float, parents=("root",)) -> State:
    """An invalid child with a finite failure reward (SimpleTES: a stored node with that score)."""
    return State(None, None, reward, False, code=f"# {sid}", id=sid, parent_ids=parents, error="bad")


def crash(sid: str, parents=("root",)) -> State:
    """A child without a finite score (SimpleTES never stores it)."""
    return State(None, None, -math.inf, False, id=sid, parent_ids=parents, error="crashed")


def start(compat: str, **kw) -> tuple[RPUCG, object]:
    rule = RPUCG(compat=compat, **kw)
    a = rule.new_archive()
    a.add(S("root", 1.0), initial=True)
    return rule, a


def test_compat_value_is_checked():
    with pytest.raises(ValueError, match="compat"):
        RPUCG(compat="openevolve")
    assert RPUCG().config.compat == "discoverygym"


# ------------------------------------------------------------------ 1. a whole batch fails
@pytest.mark.parametrize("compat", ["discoverygym", "simpletes"])
def test_whole_failed_batch(compat):
    rule, a = start(compat, restart_every=2)
    batch = [fail("f1", -1.0), fail("f2", -0.5)]
    a.add_batch(batch)
    committed = rule.update(a, [a.get("root")], batch)
    assert rule.n == {"root": 1} and rule.T == 1
    if compat == "discoverygym":
        assert committed is None and rule.history == ["root"] and rule.commits == 0
        # population {root 1, f1 -inf, f2 -inf}: root Q = rho = 2/3
        assert set(rule.terms(a)) == {"root"}
        assert rule.terms(a)["root"].score == pytest.approx(2 / 3 + 2 / 3 * SQ2 / 2, rel=1e-15)
    else:
        # SimpleTES commits the best-scoring failed child (-0.5 > -1)
        assert committed.id == "f2" and rule.history == ["root", "f2"] and rule.commits == 1
        # population {root 1, f1 -1, f2 -0.5}; V(root) = max(1, .8 * -0.5) = 1
        # V and r sorted [-1, -0.5, 1]: root Q = rho = 2/3, f2 Q = rho = 1/3; n(f2) = 0, T = 1
        t = rule.terms(a)
        assert set(t) == {"root", "f2"}
        assert (t["f2"].Q, t["f2"].rho) == (1 / 3, 1 / 3)
        assert t["root"].score == pytest.approx(2 / 3 + 2 / 3 * SQ2 / 2, rel=1e-15)
        assert t["f2"].score == pytest.approx(1 / 3 + 1 / 3 * SQ2 / 1, rel=1e-15)
    # a second failed batch: the commit counts towards restart_every only in SimpleTES
    batch2 = [fail("f3", -0.7)]
    a.add_batch(batch2)
    rule.update(a, [a.get("root")], batch2)
    if compat == "discoverygym":
        assert rule.restarts == 0 and rule.T == 2
    else:  # two commits -> restart from the history's best (root 1 > f2 -0.5 > f3 -0.7)
        assert rule.restarts == 1 and rule.history == ["root"] and rule.T == 0 and rule.n == {}


# ------------------------------------------------------------------ 2. crashes
@pytest.mark.parametrize("compat", ["discoverygym", "simpletes"])
def test_crashes_are_not_nodes_in_simpletes(compat):
    rule, a = start(compat)
    batch = [S("a", 2.0, ("root",)), crash("x")]
    a.add_batch(batch)
    assert rule.update(a, [a.get("root")], batch).id == "a"
    t = rule.terms(a)
    assert set(t) == {"root", "a"}
    if compat == "discoverygym":
        # population {root, a, x}: N = 3. V: root max(1, 1.6) = 1.6, a 2, x -inf
        # V sorted [-inf, 1.6, 2]: Q root 1/3, a 2/3; r sorted [-inf, 1, 2]: rho root 1/3, a 2/3
        assert (t["root"].Q, t["a"].Q, t["root"].rho, t["a"].rho) == (1 / 3, 2 / 3, 1 / 3, 2 / 3)
        assert t["a"].score == pytest.approx(2 / 3 + 2 / 3 * SQ2, rel=1e-15)
        assert t["root"].score == pytest.approx(1 / 3 + 1 / 3 * SQ2 / 2, rel=1e-15)
    else:
        # population {root, a}: N = 2. V sorted [1.6, 2]: Q root 0, a 1/2; r sorted [1, 2]: rho root 0, a 1/2
        assert (t["root"].Q, t["a"].Q, t["root"].rho, t["a"].rho) == (0.0, 0.5, 0.0, 0.5)
        assert t["a"].score == pytest.approx(1 / 2 + 1 / 2 * SQ2, rel=1e-15)
        assert t["root"].score == 0.0
    # a batch of crashes only: nothing to commit in either mode
    batch2 = [crash("y", ("a",)), crash("z", ("a",))]
    a.add_batch(batch2)
    assert rule.update(a, [a.get("a")], batch2) is None
    assert rule.history == ["root", "a"] and rule.commits == 1


def test_crash_ranks_by_hand_in_a_mixed_population():
    """A finite failure is a ranked node in SimpleTES, a crash is not: N counts only the former."""
    rule, a = start("simpletes")
    batch = [fail("f", 0.5), crash("x"), S("a", 3.0, ("root",))]
    a.add_batch(batch)
    rule.update(a, [a.get("root")], batch)
    t = rule.terms(a)
    # population {root 1, f 0.5, a 3}: V root max(1, 2.4) = 2.4; V sorted [0.5, 2.4, 3], r sorted [0.5, 1, 3]
    assert (t["root"].Q, t["root"].rho, t["a"].Q, t["a"].rho) == (1 / 3, 1 / 3, 2 / 3, 2 / 3)
    assert rule.values(a)["x"] == -math.inf


# ------------------------------------------------------------------ 3. duplicates
def dup(sid: str, reward: float, sol, parents) -> State:
    return State(list(sol), reward, reward, True, id=sid, parent_ids=parents)


@pytest.mark.parametrize("compat", ["discoverygym", "simpletes"])
def test_duplicates_are_own_nodes_in_simpletes(compat):
    rule = RPUCG(compat=compat)
    a = rule.new_archive()
    a.add(dup("root", 1.0, [0, 0], ()), initial=True)
    batch = [dup("a", 2.0, [5, 5], ("root",)), dup("b", 2.0, [5, 5], ("root",))]  # the same program twice
    kept = a.add_batch(batch)
    assert rule.update(a, [a.get("root")], batch).id == "a"
    t = rule.terms(a)
    if compat == "discoverygym":
        assert kept == ["a", "a"] and len(a) == 2
        # population {root, a}: V sorted [1.6, 2] -> a Q = rho = 1/2
        assert t["a"].score == pytest.approx(1 / 2 + 1 / 2 * SQ2, rel=1e-15)
    else:
        assert kept == ["a", "b"] and len(a) == 3
        # population {root, a, b}: V sorted [1.6, 2, 2] (ties share the lowest rank) -> a Q = rho = 1/3
        assert t["a"].score == pytest.approx(1 / 3 + 1 / 3 * SQ2, rel=1e-15)
    # a child that rediscovers root's solution
    batch2 = [dup("c", 1.0, [0, 0], ("a",))]
    a.add_batch(batch2)
    committed = rule.update(a, [a.get("a")], batch2)
    if compat == "discoverygym":
        assert committed.id == "root" and rule.history == ["root", "a"]
    else:
        assert committed.id == "c" and rule.history == ["root", "a", "c"]
        assert ids(rule.select(a, 5))[0] in {"a", "c"}


def test_archive_without_dedup_round_trips():
    rule = RPUCG(compat="simpletes")
    a = rule.new_archive()
    a.add_batch([dup("p", 1.0, [1], ()), dup("q", 1.0, [1], ())], initial=True)
    again = type(a).from_dict(a.to_dict())
    assert not again.dedup and ids(again) == ["p", "q"]
    assert "dedup" not in RPUCG().new_archive().to_dict()["config"]  # default output unchanged


# ------------------------------------------------------------------ configuration and command line
def test_compat_from_search_config_and_cli():
    SearchConfig("CirclePacking-26-v0", selector_kwargs={"compat": "simpletes"}).validate()
    with pytest.raises(ValueError, match="compat"):
        SearchConfig("CirclePacking-26-v0", selector_kwargs={"compat": "x"}).validate()
    with pytest.raises(ValueError):
        SearchConfig("CirclePacking-26-v0", selector="puct", selector_kwargs={"compat": "simpletes"}).validate()
    from discoverygym.cli.search import _add_arguments, _config_from_args

    p = argparse.ArgumentParser()
    _add_arguments(p)
    args = p.parse_args(["CirclePacking-26-v0", "--run-dir", "/tmp/nonexistent-compat", "--compat", "simpletes"])
    assert _config_from_args(args).selector_kwargs == {"compat": "simpletes"}
    args = p.parse_args(["CirclePacking-26-v0", "--run-dir", "/tmp/nonexistent-compat"])
    assert _config_from_args(args).selector_kwargs == {}
