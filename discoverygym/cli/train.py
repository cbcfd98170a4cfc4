"""``discoverygym train`` and ``discoverygym compare``: online RL runs from the command line.

Wired into the main command by :mod:`discoverygym.cli` (``add_parsers`` in its parser, ``run`` in
``main``); torch is imported lazily.

Exit codes: 0 finished, 1 an LLM server failed mid-run (the run directory is resumable), 2 usage
error (unknown env/agent, bad numbers, unreadable --init, a --run-dir that is a file or holds
another run, a malformed --policy spec or URL, a model directory without model files, missing
torch), 3 an LLM backend is not available here (its library is not installed, TINKER_API_KEY is
not set or the Tinker service refuses, the openai:URL server cannot be reached), 130 interrupted
(Ctrl-C; ``train --resume`` continues from the last checkpoint).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from discoverygym.casestats import case_summary
from discoverygym.cli.common import (
    check_policy_fits,
    json_value,
    load_init,
    one_line,
    resume_command,
    run_kind,
    seed_value,
)
from discoverygym.errors import BackendUnavailable, UsageError
from discoverygym.io import file_in_the_way, read_input_text
from discoverygym.policy import llm_specs
from discoverygym.rundir import CONFIG_FILE, check_run_dir

__all__ = ["add_parsers", "main", "run"]

AGENTS = {"ttt-discover": "full", "naive-rl": "naive-rl"}


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``train`` and ``compare`` sub-commands to the ``discoverygym`` parser."""
    p = subparsers.add_parser(
        "train", help="online RL (TTT-Discover or naive RL) on one env, into a resumable run directory",
        description="Test-time RL on a construction env: groups x group-size rollouts per step from start "
        "states chosen by the reuse rule, entropic (adaptive β) advantages, KL to the frozen initial policy, "
        "Adam. Writes config.json, metrics.jsonl, best.json, archive.json, TensorBoard events and "
        "checkpoints/ into --run-dir.",
        epilog="Example: discoverygym train ErdosMinOverlap-v0 --agent ttt-discover --steps 20 --groups 4 "
        "--group-size 16 --run-dir runs/erdos. "
        "Exit codes: 0 finished; 1 an LLM server failed mid-run (resumable); 2 usage error (bad flag value, "
        "--run-dir a file or another run's directory, malformed --policy spec or URL, model directory "
        "without config.json); 3 backend not available here (LLM extra / vllm / tinker SDK not installed, "
        "TINKER_API_KEY not set or rejected, openai:URL server unreachable); 130 interrupted (--resume continues).",
    )
    p.add_argument("env_id", help="environment id (see `discoverygym list`)")
    p.add_argument("--agent", default="ttt-discover",
                   help="ttt-discover (default), naive-rl, or any ablation: full, constant-beta, expected-reward, "
                   "no-training, epsilon-greedy, no-reuse, best-of-n, progress-rate (ours: credit = gain over the start per second)")
    _common(p)
    p.add_argument("--run-dir", required=True, help="run directory (must be new unless --resume)")
    p.add_argument("--init", default=None, help="start from this construction file (JSON: bare, {'construction': ...} or a run's best.json)")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its last checkpoint")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _llm_args(p)

    c = subparsers.add_parser(
        "compare", help="a study: configs x seeds of train runs; budget, start, mean ± sd, rank test, verdict, plot",
        description="Runs every config for every seed (ordinary train runs under one study directory) and "
        "prints per config the budget (evaluations, wall time per run), the start score, the best score's "
        "mean ± sd and best over seeds, and a two-sided Mann–Whitney U test against the first config (the "
        "start is the mean over seeds; under --budget-s the verdicts say how many evaluations each run got), "
        "then one verdict line per config (with both one-sided p) and whether the study's best run beats "
        "the record (the verdict certify gives for its best.json). Writes study.json, results.csv (one row per run), compare.png (best "
        "score vs evaluations, seed spread shaded, and the end zoomed), summary.json and TensorBoard runs.",
        epilog="Example: discoverygym compare CirclePacking-26-v0 --configs full,naive-rl,expected-reward "
        "--seeds 3 --steps 5 (a new runs/compare-<env>-<time> directory each time; finish a killed study "
        "with --run-dir DIR --resume). Against the scipy reference at equal wall time: discoverygym compare "
        "CirclePacking-26-v0 --configs full,no-training,reference --seeds 5 --budget-s 60 (the runner of "
        "benchmarks/discovery.py)",
    )
    c.add_argument("env_id")
    c.add_argument("--configs", default="full,naive-rl,no-reuse,constant-beta",
                   help="comma-separated configs (default full,naive-rl,no-reuse,constant-beta; the first is the "
                   "reference of the tests). Named configs (what each changes relative to full): "
                   + "; ".join(f"{k}: {v}" for k, v in _CONFIG_DOCS.items())
                   + ". Overrides of full, one setting each, joined by '+': objective=NAME (entropic-adaptive, "
                   "entropic-constant, expected-reward = mean-baseline, or a plugin's), reuse=puct|epsilon|none, "
                   "train=true|false, loss=NAME, credit=reward|progress-rate, failure_tiers=true|false; e.g. "
                   "objective=expected-reward, naive-rl+reuse=puct. References (need --budget-s): reference "
                   "(basin hopping + SLSQP / smoothed-max Adam restarts), cma-es")
    c.add_argument("--seeds", type=int, default=3, help="seeds per config (default 3)")
    _common(c)
    c.add_argument("--run-dir", default=None,
                   help="study directory (new or empty; default: a new runs/compare-<env>-<YYYYmmdd-HHMMSS>)")
    c.add_argument("--resume", action="store_true",
                   help="finish the study in --run-dir: skip finished runs, resume partial ones from their checkpoint")
    c.add_argument("--init", default=None, help="start every run from this construction file")
    c.add_argument("--json", action="store_true", help="print the table as JSON")
    _llm_args(c)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", default=None,
                   help="trainable policy: operators (default where the problem declares operators: circle packing, step "
                        "functions), gaussian (default elsewhere, and with --sigma/--polish) or an LLM: "
                        f"{llm_specs('train')} (programs, action_mode=code)")
    p.add_argument("--steps", type=int, default=None, help="training steps (default 50; unlimited with --budget-s)")
    p.add_argument("--groups", type=int, default=None, help="groups (start states) per step (default: 2 for the operators policy, 8 otherwise)")
    p.add_argument("--group-size", type=int, default=None, help="rollouts per group (default: 8 for the operators policy, 64 otherwise)")
    p.add_argument("--seed", type=seed_value, default=None, help="seed (default 0)")
    p.add_argument("--lr", type=float, default=None, help="Adam learning rate (default: 0.3 operators, 0.05 gaussian, 4e-5 LLM)")
    p.add_argument("--kl-coef", type=float, default=None, help="λ of the KL shaping (default 0.1)")
    p.add_argument("--sigma", type=float, default=None, help="initial relative step size of the policy (0.02)")
    p.add_argument("--polish", default=None,
                   help="policy polish: none (default), auto (the problem's registered local optimiser) or a name")
    p.add_argument("--polish-kwargs", type=json_value, default=None, help="polisher arguments as JSON")
    p.add_argument("--budget-s", type=float, default=None,
                   help="wall-clock budget per run (seconds), kept: operators stop at the deadline with their best so "
                   "far, LLM sampling, sandboxed programs and the LLM update stop there too, and no step starts "
                   "past it; what still lands late is counted (late) and warned about")
    p.add_argument("--credit", choices=CREDIT_CHOICES, default=None,
                   help="what the objective ranks within a group: reward (default, TTT-Discover) or progress-rate "
                   "(each rollout's gain over its start per second of its wall time: cheap moves that gain as "
                   "much per second count as much)")
    p.add_argument("--image-every", type=int, default=None, help="steps between TensorBoard images (default 5)")
    p.add_argument("--failure-tiers", action="store_const", const=True, default=None,
                   help="graded failure rewards by outcome (ours, off by default): truncated < no code < syntax "
                   "error < wrong entry < runtime error = timeout < invalid (the env's failure reward), 0.1 apart, "
                   "all below every valid reward; as a compare config: failure-tiers")
    p.add_argument("--plugin", action="append", default=[], metavar="FILE",
                   help="import this Python file first (repeatable): it registers objectives, losses or whole "
                   "configs by name (register_objective / register_adv_est / register_loss / register_config), "
                   "which --configs then names; e.g. --plugin examples/algorithms/grpo_objective.py --configs full,grpo")


def _llm_args(p: argparse.ArgumentParser) -> None:
    """Options of LLM policies (the trainable backends of :func:`~discoverygym.policy.llm_specs`)."""
    g = p.add_argument_group(f"LLM policies (--policy {llm_specs('train')})")
    g.add_argument("--max-new-tokens", type=int, default=None, help="completion length limit in tokens (default 1024)")
    g.add_argument("--temperature", type=float, default=None, help="sampling temperature (default 1.0)")
    g.add_argument("--lora-rank", type=int, default=None, help="LoRA rank (default 32)")
    g.add_argument("--thinking-budget", type=int, default=None,
                   help="tokens before 'stop thinking, answer now' forcing (default off)")
    g.add_argument("--micro-batch", type=int, default=None,
                   help="sequences per backward pass (default 1: least memory; gradient accumulation)")
    g.add_argument("--llm-device", default=None, help="device of the local model: auto (default), cpu, cuda")
    g.add_argument("--warm-start", default=None, metavar="DIR",
                   help="a LoRA adapter merged into the base model before training (hf: only), e.g. the "
                   "<run_dir>/adapter of `discoverygym post-train --warmup`: the warm model is the KL "
                   "reference and a fresh adapter learns on top")
    g.add_argument("--shared-prompt", action="store_const", const=True, default=None,
                   help="score a group that answers one prompt with the prompt run once (hf: only; the same "
                   "gradient; several times faster when the prompt is longer than the answers, more memory at once)")
    g.add_argument("--train-model", default=None,
                   help="local model that trains the LoRA adapter for openai:/vllm: samplers (path or hub id)")
    g.add_argument("--eval-workers", type=int, default=None,
                   help="programs judged at once (default: all CPUs for math envs, 1 for program envs)")
    g.add_argument("--edit-format", choices=("full", "diff"), default=None,
                   help="how the LLM answers: full programs (default) or SEARCH/REPLACE diffs against the parent "
                   "(the Aider/OpenEvolve format; a full program in a diff answer is used as is)")
    g.add_argument("--task-options", type=json_value, default=None,
                   help="options of a program env as JSON, e.g. '{\"n_cases\": 5}'")


def _check_numbers(args: argparse.Namespace) -> None:
    """Refuse non-finite / out-of-range real-valued flags (``--lr inf`` would train NaN adapters)."""
    import math

    for flag, low, strict in (("lr", 0.0, True), ("kl_coef", 0.0, False), ("sigma", 0.0, True),
                              ("temperature", 0.0, True)):
        value = getattr(args, flag, None)
        if value is None:
            continue
        if not math.isfinite(value) or (value <= low if strict else value < low):
            need = "a finite number > 0" if strict else "a finite number >= 0"
            raise UsageError(f"--{flag.replace('_', '-')} must be {need}, got {value!r}")


#: what each named config changes (``compare --help``): :data:`discoverygym.agents.config.ABLATION_DOCS`,
#: repeated here because the help is built before torch (which config.py imports) loads
_CONFIG_DOCS = {
    "full": "TTT-Discover (entropic objective, adaptive beta; PUCT reuse; training)",
    "expected-reward": "objective only (mean baseline)",
    "constant-beta": "objective only (entropic, beta = 2)",
    "no-reuse": "reuse only (always the initial state)",
    "epsilon-greedy": "reuse only (epsilon-greedy)",
    "no-training": "training only (frozen policy)",
    "naive-rl": "TWO things, objective (expected reward) and reuse (none)",
    "best-of-n": "TWO things, training off and reuse none",
    "progress-rate": "credit only (gain per second; ours)",
    "failure-tiers": "failure rewards only (graded by outcome, all below every valid reward; ours)",
}

#: ``--credit`` values: :data:`discoverygym.agents.config.CREDITS` (not imported here: torch loads lazily)
CREDIT_CHOICES = ("reward", "progress-rate")

#: command-line flag -> TrainConfig field (the same for every learner).
_FIELDS = (("steps", "steps"), ("groups", "groups"), ("group_size", "group_size"), ("seed", "seed"),
           ("lr", "lr"), ("kl_coef", "kl_coef"), ("budget_s", "budget_s"), ("image_every", "image_every"),
           ("policy", "policy"), ("max_new_tokens", "max_new_tokens"), ("temperature", "temperature"),
           ("lora_rank", "lora_rank"), ("thinking_budget", "thinking_budget"), ("micro_batch", "micro_batch"),
           ("llm_device", "device"), ("train_model", "train_model"), ("task_options", "env_kwargs"),
           ("eval_workers", "eval_workers"), ("edit_format", "edit_format"), ("credit", "credit"),
           ("failure_tiers", "failure_tiers"), ("warm_start", "warm_start"), ("shared_prompt", "shared_prompt"))


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The TrainConfig fields given on the command line (``None`` flags are left to the config)."""
    _check_numbers(args)
    out = {f: getattr(args, a) for a, f in _FIELDS if getattr(args, a, None) is not None}
    pk: dict[str, Any] = {}
    for flag in ("sigma", "polish", "polish_kwargs"):
        if getattr(args, flag, None) is not None:
            pk[flag] = getattr(args, flag)
    if pk:
        out["policy_kwargs"] = pk
    return out


def _with_default_policy(overrides: dict[str, Any], env_id: str) -> dict[str, Any]:
    """``overrides`` with the default numeric policy of ``env_id`` when ``--policy`` is not given
    (``compare``, whose study records it): :func:`~discoverygym.agents.config.default_policy`
    (``operators`` for problems that declare operators, ``gaussian`` when a Gaussian-policy flag,
    ``--sigma``, ``--polish``, ``--polish-kwargs``, is given)."""
    if "policy" in overrides:
        return overrides
    from discoverygym.agents.config import default_policy

    return {**overrides, "policy": default_policy(env_id, overrides.get("policy_kwargs"))}


def _check_new_run_dir(run_dir: Path) -> None:
    """Refuse a ``--run-dir`` for a new run that is a file, lies under a file, or holds a run
    (:func:`discoverygym.rundir.check_run_dir`; a train run counts once it has a checkpoint)."""
    from discoverygym.agents.checkpoint import has_checkpoint

    try:
        check_run_dir(run_dir, "train", resume=False, occupied=has_checkpoint)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _stored_train_config(run_dir: Path, env_id: str) -> dict:
    """The ``config.json`` of the train run in ``run_dir``, for ``--resume`` of ``env_id``.

    Raises:
        UsageError: no such directory / not a directory / no or unreadable config.json; the run got a
            Python objective or loss that config.json cannot name (it would resume another algorithm);
            the directory holds another kind of run (search, post-train) or a run of another env.
    """
    if not run_dir.exists():
        raise UsageError(f"--resume: {run_dir} does not exist (nothing to resume; start the run without --resume)")
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir} exists and is not a directory")
    cfg_path = run_dir / CONFIG_FILE
    if not cfg_path.is_file():
        raise UsageError(f"{run_dir} holds no run to resume (no config.json)")
    try:
        stored = json.loads(cfg_path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"cannot read {cfg_path}: {exc}") from None
    except RecursionError:
        raise UsageError(f"cannot read {cfg_path}: nested too deeply to be a configuration") from None
    if not isinstance(stored, dict):
        raise UsageError(f"{cfg_path} is not a train configuration (not a JSON object)")
    from discoverygym.agents.config import unnamed_refusal

    refusal = unnamed_refusal(stored, run_dir)
    if refusal:
        raise UsageError(refusal)
    kind = run_kind(run_dir)
    if kind == "other":
        raise UsageError(f"{run_dir} does not hold a train run ({cfg_path} has no groups/group_size)")
    if kind != "train":
        hint = {"search": f"; continue it with `discoverygym search {stored.get('env_id', 'ENV')} --run-dir {run_dir} "
                          "--resume`"}.get(kind, "")
        raise UsageError(f"{run_dir} holds a {kind} run, not a train run{hint}")
    if stored.get("env_id") != env_id:
        raise UsageError(f"{run_dir} holds a train run of {stored.get('env_id')}, not {env_id} "
                          f"(resume it with `discoverygym train {stored.get('env_id')} --run-dir {run_dir} --resume`)")
    return stored


def _load_init(path: str | None, env_id: str, env_kwargs: dict | None = None) -> Any:
    """The ``--init`` construction, or ``None``: :func:`~discoverygym.cli.common.load_init`, the one
    loader of train, compare and search (a regular file within the input limit, JSON the parser
    reads, a construction the env judges valid; else a one-line usage error, exit 2)."""
    return None if path is None else load_init(path, env_id, env_kwargs)


def _make_config(factory: Any, *args: Any, **kwargs: Any) -> Any:
    """Build a TrainConfig, turning its validation errors into usage errors (exit 2)."""
    try:
        return factory(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None


def _check_policy_fits(config: Any) -> None:
    """:func:`~discoverygym.cli.common.check_policy_fits` as a usage error."""
    try:
        check_policy_fits(config.policy, config.env_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.10g}"


def _init_note(config: Any) -> str:
    """With ``--init``: what to pass when the policy keeps no tight start valid (issue 50), else ``""``.

    A numeric run uses the problem's operators when it declares them (they keep a tight record valid:
    32 of 32 children valid from TTT-Discover's CP26 packing); ``--policy gaussian`` without
    ``--polish`` on a problem with a local optimiser makes most children of a tight record invalid,
    so the line says which flags change that.
    """
    from discoverygym.envs.registry import ENVS

    problem = ENVS.get(config.env_id)
    if config.family != "numeric" or config.policy != "gaussian" or config.policy_kwargs.get("polish"):
        return ""
    if getattr(problem, "polish", None) is not None:
        return ("--init: the gaussian policy without a polish makes most children of a tight record invalid; "
                "add --polish auto (the problem's local optimiser) or leave --policy out (its operators)")
    return ""  # integer / ±1 problems: the gaussian policy is refused with what to use (_check_policy_fits)


def train_config(args: argparse.Namespace) -> tuple[Any, Any]:
    """The configuration ``discoverygym train`` runs for parsed ``args``, and the ``--init`` construction.

    A new run is ``ablation_config(agent, env_id=..., **flags)`` with only the flags the user set, so
    that its defaults are :class:`~discoverygym.agents.config.TrainConfig`'s (``TrainConfig(env_id=E)``
    is what ``discoverygym train E`` runs); ``--resume`` continues the stored ``config.json`` (old flat
    files too), where only :data:`~discoverygym.agents.config.RESUMABLE_FIELDS` may change.

    Raises:
        UsageError: an unknown env or agent, a bad flag value or combination, a ``--run-dir`` that
            cannot hold this run, a policy that cannot act on the env, an unreadable ``--init``.
    """
    import dataclasses

    from discoverygym.agents.config import (
        ABLATIONS,
        RESUMABLE_FIELDS,
        LLMConfig,
        TrainConfig,
        ablation_config,
        flat_config,
        policy_mismatch,
    )
    from discoverygym.envs.registry import ENVS, PROGRAM_TASKS
    from discoverygym.policy import is_llm_spec

    if args.env_id not in ENVS and args.env_id not in PROGRAM_TASKS:
        raise UsageError(f"unknown env {args.env_id!r}; run `discoverygym list`")
    name = AGENTS.get(args.agent, args.agent)
    if name not in ABLATIONS:
        raise UsageError(f"unknown agent {args.agent!r}; use ttt-discover, naive-rl or one of {', '.join(ABLATIONS)}")
    run_dir = Path(args.run_dir)
    overrides = _overrides(args)
    if args.resume:
        stored = _stored_train_config(run_dir, args.env_id)
        # a run saved before a field existed has its default
        defaults = {f.name: f.default for cls in (TrainConfig, LLMConfig) for f in dataclasses.fields(cls)}
        flat = flat_config(stored)
        conflicts = [k for k, v in overrides.items() if k not in RESUMABLE_FIELDS and flat.get(k, defaults.get(k)) != v]
        if conflicts:
            raise UsageError(
                f"--resume continues with the stored configuration; these arguments differ from it: "
                f"{', '.join(sorted(conflicts))} (only {', '.join(RESUMABLE_FIELDS)} may change)"
            )
        stored.update({k: v for k, v in overrides.items() if k in RESUMABLE_FIELDS})
        config = _make_config(TrainConfig, **stored)
        initial = _load_init(config.init, config.env_id, config.env_kwargs)
    else:
        if is_llm_spec(overrides.get("policy", "")):
            for flag in ("sigma", "polish", "polish_kwargs", "init"):
                if getattr(args, flag, None) is not None:
                    raise UsageError(f"--{flag.replace('_', '-')} applies to the numeric policy, not to LLM policies")
        _check_new_run_dir(run_dir)
        if args.init is not None:
            overrides["init"] = args.init
        config = _make_config(ablation_config, name, env_id=args.env_id, **overrides)
        initial = _load_init(args.init, config.env_id, config.env_kwargs)
        if initial is not None and _init_note(config):
            print(_init_note(config), file=sys.stderr)
    if config.family == "numeric":
        mismatch = policy_mismatch(config)
        if mismatch:
            raise UsageError(mismatch)
        _check_policy_fits(config)
    return config, initial


def _train(args: argparse.Namespace, console: Console) -> int:
    """``train`` for every learner: parse (:func:`train_config`), run (:func:`_run`), print the summary."""
    config, initial = train_config(args)
    ran = _run(args, config, initial, console)
    if ran is None:
        return 1
    trainer, result = ran
    from discoverygym.agents.summary import train_summary

    summary = train_summary(config, result, trainer.problem, Path(args.run_dir))
    if args.json:
        print(json.dumps(summary))
    else:
        _print_summary(console, summary, trainer.problem, config, result)
    return 0


def _run(args: argparse.Namespace, config: Any, initial: Any, console: Console) -> tuple[Any, Any] | None:
    """Train ``config`` into ``--run-dir`` with a progress display: ``(trainer, result)``, or ``None``
    when an LLM server failed mid-run (said on stderr, with the command that resumes: exit 1).

    Raises:
        UsageError: the trainer refused the configuration or the run directory.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from discoverygym.agents.config import UNLIMITED_STEPS
    from discoverygym.agents.policies.llm import ModelUnavailable
    from discoverygym.agents.trainer import Trainer
    from discoverygym.outcomes import format_counts

    llm = config.family == "llm"
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("best {task.fields[best]}"), TextColumn("{task.fields[rate]} eval/s"),
                        TimeElapsedColumn(), console=console, disable=args.json or not console.is_terminal)
    plain = not args.json and not console.is_terminal
    bounded = config.budget_s is None or config.steps < UNLIMITED_STEPS  # else the budget ends the run
    task = progress.add_task(config.name, total=config.steps if bounded else None, best="—", rate="—")
    of_steps = f"/{config.steps}" if bounded else ""

    def on_step(m: dict) -> None:
        progress.update(task, completed=m["step"], best=_fmt(m["score/best"]), rate=f"{m['perf/evals_per_s']:.0f}")
        if plain:
            extra = f"  parsed {m['parsed_fraction']:.2f}  loss {m['loss']:.4g}" if llm else ""
            print(f"step {m['step']}{of_steps}  best {_fmt(m['score/best'])}  reward mean "
                  f"{m['reward/mean']:.6g}  valid {m['valid_fraction']:.2f}{extra}  {m['perf/step_time_s']:.2f} s",
                  flush=True)
        if llm and not args.json:  # what became of this step's answers (issue 49)
            line = f"step {m['step']}{of_steps} outcomes: {format_counts(m.get('outcomes') or {})}"
            if plain:
                print(line, flush=True)
            else:
                progress.console.print(line, highlight=False, markup=False)

    run_dir = Path(args.run_dir)
    try:
        trainer = Trainer(config, run_dir, initial=initial, resume=args.resume, callback=on_step)
    except (ModelUnavailable, ValueError, FileExistsError, FileNotFoundError, NotADirectoryError) as exc:
        raise UsageError(one_line(exc)) from None
    try:
        with progress:
            result = trainer.run()
    except BackendUnavailable:
        raise
    except Exception as exc:
        from discoverygym.agents.policies.openai_server import ServerError

        if not isinstance(exc, ServerError):
            raise
        print(f"discoverygym train: failed: {' '.join(str(exc).split())}\n"
              f"the run directory {run_dir} is resumable: {_resume_hint(args)}", file=sys.stderr)
        return None
    return trainer, result


def _run_outcomes(run_dir: Path, history: list[dict]) -> str:
    """The run's outcome counts as one line (:func:`~discoverygym.outcomes.format_counts`): its
    ``outcomes.json`` (every step, resumed ones included), else the sum of this call's steps' ``outcomes``."""
    from discoverygym.outcomes import OUTCOMES_FILE, format_counts

    try:
        counts = json.loads((run_dir / OUTCOMES_FILE).read_text())["counts"]
    except (OSError, ValueError, KeyError, TypeError):
        counts = {}
        for m in history:
            for key, n in (m.get("outcomes") or {}).items():
                counts[key] = counts.get(key, 0) + int(n)
    return format_counts(counts)


def _print_summary(console: Console, summary: dict, problem: Any, config: Any, result: Any) -> None:
    """The end-of-run table (start, best, record, gap, time, run dir) and the per-case scores."""
    llm = config.family == "llm"
    run_dir, best, proxy = summary["run_dir"], summary["best_score"], summary["proxy"]
    title = f"{problem.title}: {config.name}" + (f" with {config.policy}" if llm else "") + f", {result.steps} steps"
    table = Table(title=title, show_header=False)
    table.add_row("start", "unscored (not judged on this machine)" if result.initial.unscored
                  else _fmt(summary["initial_score"]))
    table.add_row("best", _fmt(best) + (f" ({proxy.upper()} proxy, not comparable with the GPU record)" if proxy else ""))
    table.add_row("published record", f"{summary['record']} ({summary['record_source']})")
    if summary["gap_to_record"] is not None:
        table.add_row("gap to record", f"{summary['gap_to_record']:+.3e}")
    table.add_row("beats the record?", ("yes, " if summary["beats_record"] else "no, ") + summary["verdict"]
                  + ("; the start already did (this run did not improve it)"
                     if summary["beats_record"] and not summary["improved"] else ""))
    gain = ""  # the gain itself: a polish's +1e-13 is "improved" though both print as the same 10 digits
    if summary["improved"] and summary.get("initial_score") is not None and best is not None:
        from discoverygym.types import Direction

        sense = Direction(problem.direction)
        gain = f" by {sense.improvement(best, summary['initial_score']):+.3e} ({sense.comparative} is better)"
    table.add_row("vs start", f"improved{gain}" if summary["improved"] else "no improvement (best = start)")
    table.add_row("outcomes", _run_outcomes(Path(run_dir), result.history))
    table.add_row("time", f"{result.elapsed_s:.1f} s this call")
    table.add_row("run dir", f"{run_dir}  (tensorboard --logdir {run_dir}"
                  + ("; responses in samples.jsonl)" if llm else ")"))
    console.print(table)
    cases = case_summary(result.best.metadata if result.best.valid else None)
    if cases:
        console.print(cases, highlight=False, markup=False)


def _compare(args: argparse.Namespace, console: Console) -> int:
    """``compare``: check the arguments, then run the study (:func:`discoverygym.cli.compare.study`)."""
    from discoverygym.agents.bench import REFERENCES, trainer_config
    from discoverygym.agents.config import _VALUE_ALIASES, config_overrides
    from discoverygym.cli.compare import study
    from discoverygym.envs.registry import ENVS, PROGRAM_TASKS
    from discoverygym.policy import is_llm_spec

    if args.env_id in PROGRAM_TASKS and not is_llm_spec(args.policy or ""):
        raise UsageError(f"{args.env_id} takes programs: compare it with an LLM policy "
                          "(`discoverygym compare ... --policy hf:PATH_OR_ID`, e.g. hf:smollm2)")
    if args.env_id not in ENVS and args.env_id not in PROGRAM_TASKS:
        raise UsageError(f"unknown env {args.env_id!r}; run `discoverygym list`")
    if args.run_dir is not None:
        blocker = file_in_the_way(Path(args.run_dir))
        if blocker is not None:
            raise UsageError(f"{blocker} exists and is not a directory (it cannot hold --run-dir {args.run_dir})")

    names = [AGENTS.get(n.strip(), n.strip()) for n in args.configs.split(",") if n.strip()]
    for n in names:
        keys = [p.partition("=")[0].strip() for p in n.split("+") if "=" in p]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:  # the overrides would contradict each other, the last one silently winning
            raise UsageError(f"config {n!r} sets {', '.join(twice)} more than once; give each setting once")
        if n not in REFERENCES:
            try:
                config_overrides(n)
            except ValueError as exc:
                aliases = "; ".join(f"{key} aliases: " + ", ".join(f"{a} = {b}" for a, b in table.items())
                                    for key, table in _VALUE_ALIASES.items() if f"unknown {key} " in str(exc))
                raise UsageError(f"{exc}{f' ({aliases})' if aliases else ''} (references: {', '.join(REFERENCES)}; "
                                 "a plugin's configs need --plugin FILE)") from None
    if any(n in REFERENCES for n in names) and args.budget_s is None:
        raise UsageError(f"the references ({', '.join(n for n in names if n in REFERENCES)}) run for a wall budget: "
                          "give --budget-s (and the trainer configs get the same budget)")
    if not names:
        raise UsageError("--configs names no config")
    if len(set(names)) != len(names):
        raise UsageError(f"--configs names a config twice: {args.configs}")
    if args.seeds < 1:
        raise UsageError(f"--seeds must be >= 1, got {args.seeds}")
    initial = _load_init(args.init, args.env_id)
    overrides = _with_default_policy(_overrides(args), args.env_id)
    overrides.pop("seed", None)

    def make(name: str, seed: int, fields: dict) -> Any:
        if name in REFERENCES:
            return None
        config = _make_config(trainer_config, args.env_id, name, seed, init=args.init, **fields)
        _check_policy_fits(config)
        return config

    return study(args, console, names, overrides, initial, make)


def _resume_hint(args: argparse.Namespace) -> str:
    """The exact command that continues this ``train`` / ``compare`` run (original argv + ``--resume``)."""
    if args.command == "train":
        fallback = ["train", args.env_id, "--run-dir", str(args.run_dir)]
    else:
        fallback = ["compare", args.env_id, "--configs", args.configs, "--seeds", str(args.seeds),
                    "--run-dir", str(getattr(args, "study_dir", None) or args.run_dir or "DIR")]
        argv = getattr(args, "argv", None)
        study_dir = getattr(args, "study_dir", None)
        if argv is not None and args.run_dir is None and study_dir:  # the study chose its directory
            args = argparse.Namespace(**{**vars(args), "argv": [*argv, "--run-dir", str(study_dir)]})
    return resume_command(args, fallback)


def load_plugins(paths: list[str]) -> None:
    """Import each ``--plugin`` Python file (as module ``discoverygym_plugin_<stem>``; its
    ``if __name__ == "__main__":`` block does not run), so that what it registers
    (:func:`~discoverygym.agents.objectives.register_objective`,
    :func:`~discoverygym.agents.objectives.register_adv_est`,
    :func:`~discoverygym.agents.losses.register_loss`,
    :func:`~discoverygym.agents.config.register_config`) is known by name.

    Raises:
        UsageError: a missing file or one that is not a regular file (a directory, FIFO, device: it
            says which), or one that fails to import (its error in one line) or calls ``sys.exit``
            at import.
    """
    import importlib.util

    for path in paths:
        file = Path(path)
        if not file.exists():
            raise UsageError(f"--plugin {path}: no such file")
        try:  # opened once and checked on the descriptor; the text read is the text run (issue 52, #8)
            source = read_input_text(file)
        except ValueError as exc:
            raise UsageError(f"--plugin {exc}") from None
        name = "discoverygym_plugin_" + "".join(c if c.isalnum() else "_" for c in file.stem)
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(file.resolve()):
            continue
        spec = importlib.util.spec_from_file_location(name, file.resolve())
        if spec is None or spec.loader is None:
            raise UsageError(f"--plugin {path}: not an importable Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            exec(compile(source, str(file.resolve()), "exec"), module.__dict__)  # noqa: S102 - the user's plugin
        except Exception as exc:  # noqa: BLE001 - a plugin's own error, reported in one line
            del sys.modules[name]
            raise UsageError(f"--plugin {path} failed to import: {type(exc).__name__}: {one_line(exc)}") from None
        except SystemExit as exc:  # a plugin registers names; it does not end the command
            del sys.modules[name]
            raise UsageError(f"--plugin {path} called sys.exit({exc.code!r}) at import; a plugin only registers "
                             "objectives, losses and configs") from None


def plugin_error(exc: BaseException, paths: list[str]) -> str | None:
    """Where a ``--plugin`` file's own code raised ``exc`` (``"FILE, line N, in FUNC: Type: message"``, its
    innermost frame in one of ``paths``), or ``None`` when no frame of the traceback is in a plugin
    (then the error is discoverygym's own and keeps its traceback)."""
    import traceback

    files = {str(Path(p).resolve()) for p in paths}
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in files]
    if not frames:
        return None
    where = frames[-1]
    return f"{where.filename}, line {where.lineno}, in {where.name}: {type(exc).__name__}: {one_line(exc)}"


def run(args: argparse.Namespace) -> int:
    """Run ``train`` or ``compare`` for parsed ``args`` (see the module docstring for exit codes)."""
    console = Console(stderr=bool(getattr(args, "json", False)))
    try:
        import torch  # noqa: F401
    except ImportError:
        console.print("[red]error:[/] training needs torch: pip install 'discoverygym[rl]' "
                      "(CPU-only: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu first)")
        return 2
    try:
        load_plugins(getattr(args, "plugin", None) or [])
        return _train(args, console) if args.command == "train" else _compare(args, console)
    except UsageError as exc:
        print(f"discoverygym: error: {exc}", file=sys.stderr)
        return 2
    except BackendUnavailable as exc:
        hint = ""
        if args.command == "train" and (Path(args.run_dir) / "checkpoints" / "latest.json").exists():
            hint = f" (the run in {args.run_dir} continues with --resume once it is available)"
        print(f"discoverygym: unavailable here: {' '.join(str(exc).split())}{hint}", file=sys.stderr)
        return 3
    except Exception as exc:
        where = plugin_error(exc, getattr(args, "plugin", None) or [])
        if where is None:
            raise
        running = getattr(args, "current_run", None)
        print(f"discoverygym: error: the --plugin code raised{f' in {running}' if running else ''}: {where}; "
              f"once it is fixed, continue with `{_resume_hint(args)}`", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        hint = _resume_hint(args)
        console.print(f"interrupted: continue with `{hint}`", highlight=False, markup=False,
                      soft_wrap=True)  # not wrapped: the command is pasted back
        return 130


def main(argv: list[str] | None = None) -> int:
    """Standalone entry: ``python -m discoverygym.cli.train train ENV_ID --run-dir DIR``."""
    parser = argparse.ArgumentParser(prog="discoverygym")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parsers(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = argv
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
