"""ScalingLaw-*-v0: SLDBench splits, the human laws, broken and memorising candidates, hub-only tasks.

One representative id (ScalingLaw-DataConstrained-v0, the fastest to fit) is evaluated end to end;
every registered id is built. Programs written here use numpy only, so each sandboxed call is short.
"""

from __future__ import annotations

import filecmp
import json
import re
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import discoverygym
from discoverygym.agents.policies import POLICIES, register_policy
from discoverygym.cli.search import main as search_main
from discoverygym.envs.registry import PROGRAM_TASKS
from discoverygym.envs.scaling_laws import ENV_IDS, make_scaling_law
from discoverygym.envs.scaling_laws.data import TASKS, load_task
from discoverygym.policy import Sample
from discoverygym.rewards.scaling_laws import FAILURE_REWARD, REWARD_FLOOR

SHARED_SLD = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "sld"
PACKAGE_SLD = Path(discoverygym.__file__).parent / "data" / "sld"
REP = "ScalingLaw-DataConstrained-v0"
OPTS = {"allow_unconfined": True, "timeout_s": 30.0}  # bubblewrap is still used where it works

# (train, test) row counts published by the SLDBench hub card (pkuHaowei/sldbench dataset_info);
# lr_bsz's hub train split differs from the repository file the env ships (117 test rows agree).
PUBLISHED_SIZES = {"data_constrained": (161, 21), "domain_mixture": (80, 24), "vocab": (1080, 120),
                   "moe": (193, 28), "lr_bsz": (None, 117)}

LINEAR_LAW = """
import numpy as np

def scaling_law(X, params):
    return params[0] + params[1] * np.log(np.asarray(X)[:, 1])

def fit(X, y):
    A = np.stack([np.ones(len(y)), np.log(X[:, 1])], axis=1)
    return np.linalg.lstsq(A, y, rcond=None)[0]
"""


def _env(env_id: str = REP, **kw):
    return gym.make(env_id, **{**OPTS, **kw})


def _step(program: str, **kw) -> tuple[float, dict]:
    """One env step from the human law's state (its evaluation is cached after the first test)."""
    env = _env(**kw)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(program)
    assert terminated
    return reward, info


def _judge(program: str, env_id: str = REP, **kw):
    """The State ``step`` would record for ``program`` (no reset: options such as a short timeout
    apply to the candidate only)."""
    return _env(env_id, **kw).unwrapped.evaluate_program(program)


def test_every_id_is_registered_and_built_cheaply():
    assert set(ENV_IDS) <= set(PROGRAM_TASKS) <= set(gym.registry)
    for env_id, key in ENV_IDS.items():
        task = gym.make(env_id).unwrapped.task
        assert task.key == key and task.failure_reward == FAILURE_REWARD < REWARD_FLOOR
        assert f"at most {TASKS[key].cap} finite floats" in task.prompt()
        assert "Human law" in task.description or "Human baseline" in task.description
        assert "def scaling_law(" in task.initial_program() and "def fit(" in task.initial_program()
    for key in ("parallel", "u_shape"):  # hub-only: buildable offline, data fetched at the first evaluation
        assert "def fit(" in make_scaling_law(key).initial_program()


def test_shipped_data_are_the_sldbench_files_with_licence():
    assert "MIT" in (PACKAGE_SLD / "LICENCE.txt").read_text() and "61c9d59" in (PACKAGE_SLD / "LICENCE.txt").read_text()
    if not SHARED_SLD.is_dir():
        pytest.skip("../shared/data/sld is not present")
    for path in SHARED_SLD.rglob("*"):
        if path.is_file():
            assert filecmp.cmp(path, PACKAGE_SLD / path.relative_to(SHARED_SLD), shallow=False), path


@pytest.mark.parametrize("key", sorted(PUBLISHED_SIZES))
def test_split_sizes_match_the_published_benchmark(key):
    data = load_task(key)
    train, test = PUBLISHED_SIZES[key]
    assert sum(len(g.y) for g in data.test) == test
    if train is not None:
        assert sum(len(g.y) for g in data.train) == train
    assert sum(len(g.y) for g in data.fit) + sum(len(g.y) for g in data.validation) == sum(len(g.y) for g in data.train)


def test_validation_is_an_extrapolation_inside_train():
    d = load_task("vocab")  # validation = the largest vocabulary left after the test split
    assert d.validation[0].X[:, 1].min() > d.fit[0].X[:, 1].max()
    assert d.test[0].X[:, 1].min() > d.validation[0].X[:, 1].max()
    r = load_task("rectified")  # test = data size 819200 per group, validation = 409600
    assert {float(g.X.max()) for g in r.test} == {819200.0} and {float(g.X.max()) for g in r.validation} == {409600.0}


def test_check_env_and_the_human_law_scores():
    env = _env()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env.unwrapped)
    _, info = env.reset(seed=0)
    m = info["metrics"]
    assert info["valid"] and info["score"] == m["r2_validation"] and m["reward_split"] == "validation"
    assert m["n_params"] == 7 and m["points"] == {"fit": 140, "validation": 21, "train": 161, "test": 21}
    assert m["r2_train"] > 0.85 and m["r2_test"] > 0.85  # Muennighoff's law extrapolates on this split
    _, test_info = _env(reward_split="test").reset(seed=0)
    assert test_info["score"] == test_info["metrics"]["r2_test"] == pytest.approx(m["r2_test"])


def test_fit_never_sees_the_points_it_is_scored_on():
    spy = """
import numpy as np

def scaling_law(X, params):
    return np.full(len(X), 3.0) + 0.01 * np.log(np.asarray(X)[:, 0])

def fit(X, y):
    return np.array([len(y), X[:, 2].max(), X[:, 1].max()])
"""
    _, info = _step(spy)
    d = load_task("data_constrained")
    n_fit, u_fit, p_fit = info["metrics"]["params_fit"]["all"]
    n_train, u_train, p_train = info["metrics"]["params_train"]["all"]
    assert (n_fit, n_train) == (140, 161)  # fit split, then the published 161 train rows, never more
    test_x = d.test[0].X
    assert not np.any((test_x[:, 2] <= u_train) & (test_x[:, 1] <= p_train))  # every test point lies beyond train
    assert u_fit < u_train or p_fit < p_train  # the validation extrapolation is beyond the fit points


# Found by a tryout: with one process predicting every split, ``fit`` on train (which holds the
# validation labels) could hide them in the train parameters, and ``scaling_law`` rewrite the
# validation answer it had already returned from them: R² 1.0 on the default reward.
CARRY_VALIDATION_LABELS = """
import numpy as np
MARK = 123456.0

def fit(X, y):
    if X[:, 0].max() >= 409600:  # the train split: its largest size is the validation point
        return [MARK, float(y[X[:, 0].argmax()]), 0.0, 0.0]
    return [float(np.mean(y)), 0.0, 0.0, 0.0]

_val, _k = [], [0]

def scaling_law(X, p):
    if p[0] == MARK:
        if _k[0] < len(_val):
            _val[_k[0]][:] = p[1]
        _k[0] += 1
        return np.full(len(X), p[1])
    out = np.full(len(X), p[0])
    if len(X) == 1 and X[0, 0] >= 409600:
        _val.append(out)
    return out
"""


def test_state_inside_a_process_cannot_carry_validation_labels_into_its_answers():
    state = _judge(CARRY_VALIDATION_LABELS, env_id="ScalingLaw-Rectified-v0")
    assert state.valid
    # a constant per group: far from the exact 1.0 the leak gave, below the human law's 0.994
    assert state.metadata["r2_validation"] < 0.9


def test_validation_predictions_are_final_before_any_process_sees_validation_labels(monkeypatch):
    # Issue 40: the train-split fit (given the validation labels) ran before the process that
    # predicts validation, and a page-cache channel between the two sandboxes gave validation
    # R² 0.999 against the honest 0.958. Whatever the sandboxes share, the order closes it.
    import discoverygym.sandbox.python as sandbox
    from discoverygym.envs.scaling_laws.transport import FIT_ENTRY, PREDICT_ENTRY

    task = make_scaling_law("vocab", allow_unconfined=True)
    data = task.data()
    val_rows = {tuple(r) for g in data.validation for r in g.X.tolist()}
    calls = []

    def fake_run(source, entry, kwargs, limits):
        if entry == FIT_ENTRY:
            rows = {tuple(r) for g in kwargs["groups"] for r in g["X"]}
            calls.append(("labels", bool(rows & val_rows)))
            value = [[0.0, 1.0] for _ in kwargs["groups"]]
        else:
            assert entry == PREDICT_ENTRY and all("y" not in j for j in kwargs["jobs"])
            rows = {tuple(r) for j in kwargs["jobs"] for r in j["X"]}
            calls.append(("predicts", bool(rows & val_rows)))
            value = [[1.0] * len(j["X"]) for j in kwargs["jobs"]]
        return sandbox.SandboxResult(ok=True, value=value, error=None, stdout="", stderr="", elapsed_s=0.0,
                                     returncode=0, timed_out=False, backend="fake")

    monkeypatch.setattr(sandbox, "run_program", fake_run)
    task._evaluate("def fit(X, y): pass\ndef scaling_law(X, p): pass\n")
    sees_labels = calls.index(("labels", True))
    predicts_validation = calls.index(("predicts", True))
    assert predicts_validation < sees_labels, calls
    assert len(calls) == 4


NAN_ON_TRAIN_ROWS = LINEAR_LAW.replace(
    "def scaling_law(X, params):\n    return",
    "def scaling_law(X, params):\n    if len(X) > 100:  # the fit and train rows, never a held-out split here\n"
    "        return np.full(len(X), np.nan)\n    return")


def test_nan_on_train_rows_is_reported_not_failed_as_sldbench_scores_held_out_points_only():
    state = _judge(NAN_ON_TRAIN_ROWS)
    assert state.valid, state.error
    m = state.metadata
    assert np.isnan(m["r2_fit"]) and np.isnan(m["r2_train"]) and np.isfinite(m["r2_validation"])
    assert set(m["unscored_predictions"]) == {"fit", "train"}
    assert not _judge(LINEAR_LAW.replace("return params[0]", "return np.nan * params[0]")).valid


@pytest.mark.parametrize("program, match", [
    (LINEAR_LAW.replace("rcond=None)[0]", "rcond=None)[0].tolist() * 4"), "returned 8 parameters; at most 7"),
    (LINEAR_LAW.replace("A = np.stack", "raise RuntimeError('boom')\n    A = np.stack"), "RuntimeError: boom"),
    (LINEAR_LAW.replace("A = np.stack", "while True:\n        pass\n    A = np.stack"), "timed out"),
    (LINEAR_LAW.replace("return params[0] +", "return np.nan * params[0] +"), "is not finite"),
    (LINEAR_LAW.replace("return params[0] + params[1] * np.log(np.asarray(X)[:, 1])", "return np.zeros((len(X), 2))"),
     r"shape \(\d+, 2\); expected \(\d+,\)"),
    (LINEAR_LAW.replace("def fit(", "def fitted("), "must define a function fit"),
    ("def scaling_law(X, params):\n    return X\ndef fit(X, y)\n", "syntax error"),
])
def test_broken_candidates_get_the_failure_reward_with_a_reason(program, match):
    state = _judge(program, timeout_s=2.0)
    assert state.reward == FAILURE_REWARD and not state.valid and state.score is None
    assert state.error and re.search(match, state.error), state.error


def test_a_failure_through_step_gets_the_failure_reward():
    reward, info = _step(LINEAR_LAW.replace("return params[0] +", "return np.nan * params[0] +"))
    assert reward == FAILURE_REWARD == info["failure_reward"] and not info["valid"] and "not finite" in info["error"]


def test_a_valid_but_terrible_law_is_clipped_at_minus_one_above_failure():
    awful = LINEAR_LAW.replace("return params[0] +", "return 1e3 + params[0] +")
    reward, info = _step(awful)
    assert info["valid"] and info["score"] < -1e4 and reward == REWARD_FLOOR > FAILURE_REWARD


def test_a_law_that_memorises_train_fits_train_but_fails_to_extrapolate():
    """Seven least-squares coefficients of a quadratic in log(tokens, params, unique tokens): within
    the cap, it fits the 161 train points at least as well as Muennighoff's law, and misses the test."""
    memo = """
import numpy as np

def _features(X):
    a, b, c = np.log(np.asarray(X)).T
    return np.stack([np.ones_like(a), a, b, c, a * a, b * b, c * c], axis=1)

def scaling_law(X, params):
    return _features(X) @ params

def fit(X, y):
    return np.linalg.lstsq(_features(X), y, rcond=None)[0]
"""
    _, human = _env().reset(seed=0)
    _, info = _step(memo)
    m, h = info["metrics"], human["metrics"]
    assert info["valid"] and m["n_params"] == 7
    assert m["r2_train"] > 0.9 and m["r2_train"] >= h["r2_train"]
    assert m["r2_test"] < 0.3 < h["r2_test"] - 0.5
    assert m["r2_validation"] < h["r2_validation"]  # the default reward already prefers the law that extrapolates


def test_scoring_without_bubblewrap_is_refused_unless_opted_in():
    env = gym.make(REP, use_bwrap=False).unwrapped
    state = env.evaluate_program(LINEAR_LAW)
    assert state.unscored and "allow_unconfined=True" in state.metadata["unscored_reason"]


def _offline(*args, **kwargs):
    raise urllib.error.URLError("network is unreachable (test)")


def test_hub_task_offline_gives_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", _offline)
    task = make_scaling_law("parallel", cache_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"only on the hub .*pkuHaowei/sldbench.*parallel_scaling_law-train"):
        task.data()
    with pytest.raises(FileNotFoundError, match="is not cached"):
        load_task("u_shape", str(tmp_path), download=False)


def test_hub_task_from_a_hand_placed_file_is_scored(tmp_path):
    rows = [{"group": g, "num_params": n, "parallel_size": p, "loss": (2.0 if g == "pile" else 1.0) + 5e3 / n ** 0.5 - 0.01 * p}
            for g in ("pile", "stack") for n in (5e8, 1e9, 2e9, 4e9) for p in (1, 2, 4)]
    header = "group,num_params,parallel_size,loss\n"
    body = lambda rs: header + "".join(f"{r['group']},{r['num_params']},{r['parallel_size']},{r['loss']}\n" for r in rs)
    (tmp_path / "parallel_scaling_law-train.csv").write_text(body([r for r in rows if r["num_params"] < 4e9]))
    (tmp_path / "parallel_scaling_law-test.csv").write_text(body([r for r in rows if r["num_params"] == 4e9]))
    law = """
import numpy as np

def _f(X):
    X = np.asarray(X)
    return np.stack([np.ones(len(X)), X[:, 0] ** -0.5, X[:, 1]], axis=1)

def scaling_law(X, params):
    return _f(X) @ params

def fit(X, y):
    return np.linalg.lstsq(_f(X), y, rcond=None)[0]
"""
    env = gym.make(REP, problem=make_scaling_law("parallel", cache_dir=tmp_path, allow_unconfined=True)).unwrapped
    state = env.evaluate_program(law)
    assert state.valid and state.metadata["groups"] == 2 and state.metadata["r2_test"] == pytest.approx(1.0, abs=1e-9)


class LawPolicy:
    """A code policy for the search test: the linear law with a few shifted constants."""

    name = "sld-code"
    action_modes = ("code",)

    def sample(self, contexts, n, rng):
        return [[Sample(action=LINEAR_LAW.replace("return params[0] +", f"return {0.01 * k} + params[0] +"))
                 for k in range(n)] for _ in contexts]


def test_search_runs_on_a_scaling_law_env(tmp_path):
    register_policy("sld-code", f"{__name__}:LawPolicy")
    try:
        rc = search_main([REP, "--action-mode", "code", "--policy", "sld-code", "-C", "1", "-L", "2", "-K", "2",
                          "--executor", "inline", "--no-tensorboard", "--task-options", json.dumps(OPTS),
                          "--run-dir", str(tmp_path / "run")])
    finally:
        POLICIES.pop("sld-code", None)
    assert rc == 0
    rows = [json.loads(line) for line in (tmp_path / "run" / "archive.jsonl").read_text().splitlines() if line.strip()]
    assert len(rows) >= 2 and all("r2_test" in (r.get("metadata") or {}) for r in rows if r.get("valid"))
