"""Issue 40 follow-up (40c): ``train --resume`` does not trust its checkpoint.

On main at 3f53044 ``load_checkpoint`` restored ``trainer.json``'s best and the archive as written:
a forged best (26 identical circles of radius 0.5, claimed 2.9) became the resumed run's best.
Now every state that can become the best or be picked from the archive is judged again
(constructions by the verifier, the best program by running it once more), and a mismatch is an
error naming the file and key.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from discoverygym.agents.trainer import TrainConfig, Trainer
from discoverygym.envs.program import ProgramEnv, ProgramTask
from discoverygym.errors import InvalidSolution
from discoverygym.policy import Sample
from discoverygym.rewards.common import Score

CIRCLES = "CirclePacking-26-v0"
FORGED = [[0.5, 0.5, 0.5]] * 26  # the forged construction: claimed 2.9, overlapping circles


def _checkpoint(run_dir):
    return run_dir / "checkpoints" / json.loads((run_dir / "checkpoints" / "latest.json").read_text())["dir"]


def _edit(path, edit):
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


@pytest.fixture
def circles_run(tmp_path):
    """A finished one-step gaussian train run on circle packing (2 groups of 4)."""
    cfg = TrainConfig(env_id=CIRCLES, policy="gaussian", steps=1, groups=2, group_size=4, seed=1)
    Trainer(cfg, tmp_path / "run").run()
    return TrainConfig(**{**cfg.to_dict(), "steps": 2}), tmp_path / "run"


def test_an_honest_checkpoint_resumes(circles_run):
    cfg, run = circles_run
    trainer = Trainer(cfg, run, resume=True)
    assert trainer.step_index == 1 and trainer.best.score < 2.7
    assert trainer.run().steps == 2


def test_a_forged_best_is_refused_naming_file_and_key(circles_run):
    cfg, run = circles_run
    path = _checkpoint(run) / "trainer.json"
    _edit(path, lambda d: d["best"].update(solution=FORGED, score=2.9, reward=2.9))
    with pytest.raises(ValueError, match=rf"{path}: best: logged state .*verifier rejects its construction"):
        Trainer(cfg, run, resume=True)


def test_a_forged_best_marked_invalid_is_refused(circles_run):
    """Tester report (fix, item 1): ``valid: false`` skipped the re-check, and 2.9 became the run's best."""
    cfg, run = circles_run
    path = _checkpoint(run) / "trainer.json"
    _edit(path, lambda d: d["best"].update(id="forged", solution=FORGED, score=2.9, reward=2.9, valid=False))
    with pytest.raises(ValueError, match=rf"{path}: best: logged state 'forged' is marked invalid .*cannot be resumed"):
        Trainer(cfg, run, resume=True)


def test_an_invalid_best_that_is_the_start_state_resumes_as_the_judged_start(circles_run):
    cfg, run = circles_run
    path = _checkpoint(run) / "trainer.json"
    _edit(path, lambda d: d.update(best={**d["initial"], "score": 2.9, "reward": 2.9, "valid": False}))
    trainer = Trainer(cfg, run, resume=True)
    assert trainer.best.valid and trainer.best.reward == trainer.initial.reward < 2.7


def test_a_forged_archive_state_is_refused_naming_file_and_key(circles_run):
    cfg, run = circles_run
    path = _checkpoint(run) / "archive.json"
    data = json.loads(path.read_text())
    i = max(range(len(data["states"])), key=lambda j: data["states"][j]["valid"])
    state = data["states"][i]  # a real construction that now claims a better score (and its reward)
    state["score"] = state["reward"] = state["score"] + 0.01
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=rf"{path}: states\[{i}\]: .*verifier scores its construction"):
        Trainer(cfg, run, resume=True)


class SeededTask(ProgramTask):
    """``"good N"`` scores N + seed/10^12 (so a re-run must use the rollout's own seed); else invalid."""

    name = "seeded"
    title = "Seeded"
    quantity = "N"
    runs = 0  # evaluations, counted per class (the trainer builds its own env)

    def initial_program(self) -> str:
        return "good 1"

    def evaluate(self, source: str, *, seed: int) -> Score:
        type(self).runs += 1
        if source.startswith("good "):
            return Score(float(source.split()[1]) + seed / 1e12, {})
        raise InvalidSolution("not a good program")


class Scripted:
    """A learner that proposes fixed programs and learns nothing (checkpoints are empty)."""

    def sample(self, contexts, n, rng):
        return [[Sample(action=f"good {3 + 2 * k}") for k in range(n)] for _ in contexts]

    def train_step(self, samples, advantages, *, kl_coef):
        return {"loss": 0.0, "kl": 0.0, "tokens": 0, "grad_norm": 0.0}

    def stats(self):
        return {}

    def save_checkpoint(self, path):
        path.mkdir(parents=True, exist_ok=True)

    def load_checkpoint(self, path):
        pass


def _program_trainer(run, resume=False, steps=1):
    config = TrainConfig(env_id="Seeded-v0", policy="hf:scripted", steps=steps, groups=1, group_size=2, seed=0,
                         objective="mean-baseline")
    learner = Scripted()
    return Trainer(config, run, env=ProgramEnv(SeededTask()), learners=(learner, learner), resume=resume)


def test_the_best_program_is_run_again_on_resume(tmp_path):
    _program_trainer(tmp_path / "run").run()
    SeededTask.runs = 0
    trainer = _program_trainer(tmp_path / "run", resume=True, steps=2)
    # the reset judges the initial program; the best ("good 5", with its own seed) runs once more
    assert SeededTask.runs == 2 and trainer.best.code == "good 5"
    assert trainer.run().steps == 2


def test_a_forged_program_record_with_a_consistent_reward_is_refused(tmp_path):
    _program_trainer(tmp_path / "run").run()
    path = _checkpoint(tmp_path / "run") / "trainer.json"
    # "good 3" really scores 3.x; the record claims 9 with the reward of 9 (reward = score here)
    _edit(path, lambda d: d["best"].update(code="good 3", score=9.0, reward=9.0))
    with pytest.raises(ValueError, match=rf"{path}: best: logged state .*scores 3\.\d+ when run again"):
        _program_trainer(tmp_path / "run", resume=True, steps=2)
