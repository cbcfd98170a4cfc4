"""The generation → evaluation pipeline of the evolutionary-search runner, with an explicit lifetime.

::

    submit(batch) ─> generation pool (threads: ``generate(batch)``) ─> bounded queue of batches
        └─> dispatcher thread ─> evaluator (process pool / Ray / inline) ─> events ─> next_result()

The runner (:mod:`~discoverygym.search.evolution`) stays the only coordinator: it selects, submits
batches, takes finished evaluations from :meth:`Pipeline.next_result` and commits. The pipeline
owns only threads, queues and (optionally) the evaluator.

Lifetime: everything (queues, semaphore, thread pool, dispatcher thread) is created by
``__init__``; :meth:`Pipeline.start` warms the evaluator up and starts the dispatcher;
:meth:`Pipeline.stop` stops and joins every thread and closes the evaluator when the pipeline owns
it. ``with Pipeline(...) as p:`` does both (an exception leaving the block cancels the evaluator's
pending tasks). A pipeline runs once: it cannot be started again after it stopped.

Backpressure: the batch queue holds at most ``queue_size`` generated batches; the dispatcher keeps
at most ``prefetch × evaluator.workers`` tasks in flight.

Errors: an exception raised by ``generate``, by the dispatcher (``task``, ``evaluator.submit``) or
by an evaluation is raised by the next :meth:`Pipeline.next_result` call, in the coordinator's
thread; the threads stop when the pipeline is stopped.
"""

from __future__ import annotations

import numbers
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from discoverygym.search.executors import EvalResult, EvalTask, Evaluator, EvaluatorSpec, make_evaluator
from discoverygym.types import State

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Batch", "Pipeline", "PipelineOptions"]

_POLL_S = 0.1  # how often a blocked thread looks at the stop flag


@dataclass
class Batch:
    """One step of one trajectory: the states of its prompt, its K actions and their K results.

    Attributes:
        traj: trajectory index.
        step: step index within the trajectory.
        inspirations: the prompt's states (the first is the parent).
        actions: the K actions (plain JSON), ``None`` until generated.
        results: K entries, the evaluated :class:`~discoverygym.types.State` or ``None`` (pending).
        seeds: K program seeds (``None``: not recorded, seeds 0 are used).
        edit: LLM code proposals: the step's edit rates (:func:`~discoverygym.agents.policies.edits.edit_stats`,
            ``edit/parse_fail_rate`` ...), logged with the commit; ``None`` otherwise.
    """

    traj: int
    step: int
    inspirations: list[State]
    actions: list | None = None
    results: list = field(default_factory=list)  # State | None per candidate
    seeds: list[int] | None = None
    edit: dict | None = None

    def complete(self) -> bool:
        """Whether all K results are back."""
        return all(r is not None for r in self.results)


class Pipeline:
    """Generation threads, a bounded batch queue, a dispatcher thread and an evaluator (see the module).

    Args:
        evaluator: where candidates are evaluated (``submit(task) -> Future[EvalResult]``,
            ``workers``, ``close(cancel)``, an optional ``warm_up()``).
        generate: called in a generation thread for every submitted batch whose ``actions`` is
            ``None``; it must set ``batch.actions`` (and ``batch.seeds``). Batches with actions
            (replayed from a log) go straight to the queue.
        task: ``task(batch, k)``: the :class:`~discoverygym.search.executors.EvalTask` of candidate
            ``k``; called in the dispatcher thread for every ``k`` whose result is ``None``.
        generation_workers: threads running ``generate`` (>= 1).
        prefetch: tasks in flight per evaluator worker (>= 1).
        queue_size: generated batches waiting for the dispatcher (>= 1).
        close_evaluator: whether :meth:`stop` closes the evaluator (the pipeline owns it).

    Attributes:
        dispatch_s: seconds the dispatcher spent building and submitting tasks.
        first_submit: ``time.perf_counter()`` of the first submission, ``None`` before it.

    Raises:
        ValueError: a size below 1.
    """

    def __init__(
        self,
        evaluator: Evaluator,
        generate: Callable[[Batch], None],
        task: Callable[[Batch, int], EvalTask],
        *,
        generation_workers: int = 1,
        prefetch: int = 2,
        queue_size: int = 1,
        close_evaluator: bool = False,
    ) -> None:
        for name, value in (
            ("generation_workers", generation_workers),
            ("prefetch", prefetch),
            ("queue_size", queue_size),
        ):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        self.evaluator = evaluator
        self._generate_fn = generate
        self._task_fn = task
        self._close_evaluator = close_evaluator
        self._events: queue.Queue = queue.Queue()  # (batch, k, future) or an exception
        self._ready: queue.Queue = queue.Queue(maxsize=queue_size)
        self._slots = threading.Semaphore(prefetch * evaluator.workers)
        self._stop = threading.Event()
        self._inflight_lock = threading.Lock()
        self._in_flight = 0
        self._gen_pool = ThreadPoolExecutor(generation_workers, thread_name_prefix="dg-generate")
        self._dispatcher = threading.Thread(target=self._dispatch_loop, name="dg-dispatch", daemon=True)
        self._state = "new"  # new -> running -> stopped
        self.dispatch_s = 0.0
        self.first_submit: float | None = None

    # ------------------------------------------------------------------ lifetime
    def start(self) -> Self:
        """Warm the evaluator up (when it can) and start the dispatcher; returns ``self``.

        Raises:
            RuntimeError: already started or stopped.
            Exception: what the evaluator's ``warm_up`` raised (the pipeline is then stopped).
        """
        if self._state != "new":
            raise RuntimeError(f"the pipeline is {self._state}; it starts once")
        warm_up = getattr(self.evaluator, "warm_up", None)  # optional: LocalEvaluator starts its workers
        if callable(warm_up):
            try:
                warm_up()
            except BaseException:
                self.stop(cancel=True)
                raise
        self._state = "running"
        self._dispatcher.start()
        return self

    def stop(self, cancel: bool = False) -> None:
        """Stop and join the threads; close the evaluator if owned. Idempotent.

        Args:
            cancel: cancel the evaluator's pending tasks (the run did not finish).
        """
        if self._state == "stopped":
            return
        started = self._state == "running"
        self._state = "stopped"
        self._stop.set()
        if started:
            self._dispatcher.join(timeout=5)
        self._gen_pool.shutdown(wait=True, cancel_futures=True)
        if self._close_evaluator:
            self.evaluator.close(cancel=cancel)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.stop(cancel=exc_type is not None)

    @property
    def running(self) -> bool:
        """Started and not stopped."""
        return self._state == "running"

    # ------------------------------------------------------------------ coordinator side
    def submit(self, batch: Batch) -> None:
        """Queue a batch for generation (then dispatch).

        Raises:
            RuntimeError: the pipeline is not running.
        """
        if self._state != "running":
            raise RuntimeError(f"cannot submit to a pipeline that is {self._state}")
        self._gen_pool.submit(self._generate, batch)

    def next_result(self, timeout: float) -> tuple[Batch, int, EvalResult] | None:
        """The next finished evaluation ``(batch, k, result)``, or ``None`` after ``timeout`` seconds.

        Raises:
            BaseException: what ``generate``, the dispatcher or the evaluation raised.
        """
        try:
            event = self._events.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(event, BaseException):
            raise event
        batch, k, future = event
        return batch, k, future.result()  # raises a worker's exception

    @property
    def queue_depth(self) -> int:
        """Generated batches waiting for the dispatcher."""
        return self._ready.qsize()

    @property
    def in_flight(self) -> int:
        """Tasks submitted to the evaluator and not finished."""
        return self._in_flight

    # ------------------------------------------------------------------ threads
    def _generate(self, batch: Batch) -> None:
        """Generation-pool job: generate the batch's actions (unless it has them) and queue it."""
        try:
            if batch.actions is None:
                self._generate_fn(batch)
            while not self._stop.is_set():
                try:
                    self._ready.put(batch, timeout=_POLL_S)
                    return
                except queue.Full:
                    continue
        except BaseException as exc:  # noqa: BLE001 - reported to the coordinator
            self._events.put(exc)

    def _dispatch_loop(self) -> None:
        """Dispatcher thread: batches from the bounded queue -> evaluator, bounded in flight."""
        try:
            while not self._stop.is_set():
                try:
                    batch = self._ready.get(timeout=_POLL_S)
                except queue.Empty:
                    continue
                for k in range(len(batch.results)):
                    if batch.results[k] is not None:
                        continue
                    while not self._slots.acquire(timeout=_POLL_S):
                        if self._stop.is_set():
                            return
                    t0 = time.perf_counter()
                    task = self._task_fn(batch, k)
                    if self.first_submit is None:
                        self.first_submit = time.perf_counter()
                    with self._inflight_lock:
                        self._in_flight += 1
                    future = self.evaluator.submit(task)
                    future.add_done_callback(lambda f, b=batch, k=k: self._on_done(b, k, f))
                    self.dispatch_s += time.perf_counter() - t0
        except BaseException as exc:  # noqa: BLE001 - reported to the coordinator
            self._events.put(exc)

    def _on_done(self, batch: Batch, k: int, future: Future) -> None:
        with self._inflight_lock:
            self._in_flight -= 1
        self._slots.release()
        self._events.put((batch, k, future))


@dataclass
class PipelineOptions:
    """How a runner builds its evaluator and :class:`Pipeline` (checked when made, used by :meth:`build`).

    Attributes:
        executor: ``"local"`` (process pool), ``"ray"`` or ``"inline"`` (``"ray"`` when ``ray_address``).
        workers: evaluator size (``None``: the machine's CPUs / the Ray cluster's CPUs).
        ray_address: Ray cluster address.
        evaluator: a ready evaluator to use instead (then not closed by the pipeline).
        generation_workers: threads generating batches (at least 1).
        prefetch: tasks in flight per evaluator worker (at least 1).
        queue_size: generated batches waiting for the dispatcher.

    Raises:
        ValueError: ``workers`` not an integer >= 1; an unknown ``executor`` (without ``evaluator``
            or ``ray_address``).
    """

    executor: str = "local"
    workers: int | None = None
    ray_address: str | None = None
    evaluator: Evaluator | None = None
    generation_workers: int = 1
    prefetch: int = 2
    queue_size: int = 1

    def __post_init__(self) -> None:
        if self.workers is not None and (not isinstance(self.workers, numbers.Integral) or self.workers < 1):
            raise ValueError(f"workers must be an integer >= 1, got {self.workers!r}")
        if self.evaluator is None and not self.ray_address and self.executor not in ("local", "ray", "inline"):
            raise ValueError(f"unknown executor {self.executor!r}; use 'local', 'ray' or 'inline'")
        if self.ray_address:
            self.executor = "ray"
        self.generation_workers = max(1, self.generation_workers)
        self.prefetch = max(1, self.prefetch)

    def build(
        self, spec: EvaluatorSpec, generate: Callable[[Batch], None], task: Callable[[Batch, int], EvalTask]
    ) -> Pipeline:
        """A new pipeline over :attr:`evaluator`, or over a new evaluator of ``spec`` that it owns (closes)."""
        evaluator = self.evaluator or make_evaluator(self.executor, spec, self.workers, self.ray_address)
        return Pipeline(
            evaluator,
            generate,
            task,
            generation_workers=self.generation_workers,
            prefetch=self.prefetch,
            queue_size=self.queue_size,
            close_evaluator=self.evaluator is None,
        )
