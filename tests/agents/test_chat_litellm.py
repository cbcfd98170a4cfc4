"""``--policy litellm:openai/<model>`` against a loopback chat server: tokens, cost, caps, resume, retries.

The server (``tests/chat_server.py``) answers every request with a canned CirclePacking-26-v0
program and 1000 prompt + 500 completion (100 reasoning) tokens; the price table makes each call
cost exactly $0.001 + $0.001 = $0.002, so a K = 2 batch costs $0.004.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter

import pytest

from discoverygym.agents.policies.chat import import_litellm
from discoverygym.errors import BackendUnavailable

try:  # LiteLLM imported the way the backend does it: bundled price map, no .env, no network
    import_litellm()
except BackendUnavailable:
    pytest.skip("litellm is not installed (pip install 'discoverygym[chat]')", allow_module_level=True)

from discoverygym.cli.search import main as search_main
from tests.chat_server import serve_chat

MODEL = "openai/test-model"


@pytest.fixture
def chat_env(monkeypatch, tmp_path):
    """Loopback server with one 429 first, API base/key in the environment, a price table file."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({MODEL: {"input": 1.0, "output": 2.0}}))
    with serve_chat(fail_first=1) as server:
        monkeypatch.setenv("OPENAI_API_BASE", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
        yield server, prices


def _flags(run, prices):
    return ["CirclePacking-26-v0", "--action-mode", "code", "--policy", f"litellm:{MODEL}",
            "--policy-kwargs", '{"retry_base_s": 0.01, "max_new_tokens": 256}', "-C", "1", "-L", "5", "-K", "2",
            "--selector", "greedy", "--workers", "1", "--run-dir", str(run), "--price-table", str(prices)]


def test_cost_cap_stops_then_resume_finishes_without_repeats(chat_env, tmp_path, capsys):
    server, prices = chat_env
    run = tmp_path / "run"
    # $0.010 cap: batches start at $0, $0.004, $0.008 (each $0.004); the 4th is refused at $0.012
    rc = search_main([*_flags(run, prices), "--max-cost-usd", "0.01"])
    out = capsys.readouterr()
    print(out.out, out.err)
    assert rc == 4, out.err
    err = " ".join(out.err.split())
    assert "--max-cost-usd reached" in err and "tokens 9000" in err and "$0.012000" in err
    hint = next(line for line in out.err.splitlines() if line.startswith("continue with a higher limit:"))
    assert hint.count("--max-cost-usd") == 1 and hint.endswith("--resume --max-cost-usd HIGHER")
    assert server.rejected == 1 and server.answered == 6  # one 429, retried; 3 batches x K=2
    usage = json.loads((run / "usage.json").read_text())
    assert usage["totals"]["calls"] == 6 and usage["totals"]["retries"] == 1
    assert usage["totals"]["cost_usd"] == pytest.approx(0.012)
    assert usage["totals"]["reasoning_tokens"] == 600
    lines = (run / "usage.jsonl").read_text().splitlines()
    assert len(lines) == 6 and all({"latency_s", "cost_usd", "prompt_tokens"} <= json.loads(x).keys() for x in lines)

    # resume with a higher cap: the remaining 2 steps (4 calls), nothing requested or evaluated twice
    rc = search_main([*_flags(run, prices), "--resume", "--max-cost-usd", "1.0"])
    out = capsys.readouterr()
    print(out.out, out.err)
    assert rc == 0, out.err
    assert server.answered == 10  # 5 steps x K=2, each requested once
    text = " ".join(out.out.split())  # rich wraps long lines
    assert "tokens 15000 (prompt 10000, completion 5000, reasoning 1000) in 10 chat calls (4 now" in text
    assert "cost $0.020000 ($0.008000 now)" in text
    records = [json.loads(x) for x in (run / "archive.jsonl").read_text().splitlines()]
    evals = Counter((r["traj"], r["step"], r["k"]) for r in records if r["kind"] == "eval")
    batches = Counter((r["traj"], r["step"]) for r in records if r["kind"] == "batch")
    assert len(evals) == 10 and max(evals.values()) == 1
    assert len(batches) == 5 and max(batches.values()) == 1
    usage = json.loads((run / "usage.json").read_text())
    assert usage["totals"]["calls"] == 10 and usage["this_run"]["calls"] == 4
    assert usage["totals"]["cost_usd"] == pytest.approx(0.020)
    best = json.loads((run / "best.json").read_text())
    assert best["score"] is not None
    if importlib.util.find_spec("tensorboardX") is not None:  # search writes TensorBoard when installed
        from discoverygym.tensorboard import read_scalars

        scalars = read_scalars(run)
        assert max(v for _, v, _ in scalars["cost/usd"]) == pytest.approx(0.020)
        assert max(v for _, v, _ in scalars["cost/tokens"]) == 15000


def test_token_cap_names_its_limit(chat_env, tmp_path, capsys):
    server, prices = chat_env
    run = tmp_path / "run"
    rc = search_main([*_flags(run, prices), "--max-tokens", "3000"])  # one batch = 3000 tokens
    err = capsys.readouterr().err
    assert rc == 4 and "--max-tokens reached (3000 of 3000 tokens used)" in err
    assert server.answered == 2


def test_cap_without_prices_is_refused_before_any_call(chat_env, tmp_path, capsys):
    server, _ = chat_env
    run = tmp_path / "run"
    flags = [f for f in _flags(run, "x") if f not in ("--price-table", "x")]
    rc = search_main([*flags, "--max-cost-usd", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "--price-table" in err and not server.requests
    assert not (run / "config.json").exists()


def test_chat_flags_refused_for_other_policies(tmp_path, capsys):
    rc = search_main(["CirclePacking-26-v0", "--run-dir", str(tmp_path / "r"), "--max-cost-usd", "1"])
    assert rc == 2 and "applies to chat backends" in capsys.readouterr().err


def test_train_and_post_train_refuse_chat_backends():
    from discoverygym.agents.irft.loop import IRFTConfig
    from discoverygym.agents.trainer import TrainConfig

    with pytest.raises(ValueError, match="drives only frozen search"):
        TrainConfig(env_id="CirclePacking-26-v0", policy=f"litellm:{MODEL}")
    with pytest.raises(ValueError, match="drives only frozen search"):
        IRFTConfig(problems=["CirclePacking-26-v0"], policy=f"litellm:{MODEL}").validate()


@pytest.mark.parametrize("argv", [
    ["train", "CirclePacking-26-v0", "--policy", f"litellm:{MODEL}"],
    ["post-train", "--problems", "CirclePacking-26-v0", "--policy", f"litellm:{MODEL}"],
])
def test_cli_train_and_post_train_refuse_in_one_line(argv, tmp_path, capsys):
    from discoverygym.cli import main

    run = tmp_path / "run"
    rc = main([*argv, "--run-dir", str(run)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "drives only frozen search" in err
    assert not run.exists()  # refused before any work


def test_prices_user_table_then_litellm_map(tmp_path):
    from discoverygym.agents.policies.chat import import_litellm
    from discoverygym.agents.policies.usage import PriceTable, UsageTracker

    import_litellm()
    table = PriceTable({"my-model": {"input_per_1m": 3, "output_per_1m": 15}})
    tracker = UsageTracker(prices=table)
    assert tracker.cost("openai/my-model", 1_000_000, 100_000) == pytest.approx(4.5)  # provider prefix dropped
    assert tracker.cost("gpt-4o-mini", 1000, 1000) > 0  # LiteLLM's bundled price map
    assert tracker.cost("openai/surely-not-a-priced-model", 10, 10) is None
    with pytest.raises(ValueError, match="'bad'"):
        PriceTable({"bad": {"input": "x"}})


def test_max_concurrency_bounds_requests_in_flight(monkeypatch):
    import numpy as np

    from discoverygym.policy import SamplingContext, make_policy
    from discoverygym.search.config import SearchConfig
    from discoverygym.types import State

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    problem = SearchConfig("CirclePacking-26-v0", action_mode="code").problem()
    parent = State(np.zeros((26, 3)), 0.0, 0.0, True, code="def construct():\n    pass\n", id="init")
    ctx = SamplingContext(parent, (parent,), problem, "code")
    with serve_chat(delay_s=0.2) as server:
        policy = make_policy(f"litellm:{MODEL}", api_base=server.url, max_concurrency=2)
        out = policy.sample([ctx, ctx], 3, np.random.default_rng(0))
    assert [len(g) for g in out] == [3, 3] and all(s.parse_error is None for g in out for s in g)
    assert server.answered == 6 and server.max_in_flight == 2
    assert policy.usage.totals["calls"] == 6 and policy.usage.totals["unpriced_calls"] == 6  # no price table


def test_python_api_writes_usage_into_the_run_dir(chat_env, tmp_path):
    from discoverygym.search.evolution import EvolutionarySearch, SearchConfig

    server, _ = chat_env
    config = SearchConfig("CirclePacking-26-v0", policy=f"litellm:{MODEL}", action_mode="code", selector="greedy",
                          C=1, L=1, K=2, policy_kwargs={"retry_base_s": 0.01})
    result = EvolutionarySearch(config, tmp_path / "run", executor="inline").run()
    assert result.evaluations == 2 and server.answered == 2
    usage = json.loads((tmp_path / "run" / "usage.json").read_text())
    assert usage["totals"]["calls"] == 2 and usage["totals"]["prompt_tokens"] == 2000
