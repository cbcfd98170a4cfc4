"""Evaluators: where candidates are scored. One interface, three backends.

* :class:`LocalEvaluator` (default): a ``concurrent.futures.ProcessPoolExecutor`` sized to the
  machine; each worker process holds one environment. Constructions are scored by the problem's
  verifier in the worker; programs (``action_mode="code"``) additionally run in the sandbox
  (:mod:`discoverygym.rewards.sandbox`) started from the worker, and only the construction they
  return is scored (a self-reported score is never read).
* :class:`RayEvaluator` (extra ``[ray]``): the same task function as a Ray remote task, on a local
  ``ray.init()`` or a cluster (``address``), so a search scales out without code changes. Ray
  workers need discoverygym installed (same version) on every node.
* :class:`InlineEvaluator`: evaluates in the calling thread (tests, debugging, benchmarks).

``submit(task)`` returns a ``concurrent.futures.Future`` resolving to an :class:`EvalResult`.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from abc import ABC, abstractmethod
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from discoverygym.envs.base import DiscoveryEnv
from discoverygym.envs.problem import Problem
from discoverygym.errors import BackendUnavailable
from discoverygym.types import State

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "EnvSpec",
    "EvalResult",
    "EvalTask",
    "Evaluator",
    "InlineEvaluator",
    "LocalEvaluator",
    "RayEvaluator",
    "available_cpus",
    "evaluate_task",
    "make_evaluator",
]


def available_cpus() -> int:
    """CPUs this process may run on (affinity-aware), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class EnvSpec:
    """How a worker builds its environment (picklable).

    Attributes:
        problem: a registered env id / problem name, or a :class:`Problem` value (its functions
            must be importable module-level functions to cross process boundaries).
        action_mode: ``"construction"`` or ``"code"``.
        kwargs: extra :class:`~discoverygym.envs.base.DiscoveryEnv` arguments (``sandbox``,
            ``program_budget_s``).
    """

    problem: str | Problem
    action_mode: str = "construction"
    kwargs: dict = field(default_factory=dict)

    def make(self) -> DiscoveryEnv:
        """A fresh environment."""
        return DiscoveryEnv(self.problem, action_mode=self.action_mode, **self.kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class EvalTask:
    """One candidate to evaluate.

    Attributes:
        action: construction (array/list) or program text.
        id: the state id to give the result.
        parent_ids: the result's parents (every inspiration of its prompt).
        parent_solution: the construction passed to a program as ``parent`` (code mode).
        seed: the seed passed to a program (code mode).
        metadata: extra metadata for the result (trajectory, step, candidate index).
    """

    action: Any
    id: str
    parent_ids: tuple[str, ...] = ()
    parent_solution: Any = None
    seed: int = 0
    metadata: dict = field(default_factory=dict)


@dataclass
class EvalResult:
    """An evaluated candidate: the verified :class:`State` and the worker's busy time (seconds)."""

    state: State
    busy_s: float
    worker: int


def evaluate_task(env: DiscoveryEnv, task: EvalTask) -> EvalResult:
    """Score one task with ``env`` (never raises for a bad candidate: it becomes an invalid State)."""
    start = time.perf_counter()
    fields = {"id": task.id, "parent_ids": tuple(task.parent_ids), "metadata": dict(task.metadata)}
    if env.action_mode == "code":
        parent = None
        if task.parent_solution is not None:
            parent = State(
                task.parent_solution, None, 0.0, True, id=task.parent_ids[0] if task.parent_ids else ""
            )
        state = env.evaluate_program(task.action, parent=parent, seed=task.seed, **fields)
    else:
        state = env.evaluate_construction(task.action, **fields)
    return EvalResult(state, time.perf_counter() - start, os.getpid())


class Evaluator(ABC):
    """Scores :class:`EvalTask`s asynchronously. Use as a context manager or call :meth:`close`.

    Attributes:
        workers: how many tasks run at once (the runner keeps about twice as many in flight).
    """

    workers: int = 1

    @abstractmethod
    def submit(self, task: EvalTask) -> Future:
        """Start evaluating ``task``; the future resolves to an :class:`EvalResult`."""

    def close(self, cancel: bool = False) -> None:
        """Release the workers (``cancel``: drop tasks not started yet)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(cancel=exc[0] is not None)


class InlineEvaluator(Evaluator):
    """Evaluates in the calling thread; ``submit`` returns a finished future."""

    workers = 1

    def __init__(self, spec: EnvSpec) -> None:
        self.env = spec.make()

    def submit(self, task: EvalTask) -> Future:
        future: Future = Future()
        try:
            future.set_result(evaluate_task(self.env, task))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            future.set_exception(exc)
        return future


# ----------------------------------------------------------------------------- process pool
_WORKER_ENV: DiscoveryEnv | None = None


def _init_worker(spec: EnvSpec) -> None:
    global _WORKER_ENV
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (orderly stop)
    _WORKER_ENV = spec.make()


def _run_in_worker(task: EvalTask) -> EvalResult:
    assert _WORKER_ENV is not None, "worker not initialised"
    return evaluate_task(_WORKER_ENV, task)


def _warmup() -> int:
    return os.getpid()


class LocalEvaluator(Evaluator):
    """A process pool on this machine, one environment per worker process.

    Args:
        spec: the environment every worker builds.
        workers: pool size (default: the CPUs available to this process).
        start_method: multiprocessing start method (default ``"forkserver"`` where available,
            else ``"spawn"``; ``fork`` is avoided because the runner has threads).
    """

    def __init__(self, spec: EnvSpec, workers: int | None = None, start_method: str | None = None) -> None:
        self.workers = int(workers or available_cpus())
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        methods = multiprocessing.get_all_start_methods()
        method = start_method or ("forkserver" if "forkserver" in methods else "spawn")
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context(method),
            initializer=_init_worker,
            initargs=(spec,),
        )

    def warm_up(self) -> None:
        """Start every worker process now (so start-up time is not counted as evaluation time)."""
        futures = [self._pool.submit(_warmup) for _ in range(2 * self.workers)]
        for f in futures:
            f.result()

    def submit(self, task: EvalTask) -> Future:
        return self._pool.submit(_run_in_worker, task)

    def close(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel)


# ----------------------------------------------------------------------------- Ray
_RAY_ENV: tuple[str, DiscoveryEnv] | None = None  # (repr of the spec, env) cached per Ray worker


def _ray_task(spec: EnvSpec, task: EvalTask) -> EvalResult:
    global _RAY_ENV
    key = repr(spec)
    if _RAY_ENV is None or _RAY_ENV[0] != key:
        _RAY_ENV = (key, spec.make())
    return evaluate_task(_RAY_ENV[1], task)


class RayEvaluator(Evaluator):
    """Ray remote tasks (one CPU each) on a local or remote Ray cluster.

    Args:
        spec: the environment every worker builds (cached per Ray worker process).
        workers: concurrency the runner aims for (default: the cluster's CPUs).
        address: ``ray.init(address=...)`` (e.g. ``"auto"`` or ``"ray://head:10001"``); ``None``
            starts a local Ray instance (``num_cpus`` = ``workers``) unless one is running.
        init_kwargs: extra ``ray.init`` arguments.

    Raises:
        BackendUnavailable: ray is not installed (``pip install 'discoverygym[ray]'``).
    """

    def __init__(
        self, spec: EnvSpec, workers: int | None = None, address: str | None = None, **init_kwargs: Any
    ) -> None:
        try:
            import ray
        except ImportError as exc:
            raise BackendUnavailable(
                "the Ray evaluator needs ray: pip install 'discoverygym[ray]' (or pip install ray)"
            ) from exc
        self._ray = ray
        self._owns = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None and workers:
                kwargs["num_cpus"] = int(workers)
            kwargs.update(init_kwargs)
            ray.init(address=address, **kwargs)
            self._owns = True
        self.workers = int(workers or max(1, int(ray.cluster_resources().get("CPU", 1))))
        self._spec_ref = ray.put(spec)
        self._remote = ray.remote(num_cpus=1, max_retries=0)(_ray_task)

    def submit(self, task: EvalTask) -> Future:
        return self._remote.remote(self._spec_ref, task).future()

    def close(self, cancel: bool = False) -> None:
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns = False


def make_evaluator(
    kind: str, spec: EnvSpec, workers: int | None = None, address: str | None = None
) -> Evaluator:
    """Build an evaluator by name: ``"local"`` (process pool), ``"ray"`` or ``"inline"``.

    Raises:
        ValueError: unknown kind. BackendUnavailable: Ray requested but not installed.
    """
    if kind == "local":
        return LocalEvaluator(spec, workers)
    if kind == "ray":
        return RayEvaluator(spec, workers, address)
    if kind == "inline":
        return InlineEvaluator(spec)
    raise ValueError(f"unknown executor {kind!r}; use 'local', 'ray' or 'inline'")
