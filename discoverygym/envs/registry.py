"""Registration of every discoverygym environment with Gymnasium (data, not classes).

Two kinds of problem share the registry:

* construction problems (:class:`~discoverygym.envs.problem.Problem`, env class
  :class:`~discoverygym.envs.base.DiscoveryEnv`): :data:`ENVS`;
* program problems (:class:`~discoverygym.envs.program.ProgramTask`, env class
  :class:`~discoverygym.envs.program.ProgramEnv`): :data:`PROGRAM_TASKS`, whose factories are
  imported lazily so that ``import discoverygym`` never imports torch, scanpy or a compiler
  driver.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from discoverygym.envs.mathematics import MATH_ENVS
from discoverygym.envs.problem import Problem

ENTRY_POINT = "discoverygym.envs.base:DiscoveryEnv"
PROGRAM_ENTRY_POINT = "discoverygym.envs.program:ProgramEnv"

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


def register_task(env_id: str, spec: TaskSpec) -> None:
    """Add a program env id (and register it with Gymnasium when not yet registered).

    This is how users add their own program problem::

        register_task("MyKernel-v0", TaskSpec(MyKernelTask, "my kernel"))
        env = gym.make("MyKernel-v0", some_option=3)   # MyKernelTask(some_option=3)
    """
    PROGRAM_TASKS[env_id] = spec
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=PROGRAM_ENTRY_POINT, kwargs={"task": env_id},
                     nondeterministic=spec.nondeterministic)


def make_task(env_id: str, **options: Any) -> Any:
    """Build the :class:`ProgramTask` of a program env id.

    Args:
        env_id: a key of :data:`PROGRAM_TASKS`.
        **options: task options (``n_cases``, ``dataset``, ``device``...), overriding the spec's.

    Raises:
        ValueError: unknown env id (the message lists the known ones).
        TypeError: an option the task does not take.
    """
    if env_id not in PROGRAM_TASKS:
        known = ", ".join(sorted(PROGRAM_TASKS))
        raise ValueError(f"unknown program env {env_id!r}; known: {known}")
    spec = PROGRAM_TASKS[env_id]
    factory = spec.factory
    if isinstance(factory, str):
        module, attr = factory.split(":")
        factory = getattr(importlib.import_module(module), attr)
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    if params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(options) - set(params))
        if unknown:
            known = ", ".join(k for k in params if k not in spec.kwargs)
            raise TypeError(f"{env_id} takes no option {', '.join(map(repr, unknown))} (its options: {known})")
    return factory(**{**spec.kwargs, **options})


def get_problem(name: str) -> Any:
    """Look a problem up by its name (``"erdos_min_overlap"``) or env id (``"ErdosMinOverlap-v0"``).

    For program env ids the task is built with its default options.

    Raises:
        ValueError: no such problem (the message lists the known ones).
    """
    if name in ENVS:
        return ENVS[name]
    if name in PROGRAM_TASKS:
        return make_task(name)
    for problem in ENVS.values():
        if problem.name == name:
            return problem
    known = ", ".join(sorted([*ENVS, *PROGRAM_TASKS]))
    raise ValueError(f"unknown problem {name!r}; known env ids: {known}")


def is_program_env(env_id: str) -> bool:
    """Whether ``env_id`` names a program env (actions are programs judged by running them)."""
    return env_id in PROGRAM_TASKS


def make_env(env_id: str, **kwargs: Any) -> Any:
    """The unwrapped env of ``env_id`` (``DiscoveryEnv`` or ``ProgramEnv``) without gym's wrappers.

    Args:
        env_id: a registered id.
        **kwargs: env options (``action_mode``, ``render_mode``, task options...).

    Raises:
        ValueError: unknown env id.
    """
    if env_id in PROGRAM_TASKS:
        from discoverygym.envs.program import ProgramEnv

        return ProgramEnv(env_id, **kwargs)
    if env_id not in ENVS:
        known = ", ".join(sorted([*ENVS, *PROGRAM_TASKS]))
        raise ValueError(f"unknown env id {env_id!r}; known: {known}")
    from discoverygym.envs.base import DiscoveryEnv

    return DiscoveryEnv(ENVS[env_id], **kwargs)


def register_envs() -> None:
    """Register every env id with ``gymnasium.register`` (idempotent)."""
    for env_id, problem in ENVS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"problem": problem.name})
    for env_id, spec in PROGRAM_TASKS.items():
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
PROGRAM_TASKS["AHC039-v0"] = TaskSpec("discoverygym.envs.ahc:make_ahc039", "AtCoder AHC039 (net enclosing mackerels)")
PROGRAM_TASKS["AHC058-v0"] = TaskSpec("discoverygym.envs.ahc:make_ahc058", "AtCoder AHC058 (apple machine hierarchy)")
PROGRAM_TASKS["ScRNADenoising-v0"] = TaskSpec(
    "discoverygym.envs.denoising:make_denoising", "Single-cell RNA-seq denoising (OpenProblems)")
