"""Evaluators: where candidates are scored. One interface, three backends.

* :class:`LocalEvaluator` (default): a ``concurrent.futures.ProcessPoolExecutor`` sized to the
  machine; each worker process holds one environment and dies with the process that owns the
  pool (even on SIGKILL, so a killed search leaves nothing running). Constructions are scored
  by the problem's verifier in the worker; programs (``action_mode="code"``) additionally run in
  the sandbox (:mod:`discoverygym.sandbox.python`) started from the worker, and only the
  construction they return is scored (a self-reported score is never read).
* :class:`RayEvaluator` (extra ``[ray]``): the same task function as a Ray remote task, on a local
  ``ray.init()`` or a cluster (``address``), so a search scales out without code changes. Ray
  workers need discoverygym installed (same version) on every node, and a cluster with token
  authentication (the default of recent Ray releases, 2.60 here) needs its token on every node
  and on the machine that runs the search (``RAY_AUTH_TOKEN`` or ``RAY_AUTH_TOKEN_PATH``; see
  :class:`RayEvaluator`). Each evaluated state records the Ray node that judged it in
  ``metadata["ray_node"]``.
* :class:`InlineEvaluator`: evaluates in the calling thread (tests, debugging, benchmarks).

``submit(task)`` returns a ``concurrent.futures.Future`` resolving to an :class:`EvalResult`.
A task may carry a *pending* job instead of its action (an operator or a polish run of a numeric
policy, :attr:`Sample.pending <discoverygym.policy.Sample.pending>`): the worker runs it, then
judges what it returned (the trainer's rollouts, :mod:`discoverygym.agents.trainer`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from discoverygym.errors import BackendUnavailable
from discoverygym.io import available_cpus, limit_native_threads
from discoverygym.types import State

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "EnvCopy",
    "EvalResult",
    "EvalTask",
    "Evaluator",
    "EvaluatorSpec",
    "InlineEvaluator",
    "LocalEvaluator",
    "ParentGuard",
    "RayEvaluator",
    "available_cpus",
    "evaluate_task",
    "guard_parent",
    "make_evaluator",
]


@dataclass(frozen=True)
class EvaluatorSpec:
    """How a worker builds its environment: ``gym.make(env_id, **kwargs)`` (picklable).

    Attributes:
        env_id: a registered env id (``discoverygym list``); importing this module imports
            discoverygym, which registers the built-in ids (ids registered at run time exist only in the
            process that registered them: use the inline evaluator for those).
        kwargs: ``gym.make`` keywords: ``action_mode``, judging options (``sandbox`` /
            ``program_budget_s``, or a program env's task options), ``problem`` (a
            ``Problem`` / ``ProgramTask`` object to judge with instead of the registered one; its
            functions must be importable module-level functions to cross process boundaries).
    """

    env_id: str
    kwargs: dict = field(default_factory=dict)

    def make(self) -> gym.Env:
        """A fresh environment, ``gym.make(self.env_id, **self.kwargs)`` (judge with ``.unwrapped.evaluate``).

        Gymnasium's passive checker is left out: workers only call ``evaluate`` (and the runner one
        ``reset``), and its warnings would reach the search's terminal.
        """
        return gym.make(self.env_id, disable_env_checker=True, **self.kwargs)


@dataclass(frozen=True)
class EnvCopy:
    """An env the caller built, shipped to every worker as a pickled copy (``make`` returns it).

    For an env that an :class:`EvaluatorSpec` cannot rebuild: one handed to a trainer (``env=``),
    or one whose state after ``reset`` matters to its ``evaluate``. Its problem's functions must
    be importable module-level functions to cross process boundaries.
    """

    env: Any

    def make(self) -> Any:
        """The env itself (a copy in each worker process)."""
        return self.env


@dataclass(frozen=True)
class EvalTask:
    """One candidate to evaluate.

    Attributes:
        action: construction (array/list) or program text (``None`` when ``pending`` computes it).
        id: the state id to give the result.
        parent_ids: the result's parents (every inspiration of its prompt); default ``(parent.id,)``
            when ``parent`` is given.
        parent_solution: the construction passed to a program as ``parent`` (code mode of a
            construction problem), when ``parent`` is not given.
        seed: the seed passed to a program (ignored for constructions).
        metadata: extra metadata for the result (trajectory, step, candidate index).
        pending: a zero-argument picklable job that returns the action (an operator or a polish run,
            :attr:`Sample.pending <discoverygym.policy.Sample.pending>`), run in the worker before
            judging; one that raises gives an invalid result (``"operator failed: ..."``).
        parent: the start state the candidate derives from (judged against it, never re-verified).
    """

    action: Any
    id: str
    parent_ids: tuple[str, ...] = ()
    parent_solution: Any = None
    seed: int = 0
    metadata: dict = field(default_factory=dict)
    pending: Callable[[], Any] | None = None
    parent: State | None = None


@dataclass
class EvalResult:
    """An evaluated candidate: the verified :class:`State`, the worker's busy time (seconds: the pending
    job and the verification), the worker's pid, and the action judged (what ``pending`` returned)."""

    state: State
    busy_s: float
    worker: int
    action: Any = None


def evaluate_task(env: gym.Env, task: EvalTask) -> EvalResult:
    """Run a task's pending job, if any, and score its action with ``env.unwrapped.evaluate``.

    Never raises for a bad candidate or a failing job: either becomes an invalid State with the
    failure reward and the reason in ``error``.
    """
    start = time.perf_counter()
    judge = env.unwrapped
    parent = task.parent
    if parent is None and task.parent_solution is not None:
        parent = State(task.parent_solution, None, 0.0, True, id=task.parent_ids[0] if task.parent_ids else "")
    parent_ids = tuple(task.parent_ids) if task.parent_ids or task.parent is None else (parent.id,)
    action = task.action
    if task.pending is not None:
        try:
            action = task.pending()
        except Exception as exc:  # noqa: BLE001 - an operator failure is a failed rollout, not a crash
            state = State(None, None, judge.failure_reward, False, id=task.id, parent_ids=parent_ids,
                          error=f"operator failed: {type(exc).__name__}: {exc}", metadata=dict(task.metadata))
            return EvalResult(state, time.perf_counter() - start, os.getpid(), None)
    state = judge.evaluate(action, parent=parent, seed=task.seed, id=task.id, parent_ids=parent_ids,
                           metadata=task.metadata)
    return EvalResult(state, time.perf_counter() - start, os.getpid(), action)


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

    def __init__(self, spec: EvaluatorSpec) -> None:
        self.env = spec.make()

    def submit(self, task: EvalTask) -> Future:
        future: Future = Future()
        try:
            future.set_result(evaluate_task(self.env, task))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            future.set_exception(exc)
        return future


# ----------------------------------------------------------------------------- process pool
_WORKER_ENV: gym.Env | None = None

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
#: seconds between two checks of a worker's watchdog that its owner process is still alive.
WATCHDOG_INTERVAL_S = 0.2


class ParentGuard:
    """How a pool worker makes sure it does not outlive the process that owns the pool.

    It is part of the worker's start arguments, so it is pickled by the thread that starts the
    worker; ``__reduce__`` records there whether that thread is the main thread.
    ``PR_SET_PDEATHSIG`` fires when the *thread* that created the child ends, and
    ``ProcessPoolExecutor`` starts workers lazily from whichever thread calls ``submit`` (in the
    runner, possibly the dispatcher thread, which ends before the pool is closed), so the
    death signal is only armed for workers started by the main thread of their direct parent;
    every worker also runs a watchdog thread (see :func:`guard_parent`).

    Attributes:
        owner: pid of the process that owns the pool.
        direct: the workers are direct children of ``owner`` (``spawn``/``fork``, not ``forkserver``).
        pdeathsig: arm ``PR_SET_PDEATHSIG`` (set by pickling, see above).
    """

    def __init__(self, owner: int, direct: bool, pdeathsig: bool = False) -> None:
        self.owner = owner
        self.direct = direct
        self.pdeathsig = pdeathsig

    def __reduce__(self) -> tuple:
        main = threading.current_thread() is threading.main_thread()
        return (ParentGuard, (self.owner, self.direct, self.direct and main))


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, i.e. dead but not reaped yet, counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _set_pdeathsig() -> bool:
    """``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (Linux); True when it was set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        zero = ctypes.c_ulong(0)
        return libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), zero, zero, zero) == 0
    except (OSError, AttributeError):
        return False


def guard_parent(guard: ParentGuard) -> None:
    """Make this worker die with the pool's owner, even when the owner is killed with SIGKILL.

    * Linux, worker started by the owner's main thread: ``PR_SET_PDEATHSIG`` = SIGKILL (immediate);
    * always: a daemon thread checks every :data:`WATCHDOG_INTERVAL_S` that the parent has not
      changed (a dead parent's children are re-parented) and that the owner is alive, and exits
      the process otherwise. Program sandboxes started by the worker die with it (they arm
      ``PR_SET_PDEATHSIG`` themselves).

    With the workers gone, multiprocessing's resource tracker (and a forkserver) read EOF on
    their pipes and exit too.
    """
    if guard.pdeathsig:
        _set_pdeathsig()
    parent = os.getppid()
    if (guard.direct and parent != guard.owner) or not _pid_alive(guard.owner):
        os._exit(1)  # the owner died before this worker got here

    def watch() -> None:
        while True:
            time.sleep(WATCHDOG_INTERVAL_S)
            if os.getppid() != parent or (not guard.direct and not _pid_alive(guard.owner)):
                os._exit(1)

    threading.Thread(target=watch, name="dg-parent-watchdog", daemon=True).start()


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT in the calling thread while the pool may start workers (inside ``submit``).

    A worker inherits the signal mask of the thread that starts it, so a Ctrl-C that reaches it
    while its interpreter starts up (imports, unpickling: before :func:`_init_worker` runs) stays
    pending instead of printing a ``KeyboardInterrupt`` traceback per worker; :func:`_init_worker`
    then ignores SIGINT and unblocks it, which discards the pending one. The parent only defers
    its own Ctrl-C to the end of the ``submit`` call. A no-op where ``pthread_sigmask`` is missing.
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _init_worker(spec: EvaluatorSpec | EnvCopy, guard: ParentGuard | None = None, threads: int | None = None) -> None:
    global _WORKER_ENV
    if threads is not None:  # one of several workers: BLAS single-threaded, the pool gives the parallelism
        limit_native_threads(threads)
        if "torch" in sys.modules:  # loaded by a preload or the env (a job may run an Adam optimiser)
            sys.modules["torch"].set_num_threads(threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (orderly stop)
    if hasattr(signal, "pthread_sigmask"):  # blocked since the parent started this worker
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if guard is not None:
        guard_parent(guard)
    _WORKER_ENV = spec.make()


def _run_in_worker(task: EvalTask) -> EvalResult:
    assert _WORKER_ENV is not None, "worker not initialised"
    return evaluate_task(_WORKER_ENV, task)


def _warmup() -> int:
    return os.getpid()


class LocalEvaluator(Evaluator):
    """A process pool on this machine, one environment per worker process.

    Workers never outlive this process: they are its direct children (``spawn``), and each one
    dies with it even when it is killed with SIGKILL (see :class:`ParentGuard`), so a killed
    search leaves no process behind and ``--resume`` starts from a clean machine.

    Args:
        spec: the environment every worker builds (an :class:`EvaluatorSpec`), or an
            :class:`EnvCopy` of one built by the caller.
        workers: pool size (default: the CPUs available to this process; must be >= 1). With more
            than one, each worker runs its BLAS (and torch, when loaded) single-threaded
            (:func:`~discoverygym.io.limit_native_threads`).
        start_method: multiprocessing start method (default ``"spawn"``: workers are direct
            children; ``fork`` is avoided because the runner has threads; with ``forkserver``
            the workers watch this process's pid instead of their parent).
        preload: modules the forkserver imports once for all its workers (``forkserver`` only).

    Raises:
        ValueError: ``workers`` < 1.
    """

    def __init__(self, spec: EvaluatorSpec | EnvCopy, workers: int | None = None, start_method: str | None = None,
                 preload: Sequence[str] = ()) -> None:
        self.workers = available_cpus() if workers is None else int(workers)
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        method = start_method or "spawn"
        ctx = multiprocessing.get_context(method)
        if method == "forkserver" and preload:
            ctx.set_forkserver_preload(list(preload))
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(spec, ParentGuard(os.getpid(), direct=method != "forkserver"),
                      1 if self.workers > 1 else None),
        )

    def warm_up(self) -> None:
        """Start every worker process now (so start-up time is not counted as evaluation time)."""
        with _sigint_blocked():
            futures = [self._pool.submit(_warmup) for _ in range(2 * self.workers)]
        for f in futures:
            f.result()

    def submit(self, task: EvalTask) -> Future:
        """Judge ``task`` in a worker process (started here, SIGINT-immune, on first use)."""
        with _sigint_blocked():
            return self._pool.submit(_run_in_worker, task)

    def close(self, cancel: bool = False) -> None:
        """Shut the pool down, waiting for the running tasks (``cancel``: drop the queued ones).

        A Ctrl-C (or any exception) while this waits means *stop now*: every worker process,
        including one still starting up, is killed (SIGKILL) and reaped before the exception
        propagates, so none is left unpickling the pool's semaphores after this process exits
        (which prints a ``FileNotFoundError`` traceback per worker) and none outlives the owner.
        Idempotent.

        Raises:
            KeyboardInterrupt: re-raised after the workers are killed.
        """
        try:
            self._pool.shutdown(wait=True, cancel_futures=cancel)
        except BaseException:
            self._kill_workers()
            raise

    def _kill_workers(self) -> None:
        """SIGKILL and reap the pool's worker processes; then release the pool without waiting.

        ``ProcessPoolExecutor`` has no public way to do this before Python 3.14
        (``kill_workers``), so this reads its ``_processes`` table (pid -> Process) defensively.
        """
        processes = dict(getattr(self._pool, "_processes", None) or {})
        for proc in processes.values():
            with contextlib.suppress(Exception):
                proc.kill()
        for proc in processes.values():
            with contextlib.suppress(Exception):
                proc.join(timeout=5)
        with contextlib.suppress(Exception):
            self._pool.shutdown(wait=False, cancel_futures=True)


# ----------------------------------------------------------------------------- Ray
_RAY_ENV: tuple[str, gym.Env] | None = None  # (repr of the spec, env) cached per Ray worker


def _ray_task(spec: EvaluatorSpec, task: EvalTask) -> EvalResult:
    """Judge ``task`` in a Ray worker; the result's ``state.metadata["ray_node"]`` is the node's id (hex)."""
    global _RAY_ENV
    import ray

    key = repr(spec)
    if _RAY_ENV is None or _RAY_ENV[0] != key:
        _RAY_ENV = (key, spec.make())
    result = evaluate_task(_RAY_ENV[1], task)
    result.state.metadata["ray_node"] = ray.get_runtime_context().get_node_id()
    return result


def _ray_warmup(spec: EvaluatorSpec) -> str:
    """Build (and cache) the worker's environment; return the node's id."""
    global _RAY_ENV
    import ray

    key = repr(spec)
    if _RAY_ENV is None or _RAY_ENV[0] != key:
        _RAY_ENV = (key, spec.make())
    return ray.get_runtime_context().get_node_id()


#: the environment variables through which Ray's clients and nodes find the cluster's token.
RAY_TOKEN_VARS = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def _ray_auth_hint(address: str) -> str:
    """The one-line fix for a cluster at ``address`` that refused this client's token (no token in it)."""
    have = [v for v in RAY_TOKEN_VARS if os.environ.get(v)]
    got = f"the token from {' / '.join(have)} is not the cluster's" if have else "no token was given"
    return (
        f"the Ray cluster at {address} rejected this client (InvalidAuthToken: {got}): set RAY_AUTH_TOKEN "
        "to the cluster's token (`ray get-auth-token` on the head node prints it) or RAY_AUTH_TOKEN_PATH "
        "to a file holding it, here and on every node (docs: README, 'Ray on several machines')"
    )


def _is_auth_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is Ray's authentication failure."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _enable_ray_token_auth(address: str | None) -> None:
    """Turn Ray's token mode on in this process when connecting to ``address`` with a token at hand.

    Ray's driver auto-enables token authentication only for a cluster it finds by itself
    (``address`` ``None``/``"auto"``); with an explicit address it connects unauthenticated unless
    ``RAY_AUTH_MODE=token``, and a cluster started with the default (token) mode answers
    ``InvalidAuthToken`` even when ``RAY_AUTH_TOKEN`` holds the right token. So when the user gave
    a token (``RAY_AUTH_TOKEN`` / ``RAY_AUTH_TOKEN_PATH``) and left ``RAY_AUTH_MODE`` unset, set it
    to ``token`` here. An explicit ``RAY_AUTH_MODE`` is always respected. The token itself is never
    read, printed or logged by discoverygym.
    """
    if address in (None, "auto") or os.environ.get("RAY_AUTH_MODE"):
        return
    if not any(os.environ.get(v) for v in RAY_TOKEN_VARS):
        return
    try:  # Ray's own switch also refreshes its cached config
        from ray._private.authentication.authentication_token_setup import _enable_token_auth

        _enable_token_auth()
    except (ImportError, AttributeError):
        os.environ["RAY_AUTH_MODE"] = "token"


def _probe_ray_auth(address: str) -> None:
    """Fail fast (one line) when the cluster at ``address`` rejects this client's token.

    ``ray.init`` retries a refused token for about 20 s and then raises a long chained traceback;
    one direct GCS handshake answers in milliseconds. Only tried for a plain ``host:port`` that
    accepts a TCP connection (anything else is left to ``ray.init`` and its own errors).

    Raises:
        BackendUnavailable: the cluster refused the token (the message says how to pass it).
    """
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError:
        return
    try:
        from ray._raylet import GcsClient
    except ImportError:
        return
    try:
        GcsClient(address=address)
    except Exception as exc:  # noqa: BLE001 - only authentication failures are ours to report
        if _is_auth_error(exc):
            raise BackendUnavailable(_ray_auth_hint(address)) from None


class RayEvaluator(Evaluator):
    """Ray remote tasks (one CPU each) on a local or remote Ray cluster.

    A cluster of several machines (``ray start --head`` on one, ``ray start --address HEAD:6379``
    on the others) needs, on every node *and* on the machine running the search:

    * discoverygym installed, same version (Ray ships the task function by reference: a node
      without it fails the first task with ``No module named 'discoverygym'``);
    * the cluster's authentication token, when the cluster uses token authentication (the
      default of Ray 2.60: ``ray start --head`` uses it whenever a token exists):
      ``RAY_AUTH_TOKEN=<token>`` or ``RAY_AUTH_TOKEN_PATH=<file>`` in the environment (``ray get-auth-token`` on the head prints
      it; nodes started by ``ray start`` read the same variables or ``~/.ray/auth_token``). With a
      token given and ``RAY_AUTH_MODE`` unset, this evaluator sets ``RAY_AUTH_MODE=token`` for
      the connection (Ray does not for an explicit address). A refused token raises
      :class:`~discoverygym.errors.BackendUnavailable` with one line naming the fix, at once.

    Every result's ``state.metadata["ray_node"]`` is the id of the node that judged it.

    Args:
        spec: the environment every worker builds (cached per Ray worker process).
        workers: concurrency the runner aims for (default: the cluster's CPUs).
        address: ``ray.init(address=...)`` (e.g. ``"auto"``, ``"HEAD:6379"`` or
            ``"ray://head:10001"``); ``None`` starts a local Ray instance (``num_cpus`` =
            ``workers``) unless one is running.
        init_kwargs: extra ``ray.init`` arguments.

    Raises:
        BackendUnavailable: ray is not installed (``pip install 'discoverygym[ray]'``), or the
            cluster refused this client's authentication token.
    """

    def __init__(
        self, spec: EvaluatorSpec, workers: int | None = None, address: str | None = None, **init_kwargs: Any
    ) -> None:
        try:
            import ray
        except ImportError as exc:
            raise BackendUnavailable(
                "the Ray evaluator needs ray: pip install 'discoverygym[ray]' (or pip install ray)"
            ) from exc
        if workers is not None and int(workers) < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self._ray = ray
        self._owns = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None and workers:
                kwargs["num_cpus"] = int(workers)
            kwargs.update(init_kwargs)
            if address is not None:
                _enable_ray_token_auth(address)
                _probe_ray_auth(address)
            try:
                ray.init(address=address, **kwargs)
            except Exception as exc:
                if _is_auth_error(exc):
                    raise BackendUnavailable(_ray_auth_hint(address or "auto")) from None
                raise
            self._owns = True
        self.workers = int(workers or max(1, int(ray.cluster_resources().get("CPU", 1))))
        self._spec_ref = ray.put(spec)
        # SPREAD: tasks go round the nodes (the default packs them onto the driver's node while it has
        # a free CPU, so short evaluations would never leave it)
        self._remote = ray.remote(num_cpus=1, max_retries=0, scheduling_strategy="SPREAD")(_ray_task)

    def warm_up(self) -> None:
        """Start a worker with its environment on every CPU of every alive node, before the search.

        Evaluations are short, so without this the first node's warm worker would take every task
        while the other nodes are still starting theirs. It also checks each node can import
        discoverygym and build the env.

        Raises:
            BackendUnavailable: a node cannot import discoverygym (install it there, same version).
        """
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        refs = []
        for node in self._ray.nodes():
            cpus = int(node.get("Resources", {}).get("CPU", 0)) if node.get("Alive") else 0
            strategy = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            warm = self._ray.remote(num_cpus=1, max_retries=0, scheduling_strategy=strategy)(_ray_warmup)
            refs += [warm.remote(self._spec_ref) for _ in range(cpus)]
        try:
            self._ray.get(refs)
        except Exception as exc:
            if "No module named 'discoverygym'" in str(exc):
                raise BackendUnavailable(
                    "a Ray node cannot import discoverygym: install it (same version) on every node "
                    "of the cluster"
                ) from None
            raise

    def submit(self, task: EvalTask) -> Future:
        return self._remote.remote(self._spec_ref, task).future()

    def close(self, cancel: bool = False) -> None:
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns = False


def make_evaluator(
    kind: str, spec: EvaluatorSpec, workers: int | None = None, address: str | None = None
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
