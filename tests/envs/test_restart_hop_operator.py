"""The circle-packing chain operator `restart_hop_slsqp`: a fresh start, then greedy basin hopping."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from discoverygym.envs.construction import DiscoveryEnv
from discoverygym.envs.operators import circles
from discoverygym.envs.registry import ENVS


@pytest.fixture
def quick(monkeypatch):
    """Few SLSQP iterations: the chain's logic at a fraction of the cost."""
    monkeypatch.setattr(circles, "MAXITER", 20)


@pytest.fixture
def spy(monkeypatch):
    """Records Σr of every move's parent and result (the real move still runs)."""
    calls: list[tuple[float, float]] = []
    real = circles._hop_move

    def move(z, rng):
        out = real(z, rng)
        calls.append((float(z[:, 2].sum()), float(out[:, 2].sum())))
        return out

    monkeypatch.setattr(circles, "_hop_move", move)
    return calls


def test_declared_by_the_circle_problems():
    for env_id in ("CirclePacking-26-v0", "CirclePacking-32-v0"):
        names = [op.name for op in ENVS[env_id].operators]
        assert "restart_hop_slsqp" in names, env_id
    (spec,) = circles.RESTART_HOP.params
    assert spec.name == "patience" and spec.low <= spec.default <= spec.high


def test_chain_stops_after_patience_failures_and_only_climbs(quick, spy):
    x = np.zeros((12, 3))
    out = circles.restart_hop(x, np.random.default_rng(3), patience=4)
    assert spy, "no move was tried"
    kept = [after > before + circles.HOP_MIN_GAIN for before, after in spy]
    assert kept[-4:] == [False] * 4  # ends on exactly `patience` failures in a row
    run = 0
    for k in kept[:-4]:  # and never had `patience` failures in a row before that
        run = 0 if k else run + 1
        assert run < 4
    # every accepted move starts from the last accepted packing (greedy, monotone)
    level = spy[0][0]
    for (before, after), k in zip(spy, kept):
        assert before == pytest.approx(level, abs=0)
        if k:
            level = after
    assert float(out[:, 2].sum()) == pytest.approx(level, abs=0)


def test_move_cap_bounds_a_chain(quick, spy, monkeypatch):
    monkeypatch.setattr(circles, "HOP_MAX_MOVES", 3)
    circles.restart_hop(np.zeros((10, 3)), np.random.default_rng(0), patience=1000)
    assert len(spy) == 3


def test_parent_ignored_deterministic_verified_and_not_worse_than_its_start(quick):
    problem = ENVS["CirclePacking-26-v0"]
    env = DiscoveryEnv(problem)
    parent_a = np.asarray(problem.initial(np.random.default_rng(1)), dtype=np.float64)
    parent_b = np.random.default_rng(5).random((26, 3)) * 0.1
    units = [circles.RESTART_HOP.params[0].unit(6)]
    a = circles.RESTART_HOP.apply(parent_a, units, np.random.default_rng(11))
    b = circles.RESTART_HOP.apply(parent_b, units, np.random.default_rng(11))
    assert np.array_equal(a, b)  # only n of the parent is used
    assert a.shape == (26, 3) and a.dtype == np.float64
    result = env.evaluate(a)
    assert result.valid, result.error
    start = circles.restart(parent_a, np.random.default_rng(11), 0.05)  # the chain's first draw
    assert a[:, 2].sum() >= start[:, 2].sum()
    assert result.score == pytest.approx(float(a[:, 2].sum()), rel=1e-12)
