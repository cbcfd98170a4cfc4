"""The generation → evaluation pipeline: lifetime (start, stop, once), results, errors, backpressure."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from discoverygym.policy import Sample
from discoverygym.search.config import SearchConfig
from discoverygym.search.evolution import EvolutionarySearch
from discoverygym.search.executors import EvalResult, EvalTask
from discoverygym.search.pipeline import Batch, Pipeline
from discoverygym.types import State

K = 3


class FakeEvaluator:
    """Evaluates a task in a thread: the result's reward is the action; records concurrency and close()."""

    def __init__(self, workers: int = 2, fail_on: object = None, delay_s: float = 0.0) -> None:
        self.workers = workers
        self.fail_on = fail_on
        self.delay_s = delay_s
        self.closed: list[bool] = []  # the cancel flag of every close()
        self.warmed = 0
        self.running = 0
        self.max_running = 0
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(8, thread_name_prefix="fake-eval")

    def warm_up(self) -> None:
        self.warmed += 1

    def _evaluate(self, task: EvalTask) -> EvalResult:
        with self._lock:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            time.sleep(self.delay_s)
            if task.action == self.fail_on:
                raise ArithmeticError(f"cannot evaluate {task.action}")
            r = float(task.action)
            return EvalResult(
                State([r], r, r, True, id=task.id, parent_ids=task.parent_ids), busy_s=0.0, worker=0
            )
        finally:
            with self._lock:
                self.running -= 1

    def submit(self, task: EvalTask) -> Future:
        return self._pool.submit(self._evaluate, task)

    def close(self, cancel: bool = False) -> None:
        self.closed.append(cancel)
        self._pool.shutdown(wait=True, cancel_futures=cancel)


def generate(batch: Batch) -> None:
    batch.actions = [10 * batch.step + k for k in range(K)]
    batch.seeds = list(range(K))


def task(batch: Batch, k: int) -> EvalTask:
    return EvalTask(
        action=batch.actions[k], id=f"s{batch.step}k{k}", parent_ids=("root",), seed=batch.seeds[k]
    )


def new_batch(step: int) -> Batch:
    root = State([0.0], 0.0, 0.0, True, id="root")
    return Batch(0, step, [root], None, [None] * K)


def pipeline_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("dg-") and t.is_alive()]


def drain(pipe: Pipeline, n: int, timeout_s: float = 120.0) -> list[tuple[Batch, int, EvalResult]]:
    out, end = [], time.monotonic() + timeout_s
    while len(out) < n:
        assert time.monotonic() < end, f"only {len(out)} of {n} results came back"
        done = pipe.next_result(timeout=0.1)
        if done is not None:
            out.append(done)
    return out


def test_every_candidate_comes_back_once_and_stop_joins_every_thread():
    evaluator = FakeEvaluator(workers=2, delay_s=0.002)
    pipe = Pipeline(
        evaluator, generate, task, generation_workers=2, prefetch=1, queue_size=1, close_evaluator=True
    )
    assert not pipe_threads_running(pipe)
    pipe.start()
    assert pipe.running and evaluator.warmed == 1
    batches = [new_batch(step) for step in range(5)]
    for b in batches:
        pipe.submit(b)
    results = drain(pipe, 5 * K)
    assert sorted((b.step, k) for b, k, _ in results) == [(s, k) for s in range(5) for k in range(K)]
    assert all(r.state.reward == 10 * b.step + k for b, k, r in results)
    assert evaluator.max_running <= 2  # prefetch 1 x 2 workers in flight at most
    assert pipe.in_flight == 0 and pipe.first_submit is not None
    pipe.stop()
    assert not pipe.running and pipeline_threads() == []
    assert evaluator.closed == [False]
    pipe.stop()  # idempotent
    assert evaluator.closed == [False]


def pipe_threads_running(pipe: Pipeline) -> bool:
    return pipe.running or bool(pipeline_threads())


def test_a_replayed_batch_is_not_generated_again_and_only_missing_results_are_evaluated():
    calls = []

    def counting_generate(batch: Batch) -> None:
        calls.append(batch.step)
        generate(batch)

    evaluator = FakeEvaluator()
    with Pipeline(evaluator, counting_generate, task, queue_size=2) as pipe:
        batch = new_batch(7)
        generate(batch)  # as logged by an earlier run
        batch.results[1] = State([71.0], 71.0, 71.0, True, id="logged")
        pipe.submit(batch)
        results = drain(pipe, K - 1)
    assert calls == []
    assert sorted(k for _, k, _ in results) == [0, 2]
    assert evaluator.closed == []  # not owned: the caller closes it
    evaluator.close()


def test_a_raising_policy_surfaces_in_the_coordinator_and_shuts_down_cleanly():
    def broken(batch: Batch) -> None:
        raise ZeroDivisionError("policy failed")

    evaluator = FakeEvaluator()
    with (
        pytest.raises(ZeroDivisionError, match="policy failed"),
        Pipeline(evaluator, broken, task, close_evaluator=True) as pipe,
    ):
        pipe.submit(new_batch(0))
        drain(pipe, 1)
    assert pipeline_threads() == []
    assert evaluator.closed == [True]  # pending evaluations cancelled


def test_a_raising_evaluation_surfaces_in_the_coordinator_and_shuts_down_cleanly():
    evaluator = FakeEvaluator(fail_on=11)
    with (
        pytest.raises(ArithmeticError, match="cannot evaluate 11"),
        Pipeline(evaluator, generate, task, close_evaluator=True) as pipe,
    ):
        pipe.submit(new_batch(1))
        drain(pipe, K)
    assert pipeline_threads() == []
    assert evaluator.closed == [True]


def test_a_failing_warm_up_stops_the_pipeline():
    evaluator = FakeEvaluator()

    def warm_up() -> None:
        raise OSError("no workers")

    evaluator.warm_up = warm_up  # type: ignore[method-assign]
    pipe = Pipeline(evaluator, generate, task, close_evaluator=True)
    with pytest.raises(OSError, match="no workers"):
        pipe.start()
    assert not pipe.running and pipeline_threads() == [] and evaluator.closed == [True]


def test_a_pipeline_runs_once():
    evaluator = FakeEvaluator()
    pipe = Pipeline(evaluator, generate, task)
    with pytest.raises(RuntimeError, match="new"):
        pipe.submit(new_batch(0))  # not started
    pipe.start()
    with pytest.raises(RuntimeError, match="starts once"):
        pipe.start()
    pipe.stop()
    with pytest.raises(RuntimeError, match="starts once"):
        pipe.start()
    with pytest.raises(RuntimeError, match="stopped"):
        pipe.submit(new_batch(0))
    assert pipeline_threads() == []
    evaluator.close()


@pytest.mark.parametrize("name", ["generation_workers", "prefetch", "queue_size"])
def test_sizes_below_one_are_refused(name):
    with pytest.raises(ValueError, match=name):
        Pipeline(FakeEvaluator(), generate, task, **{name: 0})


class RaisingPolicy:
    """A construction policy whose third call raises."""

    name = "raising"
    action_modes = ("construction",)

    def __init__(self) -> None:
        self.calls = 0

    def sample(self, contexts, n, rng):
        self.calls += 1
        if self.calls == 3:
            raise RuntimeError("the policy broke")
        return [[Sample(action=list(c.parent.solution)) for _ in range(n)] for c in contexts]


def test_a_search_whose_policy_raises_stops_every_pipeline_thread(tmp_path):
    cfg = SearchConfig("CirclePacking-26-v0", policy="raising", selector="greedy", C=1, L=5, K=2, seed=0)
    search = EvolutionarySearch(
        cfg, tmp_path / "run", executor="inline", policy=RaisingPolicy(), tensorboard=False
    )
    with pytest.raises(RuntimeError, match="the policy broke"):
        search.run()
    assert pipeline_threads() == []
    assert search.stats()["queue_depth"] == 0 and search.stats()["in_flight"] == 0
    with pytest.raises(RuntimeError, match="runs once"):
        search.run()
