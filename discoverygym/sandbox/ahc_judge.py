"""Judge a C++ program on many contest cases: compile once, run cases in parallel, score each.

Each case runs in :func:`discoverygym.sandbox.native.run_executable` (2 s and 1 GiB by
default, as in the contests) in its own private directory; its stdout is scored in this process by
the problem's scorer (:func:`discoverygym.rewards.ahc.cases.score_case_output`). Cases run on
``min(workers, CPUs available, cases)`` threads (each thread waits on one sandboxed process). With ``stop_on_failure`` (the default, since
one failed case makes the submission fail) cases not yet started after a failure are skipped.
A program that leaves more than ``limits.max_files`` files or ``limits.scratch_mb`` MiB in its
case directory fails that case with ``output_limit`` (rule ``scratch_space``; see
:mod:`discoverygym.sandbox.native` for what holds during the run on each backend); the case
directory is removed after every case, with a bounded :func:`remove_tree`.
"""

from __future__ import annotations

import atexit
import dataclasses
import operator
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from discoverygym.io import available_cpus
from discoverygym.rewards.ahc.cases import (
    Case,
    CaseResult,
    JudgeReport,
    ScoringRules,
    parse_case,
    score_case_output,
)
from discoverygym.sandbox._process import remove_tree
from discoverygym.sandbox.native import CPP_FLAGS, NativeLimits, compile_cpp, run_executable

__all__ = ["available_cpus", "judge_program"]


def judge_program(source: str, cases: list[Case], rules: ScoringRules, *, workers: int | None = None,
                  limits: NativeLimits | None = None, stop_on_failure: bool = True,
                  compile_timeout_s: float = 60.0, flags: tuple[str, ...] = CPP_FLAGS) -> JudgeReport:
    """Compile ``source`` once and judge it on every case.

    Args:
        source: C++ program reading a case on stdin and writing its answer on stdout.
        cases: the cases (input texts are parsed by ``rules.parse_input``).
        rules: module with ``parse_input`` and ``score_output`` (:mod:`.ahc039`, :mod:`.ahc058`).
        workers: cases run at a time (default: CPUs available); capped by the CPUs available.
        limits: per-case :class:`NativeLimits` (default 2 s, 1 GiB, 64 MiB output; the output
            cap is lowered to ``rules.MAX_OUTPUT_BYTES`` where the problem sets one).
        stop_on_failure: skip cases not yet started once one case failed.
        compile_timeout_s: wall-clock limit of the compilation.
        flags: g++ flags.

    Returns:
        :class:`JudgeReport` (never raises for anything the program does).

    Raises:
        BackendUnavailable: g++ missing, bubblewrap required but missing, or no confinement
            (neither bubblewrap nor Landlock) without ``limits.allow_unconfined``.
        ValueError: no cases, workers < 1, or a case whose input does not parse (raised before
            compiling; the message names the case).
        TypeError: workers is not an int.
    """
    if not cases:
        raise ValueError("no cases to judge")
    if workers is not None:
        if isinstance(workers, bool):
            raise TypeError(f"workers must be an int, got {workers!r}")
        workers = operator.index(workers)
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
    limits = limits or NativeLimits()
    cap = getattr(rules, "MAX_OUTPUT_BYTES", None)
    if cap is not None and cap < limits.output_bytes:
        limits = dataclasses.replace(limits, output_bytes=int(cap))
    cases = [c if c.parsed is not None else dataclasses.replace(c, parsed=parse_case(rules, c.name, c.text))
             for c in cases]
    root = os.path.realpath(tempfile.mkdtemp(prefix="discoverygym-ahc-"))
    _live_roots.add(root)
    try:
        build = os.path.join(root, "build")
        os.mkdir(build)
        compiled = compile_cpp(source, build, flags=flags, timeout_s=compile_timeout_s,
                               use_bwrap=limits.use_bwrap, allow_unconfined=limits.allow_unconfined)
        report = JudgeReport(compiled.ok, compiled.log, compile_s=compiled.elapsed_s, backend=compiled.backend)
        if not compiled.ok:
            report.cases = [CaseResult(c.name, "skipped", message="not compiled") for c in cases]
            return report
        n_workers = max(1, min(workers or available_cpus(), available_cpus(), len(cases)))
        report.workers = n_workers
        failed = threading.Event()

        def one(index: int) -> CaseResult:
            case = cases[index]
            if stop_on_failure and failed.is_set():
                return CaseResult(case.name, "skipped", message="not run after an earlier failure")
            result = _judge_case(compiled.binary, case, rules, limits, os.path.join(root, f"case-{index}"))
            if result.verdict != "accepted":
                failed.set()
            return result

        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            report.cases = list(pool.map(one, range(len(cases))))
        report.judge_s = time.monotonic() - start
        return report
    finally:
        _remove_root(root)


#: Work directories of judgings in progress (this process), removed at exit if a judging was
#: interrupted while removing its own (e.g. a second KeyboardInterrupt).
_live_roots: set[str] = set()
_owner_pid = os.getpid()


def _remove_root(root: str) -> None:
    """Remove a judging's work directory (compile and case folders); forget it once gone."""
    if remove_tree(root):
        _live_roots.discard(root)


@atexit.register
def _remove_leftover_roots() -> None:
    if os.getpid() != _owner_pid:
        return
    for root in list(_live_roots):
        _remove_root(root)


def _judge_case(binary: str, case: Case, rules: ScoringRules, limits: NativeLimits, workdir: str) -> CaseResult:
    """Run and score one case in ``workdir`` (removed afterwards)."""
    os.mkdir(workdir)
    try:
        input_path = os.path.join(workdir, "input.txt")
        with open(input_path, "w", encoding="utf-8") as fh:
            fh.write(case.text)
        run = run_executable(binary, stdin_path=input_path, workdir=workdir, limits=limits)
        if run.status == "output_limit" and not run.message.startswith("output too large"):
            # files or bytes left in the working directory (NativeLimits.max_files / scratch_mb)
            return CaseResult(case.name, "output_limit", message=run.message, rule="scratch_space",
                              wall_s=run.wall_s, cpu_s=run.cpu_s)
        if run.status == "output_limit":
            message = (f"output too large: more than {limits.output_bytes} bytes, this problem's output cap"
                       " (a valid answer is far smaller)")
            return CaseResult(case.name, "output_limit", message=message, rule="output_size",
                              wall_s=run.wall_s, cpu_s=run.cpu_s)
        if not run.ok:
            return CaseResult(case.name, run.status, message=run.message, wall_s=run.wall_s, cpu_s=run.cpu_s)
        return score_case_output(case, rules, run.stdout[:limits.output_bytes], wall_s=run.wall_s, cpu_s=run.cpu_s)
    finally:
        remove_tree(workdir)  # never raises (a 1,500-level tree once crashed shutil.rmtree)
