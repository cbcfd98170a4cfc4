"""IRFT: replay buffer format, credit rules, weighted SFT loss (TRL and Tinker), one resumable round.

The loss tests recompute the weighted NLL by hand, one unpadded sequence at a time, from the
model's logits, and compare it with what the trainer optimises. The round test runs the real
pipeline (search with the tiny local LLM in the sandbox → buffer → credit → SFT → held-out
search), crashes it inside SFT and resumes it.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from discoverygym.agents.irft.buffer import COLUMNS, ReplayBuffer, rows_from_search
from discoverygym.agents.irft.credit import assign_credit, grpo_weights, irft_weights
from discoverygym.agents.irft.recording import PROMPTS_FILE, RecordingPolicy, read_prompts
from discoverygym.agents.policies import make_policy
from discoverygym.search.evolution import EvolutionarySearch, SearchConfig, load_snapshot
from discoverygym.search.runlog import RunLog
from tests.llm_fixtures import tiny_model_path  # noqa: F401 (pytest fixture)

EXAMPLES = [
    {
        "prompt": "<|user|>\nwrite a program\n<|assistant|>\n",
        "completion": "def construct():\n    return [1]\n",
        "weight": 1.0,
    },
    {"prompt": "<|user|>\nimprove it\n<|assistant|>\n", "completion": "yes no maybe", "weight": 0.5},
    {
        "prompt": "<|user|>\nxyz\n<|assistant|>\n",
        "completion": "for i in range(n):\n    x[i] = 0\n",
        "weight": -0.25,
    },
    {
        "prompt": "<|user|>\na much longer prompt that is ignored by the loss\n<|assistant|>\n",
        "completion": "class Model(nn.Module):\n    def forward(self, x):\n        return x\n",
        "weight": 0.0,
    },
]


# ----------------------------------------------------------------------------- buffer
@pytest.fixture(scope="module")
def recorded_search(tmp_path_factory):
    """A small construction-mode search whose samples went through RecordingPolicy."""
    run_dir = tmp_path_factory.mktemp("search") / "run"
    cfg = SearchConfig("CirclePacking-26-v0", C=3, L=2, K=2, seed=1)
    policy = RecordingPolicy(make_policy("mutation"), run_dir)
    EvolutionarySearch(cfg, run_dir, executor="inline", policy=policy, tensorboard=False).run()
    return run_dir, cfg


def test_buffer_rows_match_the_search_log_and_read_back_with_pandas_and_datasets(recorded_search, tmp_path):
    run_dir, cfg = recorded_search
    rows = rows_from_search(run_dir, read_prompts(run_dir), problem=cfg.env_id, round_index=0, run="r")
    assert len(rows) == cfg.C * cfg.L * cfg.K
    evals = {r["state"]["id"]: r["state"] for r in RunLog(run_dir).read_records() if r["kind"] == "eval"}
    snap = load_snapshot(run_dir)
    for row in rows:
        state = evals[row["node_id"]]
        assert (row["reward"], row["valid"], row["parent_ids"]) == (
            state["reward"],
            state["valid"],
            state["parent_ids"],
        )
        if state["solution"] is not None:
            assert np.array_equal(json.loads(row["completion"]), state["solution"])
        archive = snap["trajectories"][row["trajectory"]]["archive"]
        best = max(s.reward for s in archive if s.valid and s.id != "init")
        assert row["traj_best_reward"] == best
    buf = ReplayBuffer(tmp_path / "buffer.jsonl")
    buf.add_round(0, rows)
    buf.add_round(0, rows)  # idempotent: replaces round 0
    buf.set_weights(list(range(len(rows))), credit_round=0)

    import datasets
    import pandas as pd

    df = pd.read_json(tmp_path / "buffer.jsonl", lines=True)
    assert list(df.columns) == list(COLUMNS)
    assert df["weight"].tolist() == list(range(len(rows)))
    assert df["node_id"].tolist() == [r["node_id"] for r in rows]
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "buffer.jsonl"), split="train")
    assert ds.num_rows == len(rows) and ds["prompt"] == [r["prompt"] for r in rows]
    back = pd.read_parquet(buf.to_parquet(tmp_path / "buffer.parquet"))
    assert back["reward"].tolist() == [r["reward"] for r in rows]


def test_read_prompts_keeps_the_line_matching_the_logged_actions(recorded_search, tmp_path):
    import shutil

    run_dir, _ = recorded_search
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    good = read_prompts(copy)
    lines = (copy / PROMPTS_FILE).read_text().splitlines()
    stale = json.loads(lines[0])
    stale["actions"] = [[0.0]] * len(stale["actions"])
    stale["completions"] = ["stale"] * len(stale["completions"])
    # a stale sample of the same step (as after a kill before the batch was logged), then a torn line
    (copy / PROMPTS_FILE).write_text("\n".join([json.dumps(stale), *lines]) + '\n{"traj": 0, "st')
    assert read_prompts(copy) == good
    (copy / PROMPTS_FILE).write_text(json.dumps(stale) + "\n")
    with pytest.raises(ValueError, match="no recorded prompt"):
        read_prompts(copy)


def test_buffer_rejects_rows_of_the_wrong_shape(tmp_path):
    buf = ReplayBuffer(tmp_path / "b.jsonl")
    with pytest.raises(ValueError, match="missing columns"):
        buf.add_round(0, [{"problem": "x"}])
    with pytest.raises(ValueError, match="weights for"):
        buf.set_weights([1.0], credit_round=0)


# ----------------------------------------------------------------------------- credit
def synthetic_rows(rng, problems=("A", "B"), rounds=2, trajs=5, nodes=4):
    rows = []
    for p in problems:
        for r in range(rounds):
            for t in range(trajs):
                final = float(rng.normal() * (10 if p == "B" else 1))
                for n in range(nodes):
                    rows.append(
                        {
                            "problem": p,
                            "round": r,
                            "trajectory": t,
                            "node": n,
                            "traj_best_reward": final,
                            "reward": float(rng.normal()),
                        }
                    )
    return rows


@pytest.mark.parametrize("percent", [5.0, 10.0, 25.0, 100.0])
def test_irft_credit_selects_the_top_percent_of_each_problem_by_final_best(percent):
    rows = synthetic_rows(np.random.default_rng(0))
    w = irft_weights(rows, percent)
    assert set(np.unique(w)) <= {0.0, 1.0}
    for p in ("A", "B"):
        idx = [i for i, r in enumerate(rows) if r["problem"] == p]
        chosen = [i for i in idx if w[i] == 1]
        assert len(chosen) == math.ceil(percent / 100 * len(idx))
        lowest_chosen = min(rows[i]["traj_best_reward"] for i in chosen)
        assert all(rows[i]["traj_best_reward"] <= lowest_chosen for i in idx if w[i] == 0)
    # intermediate rewards are ignored: shuffling them changes nothing
    shuffled = [{**r, "reward": -r["reward"]} for r in rows]
    assert np.array_equal(irft_weights(shuffled, percent), w)
    with pytest.raises(ValueError):
        irft_weights(rows, 0.0)


def test_irft_credit_over_the_whole_buffer_ranks_problems_together():
    rows = synthetic_rows(np.random.default_rng(1))
    w = irft_weights(rows, 10.0, scope="buffer")
    assert w.sum() == math.ceil(0.1 * len(rows))
    chosen = min(r["traj_best_reward"] for r, x in zip(rows, w) if x)
    assert all(r["traj_best_reward"] <= chosen for r, x in zip(rows, w) if not x)


def test_grpo_credit_is_group_normalised_over_trajectories():
    rows = synthetic_rows(np.random.default_rng(2))
    rows += [
        {"problem": "C", "round": 0, "trajectory": t, "node": 0, "traj_best_reward": 3.0, "reward": 0.0}
        for t in range(3)
    ]
    w = grpo_weights(rows)
    groups = {}
    for r, x in zip(rows, w):
        groups.setdefault((r["problem"], r["round"]), {})[r["trajectory"]] = (r["traj_best_reward"], x)
    for key, trajs in groups.items():
        finals = np.array([f for f, _ in trajs.values()])
        adv = np.array([a for _, a in trajs.values()])
        if key[0] == "C":
            assert np.all(adv == 0)
        else:
            assert np.allclose(adv, (finals - finals.mean()) / finals.std(), atol=1e-5)
    for r, x in zip(rows, w):  # every node carries its trajectory's advantage
        assert x == groups[(r["problem"], r["round"])][r["trajectory"]][1]
    assert np.array_equal(assign_credit(rows, "grpo"), w)
    with pytest.raises(ValueError, match="unknown credit rule"):
        assign_credit(rows, "nope")


# ----------------------------------------------------------------------------- weighted SFT (TRL)
@pytest.fixture(scope="module")
def tiny_lm(tiny_model_path):  # noqa: F811
    pytest.importorskip("trl")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_model_path), AutoTokenizer.from_pretrained(
        tiny_model_path
    )


def make_trainer(model, tokenizer, tmp_path, normalize="sequence"):
    import datasets

    from discoverygym.agents.irft.sft import SFTSettings, features, sft_config, weighted_sft_trainer

    data = [{**features(tokenizer, e), "weight": e["weight"]} for e in EXAMPLES]
    settings = SFTSettings(
        steps=1, batch_size=4, micro_batch_size=4, gradient_checkpointing=False, bf16=False
    )
    return weighted_sft_trainer()(
        model=model,
        args=sft_config(settings, tmp_path),
        processing_class=tokenizer,
        train_dataset=datasets.Dataset.from_list(data),
        normalize=normalize,
    )


def collate(trainer, tokenizer, examples):
    from discoverygym.agents.irft.sft import features

    return trainer.data_collator([{**features(tokenizer, e), "weight": e["weight"]} for e in examples])


def hand_nll(model, tokenizer, example):
    """Summed NLL of the completion (+ EOS) given the prompt: one unpadded sequence, plain logits."""
    import torch

    p = tokenizer(example["prompt"], add_special_tokens=False)["input_ids"]
    c = tokenizer(example["completion"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    ids = torch.tensor([p + c])
    logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
    return -sum(logp[len(p) + i - 1, tok] for i, tok in enumerate(c)), len(c)


@pytest.mark.parametrize("normalize", ["sequence", "token"])
def test_weighted_loss_equals_hand_computed_weighted_token_nll(tiny_lm, tmp_path, normalize):
    import torch

    model, tokenizer = tiny_lm
    trainer = make_trainer(model, tokenizer, tmp_path, normalize)
    model.eval()
    with torch.no_grad():
        loss = trainer.compute_loss(model, collate(trainer, tokenizer, EXAMPLES))
        terms = [hand_nll(model, tokenizer, e) for e in EXAMPLES]
    active = [(e["weight"], nll, n) for e, (nll, n) in zip(EXAMPLES, terms) if e["weight"] != 0]
    denom = len(active) if normalize == "sequence" else sum(n for _, _, n in active)
    expected = sum(w * float(nll) for w, nll, _ in active) / denom
    assert float(loss) == pytest.approx(expected, rel=1e-4)


def test_weight_zero_examples_do_not_change_the_gradient(tiny_lm, tmp_path):
    import torch

    model, tokenizer = tiny_lm
    trainer = make_trainer(model, tokenizer, tmp_path)
    model.eval()  # no dropout

    def grads(examples):
        model.zero_grad(set_to_none=True)
        trainer.compute_loss(model, collate(trainer, tokenizer, examples)).backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    with_zero = grads(EXAMPLES)
    without = grads([e for e in EXAMPLES if e["weight"] != 0])
    assert len(with_zero) == len(without) > 0
    assert any(g.abs().max() > 0 for g in without)
    for a, b in zip(with_zero, without):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    model.zero_grad(set_to_none=True)


# ----------------------------------------------------------------------------- Tinker datums
def test_tinker_datums_give_the_same_weighted_loss():
    pytest.importorskip("tinker")
    from discoverygym.agents.irft.sft import features
    from discoverygym.agents.irft.tinker_sft import batch_datums

    rng = np.random.default_rng(0)
    vocab = 11
    examples = []
    for w in (1.0, 0.5, 0.0, -2.0):
        p, c = (
            rng.integers(vocab, size=rng.integers(2, 6)).tolist(),
            rng.integers(vocab, size=rng.integers(1, 6)).tolist(),
        )
        mask = [True] * len(c)
        mask[0] = len(c) == 1  # first completion token forced (not trained) unless it is the only one
        examples.append({"prompt_ids": p, "completion_ids": c, "completion_mask": mask, "weight": w})
    feats = [features(None, e) for e in examples]
    # a fake model: log-probs per (example, position, token)
    tables = [np.log(rng.dirichlet(np.ones(vocab), size=len(f["input_ids"]))) for f in feats]
    for normalize in ("sequence", "token"):
        datums = batch_datums(feats, [e["weight"] for e in examples], normalize)
        assert len(datums) == 3  # the zero-weight example is not sent
        active = [(e, t) for e, t in zip(examples, tables) if e["weight"] != 0]
        tinker_loss = 0.0
        for d, (e, table) in zip(datums, active):
            ids = e["prompt_ids"] + e["completion_ids"]
            assert d.model_input.to_ints() == ids[:-1]
            target = d.loss_fn_inputs["target_tokens"].tolist()
            weights = d.loss_fn_inputs["weights"].tolist()
            assert target == ids[1:] and len(weights) == len(target)
            tinker_loss += -sum(wt * table[t, tok] for t, (tok, wt) in enumerate(zip(target, weights)))
        hand, n_tokens = 0.0, 0
        for e, table in active:
            p = len(e["prompt_ids"])
            trained = [i for i, m in enumerate(e["completion_mask"]) if m]
            hand += e["weight"] * -sum(table[p + i - 1, e["completion_ids"][i]] for i in trained)
            n_tokens += len(trained)
        hand /= len(active) if normalize == "sequence" else n_tokens
        assert tinker_loss == pytest.approx(hand, rel=1e-5)


def test_tinker_sft_steps_follow_the_cosine_schedule():
    pytest.importorskip("tinker")
    torch = pytest.importorskip("torch")
    from transformers import get_cosine_schedule_with_warmup

    from discoverygym.agents.irft.sft import SFTSettings
    from discoverygym.agents.irft.tinker_sft import tinker_weighted_sft

    class Done:
        def __init__(self, value=None):
            self.value = value

        def result(self):
            return self.value

    class FakeClient:
        def __init__(self):
            self.calls = []

        def forward_backward(self, data, loss_fn):
            self.calls.append(("fb", len(data), loss_fn))
            return Done()

        def optim_step(self, params):
            self.calls.append(("opt", params.learning_rate))
            return Done()

    examples = [{"prompt_ids": [1, 2], "completion_ids": [3, 4], "weight": w} for w in (1.0, 0.0, 1.0, 1.0)]
    settings = SFTSettings(steps=6, batch_size=2, lr=1e-3, warmup_ratio=0.34)
    client = FakeClient()
    out = tinker_weighted_sft(client, None, examples, settings)
    assert out["steps"] == 6 and out["examples"] == 3 and out["dropped"] == 1
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=settings.lr)
    sched = get_cosine_schedule_with_warmup(opt, num_warmup_steps=2, num_training_steps=6)
    expected = []
    for _ in range(6):
        expected.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    assert [c[1] for c in client.calls if c[0] == "opt"] == pytest.approx(expected)
    assert all(c == ("fb", 2, "cross_entropy") for c in client.calls if c[0] == "fb")


def test_tinker_backend_trains_then_samples_from_the_new_weights(tmp_path):
    pytest.importorskip("tinker")
    from discoverygym.agents.irft.backends import TinkerBackend
    from discoverygym.agents.irft.sft import SFTSettings

    class Done:
        def result(self):
            return None

    class Training:
        def __init__(self):
            self.steps, self.saved = 0, []

        def forward_backward(self, data, loss_fn):
            return Done()

        def optim_step(self, params):
            self.steps += 1
            return Done()

        def save_weights_and_get_sampling_client(self, name):
            self.saved.append(name)
            return f"sampler:{name}"

    class FakeTinkerPolicy:  # the attributes TinkerPolicy exposes, without the service
        name = "tinker:fake"

        def __init__(self):
            self.training, self.tokenizer, self.sampler, self.version = Training(), None, "base", 0
            self.checkpoints = []

        def save_checkpoint(self, path):
            self.checkpoints.append(("save", Path(path)))

        def load_checkpoint(self, path):
            self.checkpoints.append(("load", Path(path)))

    policy = FakeTinkerPolicy()
    backend = TinkerBackend(policy)
    rows = [{"prompt_ids": [1, 2], "completion_ids": [3], "weight": 1.0}]
    out = backend.train(rows, SFTSettings(steps=3, batch_size=1), tmp_path, None)
    assert out["steps"] == 3 and policy.training.steps == 3
    assert policy.version == 1 and policy.sampler == "sampler:irft-1"
    assert backend.train([{**rows[0], "weight": 0.0}], SFTSettings(steps=3), tmp_path, None)["steps"] == 0
    assert policy.sampler == "sampler:irft-1"  # nothing trained: the sampler is unchanged
    backend.save(tmp_path / "c")
    backend.load(tmp_path / "c")
    assert policy.checkpoints == [("save", tmp_path / "c"), ("load", tmp_path / "c")]


# ----------------------------------------------------------------------------- one full round
def tensorboard_tags(run_dir: Path) -> set[str]:
    """Scalar and histogram tags in the run's event files (TFRecord framing read by hand)."""
    from tensorboardX.proto import event_pb2

    tags = set()
    for path in run_dir.glob("events.out.tfevents.*"):
        data = path.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            (length,) = struct.unpack("<Q", data[pos : pos + 8])
            event = event_pb2.Event.FromString(data[pos + 12 : pos + 12 + length])
            tags.update(v.tag for v in event.summary.value)
            pos += 12 + length + 4
    return tags


def test_one_round_completes_on_a_toy_problem_and_resumes_after_a_crash(tiny_model_path, tmp_path):  # noqa: F811
    pytest.importorskip("trl")
    from discoverygym.agents.irft.backends import HFBackend
    from discoverygym.agents.irft.loop import IRFT, IRFTConfig
    from discoverygym.agents.policies.hf import HFPolicy

    cfg = IRFTConfig(
        problems=["ErdosMinOverlap-v0"],
        heldout=["FirstAutocorrelation-v0"],
        policy=f"hf:{tiny_model_path}",
        rounds=1,
        trajectories=2,
        steps=2,
        candidates=2,
        top_percent=[50.0],
        eval_trajectories=1,
        eval_steps=1,
        eval_candidates=2,
        sft={
            "steps": 2,
            "batch_size": 4,
            "micro_batch_size": 2,
            "lr": 1e-3,
            "max_length": 4096,
            "gradient_checkpointing": False,
        },
    )
    backend = HFBackend(HFPolicy(tiny_model_path, device="cpu", max_new_tokens=12, lora_rank=4))
    before = {k: v.clone() for k, v in backend.policy.state_dict().items()}

    class Crash(RuntimeError):
        pass

    class CrashingBackend(HFBackend):
        def train(self, *args, **kwargs):
            raise Crash("killed during SFT")

    run_dir = tmp_path / "irft"
    with pytest.raises(Crash):
        IRFT(cfg, run_dir, executor="inline", backend=CrashingBackend(backend.policy)).run()
    state = json.loads((run_dir / "state.json").read_text())
    assert state["round"] == 0 and "credit" in state["done"] and "sft" not in state["done"]
    search_dir = run_dir / "rounds/r000/search/ErdosMinOverlap-v0"
    n_log = len(RunLog(search_dir).read_records())
    with pytest.raises(ValueError, match="already holds"):
        IRFT(cfg, run_dir, executor="inline", backend=backend)

    summaries = IRFT(cfg, run_dir, resume=True, executor="inline", backend=backend).run()
    assert len(RunLog(search_dir).read_records()) == n_log  # nothing sampled or evaluated again
    rows = ReplayBuffer(run_dir / "buffer.jsonl").rows()
    assert len(rows) == 2 * 2 * 2
    assert all(r["prompt"] and r["prompt_ids"] and r["completion_ids"] for r in rows)
    assert sum(r["weight"] for r in rows) == 4 and {r["credit_round"] for r in rows} == {0}
    for r in rows:  # the stored prompt is what the model was conditioned on
        assert backend.policy.tokenizer.decode(r["prompt_ids"], skip_special_tokens=False) == r["prompt"]
    assert [s["round"] for s in summaries] == ["base", 0]
    assert summaries[1]["sft"]["steps"] == 2 and summaries[1]["sft"]["examples"] == 4
    held = summaries[1]["heldout"]["FirstAutocorrelation-v0"]
    assert held["evaluations"] == 2 and held["best_score"] is not None
    after = backend.policy.state_dict()
    assert any(not np.allclose(before[k].numpy(), after[k].numpy()) for k in before)  # the adapter trained
    assert (run_dir / "checkpoints/round-000/adapter_model.safetensors").exists()
    tags = tensorboard_tags(run_dir)
    assert {
        "sft/loss",
        "buffer/traj_best_reward",
        "credit/nonzero",
        "eval/FirstAutocorrelation-v0/reward_best",
        "score/best",  # the same tag as train and search (one training problem: no /<env_id>)
        "score/record",
    } <= tags
    # resuming a finished run does nothing
    assert IRFT(cfg, run_dir, resume=True, executor="inline", backend=backend).run() == summaries
    assert json.loads((run_dir / "state.json").read_text()) == {"round": 1, "done": []}


def test_post_train_cli_usage_errors(tmp_path, capsys):
    from discoverygym.cli.post_train import main

    assert main(["--run-dir", str(tmp_path / "x"), "--policy", "hf:nowhere"]) == 2
    assert "--problems is required" in capsys.readouterr().err
    assert main(["--run-dir", str(tmp_path / "x"), "--resume"]) == 2
    assert "holds no post-train run" in capsys.readouterr().err
    assert main(["--run-dir", str(tmp_path / "x"), "--problems", "Nope-v0", "--policy", "hf:x"]) == 2
    assert (
        main(["--run-dir", str(tmp_path / "x"), "--problems", "ErdosMinOverlap-v0", "--policy", "mutation"])
        == 2
    )
    assert "hf:" in capsys.readouterr().err


# ----------------------------------------------------------------------------- CLI checks before any start
BASE = [
    "--problems", "CirclePacking-26-v0", "--policy", "hf:/nonexistent/model",
    "--trajectories", "1", "--steps", "1", "--candidates", "1", "--rounds", "1",
]  # fmt: skip


def post_train(argv, capsys):
    """``(exit code, stderr)`` of ``discoverygym post-train ARGV`` (SystemExit from argparse included)."""
    from discoverygym.cli.post_train import main

    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    return rc, err


def assert_usage_error(argv, capsys, run_dir, *needles):
    """Exit 2 with one line naming ``needles``, no traceback, no 'resumable', and no run directory."""
    rc, err = post_train([*argv, "--run-dir", str(run_dir)], capsys)
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and "resumable" not in err
    for needle in needles:
        assert needle in err, err
    assert not Path(run_dir).exists()
    return err


@pytest.mark.parametrize("lr", ["inf", "nan", "-1", "0", "abc"])
def test_post_train_refuses_non_finite_or_non_positive_lr(lr, tmp_path, capsys):
    assert_usage_error([*BASE, "--lr", lr], capsys, tmp_path / "run", "--lr")


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--normalize", "bogus"], "normalize"),
        (["--selector", "bogus"], "selector"),
        (["--env-kwargs", "[1]"], "JSON object"),
        (["--task-options", "[1]"], "JSON object"),
        (["--task-options", "{not json"], "invalid JSON"),
        (["--task-options", '{"no_such_option": 1}'], "no_such_option"),
        (["--policy-kwargs", "[1]"], "JSON object"),
        (["--credit", "bogus"], "credit"),
        (["--credit-scope", "bogus"], "credit_scope"),
        (["--max-length", "0"], "max_length"),
        (["--eval-steps", "0"], "eval_steps"),
        (["--workers", "0"], "--workers"),
        (["--seed", "-1"], "seed"),
    ],
)
def test_post_train_validates_the_whole_configuration_before_creating_the_run_dir(
    flags, needle, tmp_path, capsys
):
    assert_usage_error([*BASE, *flags], capsys, tmp_path / "run", needle)


def test_post_train_refuses_a_problem_both_trained_on_and_held_out(tmp_path, capsys):
    argv = [*BASE, "--heldout", "ErdosMinOverlap-v0,CirclePacking-26-v0"]
    assert_usage_error(argv, capsys, tmp_path / "run", "CirclePacking-26-v0", "held-out")


@pytest.mark.parametrize("flag", ["--problems", "--heldout"])
def test_post_train_refuses_duplicate_problems(flag, tmp_path, capsys):
    argv = [*BASE, flag, "ErdosMinOverlap-v0,ErdosMinOverlap-v0"]
    assert_usage_error(argv, capsys, tmp_path / "run", "ErdosMinOverlap-v0", "more than once")


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--top-percent", "10,10,10", "--rounds", "2"], "one value per round"),
        (["--top-percent", "10,5"], "one value per round"),  # --rounds 1 in BASE
        (["--top-percent", "10,,5"], "empty items"),
        (["--top-percent", "10,"], "empty items"),
        (["--top-percent", "0"], "top_percent"),
        (["--top-percent", "nan"], "top_percent"),
        (["--problems", "CirclePacking-26-v0,"], "empty items"),
        (["--sft-steps", "0"], "--sft-steps"),
        (["--batch-size", "0"], "--batch-size"),
        (["--micro-batch-size", "0"], "--micro-batch-size"),
        (["--micro-batch-size", "3", "--batch-size", "2"], "must not exceed"),
        (["--micro-batch-size", "5", "--batch-size", "12"], "multiple"),
    ],
)
def test_post_train_refuses_silently_ignored_schedule_and_batch_values(flags, needle, tmp_path, capsys):
    assert_usage_error([*BASE, *flags], capsys, tmp_path / "run", needle)


def parse(argv):
    import argparse

    from discoverygym.cli.post_train import _add_arguments

    parser = argparse.ArgumentParser()
    _add_arguments(parser)
    return parser.parse_args(argv)


def test_post_train_top_percent_is_one_value_or_one_per_round_and_micro_batch_divides(tmp_path):
    from discoverygym.cli.post_train import config_from_args

    run = ["--run-dir", str(tmp_path / "run")]
    cfg = config_from_args(parse([*BASE, "--rounds", "3", "--top-percent", "10,10,5", *run]))
    assert cfg.top_percent == [10.0, 10.0, 5.0]
    cfg = config_from_args(parse([*BASE, "--rounds", "3", "--top-percent", "7", *run]))
    assert [cfg.top_percent_at(r) for r in range(3)] == [7.0, 7.0, 7.0]
    # --batch-size alone: the micro-batch is its largest divisor <= 8
    assert config_from_args(parse([*BASE, "--batch-size", "12", *run])).sft["micro_batch_size"] == 6
    assert config_from_args(parse([*BASE, "--batch-size", "2", *run])).sft["micro_batch_size"] == 2
    assert not (tmp_path / "run").exists()


def test_post_train_task_options_is_the_name_and_env_kwargs_an_alias(tmp_path):
    from discoverygym.cli.post_train import config_from_args

    run = ["--run-dir", str(tmp_path / "run")]
    for flag in ("--task-options", "--env-kwargs"):
        cfg = config_from_args(parse([*BASE, flag, '{"program_budget_s": 30}', *run]))
        assert cfg.env_kwargs == {"program_budget_s": 30}


def test_post_train_run_dir_that_is_a_file(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    rc, err = post_train([*BASE, "--run-dir", str(afile)], capsys)
    assert rc == 2 and f"{afile} exists and is not a directory" in err and "Errno" not in err
    rc, err = post_train([*BASE, "--run-dir", str(afile / "sub")], capsys)
    assert rc == 2 and "is not a directory" in err and "Traceback" not in err and "Errno" not in err
    assert afile.read_text() == "x"


def fake_train_run(d: Path) -> None:
    (d / "checkpoints").mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"env_id": "CirclePacking-26-v0", "steps": 50, "groups": 8}))
    (d / "checkpoints" / "latest.json").write_text(json.dumps({"step": 1, "dir": "step-1"}))


def fake_search_run(d: Path) -> None:
    d.mkdir(parents=True)
    cfg = {"env_id": "CirclePacking-26-v0", "policy": "mutation", "C": 1, "L": 1, "K": 1}
    (d / "config.json").write_text(json.dumps(cfg))
    (d / "archive.jsonl").write_text("")


@pytest.mark.parametrize(("make", "kind"), [(fake_train_run, "train"), (fake_search_run, "search")])
def test_post_train_names_a_train_or_search_run_dir(make, kind, tmp_path, capsys):
    d = tmp_path / kind
    make(d)
    before = sorted(p.name for p in d.rglob("*"))
    rc, err = post_train(["--run-dir", str(d), "--resume"], capsys)
    assert rc == 2 and f"holds a {kind} run" in err and "not a post-train run" in err, err
    assert "conflicting" not in err
    rc, err = post_train([*BASE, "--run-dir", str(d), "--resume"], capsys)
    assert rc == 2 and f"holds a {kind} run" in err, err
    rc, err = post_train([*BASE, "--run-dir", str(d)], capsys)
    assert rc == 2 and f"holds a {kind} run" in err, err
    assert sorted(p.name for p in d.rglob("*")) == before  # nothing written


def test_post_train_resume_refuses_a_stored_configuration_that_is_invalid(tmp_path, capsys):
    from dataclasses import asdict

    from discoverygym.agents.irft.loop import IRFTConfig

    d = tmp_path / "run"
    d.mkdir()
    cfg = asdict(IRFTConfig(problems=["CirclePacking-26-v0"], policy="hf:/nonexistent", sft={"lr": 1e-5}))
    cfg["sft"]["lr"] = float("inf")
    (d / "config.json").write_text(json.dumps(cfg))
    (d / "state.json").write_text(json.dumps({"round": 0, "done": []}))
    rc, err = post_train(["--run-dir", str(d), "--resume"], capsys)
    assert rc == 2 and "lr" in err and "Traceback" not in err, err


def test_post_train_tinker_without_key_or_service_fails_in_one_line(tmp_path, capsys, monkeypatch):
    pytest.importorskip("tinker")
    argv = ["--problems", "CirclePacking-26-v0", "--policy", "tinker:Qwen/Qwen3-8B"]
    monkeypatch.delenv("TINKER_API_KEY", raising=False)
    assert_usage_error(argv, capsys, tmp_path / "run", "TINKER_API_KEY")
    monkeypatch.setenv("TINKER_API_KEY", "not-a-key")
    monkeypatch.setenv("TINKER_BASE_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    rc, err = post_train([*argv, "--run-dir", str(tmp_path / "run")], capsys)
    assert rc == 3 and "unreachable" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()


def test_post_train_refuses_untrainable_policies(tmp_path, capsys):
    for spec in ("openai:http://localhost:1/v1", "mutation", "vllm:x"):
        argv = [*BASE[:2], "--policy", spec]
        assert_usage_error(argv, capsys, tmp_path / "run", "hf:PATH or tinker:MODEL")


def test_post_train_errors_through_the_main_command(tmp_path, capsys):
    from discoverygym.cli import main

    with pytest.raises(SystemExit) as exc:  # an argument error: argparse exits
        main(["post-train", *BASE, "--lr", "inf", "--run-dir", str(tmp_path / "run")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--lr" in err
    assert (
        main(["post-train", *BASE, "--heldout", "CirclePacking-26-v0", "--run-dir", str(tmp_path / "run")])
        == 2
    )
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "held-out" in err
    assert not (tmp_path / "run").exists()
