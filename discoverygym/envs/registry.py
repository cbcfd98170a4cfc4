"""Registration of every discoverygym environment with Gymnasium (data, not classes).

Two kinds of problem share the registry:

* construction problems (:class:`~discoverygym.envs.problem.Problem`, env class
  :class:`~discoverygym.envs.construction.DiscoveryEnv`): :data:`ENVS`, added by :func:`register_problem`;
* program problems (:class:`~discoverygym.envs.program.ProgramTask`, env class
  :class:`~discoverygym.envs.program.ProgramEnv`): :data:`PROGRAM_TASKS`, added by
  :func:`register_task`, whose factories are imported lazily so that ``import discoverygym``
  never imports torch, scanpy or a compiler driver.

:func:`find_env` is the one lookup of an id in both; an id in neither raises the one unknown-env
error, :class:`~discoverygym.errors.UnknownEnvError`, which suggests close names. Adding a problem:
the checklist in ``docs/architecture.md`` ("Adding a problem").

``gym.make(env_id, **kwargs)`` is the one way to build an env. Its entry points
(:func:`make_construction_env`, :func:`make_program_env`) resolve the registered names to
objects and construct the env classes, which take objects only (so this module imports the env
classes and they never import it). The same keywords work for every id::

    gym.make(env_id)                                   # the default action kind
    gym.make(env_id, action_mode="code", **task_options)  # programs, for every id
    gym.make(env_id, problem=my_problem)               # a Problem / ProgramTask object instead

Code above ``envs/`` asks the env what it accepts (``env.unwrapped.action_kind``) instead of
asking this module which kind an id is; :func:`problem_of` and :func:`option_names` check a
configuration without building the env.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from discoverygym.envs.construction import DiscoveryEnv
from discoverygym.envs.mathematics import MATH_ENVS
from discoverygym.envs.problem import Problem
from discoverygym.envs.program import ProgramEnv, ProgramTask
from discoverygym.errors import UnknownEnvError
from discoverygym.protocols import ProblemProtocol

__all__ = [
    "ENVS", "JUDGING_OPTIONS", "PROGRAM_TASKS", "TaskSpec", "UnknownEnvError", "env_ids", "find_env", "get_problem",
    "make_construction_env", "make_env", "make_program_env", "make_task", "option_names", "problem_of",
    "register_envs", "register_problem", "register_task",
]

ENTRY_POINT = "discoverygym.envs.registry:make_construction_env"
PROGRAM_ENTRY_POINT = "discoverygym.envs.registry:make_program_env"

#: the options of a construction env that change how candidates are judged (code mode).
JUDGING_OPTIONS = ("sandbox", "program_budget_s")

#: env id -> Problem for every registered construction environment.
ENVS: dict[str, Problem] = dict(MATH_ENVS)


@dataclass(frozen=True)
class TaskSpec:
    """How to build the :class:`ProgramTask` of one program env id.

    Attributes:
        factory: ``"package.module:callable"`` (imported lazily) or the callable itself, returning a
            ``ProgramTask``; called with ``**kwargs`` merged with the user's ``gym.make`` options.
        title: shown by ``discoverygym list`` without importing the factory.
        kwargs: fixed options of this env id (e.g. ``{"gpu": "H100"}``).
        nondeterministic: rewards are measurements (timings): registered with
            ``nondeterministic=True``.
    """

    factory: str | Callable[..., Any]
    title: str
    kwargs: dict = field(default_factory=dict)
    nondeterministic: bool = False


#: env id -> TaskSpec for every registered program environment.
PROGRAM_TASKS: dict[str, TaskSpec] = {}


def register_problem(env_id: str, problem: Problem) -> None:
    """Add a construction env id (and register it with Gymnasium when not yet registered).

    This is how users add their own construction problem (what a problem brings: the checklist in
    ``docs/architecture.md``, "Adding a problem")::

        register_problem("MyPacking-v0", Problem(name="my_packing", ...))
        env = gym.make("MyPacking-v0")   # DiscoveryEnv(the problem)

    Raises:
        ValueError: ``env_id`` is a program env id, or another env id holds a different problem of the
            same name (``gym.make`` resolves the problem by its name).
    """
    if env_id in PROGRAM_TASKS:
        raise ValueError(f"{env_id} is a program env id (register_task); a construction problem needs another id")
    clash = [other for other, p in ENVS.items() if p.name == problem.name and other != env_id and p is not problem]
    if clash:
        raise ValueError(f"problem name {problem.name!r} is taken by {clash[0]}; give the problem another name")
    ENVS[env_id] = problem
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"problem": problem.name})


def register_task(env_id: str, spec: TaskSpec) -> None:
    """Add a program env id (and register it with Gymnasium when not yet registered).

    This is how users add their own program problem::

        register_task("MyKernel-v0", TaskSpec(MyKernelTask, "my kernel"))
        env = gym.make("MyKernel-v0", some_option=3)   # MyKernelTask(some_option=3)

    Raises:
        ValueError: ``env_id`` is a construction env id (:func:`register_problem`).
    """
    if env_id in ENVS:
        raise ValueError(f"{env_id} is a construction env id (register_problem); a program task needs another id")
    PROGRAM_TASKS[env_id] = spec
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=PROGRAM_ENTRY_POINT, kwargs={"task": env_id},
                     nondeterministic=spec.nondeterministic)


def env_ids() -> list[str]:
    """Every registered env id: the construction ones (:data:`ENVS`), then the program ones."""
    return [*ENVS, *PROGRAM_TASKS]


def find_env(env_id: str, what: str = "env") -> Problem | TaskSpec:
    """The one lookup of an env id: its :class:`Problem` (construction env) or :class:`TaskSpec`
    (program env; :func:`make_task` builds the task).

    Args:
        env_id: the id asked for.
        what: how the error names what was looked for (``"env"``, ``"env id"``...).

    Raises:
        UnknownEnvError: an id in neither registry (a ``ValueError``; the message suggests close ids:
            ``unknown env 'X' (did you mean 'Y'?); run `discoverygym list```).
    """
    if env_id in ENVS:
        return ENVS[env_id]
    if env_id in PROGRAM_TASKS:
        return PROGRAM_TASKS[env_id]
    raise UnknownEnvError(env_id, env_ids(), what)


def make_task(env_id: str, **options: Any) -> Any:
    """Build the :class:`ProgramTask` of a program env id.

    Args:
        env_id: a key of :data:`PROGRAM_TASKS`.
        **options: task options (``n_cases``, ``dataset``, ``device``...), overriding the spec's.

    Raises:
        UnknownEnvError: unknown program env id (close ids suggested).
        TypeError: an option the task does not take.
    """
    factory = _factory(env_id)
    spec = PROGRAM_TASKS[env_id]
    names = _task_option_names(env_id)
    if names is not None:
        unknown = sorted(set(options) - set(names) - set(spec.kwargs))
        if unknown:
            raise TypeError(f"{env_id} takes no option {', '.join(map(repr, unknown))} (its options: {', '.join(names)})")
    return factory(**{**spec.kwargs, **options})


def _factory(env_id: str) -> Callable[..., Any]:
    """The task factory of a program env id (imported on first use).

    Raises:
        UnknownEnvError: unknown program env id.
    """
    if env_id not in PROGRAM_TASKS:
        raise UnknownEnvError(env_id, PROGRAM_TASKS, "program env")
    factory = PROGRAM_TASKS[env_id].factory
    if isinstance(factory, str):
        module, attr = factory.split(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory


def _task_option_names(env_id: str) -> tuple[str, ...] | None:
    """The keyword options of a program env's task factory (minus the fixed ones); None = any."""
    try:
        params = inspect.signature(_factory(env_id)).parameters
    except (TypeError, ValueError):
        return None
    if not params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    return tuple(k for k in params if k not in PROGRAM_TASKS[env_id].kwargs)


def get_problem(name: str) -> Any:
    """Look a problem up by its name (``"erdos_min_overlap"``) or env id (``"ErdosMinOverlap-v0"``).

    For program env ids the task is built with its default options.

    Raises:
        UnknownEnvError: no such problem (the message suggests close ids and names).
    """
    if name in ENVS:
        return ENVS[name]
    if name in PROGRAM_TASKS:
        return make_task(name)
    for problem in ENVS.values():
        if problem.name == name:
            return problem
    raise UnknownEnvError(name, [*env_ids(), *(p.name for p in ENVS.values())], "problem")


def option_names(env_id: str) -> tuple[str, ...] | None:
    """The options of ``env_id`` that change how candidates are judged, checked without building it.

    For a program env: its task options (``n_cases``, ``dataset``, ``device``...; ``None`` when its
    factory takes any keyword); for a construction env: :data:`JUDGING_OPTIONS` (the sandbox
    limits and program budget of code mode). ``action_mode``, ``horizon`` and ``render_mode``
    are not judging options.

    Raises:
        UnknownEnvError: unknown env id (:func:`find_env`).
    """
    if isinstance(find_env(env_id), TaskSpec):
        return _task_option_names(env_id)
    return JUDGING_OPTIONS


def problem_of(env_id: str, action_mode: str = "construction", **options: Any) -> ProblemProtocol:
    """The problem ``gym.make(env_id, action_mode=action_mode, **options)`` judges with, without the env.

    Args:
        env_id: a registered id.
        action_mode: the action mode the caller will build the env with.
        **options: judging options (:func:`option_names`): task options of a program env (the
            task is built with them), ``sandbox`` / ``program_budget_s`` of a construction env.

    Returns:
        The :class:`Problem` or the built :class:`ProgramTask`.

    Raises:
        ValueError: unknown env id (:class:`~discoverygym.errors.UnknownEnvError`); a program env with
            ``action_mode`` other than ``"code"``; an option the env does not take, or one the task rejects.
    """
    if env_id in PROGRAM_TASKS:
        if action_mode != "code":
            raise ValueError(
                f"{env_id} candidates are programs: it needs action_mode 'code' (--action-mode code), "
                f"not {action_mode!r}"
            )
        options.pop("raise_unavailable", None)  # an env option (ProgramEnv), not a task option
        try:
            return make_task(env_id, **options)
        except TypeError as exc:
            raise ValueError(str(exc)) from None
    find_env(env_id)
    unknown = sorted(set(options) - set(JUDGING_OPTIONS))
    if unknown:
        raise ValueError(
            f"{env_id} takes no option {', '.join(map(repr, unknown))} in env_kwargs (--task-options); "
            "task options are for program envs, construction envs take sandbox and program_budget_s"
        )
    return ENVS[env_id]


def make_construction_env(problem: Problem | str, **env_kwargs: Any) -> DiscoveryEnv:
    """``gym.make`` entry point of construction env ids: resolve the problem, build a DiscoveryEnv.

    Args:
        problem: a problem name / env id (the registered kwargs hold the name) or a
            :class:`Problem` object (``gym.make(env_id, problem=obj)``).
        **env_kwargs: :class:`~discoverygym.envs.construction.DiscoveryEnv` arguments (``action_mode``,
            ``horizon``, ``render_mode``, ``sandbox``, ``program_budget_s``).

    Raises:
        ValueError: unknown problem name, bad action mode or horizon.
        TypeError: an unknown option, or a ProgramTask given as the problem.
    """
    if isinstance(problem, str):
        problem = get_problem(problem)
    if isinstance(problem, ProgramTask):
        raise TypeError(f"problem {problem.name!r} is a program task: build it with a program env id")
    return DiscoveryEnv(problem, **env_kwargs)


def make_program_env(
    task: ProgramTask | str | None = None,
    *,
    problem: ProgramTask | None = None,
    action_mode: str = "code",
    horizon: int = 1,
    render_mode: str | None = None,
    raise_unavailable: bool = False,
    **task_options: Any,
) -> ProgramEnv:
    """``gym.make`` entry point of program env ids: build the task, then a ProgramEnv.

    Args:
        task: the env id (the registered kwargs hold it) or a built :class:`ProgramTask`.
        problem: a built :class:`ProgramTask` to use instead (the keyword construction envs take too).
        action_mode: must be ``"code"``; horizon, render_mode, raise_unavailable: :class:`ProgramEnv`
            arguments (``raise_unavailable=True``: raise ``BackendUnavailable`` instead of returning
            an unscored step).
        **task_options: options of the task factory (``n_cases``, ``dataset``, ``device``...).

    Raises:
        ValueError: unknown id, ``action_mode != "code"``, task options with a built task.
        TypeError: an option the task does not take.
    """
    built = problem if problem is not None else task
    if isinstance(built, str):
        built = make_task(built, **task_options)
    elif task_options:
        raise ValueError(f"task options {sorted(task_options)} need a task name, not a built task")
    if built is None:
        raise ValueError("make_program_env needs a task (env id or ProgramTask)")
    return ProgramEnv(built, action_mode=action_mode, horizon=horizon, render_mode=render_mode,
                      raise_unavailable=raise_unavailable)


def make_env(env_id: str, **kwargs: Any) -> Any:
    """``gym.make(env_id, **kwargs).unwrapped``, refusing an unknown id with a ``ValueError``.

    Args:
        env_id: a registered id.
        **kwargs: env options (``action_mode``, ``render_mode``, task options...).

    Raises:
        UnknownEnvError: unknown env id (:func:`find_env`).
    """
    find_env(env_id, "env id")
    return gym.make(env_id, disable_env_checker=True, **kwargs).unwrapped


def register_envs() -> None:
    """Register every env id with ``gymnasium.register`` (idempotent)."""
    for env_id, problem in list(ENVS.items()):
        register_problem(env_id, problem)
    for env_id, spec in list(PROGRAM_TASKS.items()):
        register_task(env_id, spec)


# ---------------------------------------------------------------------------- program envs
# Each family module defines its factory; these lines are the only place ids are listed.
for _gpu in ("H100", "A100", "H200", "B200", "MI300X"):
    PROGRAM_TASKS[f"TriMul-{_gpu}-v0"] = TaskSpec(
        "discoverygym.envs.kernels:make_trimul", f"TriMul kernel ({_gpu})", {"gpu": _gpu}, nondeterministic=True)
for _gpu in ("H200", "MI300X"):
    PROGRAM_TASKS[f"MLADecode-{_gpu}-v0"] = TaskSpec(
        "discoverygym.envs.kernels:make_mla_decode", f"MLA decode kernel ({_gpu})", {"gpu": _gpu},
        nondeterministic=True)
for _problem, _label in (("cumsum", "Cumsum"), ("matmul", "Matmul")):
    for _gpu in ("H100", "H200"):
        PROGRAM_TASKS[f"KernelBench-L1-{_label}-{_gpu}-v0"] = TaskSpec(
            "discoverygym.envs.kernels:make_kernelbench", f"KernelBench level 1 {_label.lower()} kernel ({_gpu})",
            {"problem": _problem, "gpu": _gpu}, nondeterministic=True)
PROGRAM_TASKS["AHC039-v0"] = TaskSpec("discoverygym.envs.ahc:make_ahc039", "AtCoder AHC039 (net enclosing mackerels)")
PROGRAM_TASKS["AHC058-v0"] = TaskSpec("discoverygym.envs.ahc:make_ahc058", "AtCoder AHC058 (apple machine hierarchy)")
PROGRAM_TASKS["ScRNADenoising-v0"] = TaskSpec(
    "discoverygym.envs.denoising:make_denoising", "Single-cell RNA-seq denoising (OpenProblems)")
PROGRAM_TASKS["QubitRouting-v0"] = TaskSpec(
    "discoverygym.envs.qubit_routing:make_qubit_routing", "Qubit routing: SWAP reduction (TES, 72 cases)")
PROGRAM_TASKS["ZonedNeutralAtom-v0"] = TaskSpec(
    "discoverygym.envs.znaa:make_znaa", "Zoned neutral-atom compilation: the placer (TES znaa, 16 circuits)")
for _id, _key, _title in (
        ("DataConstrained", "data_constrained", "data-constrained"), ("LrBsz", "lr_bsz", "learning rate / batch size"),
        ("DomainMixture", "domain_mixture", "domain mixture"), ("Rectified", "rectified", "rectified fine-tuning"),
        ("Vocab", "vocab", "vocabulary size"), ("MoE", "moe", "mixture of experts")):
    PROGRAM_TASKS[f"ScalingLaw-{_id}-v0"] = TaskSpec(
        "discoverygym.envs.scaling_laws:make_scaling_law", f"Scaling-law discovery, {_title} (SLDBench)", {"task": _key})
PROGRAM_TASKS["LassoPath-v0"] = TaskSpec("discoverygym.envs.lasso:make_lasso_path",
                                         "LASSO regularisation path in C++ (TES / AlgoTune)", nondeterministic=True)
