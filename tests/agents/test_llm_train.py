"""TTT-Discover with LLM policies end to end: CLI on CPU with the tiny model, and the trainer's wiring."""

from __future__ import annotations

import json
import struct

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from discoverygym.agents.policies.llm import LLMSample
from discoverygym.agents.trainer import TrainConfig, Trainer
from discoverygym.cli import main
from tests.llm_fixtures import tiny_model_dir


@pytest.fixture(scope="module")
def tiny_model_path(tmp_path_factory):
    """The tiny offline model (built once per session, see tests/llm_fixtures.py)."""
    return tiny_model_dir(tmp_path_factory.getbasetemp())


def _scalar_tags(run) -> dict[str, list[float]]:
    from tensorboardX.proto import event_pb2

    tags: dict[str, list[float]] = {}
    for path in run.glob("events.out.tfevents.*"):
        data, pos = path.read_bytes(), 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos: pos + 8])
            event = event_pb2.Event.FromString(data[pos + 12: pos + 12 + length])
            pos += 16 + length
            for v in event.summary.value:
                tags.setdefault(v.tag, []).append(v.simple_value)
    return tags


def test_cli_train_with_tiny_hf_model_runs_every_stage_and_resumes(tiny_model_path, tmp_path, capsys):
    run = tmp_path / "run"
    args = ["train", "CirclePacking-26-v0", "--agent", "ttt-discover", "--policy", f"hf:{tiny_model_path}",
            "--steps", "2", "--groups", "2", "--group-size", "4", "--max-new-tokens", "16", "--lora-rank", "4",
            "--llm-device", "cpu", "--run-dir", str(run), "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 2 and summary["policy"] == f"hf:{tiny_model_path}"
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]
    for m in metrics:
        # the LoRA update ran when a group had a signal; none when every group failed (issue 49)
        assert (m["train_tokens"] > 0) == (m["groups_kept"] > 0)
        assert sum(m["errors"].values()) + round(m["valid_fraction"] * 8) == 8  # 8 programs judged
    archive = json.loads((run / "archive.json").read_text())
    assert len(json.dumps(archive)) > 0
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert samples and all("text" in s for s in samples)
    tags = _scalar_tags(run)
    for tag in ("reward/mean", "loss", "kl", "valid_fraction", "parsed_fraction", "perf/tokens_per_s"):
        assert len(tags.get(tag, [])) == 2, tag
    ckpt = run / "checkpoints" / "step_000002" / "learner" / "adapter" / "adapter_model.safetensors"
    assert ckpt.exists()
    # resume continues from the checkpoint
    assert main(["train", "CirclePacking-26-v0", "--policy", f"hf:{tiny_model_path}", "--steps", "3",
                 "--run-dir", str(run), "--resume", "--json"]) == 0
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2, 3]


def test_cli_offline_hub_id_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc = main(["train", "CirclePacking-26-v0", "--policy", "hf:no-such-org/missing-model-2718", "--steps", "1",
               "--llm-device", "cpu", "--run-dir", str(tmp_path / "r")])
    assert rc == 2 and "no-such-org/missing-model-2718" in capsys.readouterr().err


class _Recorder:
    def __init__(self):
        self.calls = []

    def train_step(self, samples, advantages, *, kl_coef):
        self.calls.append((len(samples), torch.as_tensor(advantages).clone(), kl_coef))
        return {"loss": 1.0, "kl": 0.0, "tokens": 2 * len(samples), "grad_norm": 0.0}

    def save_checkpoint(self, path):
        path.mkdir(parents=True, exist_ok=True)

    def stats(self):
        return {}


class _Scripted(_Recorder):
    """Sampler returning fixed programs (packings of different quality) with fake token data."""

    name = "scripted"

    def __init__(self, programs):
        super().__init__()
        self.programs = programs

    def sample(self, contexts, n, rng):
        return [[LLMSample(action=self.programs[k % len(self.programs)], text="", prompt_ids=[1],
                           completion_ids=[2, 3], logprobs=[-1.0, -1.0], mask=[True, True])
                 for k in range(n)] for _ in contexts]


def _packing(radius: float) -> str:
    return ("import numpy as np\ndef construct():\n"
            f"    g = (np.arange(5) + 0.5) / 5\n    pts = [[x, y, {radius}] for x in g for y in g]\n"
            f"    return pts + [[0.0, 0.0, 0.0]]\n")


def test_trainer_passes_group_advantages_to_the_learner(tmp_path):
    good, bad = _packing(0.1), _packing(0.05)  # 25 circles of r, one of radius 0: valid, Σr differs
    sampler = learner = _Scripted([good, bad, "not python ("])
    cfg = TrainConfig(env_id="CirclePacking-26-v0", policy="hf:unused", steps=1, groups=2, group_size=3,
                         kl_coef=0.05)
    trainer = Trainer(cfg, tmp_path / "r", learners=(sampler, learner))
    result = trainer.run()
    assert len(learner.calls) == 1
    n, adv, lam = learner.calls[0]
    assert n == 6 and lam == 0.05
    # per group: the best program has the only positive advantage, the invalid one the lowest
    adv = adv.reshape(2, 3)
    assert bool((adv[:, 0] > 0).all()) and bool((adv[:, 2] < adv[:, 1]).all())
    assert result.best.valid and result.best.score == pytest.approx(25 * 0.1)
    assert json.loads((tmp_path / "r" / "best.json").read_text())["program"] == good


def test_constant_groups_skip_the_update_when_asked(tmp_path):
    policy = _Scripted(["syntax error ("])
    cfg = TrainConfig(env_id="CirclePacking-26-v0", policy="hf:unused", steps=1, groups=1, group_size=2,
                         update_on_constant=False)
    Trainer(cfg, None, learners=(policy, policy)).run()
    assert policy.calls == []
    cfg.update_on_constant = True
    Trainer(cfg, None, learners=(policy, policy)).run()
    assert len(policy.calls) == 1 and float(policy.calls[0][1].abs().max()) == 0.0  # KL-only step


def test_parallel_judging_records_the_same_children(tmp_path, monkeypatch):
    from discoverygym.envs import construction

    calls = []
    real = construction.run_program
    monkeypatch.setattr(construction, "run_program", lambda *a, **k: calls.append(1) or real(*a, **k))
    programs = [_packing(0.1), _packing(0.05), "not python (", _packing(0.2)]  # the last one overlaps
    runs = []
    for workers in (1, 3):
        calls.clear()
        policy = _Scripted(programs)
        cfg = TrainConfig(env_id="CirclePacking-26-v0", policy="hf:unused", steps=2, groups=2, group_size=4,
                             eval_workers=workers, reuse="none")
        trainer = Trainer(cfg, None, learners=(policy, policy))
        result = trainer.run()
        children = sorted((s.code, s.valid, s.score) for s in trainer.reuse.archive.states() if s.code)
        assert len(calls) == 2 * 2 * 4  # each program runs once, in parallel or not
        runs.append(([m["reward/mean"] for m in result.history], [c[1].tolist() for c in policy.calls],
                     result.best.score, children))
    assert runs[0] == runs[1]
    assert runs[0][2] == pytest.approx(2.5)


class _Resumable(_Scripted):
    def load_checkpoint(self, path):
        assert path.exists()


def test_resume_truncates_samples_logged_after_the_checkpoint(tmp_path):
    """A kill -9 between logging samples and the checkpoint leaves no duplicate step records."""
    run = tmp_path / "r"
    policy = _Resumable([_packing(0.1), _packing(0.05)])
    cfg = TrainConfig(env_id="CirclePacking-26-v0", policy="hf:unused", steps=1, groups=1, group_size=2,
                         log_samples=2)
    Trainer(cfg, run, learners=(policy, policy)).run()
    samples = run / "samples.jsonl"
    assert [json.loads(line)["step"] for line in samples.read_text().splitlines()] == [1, 1]
    # a killed step 2: its samples were written, the checkpoint was not (and a torn line)
    with open(samples, "a") as fh:
        fh.write(json.dumps({"step": 2, "reward": 0.0, "text": "lost"}) + "\n")
        fh.write('{"step": 2, "rew')
    cfg.steps = 2
    Trainer(cfg, run, resume=True, learners=(policy, policy)).run()
    steps = [json.loads(line)["step"] for line in samples.read_text().splitlines()]
    assert steps == [1, 1, 2, 2]
    assert "lost" not in samples.read_text()
    metrics = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert metrics == [1, 2]


def test_cli_resume_of_another_env_does_not_train_it(tiny_model_path, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "CirclePacking-26-v0", "--policy", f"hf:{tiny_model_path}", "--steps", "1", "--groups", "1",
                 "--group-size", "2", "--max-new-tokens", "8", "--lora-rank", "2", "--llm-device", "cpu",
                 "--run-dir", str(run), "--json"]) == 0
    capsys.readouterr()
    assert main(["train", "ErdosMinOverlap-v0", "--policy", f"hf:{tiny_model_path}", "--steps", "2",
                 "--run-dir", str(run), "--resume"]) == 2
    assert "holds a train run of CirclePacking-26-v0, not ErdosMinOverlap-v0" in capsys.readouterr().err
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [1]


def test_cli_unreachable_openai_server_exits_3(tiny_model_path, tmp_path, capsys):
    pytest.importorskip("httpx")
    rc = main(["train", "CirclePacking-26-v0", "--policy", "openai:http://127.0.0.1:9", "--train-model",
               str(tiny_model_path), "--steps", "1", "--groups", "1", "--group-size", "2", "--llm-device", "cpu",
               "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 3 and "cannot reach the OpenAI-compatible server at http://127.0.0.1:9" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
