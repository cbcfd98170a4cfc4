"""The resolution and smoothing operators of the step-function problems (resample, smooth)."""

from __future__ import annotations

import numpy as np
import pytest

from discoverygym.envs.construction import DiscoveryEnv
from discoverygym.envs.operators.steps import MAX_PIECES, MIN_PIECES, resample, smooth
from discoverygym.envs.registry import ENVS

RAW = {"polisher": None, "clip": (0.0, 1.0)}  # the variation alone, without the Adam polish


def _op(env_id: str, name: str):
    return next(o for o in ENVS[env_id].operators if o.name == name)


@pytest.mark.parametrize("n,factor,m", [(100, 0.5, 50), (100, 2.0, 200), (150, 0.125, 19), (10, 0.125, MIN_PIECES),
                                        (MAX_PIECES, 2.0, MAX_PIECES)])
def test_resample_lengths_follow_the_factor_within_the_bounds(n, factor, m):
    x = np.random.default_rng(0).uniform(0.1, 0.9, n)
    assert len(resample(x, None, factor, **RAW)) == m


def test_resample_interpolates_a_linear_profile_exactly_and_keeps_a_constant():
    n = 40
    centres = (np.arange(n) + 0.5) / n
    h = resample(0.2 + 0.5 * centres, None, 1.5, **RAW)  # interior points of a line stay on the line
    c = (np.arange(60) + 0.5) / 60
    inside = (c >= centres[0]) & (c <= centres[-1])
    np.testing.assert_allclose(h[inside], 0.2 + 0.5 * c[inside], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(resample(np.full(n, 0.3), None, 0.5, **RAW), np.full(20, 0.3))
    x = np.random.default_rng(1).uniform(0.1, 0.9, n)
    np.testing.assert_array_equal(resample(x, None, 1.0, **RAW), x)  # factor 1: the parent unchanged


def test_smooth_keeps_a_constant_and_lowers_the_roughness():
    np.testing.assert_allclose(smooth(np.full(50, 0.4), None, 3.0, **RAW), 0.4, rtol=0, atol=1e-15)
    x = np.random.default_rng(2).uniform(0.1, 0.9, 200)
    y = smooth(x, None, 3.0, **RAW)
    assert np.abs(np.diff(y)).mean() < 0.25 * np.abs(np.diff(x)).mean()
    assert abs(y.mean() - x.mean()) < 0.01  # a filter, not a rescaling


@pytest.mark.parametrize("env_id", ["ErdosMinOverlap-v0", "FirstAutocorrelation-v0"])
def test_resample_and_smooth_children_are_valid_and_smoothing_improves_a_noisy_start(env_id):
    env = DiscoveryEnv(ENVS[env_id])
    x = np.random.default_rng(3).uniform(0.1, 0.9, 160)
    start = env.evaluate(x)
    rng = np.random.default_rng(0)
    half = env.evaluate(_op(env_id, "resample").apply(x, {"factor": 0.5}, rng))
    assert half.valid and len(half.solution) == 80
    smoothed = env.evaluate(_op(env_id, "smooth").apply(x, {"sigma": 4.0}, rng))
    assert smoothed.valid and start.valid
    # scored by the env's verifier: both problems are minimised
    assert smoothed.score < start.score - 0.01
