"""A numeric run's TensorBoard holds no LLM-only tags (issue 50, item 5): ``outcome/*``, ``edit/*``
and ``perf/tokens_per_s`` mean something only when a policy writes text."""

from __future__ import annotations

import pytest

from discoverygym.tensorboard import LLM_ONLY_TAGS, for_policy

pytest.importorskip("tensorboardX", reason="TensorBoard logging needs tensorboardX")


def test_the_filter_drops_only_llm_tags_of_numeric_runs():
    values = {"outcome/valid": 3, "edit/parse_fail_rate": 0.0, "perf/tokens_per_s": 0.0, "perf/eval_s": 1.0,
              "score/best": 2.0}
    assert for_policy(values, llm=False) == {"perf/eval_s": 1.0, "score/best": 2.0}
    assert for_policy(values, llm=True) == values


def test_a_numeric_search_writes_no_llm_only_tag(tmp_path):
    from discoverygym.search.evolution import EvolutionarySearch, SearchConfig
    from discoverygym.tensorboard import read_tags

    EvolutionarySearch(SearchConfig("CirclePacking-26-v0", C=1, L=2, K=2, seed=0), tmp_path / "s",
                       executor="inline", tensorboard=True).run()
    tags = read_tags(tmp_path / "s")
    assert "score/best" in tags and not [t for t in tags if t.startswith(LLM_ONLY_TAGS)]


def test_a_numeric_train_log_writes_no_llm_only_tag(tmp_path):
    from discoverygym.agents.train_log import TrainLog
    from discoverygym.tensorboard import read_tags

    log = TrainLog(tmp_path / "t", record=2.6, llm=False)
    (tmp_path / "t").mkdir()
    log.step({"step": 1, "score/best": 2.0, "outcome/valid": 4, "perf/tokens_per_s": 0.0, "edit/fallback_rate": 0.0},
             evaluations=4)
    log.close()
    tags = read_tags(tmp_path / "t")
    assert "score/best" in tags and not [t for t in tags if t.startswith(LLM_ONLY_TAGS)]
