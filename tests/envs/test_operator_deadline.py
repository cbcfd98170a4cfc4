"""Issue 41 (1): operators honour a run's deadline and return their best so far (no work past it)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from discoverygym.envs.operators import anneal as anneal_mod
from discoverygym.envs.operators import lp as lp_mod
from discoverygym.envs.operators.circles import restart_hop
from discoverygym.envs.operators.deadline import WithDeadline, deadline_at, expired, remaining, step_reserve
from discoverygym.envs.operators.steps import hop


def test_with_deadline_skips_a_job_that_starts_late_and_sets_the_deadline_inside():
    ran = []
    late = WithDeadline(lambda: ran.append(1), time.time() - 1.0, fallback="parent")
    assert late() == "parent" and ran == []  # started after the deadline: the parent, nothing run
    seen = WithDeadline(lambda: (expired(), remaining()), time.time() + 100.0, fallback="parent")()
    assert seen[0] is False and 50 < seen[1] <= 100
    assert remaining() == float("inf") and not expired()  # cleared after the job
    with deadline_at(time.time() + 10), deadline_at(time.time() + 1000):
        assert remaining() <= 10  # an inner deadline never loosens an outer one


def test_lp_and_hop_make_no_lp_solve_after_the_deadline(monkeypatch):
    calls = []
    real = lp_mod._lp_step
    monkeypatch.setattr(lp_mod, "_lp_step", lambda *a, **k: calls.append(1) or real(*a, **k))
    x = np.random.default_rng(0).uniform(0.2, 0.8, 60)
    with deadline_at(time.time() - 1.0):
        out = lp_mod.slp(lp_mod.ERDOS, x, np.random.default_rng(1), 1.0, 0.02, 0.02, iterations=5)
        hopped = hop(x, np.random.default_rng(2), 1.0, model=lp_mod.ERDOS)
    assert calls == []  # without the deadline slp makes its 5 solves and hop up to 4 x 40
    assert np.array_equal(out, lp_mod.ERDOS.prepare(x)) and np.array_equal(hopped, lp_mod.ERDOS.prepare(x))
    lp_mod.slp(lp_mod.ERDOS, x, np.random.default_rng(1), 1.0, 0.02, 0.02, iterations=2)
    assert len(calls) == 2  # the control: no deadline, every solve runs


def test_anneal_stops_at_the_first_check_after_the_deadline(monkeypatch):
    steps = []
    real = anneal_mod.smoothed_gradient
    monkeypatch.setattr(anneal_mod, "smoothed_gradient", lambda x, b: steps.append(1) or real(x, b))
    f = np.ones(25)
    with deadline_at(time.time() - 1.0):
        out = anneal_mod.ac1_anneal(f, np.random.default_rng(0), 5000, 3.0, 0.03)
    assert len(steps) == anneal_mod.CHECK_EVERY  # not 5000: the best exact iterate at the first check
    assert anneal_mod.ac1_bound(out) <= anneal_mod.ac1_bound(f)


def test_restart_hop_makes_no_move_after_the_deadline(monkeypatch):
    from discoverygym.envs.operators import circles

    moves = []
    monkeypatch.setattr(circles, "_hop_move", lambda z, rng: moves.append(1) or z)
    with deadline_at(time.time() - 1.0):
        out = restart_hop(np.zeros((26, 3)), np.random.default_rng(0), 30.0)
    assert moves == [] and out.shape == (26, 3)


def test_step_reserve_is_bounded_by_shares_of_the_budget():
    assert step_reserve(0.0, 20.0) == pytest.approx(1.0)  # 5% floor
    assert step_reserve(2.0, 20.0) == pytest.approx(2.0)
    assert step_reserve(30.0, 20.0) == pytest.approx(5.0)  # 25% cap


def test_the_polish_stops_at_the_deadline_in_chunks():
    from discoverygym.envs.operators import steps as steps_mod

    calls = []

    def polisher(h, steps, **_):
        calls.append(steps)
        return h

    with deadline_at(time.time() + 1000):
        steps_mod._finish(np.ones(8), polisher, None, steps=40)
    assert calls == [steps_mod.POLISH_CHUNK] * (40 // steps_mod.POLISH_CHUNK)  # the same 40 iterations, in chunks
    calls.clear()
    with deadline_at(time.time() - 1):
        steps_mod._finish(np.ones(8), polisher, None, steps=40)
    assert calls == []  # past the deadline: unpolished (before issue 41 one 40-step call ran past it)
    steps_mod._finish(np.ones(8), polisher, None, steps=40)
    assert calls == [40]  # no deadline: one call, as before
