"""Denoising verifier and split: OpenProblems v1 metrics against hand computations and references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from discoverygym.envs.denoising.split import mcv_split
from discoverygym.errors import InvalidSolution
from discoverygym.rewards import denoising as D


def _log_norm_row(row):
    """log1p of a row scaled to 10,000 (a row of zeros stays zeros), by plain Python."""
    total = sum(row)
    return [math.log1p(v * 1e4 / total) if total > 0 else 0.0 for v in row]


def test_mse_by_hand_with_zero_cell_and_gene():
    test = [[1.0, 3.0, 0.0], [0.0, 0.0, 0.0]]
    den = [[2.0, 2.0, 0.0], [0.5, 0.5, 0.0]]
    a = _log_norm_row(test[0]) + _log_norm_row(test[1])
    b = _log_norm_row(den[0]) + _log_norm_row(den[1])
    expected = sum((x - y) ** 2 for x, y in zip(a, b)) / 6
    assert D.mse(np.array(test), np.array(den)) == pytest.approx(expected, rel=1e-12)
    # the hand numbers themselves: row 0 is [2500, 7500, 0] vs [5000, 5000, 0]
    assert a[:2] == pytest.approx([math.log1p(2500), math.log1p(7500)])


def test_mse_is_scale_invariant_per_cell_and_zero_for_identical():
    rng = np.random.default_rng(1)
    x = rng.poisson(2.0, (6, 5)).astype(float)
    x[2] = 0.0
    assert D.mse(x, x) == 0.0
    assert D.mse(x, x * rng.uniform(0.1, 10.0, (6, 1))) == pytest.approx(0.0, abs=1e-24)


def test_mse_matches_scanpy_and_sklearn_reference():
    sc = pytest.importorskip("scanpy")
    ad = pytest.importorskip("anndata")
    skm = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(2)
    test = rng.poisson(1.5, (8, 7)).astype(float)
    test[3] = 0.0
    test[:, 4] = 0.0
    den = rng.uniform(0.0, 3.0, (8, 7))
    den[5] = 0.0
    refs = []
    for m in (test, den):
        a = ad.AnnData(m.copy())
        sc.pp.normalize_total(a, target_sum=1e4)
        sc.pp.log1p(a)
        refs.append(np.asarray(a.X))
    assert D.mse(sp.csr_matrix(test), den) == pytest.approx(skm.mean_squared_error(*refs), rel=1e-10)


def test_poisson_by_hand_keeps_openproblems_argument_order():
    train = np.array([[2.0, 0.0], [1.0, 1.0]])  # total 4
    test = np.array([[1.0, 0.0], [0.0, 1.0]])  # total 2 -> denoised scaled by 1/2
    den = np.array([[1.0, 1.0], [2.0, 0.0]])
    eps = 1e-6
    terms = [1 - 0.5 * math.log(1 + eps), 0 - 0.5 * math.log(eps), 0 - 1.0 * math.log(eps), 1 - 0.0]
    assert D.poisson(train, test, den) == pytest.approx(sum(terms) / 4, rel=1e-12)
    swapped = [0.5 - 1 * math.log(0.5 + eps), 0.5 - 0, 1.0 - 0, 0 - 1 * math.log(eps)]
    assert D.poisson(train, test, den) != pytest.approx(sum(swapped) / 4, rel=1e-3)


def test_baselines_normalise_to_zero_and_one():
    rng = np.random.default_rng(3)
    split = mcv_split(rng.poisson(3.0, (30, 12)), seed=0)
    base = D.baselines(split.train, split.test)
    assert base.normalise(base.mse_none, base.poisson_none) == (0.0, 0.0)
    assert base.normalise(base.mse_perfect, base.poisson_perfect) == pytest.approx((1.0, 1.0))
    halfway = (base.mse_none + base.mse_perfect) / 2
    assert base.normalise(halfway, base.poisson_none)[0] == pytest.approx(0.5)


@pytest.mark.parametrize(("make", "reason"), [
    (lambda tr: np.where(tr > 0, -tr, 0.0), "negative"),
    (lambda tr: np.full_like(tr, np.nan), "not finite"),
    (lambda tr: tr[:, :-1], "shape"),
    (lambda tr: tr.astype(object), "dtype"),
    (lambda tr: tr * 1e12, "exceeds the total train count"),
])
def test_check_denoised_rejects_hostile_outputs(make, reason):
    rng = np.random.default_rng(4)
    split = mcv_split(rng.poisson(2.0, (20, 10)), seed=0)
    with pytest.raises(InvalidSolution, match=reason):
        D.score_denoised(split.train, split.test, make(split.train))


def test_gate_and_implausibility():
    rng = np.random.default_rng(5)
    split = mcv_split(rng.poisson(2.0, (40, 15)), seed=0)
    with pytest.raises(InvalidSolution, match="normalised Poisson 0.0000 is below the gate") as info:
        D.score_denoised(split.train, split.test, split.train)
    assert info.value.metrics["gate"] == "fail"
    with pytest.raises(InvalidSolution, match="implausibly close to the held-out counts"):
        D.score_denoised(split.train, split.test, split.test)


def test_reward_is_clipped_normalised_mse_of_a_passing_candidate():
    rng = np.random.default_rng(6)
    lam = rng.gamma(2.0, 2.0, (60, 1)) * rng.gamma(1.0, 1.0, (1, 25))
    split = mcv_split(rng.poisson(lam), seed=0)
    # the Poisson loss is affine in the denoised matrix, so a mixture a*test + (1-a)*train has
    # normalised Poisson exactly a
    for a, passes in ((0.98, True), (0.96, False)):
        mix = a * split.test + (1 - a) * split.train
        if not passes:
            with pytest.raises(InvalidSolution, match="below the gate"):
                D.score_denoised(split.train, split.test, mix)
            continue
        score = D.score_denoised(split.train, split.test, mix)
        m = score.metrics
        assert m["poisson_norm"] == pytest.approx(a, abs=1e-9)
        assert score.value == pytest.approx(min(1.0, max(0.0, m["mse_norm"])))
        assert m["gate"] == "pass" and m["mean_score"] == pytest.approx((m["mse_norm"] + a) / 2)


def test_split_matches_binomial_reference_and_drops_empty_genes():
    rng = np.random.default_rng(7)
    counts = rng.poisson(1.0, (50, 40))
    counts[:, 3] = 0  # a gene with no counts at all
    counts[7] = 0  # a cell with no counts
    split = mcv_split(sp.csr_matrix(counts), seed=11)
    ref_train = np.random.RandomState(11).binomial(counts, 0.9)
    keep = np.flatnonzero(ref_train.sum(axis=0) > 0)
    assert 3 not in split.genes and np.array_equal(split.genes, keep)
    assert np.array_equal(split.train, ref_train[:, keep])
    assert np.array_equal(split.train + split.test, counts[:, keep])
    assert (split.test >= 0).all() and split.train[7].sum() == 0


def test_split_fraction_and_count_check():
    counts = np.random.default_rng(8).poisson(5.0, (200, 100))
    split = mcv_split(counts, seed=0)
    assert 0.88 < split.train.sum() / counts.sum() < 0.92
    with pytest.raises(TypeError, match="integer counts"):
        mcv_split(counts + 0.5)
