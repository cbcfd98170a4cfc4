"""AHC039 / AHC058 input generators: 150 generated inputs against the 150 shipped public inputs.

Statistics are compared with two-sample Kolmogorov–Smirnov tests (scipy). The cluster count of
AHC039 is not visible in an input; it is compared through what it shapes (how many grid cells are
occupied / dense), and the test first checks that these statistics do tell a wrong cluster count
apart, so that it can fail.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from discoverygym.rewards.ahc import ahc039, ahc058

AHC = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "ahc"
ks_2samp = pytest.importorskip("scipy.stats").ks_2samp


def _official(problem: str) -> list[str]:
    files = sorted((AHC / problem / "inputs").glob("*.txt")) if (AHC / problem / "inputs").is_dir() else []
    if len(files) < 150:
        pytest.skip(f"../shared/data/ahc/{problem}/inputs is not present")
    return [p.read_text() for p in files]


def _stats039(text: str) -> np.ndarray:
    """Per kind: occupied cells (>= 5 points), dense cells (>= 40), x spread, central share."""
    inp = ahc039.parse_input(text)
    out = []
    for pts in (inp.points[:inp.n], inp.points[inp.n:]):
        hist, _, _ = np.histogram2d(pts[:, 0], pts[:, 1], bins=25, range=[[0, ahc039.D], [0, ahc039.D]])
        central = np.mean(np.all((pts >= 20_000) & (pts <= 80_000), axis=1))
        out.append([(hist >= 5).sum(), (hist >= 40).sum(), pts[:, 0].std() + pts[:, 1].std(), central])
    return np.array(out)


@lru_cache(maxsize=2)
def _generated039(clusters: tuple[int, int]) -> np.ndarray:
    return np.array([_stats039(ahc039.generate(seed, clusters=clusters)) for seed in range(150)])


def test_ahc039_generated_inputs_are_well_formed():
    for seed in range(3):
        text = ahc039.generate(seed)
        lines = text.splitlines()
        assert lines[0] == "5000" and len(lines) == 10_001
        pts = np.array([line.split() for line in lines[1:]], dtype=np.int64)
        assert pts.min() >= 0 and pts.max() <= 100_000
        assert len({(x, y) for x, y in pts.tolist()}) == 10_000   # all distinct, across both kinds
    assert ahc039.generate(5) == ahc039.generate(5) != ahc039.generate(6)


def test_ahc039_statistics_match_public_inputs():
    official = np.array([_stats039(t) for t in _official("ahc039")])
    for t in _official("ahc039")[:5]:
        assert t.splitlines()[0] == "5000" and len(t.splitlines()) == 10_001
    ours = _generated039((10, 25))
    wrong = _generated039((3, 6))   # too few clusters: the statistics must notice
    for kind in range(2):
        for col in range(4):
            p_ours = ks_2samp(official[:, kind, col], ours[:, kind, col]).pvalue
            assert p_ours > 1e-3, (kind, col, p_ours)
    assert min(ks_2samp(official[:, 0, c], wrong[:, 0, c]).pvalue for c in range(2)) < 1e-6


def _parts058(text: str):
    inp = ahc058.parse_input(text)
    a, c = np.array(inp.a), np.array(inp.c, dtype=np.float64)
    ratio = np.log10(c / (a[None, :] * 500.0 ** np.arange(inp.l)[:, None]))
    return inp, a, ratio


def test_ahc058_statistics_match_public_inputs():
    official = [_parts058(t) for t in _official("ahc058")]
    ours = [_parts058(ahc058.generate(seed)) for seed in range(150)]
    free = np.ones((4, 10), dtype=bool)
    free[0, 0] = False
    for group in (official, ours):
        for inp, a, ratio in group:
            assert (inp.n, inp.l, inp.t, inp.k) == (10, 4, 500, 1)
            assert a[0] == 1 and np.all(np.diff(a) >= 0) and 1 <= a.min() and a.max() <= 100
            assert inp.c[0][0] == 1 and all(1 <= v <= 1.25e12 for row in inp.c for v in row)
            assert np.all(ratio[free] >= -0.01) and np.all(ratio[free] <= 2.01)
    a_off = np.concatenate([a[1:] for _, a, _ in official])
    a_our = np.concatenate([a[1:] for _, a, _ in ours])
    assert ks_2samp(a_off, a_our).pvalue > 1e-3
    r_off = np.concatenate([r[free] for _, _, r in official])
    r_our = np.concatenate([r[free] for _, _, r in ours])
    assert ks_2samp(r_off, r_our).pvalue > 1e-3
    # the test can fail: a generator drawing the multiplier from 10^U(0, 1) is told apart
    r_bad = np.log10(10 ** (r_our / 2))
    assert ks_2samp(r_off, r_bad).pvalue < 1e-6
