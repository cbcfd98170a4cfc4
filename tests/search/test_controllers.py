"""Issue 19: the rpucg-lookahead score, the bandits, the controllers, exact budgets and exact resume.

Expected numbers are computed by hand in the comments (not by calling the code under test); the
resume tests cut a finished run's log (as a kill leaves it), interrupt a run with
KeyboardInterrupt, and SIGKILL the command line, then compare with an uninterrupted run.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from discoverygym.search.bandits import UCB1, ThompsonBernoulli
from discoverygym.search.controllers import (
    BudgetBandit,
    InspirationBandit,
    RestartController,
    SuccessiveHalving,
    trajectory_feedback,
)
from discoverygym.search.evolution import EvolutionarySearch, SearchConfig, load_snapshot
from discoverygym.search.lookahead import RPUCGLookahead
from discoverygym.search.rpucg import RPUCG
from discoverygym.search.runlog import RunLog
from discoverygym.search.selectors import make_selector

from .states import S

ENV = "CirclePacking-26-v0"
REPO = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- lookahead
def _feed(rule):
    """A hand-built DAG: init(0) -> a(.5), b(.2); {a, init} -> c(.4), d(fail); {c} -> e(.9)."""
    arch = rule.new_archive()
    init = S("init", 0.0)
    arch.add(init, initial=True)
    a, b = S("a", 0.5, ("init",)), S("b", 0.2, ("init",))
    arch.add_batch([a, b])
    rule.update(arch, [init], [a, b])
    c, d = S("c", 0.4, ("a", "init")), S("d", 0.0, ("a", "init"), valid=False)
    arch.add_batch([c, d])
    rule.update(arch, [arch.get("a"), init], [c, d])
    e = S("e", 0.9, ("c",))
    arch.add_batch([e])
    rule.update(arch, [arch.get("c")], [e])
    return arch


def test_lookahead_score_by_hand():
    la, plain = RPUCGLookahead(), RPUCG()
    arch, arch_plain = _feed(la), _feed(plain)
    # batch 1 (t=1): g_init = .5 -> uses[init] = [.5, 1, 1]
    # batch 2 (t=2): g_a = max(0, .4-.5) = 0, g_init = .4 -> uses[init] = [.5*.9 + .4, 2, 2] = [.85, 2, 2]
    # batch 3 (t=3): g_c = .9-.4 = .5 -> uses[c] = [.5, 3, 1]
    # span = .9 - 0 (valid rewards 0, .5, .2, .4, .9)
    # U_init = .85 * .9^(3-2) / (3 * .9) = .283333..., U_a = 0, U_c = .5 / (2 * .9) = .277777...
    u = la.lookahead(arch)
    assert u["init"] == pytest.approx(0.85 * 0.9 / 2.7)
    assert u["a"] == 0.0
    assert u["c"] == pytest.approx(0.5 / 1.8)
    assert "b" not in u and "e" not in u  # never shown in a prompt
    t_la, t_plain = la.terms(arch), plain.terms(arch_plain)
    assert set(t_la) == set(t_plain)
    for i in t_la:  # score = RPUCG score + beta * U (beta = 1)
        assert t_la[i].score == pytest.approx(t_plain[i].score + u.get(i, 0.0))
        assert (t_la[i].Q, t_la[i].rho, t_la[i].n) == (t_plain[i].Q, t_plain[i].rho, t_plain[i].n)
    # other hyper-parameters: beta = 2, delta = .5 -> U_init = (.5*.5 + .4) * .5 / (3 * .9)
    la2 = RPUCGLookahead(beta=2.0, delta=0.5)
    arch2 = _feed(la2)
    assert la2.lookahead(arch2)["init"] == pytest.approx(0.65 * 0.5 / 2.7)
    base = RPUCG()
    base_arch = _feed(base)
    assert la2.terms(arch2)["c"].score == pytest.approx(base.terms(base_arch)["c"].score + 2 * 0.5 / 1.8)  # U_c = .5 / (2 * .9), age 0
    # beta = 0 is RPUCG exactly; the state round-trips
    la0 = RPUCGLookahead(beta=0.0)
    arch0 = _feed(la0)
    assert {k: v.score for k, v in la0.terms(arch0).items()} == {k: v.score for k, v in t_plain.items()}
    copy = RPUCGLookahead()
    copy.load_state_dict(json.loads(json.dumps(la.state_dict())))
    assert copy.lookahead(arch) == u


def test_lookahead_is_registered_and_checked():
    rule = make_selector("rpucg-lookahead", beta=0.5)
    assert rule.name == "rpucg-lookahead" and rule.config.beta == 0.5 and rule.default_inspirations == 5
    with pytest.raises(ValueError, match="delta"):
        make_selector("rpucg-lookahead", delta=0.0)
    with pytest.raises(ValueError, match="beta"):
        SearchConfig(ENV, selector="rpucg-lookahead", selector_kwargs={"beta": -1.0}).validate()


# ----------------------------------------------------------------------------- bandits
def test_ucb1_choices_on_a_scripted_reward_sequence():
    b = UCB1(3)
    script = {0: [1.0, 0.0], 1: [0.0], 2: [0.5, 0.0]}  # rewards per arm, in pull order
    chosen = []
    for _ in range(6):
        arm = b.choose()
        chosen.append(arm)
        b.update(arm, script[arm].pop(0) if script[arm] else 0.0)
    # pulls 1-3: every arm once, in order.
    # t=3: 1 + sqrt(2 ln 3) = 2.482 | 0 + 1.482 | .5 + 1.482 -> arm 0 (reward 0; mean .5)
    # t=4: .5 + sqrt(2 ln 4 / 2) = 1.677 | 0 + sqrt(2 ln 4) = 1.665 | .5 + 1.665 = 2.165 -> arm 2 (reward 0; mean .25)
    # t=5: .5 + sqrt(2 ln 5 / 2) = 1.769 | 0 + sqrt(2 ln 5) = 1.794 | .25 + 1.269 = 1.519 -> arm 1
    assert chosen == [0, 1, 2, 0, 2, 1]
    assert b.n == [2, 2, 2] and b.s == [1.0, 0.0, 0.5]
    with pytest.raises(ValueError):
        b.update(3, 0.0)
    with pytest.raises(ValueError):
        b.update(0, math.nan)


def test_thompson_posterior_and_choices():
    t = ThompsonBernoulli(2)
    for _ in range(20):
        t.update(0, 1.0)
        t.update(1, 0.0)
    # posteriors Beta(21, 1) (mean .95) and Beta(1, 21) (mean .05): arm 0 on every seed
    assert all(t.choose(np.random.default_rng(s)) == 0 for s in range(50))
    # one choice = one draw per arm, in arm order, from the given rng
    rng, ref = np.random.default_rng(7), np.random.default_rng(7)
    t2 = ThompsonBernoulli(2)
    t2.update(1, 1.0)
    draws = [ref.beta(1, 1), ref.beta(2, 1)]
    assert t2.choose(rng) == int(np.argmax(draws))
    with pytest.raises(ValueError):
        t.update(0, 2.0)
    with pytest.raises(ValueError):
        t.choose(None)


def test_inspiration_bandit_scripted():
    b = InspirationBandit()
    assert b.choose(0) == 1
    assert b.reward(0, committed=1.5, parent=1.0, span=1.0) == 0.5
    assert b.choose(1) == 3
    assert b.reward(1, committed=None, parent=1.0, span=1.0) == 0.0  # no valid child
    assert b.choose(2) == 5
    assert b.reward(2, committed=2.0, parent=1.0, span=2.0) == 0.5
    assert b.choose(3) == 10
    assert b.reward(3, committed=0.5, parent=1.0, span=1.0) == 0.0  # worse than its parent
    # t=4: arms 1 and 5 tie at .5 + sqrt(2 ln 4) -> the smaller index: 1
    assert b.choose(4) == 1
    # step 4 pending (counts as a pull): n = [2, 1, 1, 1], t = 5:
    # .5 + sqrt(2 ln 5 / 2) = 1.769 | 0 + 1.794 | .5 + 1.794 = 2.294 | 0 + 1.794 -> 5
    assert b.choose(5) == 5


def test_restart_controller_scripted():
    ctl = RestartController("ucb")
    rng = np.random.default_rng(0)
    assert ctl.decide(4, 1.0, rng) == "best"  # both unpulled: the first arm
    assert ctl.decide(9, 1.2, rng) == "fresh"  # closes "best" with reward 1 (1.2 > 1.0); fresh unpulled
    # closes "fresh" with 0 (1.2 is not > 1.2); t=2: best 1 + sqrt(2 ln 2) = 2.18, fresh 0 + 1.18
    assert ctl.decide(14, 1.2, rng) == "best"
    assert [d["reward"] for d in ctl.decisions] == [1.0, 0.0, None]
    assert ctl.close(1.5) == 1.0 and ctl.close(2.0) is None  # closing is idempotent
    th = RestartController("thompson")
    choices = [th.decide(i, 0.0, np.random.default_rng(i)) for i in range(3)]
    again = RestartController("thompson")
    assert choices == [again.decide(i, 0.0, np.random.default_rng(i)) for i in range(3)]
    with pytest.raises(ValueError, match="restart_controller"):
        RestartController("eps")


# ----------------------------------------------------------------------------- budget controllers
def test_successive_halving_allocation_by_hand():
    sh = SuccessiveHalving(4, 6)  # S = 24 steps, R = floor(log2 4) + 1 = 3 rungs of 8
    assert sh.next_round([[0.0]] * 4) == [2, 2, 2, 2]
    curves = [[0, 1, 2], [0, 3, 3], [0, 0, 1], [0, 3, 4]]  # best: 2, 3, 1, 4
    assert sh.next_round(curves) == [2, 6, 2, 6]  # 8 steps to the top half {3, 1}
    curves = [[0, 1, 2], [0, 3, 3, 3, 3, 3, 5], [0, 0, 1], [0, 3, 4, 4, 4, 4, 4]]
    assert sh.next_round(curves) == [2, 14, 2, 6]  # the last rung (the rest, 8) to trajectory 1
    assert sh.left == 0 and sum(sh.limits) == 24
    with pytest.raises(ValueError, match="L >= 3"):
        SuccessiveHalving(4, 2)


def test_budget_bandit_allocation_by_hand():
    bb = BudgetBandit(2, 8)  # warm-up: max(1, floor(8 * .25)) = 2 steps each
    assert bb.next_round([[0.0], [0.0]]) == [2, 2]
    curves = [[0, 0, 0], [0, 1, 2]]  # span 2; slope_0 = 0, slope_1 = (2 - 0) / (2 * 2) = .5
    assert trajectory_feedback(curves) == ([0, 2], [0.0, 0.5])
    # 2 steps, one at a time: t=4, n=[2,2]: 0 + .5 sqrt(2 ln 4 / 2) = .589 | .5 + .589 -> 1;
    # t=5, n=[2,3]: 0 + .5 sqrt(ln 5) = .634 | .5 + .5 sqrt(2 ln 5 / 3) = 1.018 -> 1
    assert bb.next_round(curves) == [2, 4]


@pytest.mark.parametrize("controller", ["successive-halving", "bandit"])
def test_budget_controller_spends_exactly_n_evaluations(tmp_path, controller):
    cfg = SearchConfig(ENV, C=4, L=6, K=2, seed=5, budget_controller=controller)
    result = EvolutionarySearch(cfg, tmp_path / "r", executor="inline", tensorboard=False).run()
    records = RunLog(tmp_path / "r").read_records()
    evals = [(r["traj"], r["step"], r["k"]) for r in records if r["kind"] == "eval"]
    assert len(evals) == len(set(evals)) == result.evaluations == 4 * 6 * 2
    steps = [t["steps"] for t in result.trajectories]
    assert sum(steps) == 24
    rounds = [r for r in records if r["kind"] == "budget"]
    assert rounds[-1]["limits"] == steps and sum(rounds[-1]["limits"]) == 24
    if controller == "successive-halving":
        assert len(rounds) == 3 and rounds[0]["limits"] == [2, 2, 2, 2] and max(steps) >= 10
    snap = json.loads((tmp_path / "r" / "archive.json").read_text())
    assert snap["controllers"]["budget"]["limits"] == steps


def test_controllers_are_refused_when_impossible():
    with pytest.raises(ValueError, match="restarts"):
        SearchConfig(ENV, selector="greedy", restart_controller="ucb").validate()
    with pytest.raises(ValueError, match="budget_controller"):
        SearchConfig(ENV, budget_controller="halving").validate()
    with pytest.raises(ValueError, match="inspirations"):
        SearchConfig(ENV, inspirations="many").validate()
    with pytest.raises(ValueError, match="controller_kwargs"):
        SearchConfig(ENV, budget_controller="bandit", controller_kwargs={"budget": {"nope": 1}}).validate()


# ----------------------------------------------------------------------------- exact resume
FULL = {
    "selector": "rpucg-lookahead",
    "inspirations": "auto",
    "restart_controller": "thompson",
    "budget_controller": "successive-halving",
    "selector_kwargs": {"restart_every": 3},
    "C": 4,
    "L": 6,
    "K": 2,
    "seed": 9,
}


def _run(tmp_path, name, resume=False, progress=None, **kw):
    cfg = SearchConfig(ENV, **kw)
    search = EvolutionarySearch(
        cfg, tmp_path / name, resume=resume, executor="inline", tensorboard=False, progress=progress
    )
    return search.run(), tmp_path / name


def _same(a, b):
    sa, sb = load_snapshot(a), load_snapshot(b)
    for x, y in zip(sa["trajectories"], sb["trajectories"], strict=True):
        assert x["archive"].states() == y["archive"].states()
        assert x["rule"] == y["rule"] and x["history"] == y["history"]
    assert sa["controllers"] == sb["controllers"]
    assert sa["best"]["id"] == sb["best"]["id"]
    decisions = lambda d: [
        (r["kind"], r.get("traj"), r.get("step"), r.get("round"), r.get("choice"), r.get("limits"))
        for r in RunLog(d).read_records()
        if r["kind"] in ("restart", "budget")
    ]
    assert sorted(decisions(a), key=str) == sorted(decisions(b), key=str)


@pytest.mark.parametrize("fraction", [0.3, 0.55, 0.8])
def test_resume_from_a_cut_log_is_exact(tmp_path, fraction):
    _, full = _run(tmp_path, "full", **FULL)
    records = RunLog(full).read_records()
    assert any(r["kind"] == "restart" for r in records) and any(r["kind"] == "budget" for r in records)
    lines = (full / "archive.jsonl").read_bytes().splitlines(keepends=True)
    cut = int(len(lines) * fraction)
    part = tmp_path / "part"
    part.mkdir()
    (part / "config.json").write_bytes((full / "config.json").read_bytes())
    (part / "archive.jsonl").write_bytes(b"".join(lines[:cut]) + lines[cut][: len(lines[cut]) // 2])
    logged = sum(json.loads(x)["kind"] == "eval" for x in lines[:cut])
    result, _ = _run(tmp_path, "part", resume=True, **FULL)
    assert result.evaluated_now == 4 * 6 * 2 - logged and result.evaluations == 48
    _same(full, part)


def test_resume_after_keyboard_interrupt_is_exact(tmp_path):
    _, full = _run(tmp_path, "full", **FULL)

    def stop_after_20(stats):
        time.sleep(0.11)  # the runner reports progress at most every 0.1 s: now after every result
        if stats["done"] >= 20:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, "cut", progress=stop_after_20, **FULL)
    done = sum(r["kind"] == "eval" for r in RunLog(tmp_path / "cut").read_records())
    assert 20 <= done < 48
    result, cut = _run(tmp_path, "cut", resume=True, **FULL)
    assert result.evaluated_now == 48 - done
    _same(full, cut)


def test_cli_killed_with_controllers_resumes_exactly(tmp_path):
    # fmt: off
    args = ["--selector", "rpucg-lookahead", "--inspirations", "auto", "--restart-controller", "ucb",
            "--budget-controller", "bandit", "--selector-kwargs", '{"restart_every": 4}',
            "-C", "3", "-L", "40", "-K", "3", "--seed", "4", "--workers", "2", "--no-tensorboard"]
    # fmt: on
    cmd = [sys.executable, "-m", "discoverygym.cli.search", ENV, *args]
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [*cmd, "--run-dir", str(killed)], cwd=REPO, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    log = killed / "archive.jsonl"
    while (not log.exists() or log.read_bytes().count(b'"kind":"eval"') < 60) and proc.poll() is None:
        if time.monotonic() > deadline:
            break
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    commits = sum(r["kind"] == "commit" for r in RunLog(killed).read_records())
    assert proc.returncode == -signal.SIGKILL and 0 < commits < 3 * 40
    done = subprocess.run([*cmd, "--run-dir", str(killed), "--resume"], cwd=REPO, capture_output=True,
                          text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    kw = {"selector": "rpucg-lookahead", "inspirations": "auto", "restart_controller": "ucb",
          "budget_controller": "bandit", "selector_kwargs": {"restart_every": 4}, "C": 3, "L": 40, "K": 3, "seed": 4}
    _, reference = _run(tmp_path, "reference", **kw)
    _same(reference, killed)
