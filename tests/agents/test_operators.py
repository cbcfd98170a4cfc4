"""Operators (problem-declared moves), the operator policy, parallel evaluation and the discovery benchmark."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("scipy")

from discoverygym.agents.policies import make_trainable_policy
from discoverygym.agents.policies.operators import OperatorPolicy
from discoverygym.agents.trainer import Trainer, ablation_config
from discoverygym.envs.construction import DiscoveryEnv
from discoverygym.envs.operators import circles
from discoverygym.envs.registry import ENVS
from discoverygym.policy import SamplingContext
from discoverygym.types import State


@pytest.fixture
def quick_slsqp(monkeypatch):
    """SLSQP limited to a few iterations, chains to a few moves: the operators' code paths at a fraction of the cost."""
    monkeypatch.setattr(circles, "MAXITER", 3)
    monkeypatch.setattr(circles, "HOP_MAX_MOVES", 4)


@pytest.mark.parametrize("env_id", ["CirclePacking-26-v0", "ErdosMinOverlap-v0", "FirstAutocorrelation-v0",
                                    "SecondAutocorrelation-v0", "ThirdAutocorrelation-v0"])
def test_operators_are_deterministic_and_keep_the_construction_kind(env_id, quick_slsqp, monkeypatch):
    from discoverygym.envs.operators import steps

    monkeypatch.setattr(steps, "POLISH_STEPS", 3)
    problem = ENVS[env_id]
    assert problem.operators, f"{env_id} declares no operators"
    x = np.asarray(problem.initial(np.random.default_rng(1)), dtype=np.float64)
    if x.ndim == 1:
        x = x[:120] * (1 + 0.1 * np.random.default_rng(2).random(min(120, len(x))))  # small, not constant
    env = DiscoveryEnv(problem)
    for op in problem.operators:
        units = [0.3] * len(op.params)
        if op.name == "adam":
            units = [0.3, 0.3, 0.0]  # the fewest Adam steps
        a = op.apply(x, units, np.random.default_rng(7))
        b = op.apply(x, units, np.random.default_rng(7))
        assert np.array_equal(a, b), op.name
        assert a.dtype == np.float64 and a.ndim == x.ndim and np.isfinite(a).all(), op.name
        if x.ndim == 2:
            assert a.shape == x.shape
        assert env.evaluate(a).valid, (env_id, op.name)  # verified like any candidate
    with pytest.raises(ValueError, match="takes"):
        problem.operators[0].apply(x, [0.5] * (len(problem.operators[0].params) + 1), np.random.default_rng(0))


def test_operator_policy_logprobs_match_torch_distributions_and_gradients_flow():
    problem = ENVS["CirclePacking-26-v0"]
    policy = make_trainable_policy("operators", (26, 3), **OperatorPolicy.problem_kwargs(problem))
    with torch.no_grad():
        k = len(problem.operators)
        policy.logits.copy_(torch.linspace(-0.4, 0.5, k, dtype=torch.float64).roll(2))
        policy.log_a.normal_(0, 0.3)
        policy.log_b.normal_(0, 0.3)
    x = np.asarray(problem.initial(np.random.default_rng(0)))
    parent = State(solution=x.tolist(), score=1.0, reward=1.0, valid=True, id="p")
    ctx = SamplingContext(parent=parent, inspirations=(parent,), problem=problem)
    samples = policy.sample([ctx], 12, np.random.default_rng(3))[0]
    lp = policy.token_logprobs(samples)
    assert lp.shape == (12, 3) and policy.token_mask(samples).shape == (12, 3)
    eps = policy.epsilon
    probs = (1 - eps) * torch.softmax(policy.logits.detach(), 0) + eps / k
    for s, row in zip(samples, lp):
        op = problem.operators[s.op]
        expect = torch.distributions.Categorical(probs=probs).log_prob(torch.tensor(s.op))
        for i in range(len(op.params)):
            beta = torch.distributions.Beta(policy.log_a[s.op, i].exp().detach(), policy.log_b[s.op, i].exp().detach())
            expect = expect + beta.log_prob(s.units[i])
        assert float(row.detach().sum()) == pytest.approx(float(expect), rel=1e-10, abs=1e-10)
        assert torch.allclose(row.detach(), s.logprob)  # behaviour log-probs = recomputed ones
        assert not s.token_mask[1 + len(op.params):].any() and float(row.detach()[1 + len(op.params):].abs().sum()) == 0
    policy.logprob(None, samples).sum().backward()
    assert float(policy.logits.grad.abs().sum()) > 0 and float(policy.log_a.grad.abs().sum()) > 0


def _run(tmp_path: Path | None, workers: int, steps: int = 3, **kw) -> Trainer:
    # Erdős: cheap operators (short Adam polishes), so that fresh worker processes need no test patch
    cfg = ablation_config("full", env_id="ErdosMinOverlap-v0", policy="operators", steps=steps, groups=2, group_size=4,
                          eval_workers=workers, image_every=0, seed=5)
    trainer = Trainer(cfg, run_dir=tmp_path, **kw)
    trainer.run()
    return trainer


def _fingerprint(trainer: Trainer) -> list:
    return [(m["score/best"], m["reward/mean"], m["loss"]) for m in trainer.history]


def test_parallel_evaluation_equals_serial_and_resume_is_exact(tmp_path):
    serial = _run(None, 1)
    parallel = _run(tmp_path / "p", 2)
    assert serial.config.policy == "operators"
    assert _fingerprint(serial) == _fingerprint(parallel)
    assert [s.id for s in serial.reuse.archive.states()] == [s.id for s in parallel.reuse.archive.states()]
    # a run stopped after 2 steps and resumed to 3 gives the same history as the uninterrupted one
    _run(tmp_path / "r", 2, steps=2)
    cfg = json.loads((tmp_path / "r" / "config.json").read_text())
    cfg["steps"] = 3
    resumed = Trainer(ablation_config("full", **{k: v for k, v in cfg.items() if k != "name"}),
                      run_dir=tmp_path / "r", resume=True)
    resumed.run()
    assert _fingerprint(resumed) == _fingerprint(serial)


def test_no_reverification_of_start_states(quick_slsqp):
    problem = ENVS["CirclePacking-26-v0"]
    calls = []

    def counting(construction):
        calls.append(1)
        return problem.verifier(construction)

    env = DiscoveryEnv(dataclasses.replace(problem, verifier=counting))
    cfg = ablation_config("full", env_id="CirclePacking-26-v0", policy="operators", steps=2, groups=2, group_size=4,
                          eval_workers=1, image_every=0)
    trainer = Trainer(cfg, env=env)
    trainer.train_step()  # the first step also admits the initial state into the archive (once)
    for _ in range(2):
        before = len(calls)
        trainer.train_step()
        assert len(calls) - before == 2 * 4  # one verification per rollout, none per start state


def test_discovery_benchmark_runs_and_writes_table_and_plot(tmp_path, quick_slsqp):
    spec = importlib.util.spec_from_file_location("discovery_bench", Path(__file__).parents[2] / "benchmarks" / "discovery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "bench"
    argv = ["--envs", "CirclePacking-26-v0", "--configs", "full,reference", "--seeds", "1", "--budget-s", "2",
            "--out", str(out)]
    assert module.main(argv) == 0
    table = (out / "table.md").read_text()
    assert "| CirclePacking-26-v0 | full |" in table and "| CirclePacking-26-v0 | reference |" in table
    assert (out / "plot.html").stat().st_size > 10_000
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert len(runs) == 2
    stamp = (out / "runs" / runs[0]).stat().st_mtime_ns
    assert module.main(argv) == 0  # resumable: finished runs are read back, not rerun
    assert (out / "runs" / runs[0]).stat().st_mtime_ns == stamp


def _state(reward: float, **kw) -> State:
    return State(solution=[reward], score=reward, reward=reward, valid=True, **kw)


def test_is_repeat_only_for_a_valid_child_with_its_start_states_reward():
    from discoverygym.agents.trainer import is_repeat

    start = _state(2.5)
    assert is_repeat(_state(2.5), start)
    assert not is_repeat(_state(2.5 + 1e-9), start)  # a real (if tiny) improvement is a signal
    assert not is_repeat(_state(2.5 - 1e-9), start)
    assert not is_repeat(State(solution=None, score=None, reward=2.5, valid=False), start)


def test_repeats_of_the_start_state_get_no_advantage_unless_asked(monkeypatch, quick_slsqp):
    """Half the rollouts reproduce their start state's reward: with skip_repeats (the default) they
    are left out of the update and counted in repeat_fraction; with skip_repeats=False they count."""
    real_judge = Trainer._judge

    def judge(self, starts, samples, keys):
        children = real_judge(self, starts, samples, keys)
        return [dataclasses.replace(starts[g], id=f"{c.id}-copy") if k % 2 == 0 else c
                for (g, k), c in zip(keys, children)]

    monkeypatch.setattr(Trainer, "_judge", judge)
    for skip in (True, False):
        cfg = ablation_config("full", env_id="CirclePacking-26-v0", policy="operators", steps=1, groups=2,
                              group_size=4, eval_workers=1, image_every=0, skip_repeats=skip)
        trainer = Trainer(cfg)
        metrics = trainer.train_step()
        kept = trainer.last_batch.kept.tolist()
        if skip:
            assert metrics["repeat_fraction"] == 0.5 and metrics["unscored_fraction"] == 0.0
            assert kept == [False, True] * 4  # the copies are left out of the update
        else:
            assert metrics["repeat_fraction"] == 0.0
            assert kept == [True] * 8


def test_construction_runs_keep_one_archive_state_per_reward(monkeypatch, quick_slsqp):
    """reward_dedup=True: a construction env's archive merges a child whose reward equals a kept state's
    (to REPEAT_RTOL) into that state; reward_dedup=False (default) keeps the papers' exact-solution dedup.
    Half the rollouts are made copies of their start state in other coordinates (same reward)."""
    from discoverygym.agents.trainer import REPEAT_RTOL

    real_judge = Trainer._judge

    def judge(self, starts, samples, keys):
        children = real_judge(self, starts, samples, keys)
        out = []
        for (g, k), c in zip(keys, children):
            if k % 2 == 0:  # the start's optimum, mirrored (x -> 1 - x): same reward, another solution
                mirrored = np.asarray(starts[g].solution, dtype=float).copy()
                mirrored[:, 0] = 1.0 - mirrored[:, 0]
                c = dataclasses.replace(starts[g], id=f"{c.id}-mirror", solution=mirrored,
                                        parent_ids=(starts[g].id,))
            out.append(c)
        return out

    monkeypatch.setattr(Trainer, "_judge", judge)
    for dedup in (True, False):
        cfg = ablation_config("full", env_id="CirclePacking-26-v0", policy="operators", steps=3, groups=2,
                              group_size=4, eval_workers=1, image_every=0, reward_dedup=dedup)
        trainer = Trainer(cfg)
        assert trainer.reuse.archive.reward_rtol == (REPEAT_RTOL if dedup else None)
        trainer.run()
        rewards = np.sort([s.reward for s in trainer.reuse.archive.states()])
        close = np.diff(rewards) <= REPEAT_RTOL * np.maximum(np.abs(rewards[1:]), 1.0)
        assert close.any() != dedup, rewards  # copies kept only without reward_dedup
