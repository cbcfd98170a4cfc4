"""``discoverygym export ENV_ID --to openevolve DIR``: files to search a discoverygym problem from OpenEvolve.

Writes ``initial_program.py`` (EVOLVE-BLOCK markers), ``evaluator.py`` (judges with discoverygym's
env: our sandbox and verifier) and ``config.yaml`` (:mod:`discoverygym.interop.openevolve`), then
prints the command an OpenEvolve user runs next. ``--to shinka`` is refused with a one-line reason:
ShinkaEvolve's package (``shinka-evolve``; PyPI's ``shinka`` is an unrelated image upscaler) pins
httpx==0.27 and pulls heavy cloud SDKs, so no exporter is tested against it (see the README).

Exit codes: 0 written, 2 usage error (unknown env or option, files exist without ``--force``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from discoverygym.cli.common import UsageError
from discoverygym.interop.openevolve import (
    DEFAULT_API_BASE,
    DEFAULT_MODEL,
    check_env_var_name,
    export_openevolve,
)
from discoverygym.io import check_input_file

__all__ = ["TARGETS", "add_parser", "run"]

#: the tools ``--to`` names; only ``openevolve`` is written today.
TARGETS = ("openevolve", "shinka")

SHINKA_REASON = ("--to shinka is not supported yet: ShinkaEvolve's package (PyPI 'shinka-evolve' 0.0.7) pins "
                 "httpx==0.27 and pulls boto3, moviepy, anthropic and google-genai, so it is not installed and "
                 "driven in our tests; use --to openevolve")


def add_parser(sub: Any) -> None:
    """Add the ``export`` sub-command to the ``discoverygym`` parser."""
    p = sub.add_parser(
        "export",
        help="write the files another search tool needs to run an env (OpenEvolve)",
        description="Write what OpenEvolve needs to search ENV_ID with discoverygym's sandbox and verifier: "
        "DIR/initial_program.py (EVOLVE-BLOCK markers), DIR/evaluator.py (evaluate(program_path) judges "
        "with gym.make(ENV_ID, action_mode='code'); combined_score is the env's reward, every error is "
        "OpenEvolve's failure result) and DIR/config.yaml. Then run: openevolve-run "
        "DIR/initial_program.py DIR/evaluator.py --config DIR/config.yaml. Exit codes: 0 written, 2 usage error.",
    )
    p.add_argument("env_id", help="environment id (see `discoverygym list`)")
    p.add_argument("dir", help="directory to write the files into (created)")
    p.add_argument("--to", choices=TARGETS, default="openevolve", help="the tool (default openevolve)")
    p.add_argument("--api-base", default=DEFAULT_API_BASE,
                   help=f"OpenAI-compatible endpoint written into config.yaml (default {DEFAULT_API_BASE})")
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"model name in config.yaml (default {DEFAULT_MODEL})")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="environment variable config.yaml reads the API key from, a name matching "
                   "^[A-Za-z_][A-Za-z0-9_]*$ (default OPENAI_API_KEY)")
    p.add_argument("--iterations", type=int, default=100, help="OpenEvolve's max_iterations (default 100)")
    p.add_argument("--seed", type=int, default=0, help="seed passed to the programs (default 0)")
    p.add_argument("--task-options", metavar="JSON", default=None,
                   help="gym.make options baked into evaluator.py, a JSON object (e.g. '{\"n_cases\": 20}')")
    p.add_argument("--initial", metavar="FILE", default=None, help="start from this program instead of ours")
    p.add_argument("--timeout", type=int, default=600, help="OpenEvolve's evaluator timeout, seconds (default 600)")
    p.add_argument("--parallel", type=int, default=1, help="OpenEvolve's parallel_evaluations (default 1)")
    p.add_argument("--full-rewrite", action="store_true",
                   help="ask for whole programs instead of SEARCH/REPLACE diffs (diff_based_evolution: false)")
    p.add_argument("--force", action="store_true", help="overwrite files that exist in DIR")


def run(args: argparse.Namespace) -> int:
    """Run ``discoverygym export``; returns the exit code.

    Raises:
        UsageError: ``--to shinka``, bad ``--api-key-env`` (not a variable name) or ``--task-options``,
            an ``--initial`` that is not a regular file of at most 64 MiB, unknown env or option, files exist.
    """
    if args.to == "shinka":
        raise UsageError(SHINKA_REASON)
    try:  # pasted into config.yaml as "${VAR}": a name, nothing else (issue 40, YAML injection)
        check_env_var_name(args.api_key_env)
    except ValueError:
        raise UsageError(f"--api-key-env must be an environment variable name matching ^[A-Za-z_][A-Za-z0-9_]*$, "
                         f"got {args.api_key_env!r}") from None
    try:
        options = json.loads(args.task_options) if args.task_options else {}
    except json.JSONDecodeError as exc:
        raise UsageError(f"--task-options must be a JSON object: {exc}") from None
    if not isinstance(options, dict):
        raise UsageError("--task-options must be a JSON object")
    if args.initial is not None:  # a regular file of bounded size, checked before it is read
        try:
            check_input_file(args.initial)
        except ValueError as exc:
            raise UsageError(f"--initial: {exc}") from None
    try:
        paths = export_openevolve(
            args.env_id, args.dir, api_base=args.api_base, model=args.model, api_key_env=args.api_key_env,
            iterations=args.iterations, seed=args.seed, options=options, initial=args.initial,
            timeout_s=args.timeout, parallel_evaluations=args.parallel, diff_based=not args.full_rewrite,
            overwrite=args.force)
    except (ValueError, FileExistsError, OSError) as exc:
        raise UsageError(str(exc)) from None
    for path in paths.values():
        print(f"wrote {path}")
    print(f"next: openevolve-run {paths['initial_program']} {paths['evaluator']} --config {paths['config']}")
    return 0
