"""Run a discoverygym problem from OpenEvolve: export its files, and judge OpenEvolve's programs.

``discoverygym export ENV_ID --to openevolve DIR`` (:func:`export_openevolve`) writes

* ``initial_program.py`` (``.cpp`` for C++ tasks): the starting program, its body between
  ``EVOLVE-BLOCK-START`` / ``EVOLVE-BLOCK-END`` markers (the region OpenEvolve's prompts ask the
  LLM to change);
* ``evaluator.py``: ``evaluate(program_path)``, OpenEvolve's evaluator contract, which calls
  :func:`evaluate_program_file`: the program is judged by ``gym.make(ENV_ID, action_mode="code")``
  (discoverygym's sandbox and verifier), so the ``combined_score`` OpenEvolve selects on is
  discoverygym's reward of the verified score;
* ``config.yaml``: OpenEvolve's configuration (LLM ``api_base``/model, iterations, the problem
  statement as the system message, evaluator timeout; cascade evaluation off).

Then an OpenEvolve user runs ``openevolve-run DIR/initial_program.py DIR/evaluator.py --config
DIR/config.yaml`` (or ``python openevolve-run.py ...`` from a clone of OpenEvolve).

Metrics (:func:`metrics_of`): ``combined_score`` is the env's reward (higher is better for every
problem: the score itself when maximised, ``reward_scale / score`` when minimised; the failure
reward, strictly below every valid reward, when invalid), ``score`` the verifier's number (valid
programs only) and ``valid`` 1.0 / 0.0. Every failure (the program crashes, times out in the
sandbox, returns an invalid construction; the file cannot be read; the env cannot judge here) is
OpenEvolve's failure result: an ``EvaluationResult`` whose metrics carry ``error: 0.0`` (OpenEvolve's
own convention) and whose artifacts carry ``error_type``, ``error_message`` and the program's
stdout/stderr tails, which OpenEvolve shows the LLM in the next prompt. ``evaluate`` never raises.

This module does not import OpenEvolve at import time; :func:`evaluate_program_file` returns a
plain metrics dict where OpenEvolve is not installed.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym

from discoverygym.envs.problem import example_file
from discoverygym.envs.registry import ENVS, PROGRAM_TASKS, problem_of
from discoverygym.types import State

__all__ = [
    "DEFAULT_API_BASE", "DEFAULT_MODEL", "ENV_VAR_NAME", "FAILURE_KEYS", "check_env_var_name", "evaluate_program_file",
    "export_openevolve", "initial_program", "judge", "metrics_of", "with_evolve_markers",
]

#: where the exported config points the LLM by default (a local OpenAI-compatible server, e.g. vLLM).
DEFAULT_API_BASE = "http://localhost:8000/v1"
#: the model name the exported config asks for by default.
DEFAULT_MODEL = "gpt-4o-mini"
#: metric keys present only in a failure result.
FAILURE_KEYS = ("error",)

_COMMENT = {"python": "#", "cpp": "//"}
_SUFFIX = {"python": ".py", "cpp": ".cpp"}
#: an environment variable's name (POSIX portable names), the only text pasted unquoted into config.yaml
ENV_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_env_var_name(name: Any) -> str:
    """``name`` if it is a POSIX environment variable name (``^[A-Za-z_][A-Za-z0-9_]*$``).

    ``config.yaml`` reads the API key as ``"${NAME}"`` (OpenEvolve expands it), so any other text
    would be YAML injected by the argument (issue 40, #8).

    Raises:
        ValueError: anything else (the message quotes it).
    """
    if not isinstance(name, str) or not ENV_VAR_NAME.fullmatch(name):
        raise ValueError(f"api key env var must be a variable name (letters, digits, _; not starting with a digit), "
                         f"got {name!r}")
    return name

_PARENT_PROGRAM = '''\
"""Initial program for {env_id}: returns the current construction (``parent``) unchanged.

Improve it: ``{entry}`` must return {returns}.
"""

import numpy as np


def {entry}(seed: int = 0, budget_s: float = 10.0, parent=None):
    """Return a construction; ``parent`` is the env's initial construction (a numpy array)."""
    return np.asarray(parent).tolist()
'''


# --------------------------------------------------------------------------- initial program
def initial_program(env_id: str, **options: Any) -> tuple[str, str]:
    """The program OpenEvolve starts from, and its language.

    Program envs (kernels, AtCoder, denoising) start from their task's initial program; construction
    envs from the problem's bundled example (``Problem.example``) or, without one, a program returning
    ``parent`` (the env's initial construction, which the evaluator passes in).

    Args:
        env_id: a registered env id.
        **options: task options of a program env (as ``gym.make`` takes them).

    Returns:
        ``(source, language)`` with ``language`` ``"python"`` or ``"cpp"``; the source is not yet
        wrapped in EVOLVE-BLOCK markers (:func:`with_evolve_markers`).

    Raises:
        ValueError: unknown env id or option.
    """
    problem = problem_of(env_id, "code", **options)
    if env_id in PROGRAM_TASKS:
        return problem.initial_program(), problem.language
    example = example_file(problem)
    if example is not None:
        return example.read_text(), problem.language
    return _PARENT_PROGRAM.format(env_id=env_id, entry=problem.entry, returns=problem.returns), problem.language


def with_evolve_markers(source: str, language: str = "python") -> str:
    """``source`` with its whole text between ``EVOLVE-BLOCK-START`` / ``-END`` comment lines.

    A source that already has an ``EVOLVE-BLOCK-START`` marker is returned unchanged. Only comment
    lines are added, so the program's behaviour (and discoverygym's score) is the same.
    """
    if "EVOLVE-BLOCK-START" in source:
        return source
    c = _COMMENT[language]
    return f"{c} EVOLVE-BLOCK-START\n{source.rstrip()}\n{c} EVOLVE-BLOCK-END\n"


# --------------------------------------------------------------------------- judging
_ENVS: dict[str, tuple[Any, State | None, threading.Lock]] = {}
_ENVS_LOCK = threading.Lock()


def _env(env_id: str, seed: int, options: dict) -> tuple[Any, State | None, threading.Lock]:
    """The cached env for ``(env_id, seed, options)``: built once per process (OpenEvolve workers).

    Construction envs are reset with ``seed``: their initial state is the ``parent`` every program
    receives. Program envs are not reset (that would judge the task's initial program).
    """
    key = json.dumps([env_id, seed, options], sort_keys=True, default=str)
    with _ENVS_LOCK:
        if key not in _ENVS:
            env = gym.make(env_id, action_mode="code", **options)
            parent = None
            if env_id in ENVS:
                env.reset(seed=seed)
                parent = env.unwrapped.state
            _ENVS[key] = (env, parent, threading.Lock())
        return _ENVS[key]


def judge(source: str, env_id: str, *, seed: int = 0, options: dict | None = None) -> State:
    """Judge program text exactly as the exported evaluator does (discoverygym's verified state).

    Args:
        source: the program.
        env_id: a registered env id.
        seed: the program's seed (and, for construction envs, the reset seed giving ``parent``).
        options: ``gym.make`` options (task options of a program env; ``sandbox``/``program_budget_s``).

    Returns:
        The :class:`State` from ``env.unwrapped.evaluate`` (never raises for a bad program).
    """
    env, parent, lock = _env(env_id, int(seed), dict(options or {}))
    with lock:  # OpenEvolve runs evaluations in executor threads
        return env.unwrapped.evaluate(source, parent=parent, seed=int(seed), id="openevolve")


def metrics_of(state: State) -> dict[str, float]:
    """OpenEvolve metrics of a judged state: ``combined_score`` (the reward), ``valid``, and ``score``
    (valid) or ``error: 0.0`` (invalid, OpenEvolve's failure convention)."""
    metrics = {"combined_score": float(state.reward), "valid": 1.0 if state.valid else 0.0}
    if state.valid:
        metrics["score"] = float(state.score)
    else:
        metrics["error"] = 0.0
    return metrics


def _result(metrics: dict[str, float], artifacts: dict[str, str]) -> Any:
    """An OpenEvolve ``EvaluationResult`` where OpenEvolve is importable, else the metrics dict."""
    try:
        from openevolve.evaluation_result import EvaluationResult
    except ImportError:
        return metrics
    return EvaluationResult(metrics=metrics, artifacts=artifacts)


def evaluate_program_file(program_path: str | Path, env_id: str, *, seed: int = 0,
                          options: dict | None = None) -> Any:
    """OpenEvolve's ``evaluate(program_path)`` for ``env_id``: judge the file with discoverygym.

    Never raises: every failure becomes a failure result (``combined_score`` = the env's failure
    reward, or 0.0 when no env could be built; ``valid`` 0.0; ``error`` 0.0) with ``error_type`` /
    ``error_message`` artifacts.

    Args:
        program_path: the program file OpenEvolve wrote.
        env_id: a registered env id.
        seed: see :func:`judge`.
        options: see :func:`judge`.

    Returns:
        ``openevolve.evaluation_result.EvaluationResult`` (a plain metrics dict without OpenEvolve).
    """
    try:
        source = Path(program_path).read_text()
        state = judge(source, env_id, seed=seed, options=options)
    except Exception as exc:  # noqa: BLE001 - every error is OpenEvolve's failure result
        failure = {"combined_score": 0.0, "valid": 0.0, "error": 0.0}
        return _result(failure, {"error_type": type(exc).__name__, "error_message": str(exc)})
    artifacts = {}
    if not state.valid:
        error = state.error or "invalid"
        artifacts["error_type"] = "program_failed" if error.startswith("program failed") else "invalid"
        artifacts["error_message"] = error
    for key in ("stdout", "stderr"):
        tail = (state.metadata or {}).get(key)
        if tail:
            artifacts[key] = str(tail)
    return _result(metrics_of(state), artifacts)


# --------------------------------------------------------------------------- export
_EVALUATOR = '''\
"""OpenEvolve evaluator for discoverygym's {env_id} (written by `discoverygym export`).

The score is discoverygym's: each program runs in discoverygym's sandbox and its result is
recomputed by the env's verifier (gym.make({env_id!r}, action_mode="code")). combined_score is the
env's reward (higher is better); every error is a failure result (metrics with error=0.0,
artifacts error_type / error_message / stdout / stderr). Needs `pip install discoverygym`.
"""

from discoverygym.interop.openevolve import evaluate_program_file

ENV_ID = {env_id!r}
SEED = {seed!r}
OPTIONS = {options!r}


def evaluate(program_path):
    """Judge the program at ``program_path``; returns an openevolve EvaluationResult."""
    return evaluate_program_file(program_path, ENV_ID, seed=SEED, options=OPTIONS)
'''


def _yaml_str(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax, which YAML reads the same)."""
    return json.dumps(text)


def _config_yaml(env_id: str, language: str, system_message: str, *, api_base: str, model: str,
                 api_key_env: str, iterations: int, timeout_s: int, parallel_evaluations: int,
                 diff_based: bool, max_code_length: int) -> str:
    """The text of the exported ``config.yaml`` (OpenEvolve's :class:`Config` fields).

    Raises:
        ValueError: ``api_key_env`` is not a variable name (:func:`check_env_var_name`).
    """
    check_env_var_name(api_key_env)
    return f"""\
# OpenEvolve configuration for discoverygym's {env_id} (written by `discoverygym export`).
# Run: openevolve-run initial_program{_SUFFIX[language]} evaluator.py --config config.yaml
max_iterations: {iterations}
checkpoint_interval: {max(1, min(10, iterations))}
random_seed: 42
language: {language}
file_suffix: "{_SUFFIX[language]}"
diff_based_evolution: {"true" if diff_based else "false"}
max_code_length: {max_code_length}

llm:
  # any OpenAI-compatible chat endpoint: a hosted API, vLLM, Ollama (http://localhost:11434/v1), ...
  api_base: {_yaml_str(api_base)}
  # read from the environment variable (set it to any string for a local server without keys)
  api_key: "${{{api_key_env}}}"
  models:
    - name: {_yaml_str(model)}
      weight: 1.0
  temperature: 0.7
  max_tokens: 8192
  timeout: 300

prompt:
  system_message: {_yaml_str(system_message)}

database:
  population_size: 200
  archive_size: 50
  num_islands: 3

evaluator:
  # discoverygym's sandbox enforces the problem's own limits; this is OpenEvolve's outer limit.
  timeout: {timeout_s}
  cascade_evaluation: false
  parallel_evaluations: {parallel_evaluations}
"""


def export_openevolve(env_id: str, out_dir: str | Path, *, api_base: str = DEFAULT_API_BASE,
                      model: str = DEFAULT_MODEL, api_key_env: str = "OPENAI_API_KEY", iterations: int = 100,
                      seed: int = 0, options: dict | None = None, initial: str | Path | None = None,
                      timeout_s: int = 600, parallel_evaluations: int = 1, diff_based: bool = True,
                      overwrite: bool = False) -> dict[str, Path]:
    """Write OpenEvolve's three files for ``env_id`` into ``out_dir``.

    Args:
        env_id: a registered env id (construction envs are searched through programs).
        out_dir: the directory to write (created).
        api_base: the OpenAI-compatible endpoint in ``config.yaml``.
        model: the model name in ``config.yaml``.
        api_key_env: the environment variable ``config.yaml`` reads the API key from.
        iterations: OpenEvolve's ``max_iterations``.
        seed: the programs' seed (and the reset seed of a construction env).
        options: ``gym.make`` options baked into ``evaluator.py`` (task options of a program env,
            ``program_budget_s`` of a construction env); JSON-serialisable values.
        initial: a program file to start from instead of :func:`initial_program`'s.
        timeout_s: OpenEvolve's evaluator timeout (seconds).
        parallel_evaluations: OpenEvolve's ``evaluator.parallel_evaluations``.
        diff_based: OpenEvolve's ``diff_based_evolution`` (SEARCH/REPLACE edits) or full rewrites.
        overwrite: replace files that exist.

    Returns:
        ``{"initial_program": path, "evaluator": path, "config": path}``.

    Raises:
        ValueError: unknown env id or option, bad numbers, options that are not JSON data,
            ``api_key_env`` not a variable name (checked before anything is written).
        FileExistsError: a file exists and ``overwrite`` is false.
    """
    check_env_var_name(api_key_env)
    options = dict(options or {})
    if iterations < 1 or timeout_s < 1 or parallel_evaluations < 1:
        raise ValueError("iterations, timeout_s and parallel_evaluations must be >= 1")
    try:
        options = json.loads(json.dumps(options))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"options must be JSON data to be written into evaluator.py: {exc}") from None
    problem = problem_of(env_id, "code", **options)
    source, language = initial_program(env_id, **options)
    if initial is not None:
        from discoverygym.io import read_input_text

        source = read_input_text(initial)  # opened once, checked on the descriptor (ValueError otherwise)
    source = with_evolve_markers(source, language)
    out = Path(out_dir)
    paths = {"initial_program": out / f"initial_program{_SUFFIX[language]}",
             "evaluator": out / "evaluator.py", "config": out / "config.yaml"}
    existing = [str(p) for p in paths.values() if p.exists()]
    if existing and not overwrite:
        raise FileExistsError(f"would overwrite {', '.join(existing)} (pass overwrite=True / --force)")
    out.mkdir(parents=True, exist_ok=True)
    paths["initial_program"].write_text(source)
    paths["evaluator"].write_text(_EVALUATOR.format(env_id=env_id, seed=int(seed), options=options))
    system_message = (
        f"You are improving a program for discoverygym's {env_id}. Its score is recomputed by an exact "
        f"verifier; combined_score is the reward (higher is better).\n\n{problem.prompt()}"
    )
    paths["config"].write_text(_config_yaml(
        env_id, language, system_message, api_base=api_base, model=model, api_key_env=api_key_env,
        iterations=int(iterations), timeout_s=int(timeout_s), parallel_evaluations=int(parallel_evaluations),
        diff_based=diff_based, max_code_length=max(10_000, 4 * len(source))))
    return paths
