"""Warm start: weighted SFT on prompt → valid-program pairs made without an LLM (before any RL).

A small base model (SmolLM2-135M) writes 0–1 valid programs in 64 (``benchmarks/results/llm-outcomes.md``),
so every reward of a TTT-Discover group is the failure reward and the loop has no signal. The warm
start teaches it the answer format and the env's API first:

1. **Data** (no LLM): for every warm-up env, its start state's program (the bundled example) and
   rule-made variants of it (:mod:`~discoverygym.agents.irft.variants`: numeric literals perturbed,
   comments and docstrings dropped), each judged by the env's own verifier; only valid ones are
   kept. Each kept program ``v`` becomes one example whose prompt is exactly what sampling shows
   (:func:`~discoverygym.agents.policies.llm.context_messages` of a parent state, the chat template,
   the answer prefix) and whose completion is ``v``, the closing fence and end-of-sequence. The
   parent is the start state for most examples and, with probability ``variant_parents``, another
   kept variant (its program and score), so the model sees both the first step of a run and a later one.
2. **SFT**: :func:`~discoverygym.agents.irft.prefix_sft.run_prefix_sft` (TES Algorithm 2's weighted
   loss and TRL's schedule, each shared prompt run once per step; the policy's LoRA adapter;
   weight 1 per example: the data hold only valid programs), then the adapter is saved to
   ``<run_dir>/adapter``. It loads with ``--policy hf:MODEL --policy-kwargs '{"adapter": DIR}'``
   (sampling), or as ``train --warm-start DIR`` (merged into the base weights, so that the KL term
   of TTT-Discover anchors to the warm model and a fresh adapter learns on top).

Run directory: ``config.json`` (``"kind": "post-train"``, ``"warmup": true``), ``data.jsonl`` (one
line per example: env, parent, score, program, token ids), ``data_summary.json`` (per env:
variants tried, valid, distinct scores), ``adapter/`` and ``summary.json``. A run resumes from its
last finished stage (data, then SFT).

Source: issue 49 (a warm start that makes a small model productive); TES Algorithm 2 for the
weighted SFT loss.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from discoverygym.agents.irft.sft import SFTSettings
from discoverygym.agents.irft.variants import compact, literal_variants
from discoverygym.io import CONFIG_FILE, atomic_write_json

__all__ = ["STEPS_PER_ENV", "WARMUP_LORA", "WarmupConfig", "build_examples", "judge_variants", "run_warmup"]

DATA_FILE, DATA_SUMMARY, ADAPTER_DIR, SUMMARY_FILE = "data.jsonl", "data_summary.json", "adapter", "summary.json"


#: SFT steps per warm-up env (one example per step): two passes over its 24 examples
STEPS_PER_ENV = 48

#: the LoRA of a warm start unless ``policy_kwargs`` name their own: rank 16 on the attention
#: projections (the issue's probe; names of Llama-style models such as SmolLM2)
WARMUP_LORA = {"lora_rank": 16, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}


def _default_sft(n_envs: int = 1) -> SFTSettings:
    """The warm start's SFT: :data:`STEPS_PER_ENV` steps of one example per env, lr 1e-3.

    Measured on SmolLM2 (Erdős, 24 examples, rank 16 q/k/v/o; valid answers of 32 at T = 1):
    24 steps at 5e-4 with the prompt's gradient: 6; 48 steps at 1e-3 with it: 18; 96 steps at 1e-3
    without it: 2 (``benchmarks/results/llm-outcomes.md``).
    """
    return SFTSettings(steps=STEPS_PER_ENV * max(1, n_envs), batch_size=1, micro_batch_size=1, lr=1e-3,
                       max_length=2048)


@dataclass
class WarmupConfig:
    """What one warm start does (``discoverygym post-train --warmup``).

    Attributes:
        problems: env ids whose programs make the warm-up data (code mode; at least one).
        heldout: env ids kept out of the data (listed in the summary so that the study says what was held out).
        policy: the generator, ``hf:PATH_OR_ID`` (a local transformers model with a LoRA adapter).
        policy_kwargs: its constructor arguments (``max_new_tokens``...); without ``lora_rank`` or
            ``target_modules`` the LoRA is :data:`WARMUP_LORA` (rank 16 on q/k/v/o).
        variants: valid programs to keep per env (the start program counts as one; >= 1).
        tries: variants tried per kept one at most (the rest of the budget is dropped).
        sigma: log-scale of the literal perturbation (:func:`~discoverygym.agents.irft.variants.literal_variant`).
        timeout_s: sandbox time limit per judged variant (seconds).
        variant_parents: share of examples whose prompt shows another kept program as the parent
            (a later step's prompt) instead of the start state; the rest share each env's start
            prompt, which the trainer scores once per step (:mod:`~discoverygym.agents.irft.prefix_sft`).
            Default 0: every example answers its env's start prompt (the cheapest; what the first
            step of a run shows).
        prompt_grad: pass the gradient through the prompt's positions too (exact SFT; default on).
            Off, the adapter learns through the answer's positions only (a third of the prompt's
            cost), and that measured far worse on SmolLM2: 2 valid Erdős answers of 32 after 96
            steps, against 18 of 32 with it after 48 (:func:`_default_sft`).
        seed: data and SFT seed.
        sft: the weighted-SFT settings (:class:`~discoverygym.agents.irft.sft.SFTSettings`).

    Raises:
        ValueError: (``validate``) an empty ``problems``, an env both trained and held out, an unknown
            env id, ``variants``/``tries`` < 1, a non-positive ``sigma``/``timeout_s``, bad SFT settings,
            or a policy that is not ``hf:``.
    """

    problems: list[str]
    heldout: list[str] = field(default_factory=list)
    policy: str = "hf:smollm2"
    policy_kwargs: dict = field(default_factory=dict)
    variants: int = 24
    tries: int = 4
    sigma: float = 0.3
    timeout_s: float = 30.0
    variant_parents: float = 0.0
    prompt_grad: bool = True
    seed: int = 0
    sft: SFTSettings = field(default_factory=_default_sft)

    def validate(self, *, check_ids: bool = True) -> None:
        """Raise ``ValueError`` for a configuration no run can use (class docstring); ``check_ids=False``
        skips the registry lookup of the env ids (envs passed as objects, e.g. in tests)."""
        from discoverygym.envs.registry import option_names

        if not self.problems:
            raise ValueError("--warmup needs at least one env in --problems")
        both = sorted(set(self.problems) & set(self.heldout))
        if both:
            raise ValueError(f"{', '.join(both)} is both a warm-up env and held out")
        for env_id in [*self.problems, *self.heldout] if check_ids else []:
            option_names(env_id)  # ValueError naming the known ids
        for name in ("variants", "tries"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("sigma", "timeout_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        if not 0.0 <= self.variant_parents <= 1.0:
            raise ValueError(f"variant_parents must be in [0, 1], got {self.variant_parents!r}")
        if (self.policy_kwargs or {}).get("edit_format", "full") != "full":
            raise ValueError("the warm start teaches whole-program answers: edit_format must be 'full'")
        if not str(self.policy).startswith("hf:"):
            raise ValueError(f"the warm start trains a local model: --policy hf:PATH_OR_ID, got {self.policy!r}")
        self.sft.validate()

    def to_json(self) -> dict:
        """The configuration as JSON (``config.json``), with ``"kind": "post-train"`` and ``"warmup": true``."""
        return {"kind": "post-train", "warmup": True, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict) -> WarmupConfig:
        """Rebuild from :meth:`to_json` (unknown keys are refused).

        Raises:
            ValueError: not a warm-up configuration, or an unknown key.
        """
        data = {k: v for k, v in dict(data).items() if k not in ("kind", "warmup")}
        sft = SFTSettings(**dict(data.pop("sft", {}) or {}))
        try:
            return cls(**data, sft=sft)
        except TypeError as exc:
            raise ValueError(f"not a warm-up configuration: {exc}") from None


def _make_env(env_id: str, timeout_s: float) -> Any:
    """``gym.make(env_id)`` in code mode with a sandbox time limit of ``timeout_s`` where the env takes one."""
    import gymnasium as gym

    import discoverygym.envs  # noqa: F401 - registers the ids
    from discoverygym.envs.registry import PROGRAM_TASKS, option_names
    from discoverygym.sandbox.python import SandboxLimits, bwrap_available

    if env_id in PROGRAM_TASKS:
        names = option_names(env_id)
        key = "time_limit_s" if names and "time_limit_s" in names else "timeout_s"
        options = {k: v for k, v in (("allow_unconfined", not bwrap_available()), (key, timeout_s))
                   if names is None or k in names}
        return gym.make(env_id, **options)
    return gym.make(env_id, action_mode="code", sandbox=SandboxLimits(timeout_s=timeout_s, memory_mb=2048))


def judge_variants(env_id: str, want: int, rng: np.random.Generator, *, tries: int = 4, sigma: float = 0.3,
                   timeout_s: float = 30.0, progress: Callable[[str], None] | None = None,
                   env: Any = None, source: str | None = None) -> tuple[Any, Any, list[Any], dict]:
    """Judge rule-made variants of ``env_id``'s start program until ``want`` valid ones are kept.

    Args:
        env_id: a registered env id (code mode).
        want: valid programs to keep, the start program included (>= 1).
        rng: the random generator of the variants.
        tries, sigma, timeout_s: as :class:`WarmupConfig`.
        progress: called with one line per judged batch.
        env: an env to judge with instead of ``gym.make(env_id)`` (tests pass a toy env; code mode).
        source: the program to vary instead of the start state's (or the bundled example).

    Returns:
        ``(env, start, kept, stats)``: the env (open; the caller closes it), the start state, the kept
        valid :class:`~discoverygym.types.State` objects with distinct programs (start first), and
        ``{"env", "tried", "valid", "distinct_scores", "best", "outcomes"}``.

    Raises:
        ValueError: the start state has no program to vary (the env shows none) or the start program
            itself is invalid.
    """
    from discoverygym.agents.prompts import _example_program

    env = env if env is not None else _make_env(env_id, timeout_s)
    _, info = env.reset(seed=0)
    start = info["state"]
    problem = env.unwrapped.problem
    source = source or start.code or _example_program(problem)
    if not source:
        raise ValueError(f"{env_id}: its start state has no program to vary")
    first = env.unwrapped.evaluate(compact(source), parent=start, seed=0)
    if not first.valid:
        raise ValueError(f"{env_id}: its start program is not valid ({first.error})")
    kept, seen, outcomes = [first], {compact(source)}, {"valid": 1}
    tried = 1
    budget = max(1, tries * want)
    while len(kept) < want and tried < budget:
        batch = [v for v in literal_variants(source, min(8, budget - tried), rng, sigma=sigma) if v not in seen]
        if not batch:
            break
        for program in batch:
            seen.add(program)
            tried += 1
            state = env.unwrapped.evaluate(program, parent=start, seed=0)
            key = "valid" if state.valid else "invalid"
            outcomes[key] = outcomes.get(key, 0) + 1
            if state.valid and state.score is not None and math.isfinite(state.score):
                kept.append(state)
                if len(kept) >= want:
                    break
        if progress:
            progress(f"{env_id}: {len(kept)}/{want} valid of {tried} judged")
    scores = [s.score for s in kept]
    higher = getattr(problem, "direction", "max") == "max"  # Direction is a str enum
    stats = {"env": env_id, "tried": tried, "valid": len(kept), "distinct_scores": len(set(scores)),
             "best": (max(scores) if higher else min(scores)) if scores else None,
             "start_score": getattr(start, "score", None), "outcomes": outcomes}
    return env, start, kept, stats


def build_examples(policy: Any, env_id: str, problem: Any, start: Any, kept: Sequence[Any],
                   rng: np.random.Generator, *, variant_parents: float = 0.25) -> list[dict]:
    """One SFT example per kept program: the prompt sampling would show, the program as the answer.

    Args:
        policy: an :class:`~discoverygym.agents.policies.hf.HFPolicy` (its tokenizer, system message,
            edit format and answer prefix make the prompt exactly as :meth:`HFPolicy.sample` does).
        env_id, problem, start: the env id, its problem and start state.
        kept: valid states (``.code``, ``.score``), e.g. from :func:`judge_variants`.
        rng: chooses each example's parent.
        variant_parents: probability that an example's parent is another kept program (its code and
            score shown, as a later step of a run shows) instead of the start state.

    Returns:
        dicts ``{"env", "parent", "score", "program", "prompt_ids", "completion_ids", "weight"}``
        (token ids: lists of int; ``completion_ids`` end with the closing fence and EOS; weight 1.0).
    """
    from discoverygym.agents.policies.llm import context_messages, encode_chat
    from discoverygym.policy import SamplingContext

    tok = policy.tokenizer
    language = getattr(problem, "language", "python") or "python"
    eos = [int(tok.eos_token_id)] if tok.eos_token_id is not None else []
    out = []
    for i, state in enumerate(kept):
        others = [j for j in range(len(kept)) if j != i]
        use_start = not others or rng.random() >= variant_parents
        parent = start if use_start else kept[int(rng.choice(others))]
        ctx = SamplingContext(parent, (parent,), problem, "code")
        prefix = policy._answer_prefix(language, ctx)
        prefix_ids = list(tok(prefix, add_special_tokens=False)["input_ids"]) if prefix else []
        prompt_ids = encode_chat(tok, context_messages(ctx, policy.system, policy.edit_format)) + prefix_ids
        answer = ("" if prefix.startswith("```") else f"```{language}\n") + state.code.rstrip("\n") + "\n```"
        completion_ids = list(tok(answer, add_special_tokens=False)["input_ids"]) + eos
        out.append({"env": env_id, "parent": "start" if use_start else "variant", "score": float(state.score),
                    "program": state.code, "prompt_ids": [int(t) for t in prompt_ids],
                    "completion_ids": [int(t) for t in completion_ids], "weight": 1.0})
    return out


def run_warmup(config: WarmupConfig, run_dir: str | os.PathLike, *, resume: bool = False,
               policy: Any = None, envs: dict[str, Any] | None = None, sources: dict[str, str] | None = None,
               progress: Callable[[str], None] | None = None) -> dict:
    """Run (or resume) one warm start into ``run_dir``; returns the summary (also ``summary.json``).

    Args:
        config: the :class:`WarmupConfig` (validated here; on resume the stored one is used).
        run_dir: a new directory, or with ``resume`` one that holds a warm-up run.
        resume: continue from the last finished stage.
        policy: the HF policy to train (tests pass a tiny one); ``None`` builds ``config.policy``.
        envs: env objects by id to judge with instead of ``gym.make`` (tests; their ids are not looked up).
        sources: programs to vary by env id instead of the start programs (tests).
        progress: called with one line per stage and per judged batch.

    Returns:
        ``{"adapter", "examples", "data": [per-env stats], "sft": {...}, "wall_s", "heldout"}``.

    Raises:
        ValueError: a bad configuration or run directory (:func:`~discoverygym.agents.irft.loop.check_run_dir`).
    """
    from discoverygym.agents.irft.loop import check_run_dir
    from discoverygym.agents.irft.prefix_sft import run_prefix_sft

    say = progress or (lambda _m: None)
    d = Path(run_dir)
    stored = check_run_dir(d, resume=resume)
    if stored is not None:
        if not stored.get("warmup"):
            raise ValueError(f"cannot resume {d} with --warmup: it holds an IRFT post-train run")
        config = WarmupConfig.from_json(stored)
    config.validate(check_ids=not envs)
    d.mkdir(parents=True, exist_ok=True)
    if stored is None:
        atomic_write_json(d / CONFIG_FILE, config.to_json())
    t0 = time.perf_counter()
    if policy is None:
        from discoverygym.agents.policies.hf import HFPolicy

        lora = WARMUP_LORA if not {"lora_rank", "target_modules"} & set(config.policy_kwargs) else {}
        policy = HFPolicy(config.policy.split(":", 1)[1], **{"seed": config.seed, **lora, **config.policy_kwargs})
    data_path = d / DATA_FILE
    if not (d / DATA_SUMMARY).exists():
        rng = np.random.default_rng(config.seed)
        examples, stats = [], []
        for env_id in config.problems:
            say(f"judging variants of {env_id}'s program")
            env, start, kept, st = judge_variants(env_id, config.variants, rng, tries=config.tries, sigma=config.sigma,
                                                  timeout_s=config.timeout_s, progress=say,
                                                  env=(envs or {}).get(env_id), source=(sources or {}).get(env_id))
            try:
                examples += build_examples(policy, env_id, env.unwrapped.problem, start, kept, rng,
                                           variant_parents=config.variant_parents)
            finally:
                if not envs or env_id not in envs:
                    env.close()
            stats.append(st)
        tmp = data_path.with_name(DATA_FILE + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(e) + "\n" for e in examples)
        os.replace(tmp, data_path)
        atomic_write_json(d / DATA_SUMMARY, stats)
    stats = json.loads((d / DATA_SUMMARY).read_text())
    examples = [json.loads(line) for line in data_path.read_text().splitlines() if line.strip()]
    adapter = d / ADAPTER_DIR
    if not (adapter / "adapter_model.safetensors").exists():
        say(f"weighted SFT on {len(examples)} examples ({config.sft.steps} steps of {config.sft.batch_size})")
        losses: list[float] = []

        def log(step: int, logs: dict) -> None:
            if "loss" in logs:
                losses.append(float(logs["loss"]))
                say(f"SFT step {step}/{config.sft.steps}: loss {losses[-1]:.4g}")

        sft = run_prefix_sft(policy.model, examples, config.sft, pad_id=policy.tokenizer.pad_token_id or 0,
                             prompt_grad=config.prompt_grad, on_log=log)
        sft["losses"] = losses
        tmp_adapter = d / (ADAPTER_DIR + ".tmp")
        policy.save_adapter(tmp_adapter)
        os.replace(tmp_adapter, adapter)
        atomic_write_json(d / "sft.json", sft)
    sft = json.loads((d / "sft.json").read_text()) if (d / "sft.json").exists() else {}
    summary = {"adapter": str(adapter), "examples": len(examples), "data": stats, "sft": sft,
               "heldout": list(config.heldout), "wall_s": time.perf_counter() - t0}
    atomic_write_json(d / SUMMARY_FILE, summary)
    return summary
