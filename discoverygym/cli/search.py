"""``discoverygym search``: run or resume a (C, L, K, Φ) evolutionary search from the command line.

Wired into the main command by :mod:`discoverygym.cli`. Also runnable alone:
``python -m discoverygym.cli.search CirclePacking-26-v0 --run-dir runs/x``.

Exit codes: 0 finished, 1 the search failed (the message says whether ``--resume`` can continue it:
not when the run directory's log failed verification on resume, e.g. a forged record), 2 usage error
(bad flag, malformed ``--policy`` spec or URL, a model directory without model files, a run
directory of another kind), 3 a backend is not available here (LLM extra / vllm / tinker SDK not
installed, ``TINKER_API_KEY`` not set or rejected, the ``openai:URL`` server unreachable), 130
interrupted (Ctrl-C; resumable with ``--resume``), 4 a chat usage limit was reached (``--max-cost-usd`` /
``--max-tokens``; the line names it; ``--resume`` with a higher limit continues).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from discoverygym.agents.policies.usage import UsageLimitReached
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
from discoverygym.envs.registry import PROGRAM_TASKS
from discoverygym.errors import BackendUnavailable, UsageError
from discoverygym.io import file_in_the_way
from discoverygym.outcomes import OUTCOMES_FILE, format_counts
from discoverygym.policy import POLICIES, is_llm_spec, llm_specs
from discoverygym.search.config import SearchConfig, check_env_id
from discoverygym.search.evolution import EvolutionarySearch, SearchResult
from discoverygym.search.runlog import LogRejected, RunLog
from discoverygym.search.selectors import SELECTORS
from discoverygym.types import Direction, State

__all__ = ["add_parser", "main", "run"]

def _inspirations_value(text: str) -> int | str:
    """argparse type of ``--inspirations``: ``auto`` or an integer >= 1."""
    if text == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 or 'auto', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 or 'auto', got {value}")
    return value


#: search parameters: (flag(s), SearchConfig field, type, help). Each flag's default is the field's
#: default in :class:`~discoverygym.search.config.SearchConfig` (:func:`_field_default`), the one
#: source; ``{default}`` in a help text shows it.
_PARAMS: list[tuple[tuple[str, ...], str, Any, str]] = [
    (
        ("--policy",),
        "policy",
        str,
        (
            "policy name (registered: {policies}; default {default}) or an LLM with --action-mode code: "
            + llm_specs() + " (" + llm_specs("chat") + ": hosted chat); settings via --policy-kwargs"
        ),
    ),
    (("--selector",), "selector", str, "history selector Φ: {selectors} (default {default})"),
    (("-C", "--trajectories"), "C", int, "C: independent trajectories (default {default})"),
    (("-L", "--steps"), "L", int, "L: committed steps per trajectory (default {default})"),
    (("-K", "--candidates"), "K", int, "K: candidates per step, best one committed (default {default})"),
    (("--seed",), "seed", seed_value, "run seed (default {default})"),
    (
        ("--inspirations",),
        "inspirations",
        _inspirations_value,
        ("states per prompt, an integer >= 1 or 'auto' (a per-trajectory UCB1 over 1, 3, 5, 10 rewarded by "
        "the step's committed improvement); default: selector's, RPUCG 5, others 1"),
    ),
    (
        ("--restart-controller",),
        "restart_controller",
        str,
        ("at each selector restart (RPUCG restart_every) a per-trajectory bandit, ucb or thompson, chooses "
        "the best node or a fresh start from the initial state (default: none, best node)"),
    ),
    (
        ("--budget-controller",),
        "budget_controller",
        str,
        ("successive-halving or bandit: hand the C*L steps to the most promising trajectories in rounds "
        "(best so far, recent slope); still exactly C*L*K evaluations (default: none, L steps each)"),
    ),
    (
        ("--controller-kwargs",),
        "controller_kwargs",
        json_value,
        ("controller arguments as JSON, keys inspirations/restart/budget, e.g. "
        "'{{\"budget\": {{\"window\": 3}}}}'"),
    ),
    (("--backpressure",), "backpressure", int, "outstanding batches per trajectory (default {default})"),
    (
        ("--action-mode",),
        "action_mode",
        str,
        "construction (numeric policies) or code (programs); default: code for a program env, else {default}",
    ),
    (
        ("--policy-kwargs",),
        "policy_kwargs",
        json_value,
        "policy arguments as JSON, e.g. '{{\"sigma\": 0.05}}'",
    ),
    (
        ("--selector-kwargs",),
        "selector_kwargs",
        json_value,
        "selector arguments as JSON, e.g. '{{\"gamma\": 0.9}}'",
    ),
    (
        ("--task-options",),
        "env_kwargs",
        json_value,
        (
            "options of a program env (AtCoder, denoising, kernels; needs --action-mode code) as JSON, "
            "e.g. '{{\"n_cases\": 5}}'"
        ),
    ),
]


def _field_default(name: str) -> Any:
    """The default of :class:`SearchConfig`'s field ``name`` (a fresh object for a ``default_factory``)."""
    spec = next(f for f in fields(SearchConfig) if f.name == name)
    return spec.default_factory() if spec.default is MISSING else spec.default


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``search`` sub-command to the ``discoverygym`` parser."""
    p = subparsers.add_parser(
        "search",
        help="run a (C, L, K, Φ) evolutionary search (resumable) into a run directory",
        description="Evolutionary search: C trajectories x L steps x K candidates, prompts chosen by the "
        "selector Φ. Writes config.json, archive.jsonl (every evaluation), best.json, archive.json and "
        "TensorBoard scalars into --run-dir. A killed run continues with --resume.",
        epilog="Example: discoverygym search CirclePacking-26-v0 --policy mutation --selector rpucg "
        "-C 4 -L 20 -K 4 --run-dir runs/cp26. Program envs (AtCoder, denoising, kernels) need "
        "--action-mode code and an LLM policy, e.g. discoverygym search AHC039-v0 --action-mode code "
        "--policy hf:MODEL --task-options '{\"n_cases\": 5}' --run-dir runs/ahc. "
        "Exit codes: 0 finished; 1 failed (the message says whether --resume continues it: not after the log "
        "failed verification, e.g. an altered record); 2 usage error; 3 backend not available here "
        "(LLM extra / vllm / tinker SDK not installed, TINKER_API_KEY not set or rejected, openai:URL server "
        "unreachable); 4 a chat usage limit (--max-cost-usd / --max-tokens) was reached (--resume with a higher "
        "limit continues); 130 interrupted (--resume continues).",
    )
    _add_arguments(p)


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("env_id", help="environment id (see `discoverygym list`)")
    for flags, dest, typ, help_text in _PARAMS:
        shown = help_text.format(policies=", ".join(sorted(POLICIES)), selectors=", ".join(SELECTORS),
                                 default=_field_default(dest))
        p.add_argument(*flags, dest=dest, type=typ, default=None, help=shown)
    p.add_argument("--run-dir", required=True, help="run directory (created; must be new unless --resume)")
    p.add_argument(
        "--resume", action="store_true", help="continue the run in --run-dir with its stored config"
    )
    p.add_argument(
        "--init", default=None, metavar="FILE",
        help="start from this construction (JSON: bare, {'construction': ...} or a run's best.json; re-verified, kept "
        "in config.json)",
    )
    p.add_argument(
        "--workers", type=_positive_int, default=None, help="evaluation workers, >= 1 (default: all CPUs)"
    )
    p.add_argument(
        "--executor",
        choices=("local", "ray", "inline"),
        default="local",
        help="local process pool (default), ray, or inline (in-process, for debugging)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="Ray cluster address, e.g. HEAD:6379 (implies --executor ray; without it ray starts "
        "locally). A cluster with token authentication (Ray's default) needs its token here and on "
        "every node: RAY_AUTH_TOKEN=<token> or RAY_AUTH_TOKEN_PATH=<file> (`ray get-auth-token` on "
        "the head prints it); every node needs discoverygym installed",
    )
    p.add_argument(
        "--compat",
        choices=("discoverygym", "simpletes"),
        default=None,
        help="RPUCG: simpletes = the released SimpleTES selector's handling of failed batches, crashes "
        "and duplicates (sets selector_kwargs compat; default discoverygym)",
    )
    p.add_argument(
        "--edit-format",
        choices=("full", "diff"),
        default=None,
        help="LLM policies: answers are full programs (default) or SEARCH/REPLACE diffs against the parent "
        "(the Aider/OpenEvolve format; sets policy_kwargs edit_format)",
    )
    _add_chat_arguments(p)
    p.add_argument("--no-tensorboard", action="store_true", help="do not write TensorBoard scalars")
    p.add_argument(
        "--log-every",
        type=float,
        default=10.0,
        help="seconds between progress lines when the output is not a terminal (default 10)",
    )


def _positive_float(text: str) -> float:
    """argparse type: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _add_chat_arguments(p: argparse.ArgumentParser) -> None:
    """The run limits of chat backends (``--policy litellm:MODEL``); not part of the stored config,
    so ``--resume`` may raise them."""
    g = p.add_argument_group("chat backends (--policy litellm:MODEL)")
    g.add_argument("--max-cost-usd", type=_positive_float, default=None,
                   help="stop cleanly (resumable) once the run's chat calls cost this much, in USD, across resumes")
    g.add_argument("--max-tokens", type=_positive_int, default=None,
                   help="stop cleanly (resumable) once the run used this many prompt + completion tokens")
    g.add_argument("--max-concurrency", type=_positive_int, default=None,
                   help="most chat requests in flight at once (default 8)")
    g.add_argument("--price-table", default=None, metavar="FILE.json",
                   help="prices in USD per 1M tokens, {\"MODEL\": {\"input\": X, \"output\": Y}}; "
                   "overrides LiteLLM's price map")


def _chat_policy(args: argparse.Namespace, config: SearchConfig) -> tuple[Any, int] | None:
    """For a chat spec: ``(policy, generation workers)`` with the run's usage tracker; else ``None``.

    Raises:
        ValueError: a chat-only flag with another policy; a bad price table; a cap without prices.
    """
    from discoverygym.policy import is_chat_spec, make_policy

    flags = {f: getattr(args, f, None) for f in ("max_cost_usd", "max_tokens", "max_concurrency", "price_table")}
    if not is_chat_spec(config.policy):
        given = [f"--{f.replace('_', '-')}" for f, v in flags.items() if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)} applies to chat backends (--policy litellm:MODEL), "
                             f"not to {config.policy!r}")
        return None
    from discoverygym.agents.policies.usage import PriceTable, UsageTracker

    prices = PriceTable.load(flags["price_table"]) if flags["price_table"] else None
    tracker = UsageTracker(args.run_dir, max_cost_usd=flags["max_cost_usd"], max_tokens=flags["max_tokens"],
                           prices=prices, resume=args.resume)
    kwargs = dict(config.policy_kwargs)
    if flags["max_concurrency"] is not None:
        kwargs["max_concurrency"] = flags["max_concurrency"]
    policy = make_policy(config.policy, usage=tracker, **kwargs)
    return policy, max(1, min(config.C, policy.max_concurrency))


def _config_from_args(args: argparse.Namespace) -> SearchConfig:
    """The search config: stored one with --resume (given flags must agree), else flags + defaults.

    ``--compat`` becomes ``selector_kwargs["compat"]`` (a selector option of RPUCG), ``--edit-format``
    ``policy_kwargs["edit_format"]`` (an option of every LLM backend).
    """
    config = _config_from_flags(args)
    edit_format = getattr(args, "edit_format", None)
    if edit_format is not None:
        have = config.policy_kwargs.get("edit_format")
        if args.resume and have != edit_format and not (have is None and edit_format == "full"):
            raise ValueError("--resume keeps the stored configuration; conflicting flags: edit_format: "
                             f"stored {have!r}, given {edit_format!r}")
        if have is not None and have != edit_format:
            raise ValueError(f"--edit-format {edit_format} contradicts --policy-kwargs edit_format {have!r}")
        if not is_llm_spec(config.policy) and edit_format != "full":
            raise ValueError(f"--edit-format {edit_format} needs an LLM policy with --action-mode code "
                             f"({llm_specs()}); {config.policy!r} proposes no programs")
        if not args.resume and edit_format != "full":
            config.policy_kwargs = {**config.policy_kwargs, "edit_format": edit_format}
    compat = getattr(args, "compat", None)
    if compat is not None:
        have = config.selector_kwargs.get("compat")
        if args.resume and have != compat and not (have is None and compat == "discoverygym"):
            raise ValueError(
                f"--resume keeps the stored configuration; conflicting flags: compat: stored {have!r}, given {compat!r}"
            )
        if have is not None and have != compat:
            raise ValueError(f"--compat {compat} contradicts --selector-kwargs compat {have!r}")
        if not args.resume and compat != "discoverygym":
            config.selector_kwargs = {**config.selector_kwargs, "compat": compat}
    return config


def _config_from_flags(args: argparse.Namespace) -> SearchConfig:
    """The search config from the flags of :data:`_PARAMS` (see :func:`_config_from_args`)."""
    given = {dest: getattr(args, dest) for _, dest, _, _ in _PARAMS if getattr(args, dest) is not None}
    if args.resume:
        run_dir = Path(args.run_dir)
        if run_dir.exists() and not run_dir.is_dir():
            raise ValueError(f"{args.run_dir} exists and is not a directory")
        if not run_dir.is_dir():
            raise ValueError(
                f"--resume: {args.run_dir} does not exist (nothing to resume; start the run without --resume)"
            )
        log = RunLog(run_dir, create=False)
        stored = log.read_config()
        if stored is None and log.has_log():
            raise ValueError(f"--resume: {args.run_dir} has a log but no config.json; cannot resume")
        if stored is None:
            raise ValueError(
                f"--resume: {args.run_dir} holds no run (no config.json; start the run without --resume)"
            )
        kind = run_kind(run_dir)
        if kind != "search":
            kind = "different" if kind in ("other", None) else kind
            hint = (
                f"; continue it with `discoverygym train {stored.get('env_id')} --run-dir {args.run_dir} --resume`"
                if kind == "train"
                else ""
            )
            raise ValueError(f"{args.run_dir} holds a {kind} run, not a search run{hint}")
        if stored.get("env_id") != args.env_id:
            raise ValueError(f"{args.run_dir} holds a search of {stored.get('env_id')}, not {args.env_id}")
        clash = {k: (stored.get(k), v) for k, v in given.items() if stored.get(k) != v}
        if clash:
            text = ", ".join(f"{k}: stored {a!r}, given {b!r}" for k, (a, b) in clash.items())
            raise ValueError(f"--resume keeps the stored configuration; conflicting flags: {text}")
        known = {f.name for f in fields(SearchConfig)}
        return SearchConfig(**{k: v for k, v in stored.items() if k in known})
    if args.env_id in PROGRAM_TASKS:
        given.setdefault("action_mode", "code")  # a program env takes only programs: no need to say so
    return SearchConfig(env_id=args.env_id, **given)  # the rest: SearchConfig's own defaults


def _check_run_dir_path(run_dir: Path) -> None:
    """Refuse a new run directory that is a file or lies under one (one clear line, exit 2)."""
    blocker = file_in_the_way(run_dir)
    if blocker == run_dir:
        raise ValueError(f"cannot create the run directory {run_dir}: it exists and is not a directory")
    if blocker is not None:
        raise ValueError(f"cannot create the run directory {run_dir}: {blocker} exists and is not a directory")


class _Display:
    """rich progress bar on a terminal; plain periodic lines otherwise (CI logs)."""

    def __init__(self, console: Console, total: int, log_every: float) -> None:
        self.console = console
        self.tty = console.is_terminal
        self.log_every = log_every
        self._last = 0.0
        self._progress: Progress | None = None
        if self.tty:
            self._progress = Progress(
                TextColumn("[bold]search"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("best {task.fields[best]}"),
                TextColumn("{task.fields[rate]} evals/s"),
                TextColumn("queue {task.fields[queue]}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[outcomes]}"),
                console=console,
            )
            self._task = self._progress.add_task("search", total=total, best="-", rate="0.0", queue=0,
                                                 outcomes="")
            self._progress.start()

    def __call__(self, stats: dict) -> None:
        best = "-" if stats["best_score"] is None else f"{stats['best_score']:.10g}"
        queue_depth = stats["queue_depth"] + stats["in_flight"]
        counts = stats.get("outcomes")  # what became of the samples so far (issue 49)
        outcomes = f"outcomes: {format_counts(counts)}" if counts else ""
        if self._progress is not None:
            self._progress.update(
                self._task,
                completed=stats["done"],
                best=best,
                rate=f"{stats['evals_per_s']:.1f}",
                queue=queue_depth,
                outcomes=outcomes,
            )
            return
        now = time.monotonic()
        if now - self._last >= self.log_every or stats["done"] >= stats["total"]:
            self._last = now
            print(
                f"[search] {stats['done']}/{stats['total']} evaluations  best {best}  "
                f"{stats['evals_per_s']:.1f} evals/s  queue {queue_depth}" + (f"  {outcomes}" if outcomes else ""),
                flush=True,
            )

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def _record_line(problem: Any, best: State | None, env_id: str | None = None) -> str:
    """``published record V (source); gap to record ±G (higher/lower is better)`` for a search summary,
    and with ``env_id`` a second line, ``beats the record? yes/no: <verdict>``
    (:func:`discoverygym.rewards.certify.state.judge_state`, the verdict ``certify`` gives for ``best.json``).

    The gap is ``best - record`` (:meth:`Direction.gap <discoverygym.types.Direction.gap>`, as ``train``
    reports it); it is left out when there is no valid
    best, no finite record, or the best is a CPU-timing proxy score (not comparable with a GPU record).
    """
    sota = getattr(problem, "sota", None) or {}
    record = sota.get("value")
    text = f"published record {record} ({sota.get('source')})"
    finite = isinstance(record, (int, float)) and math.isfinite(record)
    proxy = best.metadata.get("proxy") if best is not None and best.valid else None
    if proxy:
        return text + f"; best is a {str(proxy).upper()} proxy score, not comparable with it"
    verdict = None
    if env_id is not None:
        from discoverygym.rewards.certify.state import judge_state

        verdict = judge_state(env_id, problem, best)
        if verdict.outcome == "none":
            verdict = None
    if finite and best is not None and best.valid and best.score is not None:
        sense = Direction(getattr(problem, "direction", "max"))
        # the judgment's gap where there is one (the certified value, a tolerance-valid packing's strict
        # lower bound), so this line never says "beaten" where the verdict below says "no"
        gap = verdict.gap if verdict is not None and verdict.gap is not None else sense.gap(best.score, record)
        text += f"; gap to record {gap:+.3e} ({sense.comparative} is better)"
    if verdict is not None:  # the one judgment, as certify gives it for best.json
        text += f"\nbeats the record? {'yes' if verdict.is_record else 'no'}: {verdict.text()}"
    return text


def _outcome_counts(run_dir: Any) -> dict[str, int]:
    """The ``counts`` of a run directory's ``outcomes.json`` (every sample of the run), ``{}`` without one."""
    try:
        counts = json.loads((Path(run_dir) / OUTCOMES_FILE).read_text())["counts"]
        return {str(k): int(v) for k, v in counts.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _summary(console: Console, config: SearchConfig, result: SearchResult, problem: Any = None,
             usage: Any = None) -> None:
    """Print the end-of-run table, the best score, the record gap and (chat backends) tokens and cost."""
    table = Table(
        title=f"search {config.env_id} — Φ={config.selector}, C={config.C} L={config.L} K={config.K}"
    )
    for col in ("trajectory", "best score", "best id", "archive", "commits"):
        table.add_column(col)
    for t in result.trajectories:
        score = "-" if t["best_score"] is None else f"{t['best_score']:.12g}"
        table.add_row(
            str(t["trajectory"]), score, str(t["best_id"]), str(t["archive_size"]), str(t["commits"])
        )
    console.print(table)
    best = result.best
    rate = result.evaluated_now / result.wall_s if result.wall_s > 0 else 0.0
    console.print(
        f"best score {best.score if best else None!r} (id {best.id if best else None}); "
        f"{result.evaluations} evaluations in the log ({result.evaluated_now} now, {rate:.1f}/s, "
        f"utilisation {result.utilisation:.0%}); run dir {result.run_dir}",
        highlight=False,
    )
    if problem is not None:
        console.print(_record_line(problem, best, config.env_id), highlight=False)
    counts = _outcome_counts(result.run_dir)
    if counts:
        console.print(f"outcomes: {format_counts(counts)}", highlight=False, markup=False)
    if usage is not None:
        console.print(usage.line(), highlight=False, markup=False)
    cases = case_summary(best.metadata if best else None)
    if cases:
        console.print(cases, highlight=False, markup=False)


def _resume_hint(args: argparse.Namespace) -> str:
    """The exact command that continues this search (the original argv with ``--resume``, without
    ``--init FILE``: the run keeps its stored start, and ``--resume`` refuses ``--init``)."""
    import shlex

    words = shlex.split(resume_command(args, ["search", args.env_id, "--run-dir", str(args.run_dir)]))
    return shlex.join(_without_flag(words, "--init"))


def _without_flag(words: list[str], flag: str) -> list[str]:
    """``words`` (a command line) without ``flag VALUE`` and ``flag=VALUE``."""
    out, skip = [], False
    for w in words:
        if skip:
            skip = False
        elif w == flag:
            skip = True
        elif not w.startswith(flag + "="):
            out.append(w)
    return out


def _limit_hint(args: argparse.Namespace, limit: str) -> str:
    """The resume command with the reached limit's flag replaced by ``FLAG HIGHER``."""
    import shlex

    flag = "--" + limit.replace("_", "-")
    return shlex.join([*_without_flag(shlex.split(_resume_hint(args)), flag), flag, "HIGHER"])


def _raised_at(exc: BaseException) -> str:
    """`` (raised at FILE:LINE in FUNCTION)`` for the innermost frame of ``exc``'s traceback, or ``""``."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" (raised at {last.filename}:{last.lineno} in {last.name})"


def _set_initial(args: argparse.Namespace, config: SearchConfig) -> None:
    """Put ``--init FILE``'s construction into ``config.initial`` after checking it with the env.

    Raises:
        UsageError: a program env, a file :func:`~discoverygym.cli.common.load_init` refuses, or an
            invalid construction (the env's message).
        ValueError: ``--init`` with ``--resume`` (the run keeps its stored start).
    """
    if args.init is None:
        return
    if args.resume:
        raise ValueError("--resume keeps the run's stored start; leave out --init")
    config.validate(check_policy=False)
    # the one --init loader of train, compare and search (read, then judged by the env; UsageError)
    config.initial = load_init(args.init, config.env_id, config.env_kwargs)
    config.validate(check_policy=False)  # its refusals (--init in code mode) before a note about the policy
    note = _init_policy(args, config)
    if note:
        print(note, flush=True)


def _init_policy(args: argparse.Namespace, config: SearchConfig) -> str:
    """With ``--init`` and no ``--policy``: the policy that keeps a tight construction valid, and a line saying so.

    A published record is usually tight (circles touching, constraints active): the default ``mutation``
    policy's random steps then make nearly every child invalid (23 of 24 from the CP26 record, issue
    50). Where the problem declares a local optimiser (``Problem.polish``), the ``gaussian`` policy with
    ``polish="auto"`` is used instead (each child is polished back to a valid, locally optimal
    construction); otherwise the default stays and the line says what to pass.

    Returns:
        The line to print (``""`` when ``--policy`` or ``--policy-kwargs`` was given).
    """
    from discoverygym.envs.registry import ENVS

    if getattr(args, "policy", None) is not None or getattr(args, "policy_kwargs", None) is not None:
        return ""
    if getattr(ENVS.get(config.env_id), "polish", None) is not None:
        config.policy, config.policy_kwargs = "gaussian", {"polish": "auto"}
        return ("--init: policy gaussian with polish=auto (the problem's local optimiser keeps a tight start valid; "
                "plain random mutations of a record are mostly invalid). Pass --policy mutation for those.")
    return ("--init: policy mutation (this problem declares no local optimiser); if most children are invalid, "
            "take smaller steps with --policy-kwargs '{\"sigma\": 1e-4}'")


def run(args: argparse.Namespace) -> int:
    """Execute ``discoverygym search`` with parsed ``args``; returns the exit code."""
    console = Console()
    display: _Display | None = None
    try:
        check_env_id(args.env_id)
        if not args.resume:
            _check_run_dir_path(Path(args.run_dir))
        config = _config_from_args(args)
        _set_initial(args, config)
        check_policy_fits(config.policy, config.env_id)
        chat = _chat_policy(args, config)
        display = _Display(console, config.budget, args.log_every)
        search = EvolutionarySearch(
            config,
            args.run_dir,
            resume=args.resume,
            executor=args.executor,
            workers=args.workers,
            ray_address=args.ray_address,
            progress=display,
            tensorboard=not args.no_tensorboard,
            **({"policy": chat[0], "generation_workers": chat[1]} if chat else {}),
        )
    except BackendUnavailable as exc:  # a missing LLM extra / SDK key, an unreachable server
        if display is not None:
            display.stop()
        print(f"discoverygym search: unavailable here: {one_line(exc)}", file=sys.stderr)
        return 3
    except (ValueError, TypeError, OSError, UsageError) as exc:  # json.JSONDecodeError is a ValueError
        if display is not None:
            display.stop()
        print(f"discoverygym search: error: {one_line(exc)}", file=sys.stderr)
        return 2
    try:
        result = search.run()
    except UsageLimitReached as exc:
        display.stop()
        print(
            f"discoverygym search: stopped: {exc}; everything evaluated is in {args.run_dir}\n"
            f"{search.policy.usage.line()}\n"
            f"continue with a higher limit: {_limit_hint(args, exc.limit)}",
            file=sys.stderr,
        )
        return 4
    except KeyboardInterrupt:
        display.stop()
        print(
            f"\ninterrupted; everything evaluated is in {args.run_dir}. Continue with:\n"
            f"  {_resume_hint(args)}",
            file=sys.stderr,
        )
        return 130
    except BackendUnavailable as exc:
        display.stop()
        print(
            f"discoverygym search: unavailable here: {one_line(exc)}\n"
            f"the run directory {args.run_dir} is resumable: {_resume_hint(args)}",
            file=sys.stderr,
        )
        return 3
    except LogRejected as exc:  # resume refused a corrupt or altered log: --resume cannot continue it
        display.stop()
        print(
            f"discoverygym search: the log failed verification: {one_line(exc)}\n"
            f"the run directory {args.run_dir} cannot be resumed as it is (its log and best.json were left as "
            "they were); start a new run in a new --run-dir",
            file=sys.stderr,
        )
        return 1
    except Exception as exc:  # noqa: BLE001 - reported with where it was raised; the log keeps what was done
        display.stop()
        print(
            f"discoverygym search: failed: {type(exc).__name__}: {exc}{_raised_at(exc)}\n"
            f"everything evaluated so far is logged in {args.run_dir}; once the cause is fixed, continue with: "
            f"{_resume_hint(args)}",
            file=sys.stderr,
        )
        return 1
    display.stop()
    _summary(console, config, result, search.problem, getattr(search.policy, "usage", None))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m discoverygym.cli.search ...`` (same arguments as ``discoverygym search``)."""
    parser = argparse.ArgumentParser(
        prog="discoverygym search", description="(C, L, K, Φ) evolutionary search"
    )
    _add_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = ["search", *argv]
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
