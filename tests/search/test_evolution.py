"""The (C, L, K, Φ) evolutionary-search runner: budget, archive invariants, determinism, resume.

The kill test is real: ``python -m discoverygym.cli.search`` runs as a subprocess, is killed with
SIGKILL once evaluations are in ``archive.jsonl``, resumed with ``--resume``, and compared with an
uninterrupted run of the same seed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from discoverygym.agents.policies import SamplingContext, make_policy
from discoverygym.policy import Sample
from discoverygym.search.evolution import EvolutionarySearch, SearchConfig, load_snapshot
from discoverygym.search.runlog import RunLog
from discoverygym.types import State

ENV = "CirclePacking-26-v0"
REPO = Path(__file__).resolve().parents[2]


def run(tmp_path, name, resume=False, **kw):
    executor = kw.pop("executor", "inline")
    workers = kw.pop("workers", None)
    cfg = SearchConfig(ENV, **kw)
    search = EvolutionarySearch(
        cfg, tmp_path / name, resume=resume, executor=executor, workers=workers, tensorboard=False
    )
    return search.run(), tmp_path / name


def log_records(run_dir):
    return RunLog(run_dir).read_records()


def same_snapshot(a, b):
    """Trajectory archives (states, order, lineage), rule statistics and histories are equal."""
    sa, sb = load_snapshot(a), load_snapshot(b)
    assert len(sa["trajectories"]) == len(sb["trajectories"])
    for x, y in zip(sa["trajectories"], sb["trajectories"]):
        assert x["archive"].states() == y["archive"].states()
        assert x["archive"].to_dict()["lineage"] == y["archive"].to_dict()["lineage"]
        assert x["rule"] == y["rule"]
        assert x["history"] == y["history"]
    assert sa["best"]["id"] == sb["best"]["id"]


def check_invariants(run_dir, cfg: SearchConfig):
    records = log_records(run_dir)
    evals = [(r["traj"], r["step"], r["k"]) for r in records if r["kind"] == "eval"]
    assert len(evals) == len(set(evals)) == cfg.C * cfg.L * cfg.K  # exactly C·L·K evaluations
    states = {
        f"c{c}-l{l}-k{k}": State.from_dict(r["state"])
        for r in records
        if r["kind"] == "eval"
        for c, l, k in [(r["traj"], r["step"], r["k"])]
    }
    snap = load_snapshot(run_dir)
    for t in snap["trajectories"]:
        archive, history = t["archive"], t["history"]
        assert len(history) == cfg.L and "init" in archive.initial_ids and archive.get("init") is not None
        for s in archive:
            assert s.id == "init" or s.id.startswith(f"c{t['index']}-")  # trajectories are independent
            for p in s.parent_ids:
                assert archive.known(p)  # lineage closed under parents
        if archive.children_per_parent is not None:
            for s in archive:
                kids = [
                    k
                    for k in archive.children(s.id)
                    if archive.parents(k)[0] == s.id and not archive.is_protected(k)
                ]
                assert len(kids) <= archive.children_per_parent
        if archive.max_states is not None:
            assert len(archive) <= archive.max_states
        for step, committed in enumerate(history):  # the best of K is committed
            batch = [states[f"c{t['index']}-l{step}-k{k}"] for k in range(cfg.K)]
            valid = [b for b in batch if b.valid]
            if not valid:
                assert committed is None
                continue
            best = max(b.reward for b in valid)
            assert states[committed].reward == best  # (a kept duplicate has the same reward)
    best = json.loads((run_dir / "best.json").read_text())
    assert best["reward"] == max(s.reward for s in states.values() if s.valid)


@pytest.mark.parametrize("selector", ["rpucg", "puct", "greedy", "epsilon", "elite", "none"])
def test_budget_invariants_and_progress(tmp_path, selector):
    cfg = {"selector": selector, "C": 2, "L": 6, "K": 3, "seed": 3}
    result, run_dir = run(tmp_path, selector, **cfg)
    assert result.evaluations == result.evaluated_now == 2 * 6 * 3
    check_invariants(run_dir, SearchConfig(ENV, **cfg))
    assert result.best.score > 1.3  # the mutations improve the grid packing a little
    if selector == "none":  # best-of-N: every prompt is the initial state
        batches = [r for r in log_records(run_dir) if r["kind"] == "batch"]
        assert all(b["parents"] == ["init"] for b in batches)


def test_rpucg_prompts_are_dags_and_seeded_runs_repeat(tmp_path):
    a, da = run(tmp_path, "a", selector="rpucg", C=2, L=8, K=2, seed=5)
    _, db = run(tmp_path, "b", selector="rpucg", C=2, L=8, K=2, seed=5)
    c, _ = run(tmp_path, "c", selector="rpucg", C=2, L=8, K=2, seed=6)
    same_snapshot(da, db)
    assert a.best.solution != c.best.solution
    batches = [r for r in log_records(da) if r["kind"] == "batch"]
    assert max(len(r["parents"]) for r in batches) > 1  # several inspirations per prompt
    state = next(
        State.from_dict(r["state"])
        for r in log_records(da)
        if r["kind"] == "eval" and len(r["state"]["parent_ids"]) > 1
    )
    assert len(set(state.parent_ids)) == len(state.parent_ids)


def test_local_process_pool_matches_inline(tmp_path):
    _, da = run(tmp_path, "inline", selector="puct", C=3, L=5, K=4, seed=1)
    result, dl = run(tmp_path, "local", selector="puct", C=3, L=5, K=4, seed=1, executor="local", workers=2)
    same_snapshot(da, dl)
    assert 0 < result.utilisation <= 1


@pytest.mark.parametrize("backpressure", [1, 2])
def test_resume_from_a_truncated_log_regenerates_and_reevaluates_nothing(tmp_path, backpressure):
    kw = {"selector": "rpucg", "C": 2, "L": 6, "K": 3, "seed": 2, "backpressure": backpressure}
    _, full = run(tmp_path, "full", **kw)
    lines = (full / "archive.jsonl").read_bytes().splitlines(keepends=True)
    cut = len(lines) // 2
    part = tmp_path / "part"
    part.mkdir()
    (part / "config.json").write_bytes((full / "config.json").read_bytes())
    # the first half of the log, then a torn record (killed mid-write)
    (part / "archive.jsonl").write_bytes(b"".join(lines[:cut]) + lines[cut][: len(lines[cut]) // 2])
    kept = [json.loads(x) for x in lines[:cut]]
    logged_evals = sum(r["kind"] == "eval" for r in kept)
    logged_batches = {(r["traj"], r["step"]) for r in kept if r["kind"] == "batch"}
    result, _ = run(tmp_path, "part", resume=True, **kw)
    assert result.evaluated_now == 2 * 6 * 3 - logged_evals  # nothing evaluated twice
    records = log_records(part)
    batches = [(r["traj"], r["step"]) for r in records if r["kind"] == "batch"]
    assert len(batches) == len(set(batches)) == 2 * 6  # no batch generated twice
    assert logged_batches <= set(batches)
    check_invariants(part, SearchConfig(ENV, **kw))
    same_snapshot(full, part)


def test_resume_rejects_a_different_config_and_refuses_to_clobber(tmp_path):
    run(tmp_path, "x", C=1, L=2, K=2)
    with pytest.raises(ValueError, match="already holds a run"):
        run(tmp_path, "x", C=1, L=2, K=2)
    with pytest.raises(ValueError, match="configuration differs"):
        run(tmp_path, "x", resume=True, C=1, L=3, K=2)
    result, _ = run(tmp_path, "x", resume=True, C=1, L=2, K=2)  # finished run: nothing to do
    assert result.evaluated_now == 0 and result.evaluations == 4


def _count_evals(path: Path) -> int:
    try:
        return path.read_bytes().count(b'"kind":"eval"')
    except FileNotFoundError:
        return 0


def test_cli_killed_mid_run_resumes_to_the_uninterrupted_archive(tmp_path):
    # fmt: off
    args = ["--policy", "mutation", "--selector", "rpucg", "-C", "3", "-L", "120", "-K", "4", "--seed", "11",
            "--workers", "2", "--no-tensorboard", "--log-every", "0.5"]
    # fmt: on
    cmd = [sys.executable, "-m", "discoverygym.cli.search", ENV, *args]
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [*cmd, "--run-dir", str(killed)],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while _count_evals(killed / "archive.jsonl") < 40 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGKILL)  # the coordinator and its worker processes
    proc.wait()
    records = RunLog(killed).read_records()
    commits = sum(r["kind"] == "commit" for r in records)
    assert proc.returncode == -signal.SIGKILL and 0 < commits < 3 * 120  # really killed mid-run
    done = subprocess.run(
        [*cmd, "--run-dir", str(killed), "--resume"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "[search]" in done.stdout and "best score" in done.stdout  # non-TTY progress + summary
    _, reference = run(tmp_path, "reference", selector="rpucg", C=3, L=120, K=4, seed=11)
    same_snapshot(reference, killed)
    check_invariants(killed, SearchConfig(ENV, selector="rpucg", C=3, L=120, K=4, seed=11))


def test_ray_executor_runs_the_same_search(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'discoverygym[ray]')")
    home = tmp_path / "home"  # Ray's state and any token file stay here, not in the user's ~/.ray (issue 52)
    home.mkdir()
    user_token = Path.home() / ".ray" / "auth_token"
    before = user_token.stat().st_mtime_ns if user_token.exists() else None
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    _, inline = run(tmp_path, "inline", selector="rpucg", C=2, L=4, K=3, seed=4)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        result, ray_dir = run(
            tmp_path, "ray", selector="rpucg", C=2, L=4, K=3, seed=4, executor="ray", workers=2
        )
    finally:
        ray.shutdown()
    assert result.evaluations == 24
    same_snapshot(inline, ray_dir)
    assert (user_token.stat().st_mtime_ns if user_token.exists() else None) == before  # the user's ~/.ray untouched


class _ProgramPolicy:
    """Test double for an LLM: returns programs that jitter the parent construction."""

    name = "program"

    def sample(self, contexts, n, rng):
        src = (
            "import numpy as np\n"
            "def construct(seed, budget_s, parent):\n"
            "    p = np.array(parent, dtype=float)\n"
            "    p[:, :2] += np.random.default_rng(seed).normal(0, 1e-3, (len(p), 2))\n"
            "    return p\n"
        )
        return [[Sample(action=src)] * n for _ in contexts]


def test_code_mode_runs_programs_in_the_sandbox(tmp_path):
    cfg = SearchConfig(ENV, policy="program", selector="greedy", C=1, L=2, K=2, seed=0, action_mode="code")
    result = EvolutionarySearch(
        cfg, tmp_path / "code", executor="local", workers=2, policy=_ProgramPolicy(), tensorboard=False
    ).run()
    assert result.evaluations == 4
    evals = [State.from_dict(r["state"]) for r in log_records(tmp_path / "code") if r["kind"] == "eval"]
    assert all(s.valid and s.code.startswith("import numpy") for s in evals)
    assert len({json.dumps(s.solution) for s in evals}) == 4  # different program seeds
    assert (tmp_path / "code" / "best.py").read_text().startswith("import numpy")


def test_gaussian_mutation_is_seeded_and_proposes_without_repair():
    import gymnasium as gym

    policy = make_policy("mutation", sigma=0.5, fraction=1.0)
    for env_id in ("CirclePacking-26-v0", "Hadamard-29-v0", "SumDifference-v0", "ErdosMinOverlap-v0"):
        env = gym.make(env_id).unwrapped
        _, info = env.reset(seed=0)
        ctx = SamplingContext(info["state"], (info["state"],), env.problem)
        a = [s.action for s in policy.sample([ctx], 3, np.random.default_rng(1))[0]]
        b = [s.action for s in policy.sample([ctx], 3, np.random.default_rng(1))[0]]
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
        assert all(np.shape(x) == np.shape(info["state"].solution) for x in a)
        if env_id == "Hadamard-29-v0":
            assert all(set(np.unique(x)) <= {-1, 1} for x in a)
        if env_id == "SumDifference-v0":
            assert all(x.dtype.kind == "i" for x in a)
    # big moves on a packing are proposed as they are: the verifier rejects them
    env = gym.make(ENV).unwrapped
    _, info = env.reset(seed=0)
    ctx = SamplingContext(info["state"], (info["state"],), env.problem)
    results = [env.evaluate_construction(s.action) for s in policy.sample([ctx], 10, np.random.default_rng(0))[0]]
    assert not all(r.valid for r in results)


def test_run_dir_has_tensorboard_scalars_best_and_config(tmp_path):
    pytest.importorskip("tensorboardX", reason="tensorboardX is not installed")
    cfg = SearchConfig(ENV, selector="rpucg", C=2, L=3, K=2, seed=0)
    result = EvolutionarySearch(cfg, tmp_path / "tb", executor="inline", tensorboard=True).run()
    events = list((tmp_path / "tb").glob("events.out.tfevents.*"))
    assert len(events) == 1
    from discoverygym.tensorboard import read_scalars

    scalars = read_scalars(tmp_path / "tb")
    for tag in ("score/best", "score/record", "score/gap", "reward/best", "perf/evals_per_s", "perf/queue_depth",
                "cost/evaluations", "trajectory/1/best_reward"):
        assert tag in scalars, tag
    assert not any(t.startswith("search/") for t in scalars)  # the old search-only tags are gone
    assert scalars["score/best"][-1][1] == pytest.approx(result.best.score, rel=1e-6)
    best = json.loads((tmp_path / "tb" / "best.json").read_text())
    assert best["id"] == result.best.id and best["score"] == result.best.score
    assert json.loads((tmp_path / "tb" / "config.json").read_text())["L"] == 3
