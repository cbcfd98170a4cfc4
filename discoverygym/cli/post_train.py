"""``discoverygym post-train``: IRFT post-training of an LLM generator from its own search histories.

Wired into the main command by :mod:`discoverygym.cli` (torch/trl imported lazily). Also runnable
alone: ``python -m discoverygym.cli.post_train --problems ... --policy hf:PATH --run-dir runs/irft``.

Exit codes: 0 finished, 1 a stage failed (the run directory stays resumable), 2 usage error
(unknown env, bad or contradictory flags, a --run-dir that is a file or holds another run, no
TINKER_API_KEY for ``tinker:``; one line, and no run directory is created), 3 backend unavailable
here (a missing extra, an unreachable Tinker service), 130 interrupted (Ctrl-C; continue with
``--resume``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from rich.console import Console
from rich.table import Table

from discoverygym.cli.common import resume_command, seed_value
from discoverygym.policy import llm_specs

__all__ = ["add_parser", "main", "run"]


def _csv(text: str) -> list[str]:
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise argparse.ArgumentTypeError(f"expected a comma-separated list without empty items, got {text!r}")
    return items


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in _csv(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid JSON ({exc}): {text!r}") from None
    except RecursionError:
        raise argparse.ArgumentTypeError("invalid JSON (nested too deeply)") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"n_cases\": 5}}', got {text!r}")
    return value


#: (flags, IRFTConfig field or "sft.<name>", argparse type, help); defaults come from the dataclasses.
_PARAMS: list[tuple[tuple[str, ...], str, Any, str]] = [
    (("--problems",), "problems", _csv, "training env ids, comma-separated"),
    (("--heldout",), "heldout", _csv, "held-out env ids evaluated after each round, comma-separated"),
    (("--policy",), "policy", str, f"generator: {llm_specs('post-train', summaries=True)}"),
    (("--policy-kwargs",), "policy_kwargs", _json_object, "generator constructor arguments as a JSON object"),
    (("--rounds",), "rounds", int, "IRFT rounds (default 6)"),
    (("--trajectories",), "trajectories", int, "search trajectories per problem per round, Ĉ (default 32)"),
    (("--steps",), "steps", int, "committed steps L per trajectory (default 8)"),
    (("--candidates",), "candidates", int, "candidates K per step (default 4)"),
    (("--selector",), "selector", str, "history selector Φ (default rpucg)"),
    (
        ("--top-percent",),
        "top_percent",
        _floats,
        (
            "R: one value for every round, or exactly one value per round (as many as --rounds), "
            "comma-separated (default: TES's 10,10,10,10,5,5; rounds past the list, e.g. added on "
            "--resume, use its last value)"
        ),
    ),
    (("--credit",), "credit", str, "credit rule: irft (top R%% → 1) or grpo (group-normalised advantages)"),
    (("--credit-scope",), "credit_scope", str, "irft ranking per 'problem' (default) or over the 'buffer'"),
    (("--sft-steps",), "sft.steps", int, "optimiser steps per round (default 100)"),
    (("--batch-size",), "sft.batch_size", int, "examples per optimiser step (default 256)"),
    (
        ("--micro-batch-size",),
        "sft.micro_batch_size",
        int,
        "examples per forward pass; must divide --batch-size (default: the largest divisor <= 8)",
    ),
    (("--lr",), "sft.lr", _number, "peak learning rate > 0, cosine decay (default 2e-5)"),
    (("--max-length",), "sft.max_length", int, "tokens per training example (default 8192)"),
    (("--normalize",), "sft.normalize", str, "loss normalisation: sequence (default) or token"),
    (("--eval-trajectories",), "eval_trajectories", int, "held-out search C (default 4)"),
    (("--eval-steps",), "eval_steps", int, "held-out search L (default 8)"),
    (("--eval-candidates",), "eval_candidates", int, "held-out search K (default 4)"),
    (("--seed",), "seed", seed_value, "run seed (default 0)"),
    (
        ("--task-options", "--env-kwargs"),
        "env_kwargs",
        _json_object,
        (
            "options of the problems as a JSON object, for every search (as `train --task-options`; "
            "--env-kwargs is an alias)"
        ),
    ),
]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``post-train`` sub-command to the ``discoverygym`` parser."""
    p = subparsers.add_parser(
        "post-train",
        help="IRFT: post-train an LLM generator on its own search trajectories (resumable)",
        description="Each round: evolutionary search with the current model on every training problem, "
        "trajectories into a replay buffer (buffer.jsonl), credit by each trajectory's final best "
        "(irft: top R% → weight 1; grpo: group-normalised advantages), weighted SFT with a cosine "
        "schedule, then a fixed-budget search on the held-out problems. TensorBoard events, "
        "rounds.jsonl and checkpoints/ go into --run-dir.",
        epilog="Example: discoverygym post-train --problems ErdosMinOverlap-v0,FirstAutocorrelation-v0 "
        "--heldout CirclePacking-26-v0 --policy hf:Qwen/Qwen3-8B --rounds 6 --trajectories 32 "
        "--top-percent 10,10,10,10,5,5 --sft-steps 100 --batch-size 256 --lr 2e-5 --run-dir runs/irft",
    )
    _add_arguments(p)


def _one_line_error(p: argparse.ArgumentParser) -> None:
    """Argument errors as one line (no usage block), exit 2."""

    def error(message: str) -> None:
        print(f"discoverygym post-train: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)

    p.error = error  # type: ignore[method-assign]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    _one_line_error(p)
    for flags, dest, typ, help_text in _PARAMS:
        metavar = flags[0].lstrip("-").upper().replace("-", "_")
        p.add_argument(
            *flags, dest=dest.replace(".", "__"), type=typ, default=None, metavar=metavar, help=help_text
        )
    p.add_argument("--run-dir", required=True, help="run directory (must be new unless --resume)")
    p.add_argument(
        "--resume", action="store_true", help="continue the run in --run-dir with its stored config"
    )
    p.add_argument(
        "--executor",
        choices=("local", "ray", "inline"),
        default="local",
        help="where candidates are evaluated (default local process pool)",
    )
    p.add_argument("--workers", type=int, default=None, help="evaluation workers (default: all CPUs)")
    p.add_argument("--edit-format", choices=("full", "diff"), default=None,
                   help="generator answers: full programs (default) or SEARCH/REPLACE diffs against the parent "
                   "(the Aider/OpenEvolve format; sets policy_kwargs edit_format)")
    p.add_argument("--no-tensorboard", action="store_true", help="do not write TensorBoard events")
    p.add_argument("--json", action="store_true", help="print the round summaries as JSON")
    w = p.add_argument_group(
        "warm start (--warmup): weighted SFT on prompt -> valid-program pairs made without an LLM, before any RL",
        "The start program of every --problems env and rule-made variants of it (numeric literals "
        "perturbed, comments dropped), each judged by the env's verifier, only valid ones kept; "
        "weighted SFT of a rank-16 LoRA adapter on q/k/v/o with the prompt's gradient "
        "(defaults: --sft-steps 48 per env --batch-size 1 "
        "--lr 1e-3; 9.2 min for Erdős alone, measured beside another job on 2 cores); the adapter is saved to <run-dir>/adapter. Use it with "
        "`train --warm-start <run-dir>/adapter` or `--policy-kwargs '{\"adapter\": \"<run-dir>/adapter\"}'`. "
        "--heldout envs are only recorded (kept out of the data); benchmarks/llm_outcomes.py measures them.",
    )
    w.add_argument("--warmup", action="store_true", help="run a warm start instead of IRFT rounds")
    w.add_argument("--variants", type=int, default=None, help="valid programs kept per env (default 24)")


def _given(args: argparse.Namespace) -> dict:
    """Flags the user gave, as a nested IRFTConfig dict (``sft`` sub-dict)."""
    out: dict = {}
    for _, dest, _, _ in _PARAMS:
        value = getattr(args, dest.replace(".", "__"))
        if value is None:
            continue
        if dest.startswith("sft."):
            out.setdefault("sft", {})[dest[4:]] = value
        else:
            out[dest] = value
    edit_format = getattr(args, "edit_format", None)
    if edit_format is not None:
        kwargs = dict(out.get("policy_kwargs") or {})
        if kwargs.get("edit_format", edit_format) != edit_format:
            raise ValueError(f"--edit-format {edit_format} contradicts --policy-kwargs edit_format "
                             f"{kwargs['edit_format']!r}")
        if edit_format != "full":
            out["policy_kwargs"] = {**kwargs, "edit_format": edit_format}
    return out


def config_from_args(args: argparse.Namespace) -> Any:
    """The validated :class:`~discoverygym.agents.irft.loop.IRFTConfig`: the stored one with --resume
    (given flags must agree, except --rounds, which extends a run), else flags over the defaults.
    Nothing is created.

    Raises:
        ValueError: missing --problems/--policy for a new run; a --run-dir that cannot hold this
            run (a file, a train or search run, a post-train run without --resume, no run with
            --resume); flags that contradict the stored configuration; an invalid configuration.
    """
    from discoverygym.agents.irft.loop import IRFTConfig, check_run_dir
    from discoverygym.agents.irft.sft import SFTSettings

    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    given = _given(args)
    stored = check_run_dir(args.run_dir, resume=args.resume)
    if args.resume and stored.get("warmup"):
        raise ValueError(f"{args.run_dir} holds a warm start: resume it with --warmup")
    if args.resume:
        clash = {
            k: (stored.get(k), v)
            for k, v in given.items()
            if k not in ("sft", "rounds") and stored.get(k) != v
        }
        clash.update(
            {
                f"sft.{k}": (stored.get("sft", {}).get(k), v)
                for k, v in given.get("sft", {}).items()
                if stored.get("sft", {}).get(k) != v
            }
        )
        if clash:
            text = ", ".join(f"{k}: stored {a!r}, given {b!r}" for k, (a, b) in clash.items())
            raise ValueError(f"--resume keeps the stored configuration; conflicting flags: {text}")
        known = {f.name for f in fields(IRFTConfig)}
        stored.update({"rounds": given["rounds"]} if "rounds" in given else {})  # more rounds extend a run
        try:
            config = IRFTConfig(**{k: v for k, v in stored.items() if k in known})
        except TypeError as exc:
            raise ValueError(f"cannot resume {args.run_dir}: its config.json is incomplete ({exc})") from None
        config.validate()
        return config
    for required in ("problems", "policy"):
        if not given.get(required):
            raise ValueError(f"--{required} is required for a new run")
    sft = given.setdefault("sft", {})
    batch = sft.get("batch_size", SFTSettings.batch_size)
    if "micro_batch_size" not in sft and isinstance(batch, int) and batch >= 1:
        default = SFTSettings.micro_batch_size
        sft["micro_batch_size"] = max(d for d in range(1, min(batch, default) + 1) if batch % d == 0)
    for flag, key in (
        ("--sft-steps", "steps"),
        ("--batch-size", "batch_size"),
        ("--micro-batch-size", "micro_batch_size"),
    ):
        if key in sft and sft[key] < 1:
            raise ValueError(f"{flag} must be >= 1, got {sft[key]}")
    if sft.get("micro_batch_size", 1) > batch:
        raise ValueError(
            f"--micro-batch-size ({sft['micro_batch_size']}) must not exceed --batch-size ({batch})"
        )
    if batch % sft.get("micro_batch_size", 1):
        raise ValueError(
            f"--batch-size ({batch}) must be a multiple of --micro-batch-size ({sft['micro_batch_size']})"
        )
    config = IRFTConfig(**given)
    if "top_percent" in given and len(config.top_percent) not in (1, config.rounds):
        raise ValueError(
            f"--top-percent takes one value for every round or one value per round ({config.rounds} "
            f"for --rounds {config.rounds}), got {len(config.top_percent)}: "
            + ",".join(f"{x:g}" for x in config.top_percent)
        )
    config.validate()
    return config


def _table(console: Console, summaries: list[dict]) -> None:
    """Per round: new buffer nodes, SFT examples and last loss, mean best reward (train / held-out).

    The held-out column is the best reward of the *candidates* the generator wrote in the held-out
    searches (``best_candidate_reward``), not the searches' best state, which counts the env's
    initial state and would show it as a held-out result whenever no candidate beats it; ``-``
    when no candidate was valid.
    """
    table = Table(title="IRFT rounds (per-problem values: --json or rounds.jsonl)")
    for col in (
        "round",
        "new nodes",
        "SFT examples",
        "SFT loss",
        "train best reward",
        "held-out best candidate reward",
    ):
        table.add_column(col)

    def fmt(x: Any) -> str:
        return "-" if x is None else f"{x:.6g}" if isinstance(x, float) else str(x)

    def mean(values: list) -> float | None:
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else None

    for s in summaries:
        sft = s.get("sft") or {}
        train = mean(list((s.get("train_best_reward") or {}).values()))
        held = mean([v.get("best_candidate_reward") for v in s.get("heldout", {}).values()])
        row = (s["round"], s.get("buffer_rows"), sft.get("examples"), sft.get("loss"), train, held)
        table.add_row(*(fmt(x) for x in row))
    console.print(table)


def _error(text: str) -> None:
    print(f"discoverygym post-train: error: {text}", file=sys.stderr)


_WARMUP_FLAGS = ("rounds", "trajectories", "steps", "candidates", "selector", "top_percent", "credit",
                 "credit_scope", "eval_trajectories", "eval_steps", "eval_candidates", "env_kwargs")


def warmup_config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~discoverygym.agents.irft.warmup.WarmupConfig` of ``--warmup`` flags (the defaults of
    the dataclass where a flag is not given; with --resume the stored one is used by the run).

    Raises:
        ValueError: an IRFT-only flag (--rounds, --trajectories...), a missing --problems, or a
            configuration :meth:`WarmupConfig.validate` refuses.
    """
    from dataclasses import replace

    from discoverygym.agents.irft.warmup import WarmupConfig, _default_sft

    given = _given(args)
    extra = [k for k in _WARMUP_FLAGS if k in given]
    if extra:
        raise ValueError(f"--warmup takes no IRFT search flags: {', '.join('--' + k.replace('_', '-') for k in extra)}")
    if args.resume:
        return None
    if not given.get("problems"):
        raise ValueError("--problems is required for a new run")
    sft = replace(_default_sft(len(given["problems"])), **given.pop("sft", {}))
    if args.variants is not None:
        given["variants"] = args.variants
    config = WarmupConfig(**given, sft=sft)
    config.validate()
    return config


def _run_warmup(args: argparse.Namespace, console: Console) -> int:
    """``post-train --warmup``: build the data, run the SFT, print the summary table (exit code)."""
    from discoverygym.agents.irft.warmup import run_warmup

    try:
        config = warmup_config_from_args(args)
        if config is None:  # --resume: the stored configuration
            from discoverygym.agents.irft.loop import check_run_dir
            from discoverygym.agents.irft.warmup import WarmupConfig

            stored = check_run_dir(args.run_dir, resume=True)
            if not stored.get("warmup"):
                raise ValueError(f"{args.run_dir} holds an IRFT post-train run: resume it without --warmup")
            config = WarmupConfig.from_json(stored)
    except (ValueError, TypeError) as exc:
        _error(str(exc))
        return 2
    try:
        summary = run_warmup(config, args.run_dir, resume=args.resume,
                             progress=lambda m: console.print(f"[post-train --warmup] {m}"))
    except ValueError as exc:
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted; continue with: {resume_command(args, ['post-train', '--run-dir', str(args.run_dir)])}",
              file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    table = Table(title="warm-start data (rule-made variants judged by each env's verifier)")
    for col in ("env", "judged", "valid kept", "distinct scores", "start score", "best kept"):
        table.add_column(col)
    for st in summary["data"]:
        table.add_row(st["env"], str(st["tried"]), str(st["valid"]), str(st["distinct_scores"]),
                      f"{st['start_score']:.6g}" if st.get("start_score") is not None else "-",
                      f"{st['best']:.6g}" if st.get("best") is not None else "-")
    console.print(table)
    sft = summary.get("sft") or {}
    losses = sft.get("losses") or []
    console.print(f"SFT: {summary['examples']} examples, {sft.get('steps')} steps, loss "
                  f"{losses[0]:.3g} -> {losses[-1]:.3g}" if losses else f"SFT: {sft}")
    console.print(f"adapter: {summary['adapter']}  (train --warm-start {summary['adapter']}; "
                  f"held out: {', '.join(summary['heldout']) or 'none'}); {summary['wall_s']:.0f} s")
    return 0


def run(args: argparse.Namespace) -> int:
    """Execute ``discoverygym post-train`` with parsed ``args``; returns the exit code.

    Everything that can be checked is checked before the run directory is created (configuration,
    --run-dir, the backend and its credentials): a failed start leaves no directory behind.
    """
    from discoverygym.agents.policies.llm import BackendUnavailable as MissingExtra
    from discoverygym.errors import BackendUnavailable

    console = Console(stderr=bool(args.json))
    if getattr(args, "warmup", False):
        return _run_warmup(args, console)
    try:
        from discoverygym.agents.irft.loop import IRFT

        config = config_from_args(args)
        irft = IRFT(
            config,
            args.run_dir,
            resume=args.resume,
            executor=args.executor,
            workers=args.workers,
            progress=lambda m: console.print(f"[post-train] {m}"),
            tensorboard=not args.no_tensorboard,
        )
    except (BackendUnavailable, MissingExtra) as exc:
        print(f"discoverygym post-train: unavailable here: {exc}", file=sys.stderr)
        return 3
    except (ValueError, TypeError) as exc:
        _error(str(exc))
        return 2
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        _error(f"{exc.strerror or exc}{where}")
        return 2
    except ImportError as exc:
        print(f"discoverygym post-train: unavailable here: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("\ninterrupted before the run started", file=sys.stderr)
        return 130
    try:
        summaries = irft.run()
    except KeyboardInterrupt:
        print(
            f"\ninterrupted; continue with: {resume_command(args, ['post-train', '--run-dir', str(args.run_dir)])}",
            file=sys.stderr,
        )
        return 130
    except Exception as exc:  # noqa: BLE001 - reported; the run directory stays resumable
        print(
            f"discoverygym post-train: failed: {type(exc).__name__}: {exc}\n"
            f"the run directory {args.run_dir} is resumable: "
            f"{resume_command(args, ['post-train', '--run-dir', str(args.run_dir)])}",
            file=sys.stderr,
        )
        return 1
    if args.json:
        print(json.dumps(summaries, indent=2))
    else:
        _table(console, summaries)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m discoverygym.cli.post_train ...`` (same arguments as ``discoverygym post-train``)."""
    parser = argparse.ArgumentParser(prog="discoverygym post-train", description="IRFT post-training")
    _add_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = ["post-train", *argv]
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
