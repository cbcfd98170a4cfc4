"""Sum-difference sets beyond 512 elements (SumDifference-Large-v0): the FFT counts, the exact
certificate and the lattice construction of ``benchmarks/sum_difference_lattice.py``.

Ground truth: counts from Python sets of pairwise sums and differences (or big-int bitsets),
computed here independently of the code under test, and the classic MSTD set {0, 2, 3, 4, 7, 11,
12, 14} with |A+A| = 26 > |A−A| = 25 (Nathanson, "Sets with more sums than differences", 2007).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import discoverygym  # noqa: F401  (registers the envs)
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.certify import certify
from discoverygym.rewards.sum_difference import set_sizes, sum_difference

ROOT = Path(__file__).resolve().parents[2]


def python_sizes(a) -> tuple[int, int]:
    """|A+A| and |A−A| from big-integer bitsets (an independent exact count)."""
    a = sorted({int(v) for v in a})
    lo, hi = a[0], a[-1]
    forward = sum(1 << (v - lo) for v in a)
    backward = sum(1 << (hi - v) for v in a)
    sums = diffs = 0
    for v in a:
        sums |= forward << (v - lo)
        diffs |= backward << (v - lo)
    return sums.bit_count(), diffs.bit_count()


def test_classic_mstd_set_counts_both_ways():
    a = np.array([0, 2, 3, 4, 7, 11, 12, 14])
    assert set_sizes(a, "direct") == set_sizes(a, "fft") == (26, 25)


@pytest.mark.parametrize("size, span", [(1100, 3000), (2000, 2_000_000), (3000, 5000)])
def test_fft_counts_equal_exact_counts(size, span):
    rng = np.random.default_rng(size)
    a = np.unique(rng.choice(span, size=size, replace=False) - span // 2).astype(np.int64)
    assert set_sizes(a, "fft") == python_sizes(a.tolist())
    assert set_sizes(a) == python_sizes(a.tolist())  # "auto" takes the FFT above DIRECT_MAX


def test_the_cap_is_simpletes_rule_and_the_large_env_lifts_it():
    a = list(range(0, 3 * 600, 3)) + [1, 5]
    small, large = gym.make("SumDifference-v0").unwrapped, gym.make("SumDifference-Large-v0").unwrapped
    refused = small.evaluate(a)
    assert not refused.valid and "512" in refused.error
    state = large.evaluate(a)
    s, d = python_sizes(a)
    assert state.valid and state.score == pytest.approx(math.log(s / 602) / math.log(d / 602), rel=1e-15)
    with pytest.raises(InvalidSolution, match="outside"):
        sum_difference([0, 1, 2_000_000], max_size=None)


def test_certificate_of_a_large_set_is_exact():
    rng = np.random.default_rng(7)
    a = sorted(int(v) for v in rng.choice(20_000, size=700, replace=False))
    cert = certify("SumDifference-Large-v0", a)
    s, d = python_sizes(a)
    assert cert["valid"] and (cert["facts"]["sumset"], cert["facts"]["diffset"]) == (s, d)
    lo, hi = (float(x) for x in cert["interval"])
    assert lo <= math.log(s / 700) / math.log(d / 700) <= hi
    assert not certify("SumDifference-v0", a)["valid"]  # 700 > 512 under SimpleTES's rules


def test_lattice_construction_meets_its_counts(tmp_path):
    """The docstring's claims at L = 2000: |A+A| >= 8L - 8, |A−A| <= 6L + 2|B| + 8, C(A) above SimpleTES."""
    out = tmp_path / "run"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sum_difference_lattice.py"), "--L", "500,2000",
                    "--out", str(out)], check=True, capture_output=True, timeout=300)
    best = json.loads((out / "best.json").read_text())
    a = best["construction"]
    length = 2000
    s, d = python_sizes(a)
    n = len(set(a))
    sparse = n - length - 2  # |B|
    assert s >= 8 * length - 8 and d <= 6 * length + 2 * sparse + 8
    assert best["score"] == pytest.approx(math.log(s / n) / math.log(d / n), rel=1e-15)
    assert best["score"] > 1.1448869 and max(abs(v) for v in a) <= 10**6


@pytest.mark.parametrize("env_id", ["SumDifference-v0", "SumDifference-Large-v0"])
def test_equal_counts_certify_exactly_one(env_id):
    """An arithmetic progression has |A+A| = |A−A| = 2|A| − 1, so C(A) = 1 exactly."""
    cert = certify(env_id, {"construction": [0, 3, 6, 9, 12], "claimed": 1})
    assert cert["valid"] and cert["value_exact"] == "1/1" and cert["claim"]["verdict"] == "consistent"
    assert cert["facts"]["sumset"] == cert["facts"]["diffset"] == 9


def test_certify_reads_as_many_entries_as_the_verifier():
    """Duplicates count towards the entry limit the same way in the env and in the certificate."""
    values = [0, 1, 3] * 2000
    assert gym.make("SumDifference-v0").unwrapped.evaluate(values).valid
    cert = certify("SumDifference-v0", values)
    assert cert["valid"] and cert["facts"]["duplicates"] == 5997
    small = certify("SumDifference-Large-v0", [5])
    assert not small["valid"] and "at least 2" in small["error"] and "None" not in small["error"]
