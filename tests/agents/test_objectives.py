"""Objectives (TTT-Discover §3.2, App. A.1) against hand-computed cases."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason="agents need torch: pip install torch==2.13.0 (CPU)")

from discoverygym.agents.losses import kl_shaping
from discoverygym.agents.objectives import (
    KL_BUDGET,
    adaptive_beta,
    entropic_adaptive,
    entropic_constant,
    kl_to_uniform,
    loo_entropic_advantages,
    make_objective,
    mean_baseline,
)

LN2 = math.log(2.0)


def _solve(f, lo: float, hi: float) -> float:
    """Independent bisection (200 steps) for an increasing f with f(lo) < 0 < f(hi)."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


def test_kl_is_ln2_at_returned_beta():
    gen = torch.Generator().manual_seed(0)
    for n in (3, 4, 8, 64, 512):
        r = torch.randn(n, generator=gen, dtype=torch.float64)
        beta = adaptive_beta(r)
        assert abs(float(kl_to_uniform(r, beta)) - LN2) < 1e-6
        assert float(kl_to_uniform(r, beta)) >= LN2 - 1e-12  # hi is kept on the KL >= ln 2 side


def test_three_rollouts_hand_computed():
    # r = [0, 0, 1]: q = (a, a, b), b = e^β / (2 + e^β); KL = b ln 3b + (1 − b) ln(3(1 − b)/2).
    def kl(beta):
        b = math.exp(beta) / (2 + math.exp(beta))
        return b * math.log(3 * b) + (1 - b) * math.log(1.5 * (1 - b)) - LN2

    expected = _solve(kl, 0.0, 50.0)
    r = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    beta = adaptive_beta(r)
    assert beta == pytest.approx(expected, rel=1e-9)
    e = [math.exp(-beta), math.exp(-beta), 1.0]
    want = [e[i] / ((sum(e) - e[i]) / 2 + 1e-12) - 1 for i in range(3)]
    out = entropic_adaptive(r[None])
    assert out.adv[0].tolist() == pytest.approx(want, rel=1e-12)
    assert out.beta[0] == pytest.approx(expected, rel=1e-9)


def test_two_rollouts_reach_ln2_only_in_the_limit():
    # N = 2: KL(β) -> ln 2 from below; in float64 it reaches ln 2 (to rounding) near β ≈ 41, so β is
    # large and the better rollout takes all the weight (A_0 = −1, A_1 ~ 1e12 via the 1e-12 guard).
    r = torch.tensor([0.0, 1.0], dtype=torch.float64)
    beta = adaptive_beta(r)
    assert 30 < beta <= 2.0**20
    assert abs(float(kl_to_uniform(r, beta)) - LN2) < 1e-6
    adv = loo_entropic_advantages(r, beta)
    e = [math.exp(-beta), 1.0]  # Z_{-n} = (Σ e − e_n)/(N − 1), as written (Σ e rounds to 1.0 here)
    want = [e[i] / ((e[0] + e[1] - e[i]) + 1e-12) - 1 for i in range(2)]
    assert adv.tolist() == pytest.approx(want, rel=1e-12)
    assert adv[0] == pytest.approx(-1.0) and adv[1] > 1e11


def test_affine_invariance():
    gen = torch.Generator().manual_seed(1)
    r = torch.randn(4, 16, generator=gen, dtype=torch.float64)
    base = entropic_adaptive(r)
    for a, b in ((3.0, -7.0), (1e-4, 2.0), (250.0, 1e3)):
        out = entropic_adaptive(a * r + b)
        assert torch.allclose(out.adv, base.adv, rtol=1e-6, atol=1e-8)
        assert torch.allclose(out.beta * a, base.beta, rtol=1e-6)
    # the constant-β and mean baselines are not invariant to scale (the point of the adaptive β)
    assert not torch.allclose(entropic_constant(3 * r).adv, entropic_constant(r).adv)


def test_single_rollout_and_equal_rewards_are_dropped():
    one = entropic_adaptive(torch.tensor([[1.0], [2.0]], dtype=torch.float64))
    assert one.keep.tolist() == [False, False] and one.adv.abs().sum() == 0 and one.beta.tolist() == [0.0, 0.0]
    assert adaptive_beta(torch.tensor([5.0], dtype=torch.float64)) == 0.0
    r = torch.tensor([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]], dtype=torch.float64)
    for fn in (entropic_adaptive, entropic_constant, mean_baseline):
        out = fn(r)
        assert out.keep.tolist() == [False, True]
        assert out.adv[0].tolist() == [0.0, 0.0, 0.0]
    assert adaptive_beta(r[0]) == 0.0


def test_one_huge_outlier():
    # r = [0, 0, 0, 1e6]: β·1e6 = x with p ln 4p + (1 − p) ln(4(1 − p)/3) = ln 2, p = e^x / (3 + e^x).
    def kl(x):
        p = 1 / (1 + 3 * math.exp(-x))
        return p * math.log(4 * p) + (1 - p) * math.log(4 * (1 - p) / 3) - LN2

    x = _solve(kl, 0.0, 50.0)
    r = torch.tensor([0.0, 0.0, 0.0, 1e6], dtype=torch.float64)
    out = entropic_adaptive(r[None])
    assert float(out.beta[0]) * 1e6 == pytest.approx(x, rel=1e-8)
    assert float(out.adv[0, 3]) == pytest.approx(math.exp(x) - 1, rel=1e-8)
    other = math.exp(-x) / ((1 + 2 * math.exp(-x)) / 3) - 1
    assert out.adv[0, :3].tolist() == pytest.approx([other] * 3, rel=1e-8)
    # an astronomically large outlier stays finite thanks to the max-shift
    big = entropic_adaptive(torch.tensor([[0.0, 1.0, 2.0, 1e300]], dtype=torch.float64))
    assert torch.isfinite(big.adv).all() and big.adv[0, 3] > 0 > big.adv[0, 0]


def test_mean_baseline_and_constant_beta_hand_values():
    r = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
    assert mean_baseline(r).adv.tolist() == [[-1.0, 0.0, 1.0]]
    e = [math.exp(2 * (v - 3)) for v in (1.0, 2.0, 3.0)]
    want = [e[i] / ((sum(e) - e[i]) / 2 + 1e-12) - 1 for i in range(3)]
    assert entropic_constant(r, beta=2.0).adv[0].tolist() == pytest.approx(want, rel=1e-12)
    assert make_objective("entropic-constant", beta=2.0)(r).adv[0].tolist() == pytest.approx(want, rel=1e-12)


def test_kl_shaping_hand_values():
    adv = torch.tensor([[1.0, 1.0], [-1.0, -1.0]], dtype=torch.float64)
    delta = torch.tensor([[0.2, 0.0], [0.4, 0.2]], dtype=torch.float64)  # avg 0.2
    mask = torch.ones(2, 2, dtype=torch.bool)
    out = kl_shaping(adv, delta, mask, 0.1)
    assert out.flatten().tolist() == pytest.approx([1.0, 1.02, -1.02, -1.0])
    assert torch.equal(kl_shaping(adv, delta, mask, 0.0), adv)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="groups, rollouts"):
        entropic_adaptive(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="finite"):
        mean_baseline(torch.tensor([[1.0, float("nan")]]))
    with pytest.raises(ValueError, match="unknown objective"):
        make_objective("ppo")
    assert KL_BUDGET == LN2
