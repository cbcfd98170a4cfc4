"""Where a 150-case total would have placed in the contest (an estimate).

The contests were scored on hidden cases; our totals are over public or generated cases, so the
placement is an estimate of the same kind ALE-Bench reports. AHC039 has the full final standings;
for AHC058 only the published top results are known (the ALE-Bench standings for it are
placeholders from another contest), so the estimate compares with those.
"""

from __future__ import annotations

import bisect

from discoverygym.rewards.ahc._standings_data import (
    AHC039_PERF_RANKS,
    AHC039_PERFORMANCE,
    AHC039_RANKS,
    AHC039_SCORES,
)

__all__ = ["TOP_RESULTS", "estimate_standing"]

#: Published totals over 150 cases (docs/problems.md): name -> total.
TOP_RESULTS = {
    "ahc039": {"1st human": 566_997, "ShinkaEvolve": 558_026, "TTT-Discover": 567_062},
    "ahc058": {"1st human": 847_674_723, "ALE-Agent": 848_373_282, "TTT-Discover": 848_414_228},
}


def estimate_standing(problem: str, total: float) -> dict:
    """Estimated contest standing of a 150-case ``total``.

    Args:
        problem: ``"ahc039"`` or ``"ahc058"``.
        total: sum of the per-case scores over 150 cases.

    Returns:
        ``{"total", "beats": [names of published results below total], "rank", "of",
        "performance"}``; ``rank``/``of``/``performance`` only for AHC039 (rank = 1 + contestants
        with a strictly higher final score; performance from AtCoder's rank table).

    Raises:
        ValueError: unknown problem.
    """
    if problem not in TOP_RESULTS:
        raise ValueError(f"unknown problem {problem!r}")
    out: dict = {"total": total,
                 "beats": sorted(k for k, v in TOP_RESULTS[problem].items() if total > v)}
    if problem == "ahc039":
        higher = sum(1 for s in AHC039_SCORES if s > total)
        rank = 1 if higher == 0 else AHC039_RANKS[higher - 1] + 1
        pos = max(bisect.bisect_right(AHC039_PERF_RANKS, rank) - 1, 0)
        out.update(rank=rank, of=AHC039_RANKS[-1], performance=AHC039_PERFORMANCE[pos])
    return out
