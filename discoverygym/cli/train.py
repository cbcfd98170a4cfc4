"""``discoverygym train``: online RL runs from the command line.

Wired into the main command by :mod:`discoverygym.cli` (``add_parser`` in its parser, ``run`` in
``main``); torch is imported lazily. The flags, the flag-to-config mapping and the error handling
here are also those of ``compare`` (:mod:`discoverygym.cli.compare`), a study of train runs. Their
choices, limits and the defaults the help shows are :mod:`discoverygym.agents.config`'s (torch-free).

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from discoverygym.agents.config import (
    CREDITS,
    DEFAULT_GROUPS,
    DEFAULT_LR,
    DEFAULT_STEPS,
    LLM_REALS,
    RESUMABLE_FIELDS,
    TRAIN_REALS,
    UNLIMITED_STEPS,
    LLMConfig,
    TrainConfig,
    ablation_config,
    check_reals,
    flat_config,
    policy_mismatch,
    unnamed_refusal,
)
from discoverygym.agents.policies.edits import EDIT_FORMATS
from discoverygym.casestats import case_summary
from discoverygym.cli.common import (
    check_env,
    check_policy_fits,
    json_value,
    load_init,
    one_line,
    resume_command,
    run_kind,
    seed_value,
    standalone_main,
)
from discoverygym.errors import BackendUnavailable, UsageError
from discoverygym.io import read_input_text
from discoverygym.policy import llm_specs
from discoverygym.rundir import CONFIG_FILE, check_run_dir

__all__ = ["AGENTS", "add_llm_options", "add_parser", "add_run_options", "build_config", "check_policy",
           "flag_overrides", "main", "run", "run_guarded"]

AGENTS = {"ttt-discover": "full", "naive-rl": "naive-rl"}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``train`` sub-command to the ``discoverygym`` parser."""
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
    add_run_options(p)
    p.add_argument("--run-dir", required=True, help="run directory (must be new unless --resume)")
    p.add_argument("--init", default=None, help="start from this construction file (JSON: bare, {'construction': ...} or a run's best.json)")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its last checkpoint")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_llm_options(p)


def _lr_text(value: float) -> str:
    """A learning rate as the help writes it (``0.3``, ``4e-5``)."""
    return f"{value:g}".replace("e-0", "e-")


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options of a train run (policy, steps, groups, seed, learning rate, budget, credit...), which
    ``train`` and ``compare`` share. Each flag defaults to ``None`` (not given: the config's default,
    which its help shows from :class:`~discoverygym.agents.config.TrainConfig`)."""
    ops, other = DEFAULT_GROUPS["operators"], DEFAULT_GROUPS["*"]
    p.add_argument("--policy", default=None,
                   help="trainable policy: operators (default where the problem declares operators: circle packing, step "
                        "functions), gaussian (default elsewhere, and with --sigma/--polish) or an LLM: "
                        f"{llm_specs('train')} (programs, action_mode=code)")
    p.add_argument("--steps", type=int, default=None, help=f"training steps (default {DEFAULT_STEPS}; unlimited with --budget-s)")
    p.add_argument("--groups", type=int, default=None, help=f"groups (start states) per step (default: {ops[0]} for the operators policy, {other[0]} otherwise)")
    p.add_argument("--group-size", type=int, default=None, help=f"rollouts per group (default: {ops[1]} for the operators policy, {other[1]} otherwise)")
    p.add_argument("--seed", type=seed_value, default=None, help=f"seed (default {TrainConfig.seed})")
    p.add_argument("--lr", type=float, default=None, help="Adam learning rate (default: "
                   f"{_lr_text(DEFAULT_LR['operators'])} operators, {_lr_text(DEFAULT_LR['numeric'])} gaussian, "
                   f"{_lr_text(DEFAULT_LR['llm'])} LLM)")
    p.add_argument("--kl-coef", type=float, default=None, help=f"λ of the KL shaping (default {TrainConfig.kl_coef})")
    p.add_argument("--sigma", type=float, default=None, help="initial relative step size of the policy (0.02)")
    p.add_argument("--polish", default=None,
                   help="policy polish: none (default), auto (the problem's registered local optimiser) or a name")
    p.add_argument("--polish-kwargs", type=json_value, default=None, help="polisher arguments as JSON")
    p.add_argument("--budget-s", type=float, default=None,
                   help="wall-clock budget per run (seconds), kept: operators stop at the deadline with their best so "
                   "far, LLM sampling, sandboxed programs and the LLM update stop there too, and no step starts "
                   "past it; what still lands late is counted (late) and warned about")
    p.add_argument("--credit", choices=CREDITS, default=None,
                   help=f"what the objective ranks within a group: {TrainConfig.credit} (default, TTT-Discover) or progress-rate "
                   "(each rollout's gain over its start per second of its wall time: cheap moves that gain as "
                   "much per second count as much)")
    p.add_argument("--image-every", type=int, default=None, help=f"steps between TensorBoard images (default {TrainConfig.image_every})")
    p.add_argument("--failure-tiers", action="store_const", const=True, default=None,
                   help="graded failure rewards by outcome (ours, off by default): truncated < no code < syntax "
                   "error < wrong entry < runtime error = timeout < invalid (the env's failure reward), 0.1 apart, "
                   "all below every valid reward; as a compare config: failure-tiers")
    p.add_argument("--plugin", action="append", default=[], metavar="FILE",
                   help="import this Python file first (repeatable): it registers objectives, losses or whole "
                   "configs by name (register_objective / register_adv_est / register_loss / register_config), "
                   "which --configs then names; e.g. --plugin examples/algorithms/grpo_objective.py --configs full,grpo")


def add_llm_options(p: argparse.ArgumentParser) -> None:
    """Options of LLM policies (the trainable backends of :func:`~discoverygym.policy.llm_specs`), which
    ``train`` and ``compare`` share."""
    g = p.add_argument_group(f"LLM policies (--policy {llm_specs('train')})")
    g.add_argument("--max-new-tokens", type=int, default=None, help=f"completion length limit in tokens (default {LLMConfig.max_new_tokens})")
    g.add_argument("--temperature", type=float, default=None, help=f"sampling temperature (default {LLMConfig.temperature})")
    g.add_argument("--lora-rank", type=int, default=None, help=f"LoRA rank (default {LLMConfig.lora_rank})")
    g.add_argument("--thinking-budget", type=int, default=None,
                   help="tokens before 'stop thinking, answer now' forcing (default off)")
    g.add_argument("--micro-batch", type=int, default=None,
                   help=f"sequences per backward pass (default {LLMConfig.micro_batch}: least memory; gradient accumulation)")
    g.add_argument("--llm-device", default=None, help=f"device of the local model: {LLMConfig.device} (default), cpu, cuda")
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
    g.add_argument("--edit-format", choices=EDIT_FORMATS, default=None,
                   help=f"how the LLM answers: {LLMConfig.edit_format} programs (default) or SEARCH/REPLACE diffs against the parent "
                   "(the Aider/OpenEvolve format; a full program in a diff answer is used as is)")
    g.add_argument("--task-options", type=json_value, default=None,
                   help="options of a program env as JSON, e.g. '{\"n_cases\": 5}'")


def _check_numbers(args: argparse.Namespace) -> None:
    """Refuse non-finite / out-of-range real-valued flags (``--lr inf`` would train NaN adapters): the
    config's limits (:func:`~discoverygym.agents.config.check_reals`), and ``--sigma`` > 0."""
    try:
        check_reals(args, (*TRAIN_REALS, ("sigma", 0.0, True), *LLM_REALS), flags=True)
    except ValueError as exc:
        raise UsageError(str(exc)) from None

#: command-line flag -> TrainConfig field (the same for every learner).
_FIELDS = (("steps", "steps"), ("groups", "groups"), ("group_size", "group_size"), ("seed", "seed"),
           ("lr", "lr"), ("kl_coef", "kl_coef"), ("budget_s", "budget_s"), ("image_every", "image_every"),
           ("policy", "policy"), ("max_new_tokens", "max_new_tokens"), ("temperature", "temperature"),
           ("lora_rank", "lora_rank"), ("thinking_budget", "thinking_budget"), ("micro_batch", "micro_batch"),
           ("llm_device", "device"), ("train_model", "train_model"), ("task_options", "env_kwargs"),
           ("eval_workers", "eval_workers"), ("edit_format", "edit_format"), ("credit", "credit"),
           ("failure_tiers", "failure_tiers"), ("warm_start", "warm_start"), ("shared_prompt", "shared_prompt"))


def flag_overrides(args: argparse.Namespace) -> dict[str, Any]:
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


def build_config(factory: Any, *args: Any, **kwargs: Any) -> Any:
    """Build a TrainConfig, turning its validation errors into usage errors (exit 2)."""
    try:
        return factory(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None


def check_policy(config: Any) -> None:
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
    return ""  # integer / ±1 problems: the gaussian policy is refused with what to use (check_policy)


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

    from discoverygym.agents.config import ABLATIONS  # the registry as it is now (--plugin files add to it)
    from discoverygym.policy import is_llm_spec

    check_env(args.env_id)
    name = AGENTS.get(args.agent, args.agent)
    if name not in ABLATIONS:
        raise UsageError(f"unknown agent {args.agent!r}; use ttt-discover, naive-rl or one of {', '.join(ABLATIONS)}")
    run_dir = Path(args.run_dir)
    overrides = flag_overrides(args)
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
        config = build_config(TrainConfig, **stored)
        initial = _load_init(config.init, config.env_id, config.env_kwargs)
    else:
        if is_llm_spec(overrides.get("policy", "")):
            for flag in ("sigma", "polish", "polish_kwargs", "init"):
                if getattr(args, flag, None) is not None:
                    raise UsageError(f"--{flag.replace('_', '-')} applies to the numeric policy, not to LLM policies")
        _check_new_run_dir(run_dir)
        if args.init is not None:
            overrides["init"] = args.init
        config = build_config(ablation_config, name, env_id=args.env_id, **overrides)
        initial = _load_init(args.init, config.env_id, config.env_kwargs)
        if initial is not None and _init_note(config):
            print(_init_note(config), file=sys.stderr)
    if config.family == "numeric":
        mismatch = policy_mismatch(config)
        if mismatch:
            raise UsageError(mismatch)
        check_policy(config)
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


def _resume_hint(args: argparse.Namespace) -> str:
    """The exact command that continues this ``train`` run (original argv + ``--resume``)."""
    return resume_command(args, ["train", args.env_id, "--run-dir", str(args.run_dir)])


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
    """Run ``train`` for parsed ``args`` (see the module docstring for exit codes)."""
    return run_guarded(args, _train, _resume_hint)


def run_guarded(args: argparse.Namespace, command: Callable[[argparse.Namespace, Console], int],
                resume_hint: Callable[[argparse.Namespace], str]) -> int:
    """Run ``command(args, console)`` (``train`` or ``compare``) with what both need: torch present, the
    ``--plugin`` files loaded, and their errors as exit codes (2 usage, 3 unavailable here, 130
    interrupted, a plugin's own error in one line) with ``resume_hint(args)``, the command that continues."""
    console = Console(stderr=bool(getattr(args, "json", False)))
    try:
        import torch  # noqa: F401
    except ImportError:
        console.print("[red]error:[/] training needs torch: pip install 'discoverygym[rl]' "
                      "(CPU-only: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu first)")
        return 2
    try:
        load_plugins(getattr(args, "plugin", None) or [])
        return command(args, console)
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
              f"once it is fixed, continue with `{resume_hint(args)}`", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        hint = resume_hint(args)
        console.print(f"interrupted: continue with `{hint}`", highlight=False, markup=False,
                      soft_wrap=True)  # not wrapped: the command is pasted back
        return 130


def main(argv: list[str] | None = None) -> int:
    """Standalone entry: ``python -m discoverygym.cli.train train ENV_ID --run-dir DIR``."""
    return standalone_main(add_parser, run, argv)


if __name__ == "__main__":
    sys.exit(main())
