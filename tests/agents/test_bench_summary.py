"""The discovery benchmark's scoring: every run is scored at its wall budget (``best_within``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from discoverygym.agents.bench import best_within, summarize


def _run(config: str, seed: int, trace: list[list[float]], budget_s: float | None = 10.0) -> dict:
    return {"env_id": "E", "config": config, "seed": seed, "budget_s": budget_s, "trace": trace,
            "best": trace[-1][1], "elapsed_s": trace[-1][0]}


def test_best_within_ignores_what_a_run_found_after_its_budget():
    run = _run("full", 0, [[0.0, 5.0], [4.0, 3.0], [10.0, 2.5], [13.0, 1.0]])
    assert best_within(run) == 2.5  # the point at exactly the budget counts, the one after it not
    assert best_within(_run("full", 0, [[0.5, 5.0], [12.0, 1.0]])) == 5.0  # nothing within: the start
    assert best_within(_run("full", 0, [[0.0, 5.0], [13.0, 1.0]], budget_s=None)) == 1.0  # no budget: the best
    with pytest.raises(ValueError, match="no trace"):
        best_within({"budget_s": 1.0, "trace": [], "best": 0.0})


def test_summarize_scores_every_config_at_the_budget_and_counts_late_runs():
    """A minimised problem: `late` finds 0.5 after the budget, which must neither lower its mean
    nor count as reaching the record; the rank test sees the within-budget scores."""
    problems = {"E": SimpleNamespace(direction="min", sota={"value": 1.0})}
    full = [_run("full", s, [[0.0, 5.0], [5.0, 2.0 - 0.1 * s]]) for s in range(3)]
    late = [_run("late", s, [[0.0, 5.0], [6.0, 3.0], [14.0, 0.5]]) for s in range(3)]
    rows = {r["config"]: r for r in summarize(full + late, problems)}
    assert rows["late"]["mean"] == 3.0 and rows["late"]["best"] == 3.0
    assert rows["late"]["late"] == 3 and rows["full"]["late"] == 0
    assert rows["late"]["reached"] == 0 and rows["late"]["t999"] is None  # 0.5 ≤ 1/0.999 came after the budget
    assert rows["late"]["wall_max"] == 14.0
    assert rows["full"]["mean"] == pytest.approx(1.9)
    assert rows["late"]["p_full"] < 0.1  # full lower in every seed: 3 vs 3 gives p = 1/20


def test_rank_test_treats_float_noise_at_the_record_as_a_tie():
    """Two configs that both reach the CP26 record in every seed (scores differing in the last bits,
    as measured) are not ranked by that noise: p = 1 for "full better" in either order."""
    from discoverygym.agents.bench import rank_test, tie_scores

    full = [2.635983084917583, 2.6359830849175876, 2.635983084917586, 2.635983084917585, 2.635983084917588]
    frozen = [2.6359830849175836, 2.635983084917584, 2.635983084917583, 2.6359830849175827, 2.635983084917584]
    assert rank_test(full, frozen, "max") == 1.0 and rank_test(frozen, full, "max") == 1.0
    assert tie_scores([3.0, 1.0, 1.0 + 1e-12, 2.0]) == [3.0, 1.0, 1.0, 2.0]
    assert rank_test([2.0] * 5, [1.0] * 5, "max") < 0.01  # real differences still count
