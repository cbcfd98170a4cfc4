"""PUCT (TTT-Discover App. A.2), RPUCG (TES) and the baseline rules on tiny archives.

Every expected score below is literal arithmetic from the formulas in docs/algorithms.md, written
out by hand in the test (never computed by the code under test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from discoverygym.search.archive import Archive
from discoverygym.search.puct import PUCT
from discoverygym.search.rpucg import RPUCG
from discoverygym.search.selectors import EpsilonGreedy, Greedy, Initial, make_selector
from tests.search.states import S, ids

RNG = np.random.default_rng(0)


# ============================================================================= PUCT
def puct_archive():
    a = PUCT().new_archive()
    a.add(S("root", 1.0), initial=True)
    a.add_batch([S("a", 3.0, ("root",)), S("b", 2.0, ("root",))])
    return a


def test_puct_scores_by_hand_before_any_visit():
    a, rule = puct_archive(), PUCT()
    # H = {a: 3, b: 2, root: 1}; ranks a0 b1 root2; weights 3, 2, 1 (sum 6); scale over non-initial
    # {a, b} = 3 - 2 = 1; T = 0, n = 0 -> score = R + 1 * 1 * P * sqrt(1) / 1
    got = rule.scores(a).as_dict()
    assert got["a"] == pytest.approx(3 + 3 / 6, rel=1e-15)
    assert got["b"] == pytest.approx(2 + 2 / 6, rel=1e-15)
    assert got["root"] == pytest.approx(1 + 1 / 6, rel=1e-15)
    assert ids(rule.select(a, 1)) == ["a"]


@pytest.mark.parametrize("counting", ["rollout", "parent"])
def test_puct_update_with_failure_by_hand(counting):
    a, rule = puct_archive(), PUCT(counting=counting)
    c1, fail = S("c1", 4.0, ("a",)), S("c2", 0.0, ("a",), valid=False)
    a.add_batch([c1, fail])
    committed = rule.update(a, [a.get("a")], [c1, fail])
    assert committed.id == "c1"
    if counting == "rollout":  # c1: m(a)=4, n(a)+1, n(root)+1, T+1; failure: n(a)+1, n(root)+1, T+1
        assert (rule.n, rule.m, rule.T) == ({"a": 2, "root": 2}, {"a": 4.0}, 2)
        n_a, n_root, T = 2, 2, 2
    else:  # one expanded parent: m(a)=4, n(a)=n(root)=1, T=1
        assert (rule.n, rule.m, rule.T) == ({"a": 1, "root": 1}, {"a": 4.0}, 1)
        n_a, n_root, T = 1, 1, 1
    # H = {c1: 4, a: 3, b: 2, root: 1}: weights 4, 3, 2, 1 (sum 10); scale = 4 - 2 = 2 (non-initial)
    s = math.sqrt(1 + T)
    expected = {
        "c1": 4.0 + 2 * 0.4 * s / 1,  # n = 0: Q = R
        "a": 4.0 + 2 * 0.3 * s / (1 + n_a),  # Q = m(a) = 4
        "b": 2.0 + 2 * 0.2 * s / 1,
        "root": 1.0 + 2 * 0.1 * s / (1 + n_root),  # n > 0 but no valid child recorded: Q = R
    }
    got = rule.scores(a).as_dict()
    for k, v in expected.items():
        assert got[k] == pytest.approx(v, rel=1e-14), k
    # lineage blocking: c1 blocks its ancestors a and root; b is free
    assert ids(rule.select(a, 2)) == ["c1", "b"]
    assert ids(rule.select(a, 3)) == ["c1", "b"]  # root is an ancestor of c1: blocked


def test_puct_blocks_descendants_of_a_pick():
    a, rule = PUCT().new_archive(), PUCT()
    a.add(S("root", 0.5), initial=True)
    a.add_batch([S("p", 5.0, ("root",)), S("r", 1.0, ("root",))])
    a.add(S("q", 4.9, ("p",)))
    # ranks p0 q1 r2 root3, weights 4 3 2 1 (sum 10); scale = 5 - 1 = 4
    got = rule.scores(a).as_dict()
    assert got == pytest.approx(
        {"p": 5 + 4 * 0.4, "q": 4.9 + 4 * 0.3, "r": 1 + 4 * 0.2, "root": 0.5 + 4 * 0.1}
    )
    assert ids(rule.select(a, 2)) == ["p", "r"]  # q (6.1) is p's descendant


def test_puct_ties_go_to_reward_then_earlier_state():
    a, rule = PUCT().new_archive(), PUCT(c=0.0)  # c = 0: score = Q exactly
    a.add(S("root", 0.0), initial=True)
    a.add_batch([S("x", 2.0, ("root",)), S("y", 2.0, ("root",))])
    a.add(S("z", 1.0, ("y",)))
    rule.update(a, [a.get("z")], [S("w", 2.0, ("z",), valid=True, tag=99.0)])  # m(z) = 2 -> Q(z) = 2
    # scores: x 2, y 2 (m(y) absent: Q = R), z 2 (from m), root 0; ties on score -> R desc -> earlier
    assert rule.scores(a).as_dict() == {"x": 2.0, "y": 2.0, "z": 2.0, "root": 0.0}
    assert ids(rule.select(a, 1)) == ["x"]
    assert ids(rule.select(a, 3)) == ["x", "y"]  # z is y's child: blocked; root: ancestor


def test_puct_rank_ties_use_insertion_order_and_scale_floor():
    a, rule = PUCT().new_archive(), PUCT()
    a.add(S("root", 1.0), initial=True)
    a.add_batch([S("x", 2.0, ("root",)), S("y", 2.0, ("root",))])
    # ranks x0 y1 root2 (x inserted first); scale = 2 - 2 = 0 -> floor 1e-6
    got = rule.scores(a).as_dict()
    assert got == pytest.approx(
        {"x": 2 + 1e-6 * 3 / 6, "y": 2 + 1e-6 * 2 / 6, "root": 1 + 1e-6 * 1 / 6}, rel=1e-15
    )
    assert got["x"] > got["y"]


def test_puct_state_dict_round_trip():
    a, rule = puct_archive(), PUCT()
    rule.update(a, [a.get("a")], [S("c1", 4.0, ("a",))])
    other = PUCT()
    other.load_state_dict(rule.state_dict())
    assert other.scores(a).as_dict() == rule.scores(a).as_dict()


# ============================================================================= RPUCG
def rpucg_run(restart_every=None, form="code"):
    """Three batches, following the rule's own selections (hand-checked below)."""
    rule = RPUCG(restart_every=restart_every, form=form)
    a = rule.new_archive()
    a.add(S("root", 1.0), initial=True)
    picks = [ids(rule.select(a, 5))]
    batch1 = [S("a", 2.0, ("root",)), S("f", 0.0, ("root",), valid=False)]
    a.add_batch(batch1)
    rule.update(a, [a.get("root")], batch1)
    picks.append(ids(rule.select(a, 5)))
    batch2 = [S("b", 1.5, ("a",)), S("c", 3.0, ("a",))]
    a.add_batch(batch2)
    rule.update(a, [a.get("a")], batch2)
    picks.append(ids(rule.select(a, 5)))
    return rule, a, picks


def test_rpucg_scores_by_hand_after_two_batches():
    rule, a, picks = rpucg_run()
    assert picks[0] == ["root"]
    # after batch 1: population root 1, a 2, f -inf. V(a) = 2, V(root) = max(1, .8 * 2) = 1.6
    # Q: V sorted [-inf, 1.6, 2] -> root 1/3, a 2/3; rho: r sorted [-inf, 1, 2] -> root 1/3, a 2/3
    # n(root) = 1, T = 1: root 1/3 + 1/3 * sqrt2 / 2 = 0.569; a 2/3 + 2/3 * sqrt2 = 1.609 -> a first,
    # then root is a's parent: excluded (anti-inbreeding)
    assert picks[1] == ["a"]
    # after batch 2: V: b 1.5, c 3, a max(2, .8*3) = 2.4, root max(1, .8*max(2.4, -inf)) = 1.92
    assert rule.values(a) == pytest.approx({"root": 0.8 * 2.4, "a": 2.4, "f": -math.inf, "b": 1.5, "c": 3.0})
    # V sorted [-inf, 1.5, 1.92, 2.4, 3]: Q root 2/5, a 3/5, c 4/5
    # r sorted [-inf, 1, 1.5, 2, 3]: rho root 1/5, a 3/5, c 4/5; n root 1, a 1, c 0; T = 2
    t = rule.terms(a)
    s3 = math.sqrt(3)
    assert (t["root"].Q, t["a"].Q, t["c"].Q) == (2 / 5, 3 / 5, 4 / 5)
    assert (t["root"].rho, t["a"].rho, t["c"].rho) == (1 / 5, 3 / 5, 4 / 5)
    assert t["root"].score == pytest.approx(2 / 5 + 1 / 5 * s3 / 2, rel=1e-15)
    assert t["a"].score == pytest.approx(3 / 5 + 3 / 5 * s3 / 2, rel=1e-15)
    assert t["c"].score == pytest.approx(4 / 5 + 4 / 5 * s3 / 1, rel=1e-15)
    # c first; a is c's parent (excluded); root is only c's grandparent: allowed
    assert picks[2] == ["c", "root"]


def third_batch(rule, a):
    batch3 = [S("d", 2.5, ("c", "root")), S("e", 0.5, ("c", "root"))]  # DAG: both inspirations
    a.add_batch(batch3)
    return rule.update(a, [a.get("c"), a.get("root")], batch3)


def test_rpucg_dag_values_ties_and_anti_inbreeding_by_hand():
    rule, a, _ = rpucg_run()
    assert third_batch(rule, a).id == "d"
    assert rule.history == ["root", "a", "c", "d"] and rule.T == 3
    # V: d 2.5, e .5, c max(3, .8*2.5) = 3, a max(2, .8*3) = 2.4,
    #    root max(1, .8*max(V(a) 2.4, V(f) -inf, V(d) 2.5, V(e) .5)) = 2.0
    assert rule.values(a) == pytest.approx(
        {"root": 2.0, "a": 2.4, "f": -math.inf, "b": 1.5, "c": 3.0, "d": 2.5, "e": 0.5}
    )
    # N = 7. V sorted [-inf, .5, 1.5, 2.0, 2.4, 2.5, 3]; r sorted [-inf, .5, 1, 1.5, 2, 2.5, 3]
    # n: root 2, a 1, c 1, d 0; T = 3 -> sqrt(4) = 2
    t = rule.terms(a)
    assert t["root"].score == pytest.approx(3 / 7 + 2 / 7 * 2 / 3, rel=1e-15)
    assert t["a"].score == pytest.approx(4 / 7 + 4 / 7 * 2 / 2, rel=1e-15)
    assert t["c"].score == pytest.approx(6 / 7 + 6 / 7 * 2 / 2, rel=1e-15)
    assert t["d"].score == pytest.approx(5 / 7 + 5 / 7 * 2 / 1, rel=1e-15)
    # d first; its parents c and root are excluded; a is free; a's children (b, c) and parent root
    assert ids(rule.select(a, 5)) == ["d", "a"]


def test_rpucg_paper_form_by_hand():
    rule, a, _ = rpucg_run(form="paper")
    third_batch(rule, a)
    # |S| = 4 candidates; score = Q + 1.0 * rho * sqrt((1 + 4) / (1 + n))
    t = rule.terms(a)
    assert t["root"].score == pytest.approx(3 / 7 + 2 / 7 * math.sqrt(5 / 3), rel=1e-15)
    assert t["a"].score == pytest.approx(4 / 7 + 4 / 7 * math.sqrt(5 / 2), rel=1e-15)
    assert t["c"].score == pytest.approx(6 / 7 + 6 / 7 * math.sqrt(5 / 2), rel=1e-15)
    assert t["d"].score == pytest.approx(5 / 7 + 5 / 7 * math.sqrt(5 / 1), rel=1e-15)


def test_rpucg_restart_to_trajectory_best():
    rule, a, _ = rpucg_run(restart_every=3)
    third_batch(rule, a)  # third commit -> restart from the best of {root, a, c, d} = c (3.0)
    assert rule.restarts == 1 and rule.history == ["c"] and rule.n == {} and rule.T == 0
    assert ids(rule.select(a, 5)) == ["c"]
    # the population is kept: V(c) still sees its child d
    assert rule.values(a)["root"] == 2.0
    t = rule.terms(a)["c"]  # Q 6/7, rho 6/7, n 0, T 0
    assert t.score == pytest.approx(6 / 7 + 6 / 7 * 1 / 1, rel=1e-15)


def test_rpucg_failed_batch_counts_without_commit():
    rule = RPUCG()
    a = rule.new_archive()
    a.add(S("root", 1.0), initial=True)
    batch = [S("f1", 0, ("root",), valid=False), S("f2", 0, ("root",), valid=False)]
    a.add_batch(batch)
    assert rule.update(a, [a.get("root")], batch) is None
    assert rule.history == ["root"] and rule.n == {"root": 1} and rule.T == 1 and rule.commits == 0
    # population {root 1, f1 -inf, f2 -inf}: Q = rho = 2/3; score = 2/3 + 2/3 * sqrt(2) / 2
    assert rule.terms(a)["root"].score == pytest.approx(2 / 3 + 2 / 3 * math.sqrt(2) / 2, rel=1e-15)


def test_rpucg_score_ties_go_to_higher_reward_then_smaller_id():
    rule = RPUCG()
    a = rule.new_archive()
    a.add_batch([S("i2", 1.0), S("i1", 1.0)], initial=True)  # identical terms
    assert ids(rule.select(a, 1)) == ["i1"]
    assert ids(rule.select(a, 2)) == ["i1", "i2"]


def test_rpucg_state_dict_round_trip():
    rule, a, _ = rpucg_run()
    other = RPUCG()
    other.load_state_dict(rule.state_dict())
    assert {k: v.score for k, v in other.terms(a).items()} == {k: v.score for k, v in rule.terms(a).items()}


# ============================================================================= baselines
def test_greedy_epsilon_initial_elite():
    a = Archive(max_states=None, children_per_parent=None)
    a.add(S("root", 0.0), initial=True)
    a.add_batch([S("a", 3.0, ("root",)), S("b", 5.0, ("root",)), S("c", 5.0, ("a",))])
    assert ids(Greedy().select(a, 2, RNG)) == ["b", "c"]
    assert ids(EpsilonGreedy(0.0).select(a, 3, RNG)) == ["b", "c", "a"]
    assert ids(Initial().select(a, 2, RNG)) == ["root", "root"]
    # epsilon = 1: uniform among not-yet-picked, in insertion order root, a, b, c
    rng = np.random.default_rng(5)
    draws = np.random.default_rng(5)
    draws.random()
    first = ["root", "a", "b", "c"][int(draws.integers(4))]
    assert EpsilonGreedy(1.0).select(a, 1, rng)[0].id == first
    elite = make_selector("elite", exploitation_ratio=1.0, elite_fraction=0.25)  # 1 elite: b
    assert ids(elite.select(a, 2, np.random.default_rng(0))) == ["b", "c"]
    with pytest.raises(ValueError, match="unknown selector"):
        make_selector("nope")
