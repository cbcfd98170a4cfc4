"""Judge a C++ program on many contest cases: compile once, run cases in parallel, score each.

Each case runs in :func:`discoverygym.rewards.native_sandbox.run_executable` (2 s and 1 GiB by
default, as in the contests) in its own private directory; its stdout is scored in this process by
the problem's scorer (``score_output``). Cases run on ``min(workers, CPUs available, cases)``
threads (each thread waits on one sandboxed process). With ``stop_on_failure`` (the default, since
one failed case makes the submission fail) cases not yet started after a failure are skipped.
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
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from discoverygym.rewards.ahc.textio import AHCInvalid, decode_output
from discoverygym.rewards.native_sandbox import (
    CPP_FLAGS,
    NativeLimits,
    compile_cpp,
    remove_tree,
    run_executable,
)

__all__ = ["Case", "CaseResult", "JudgeReport", "ScoringRules", "available_cpus", "judge_program", "parse_case"]


class ScoringRules(Protocol):
    """What the judge needs from a problem module (``ahc039``, ``ahc058``); a module may also set
    ``MAX_OUTPUT_BYTES``, the output cap of the problem (it lowers ``limits.output_bytes``)."""

    def parse_input(self, text: str) -> Any: ...
    def score_output(self, inp: Any, text: str) -> int: ...


@dataclass(frozen=True)
class Case:
    """One test case: ``name`` (e.g. ``"0007"`` or the input file's name), its input ``text`` and
    optionally ``parsed``, the result of the rules' ``parse_input(text)`` (parsed when missing)."""

    name: str
    text: str
    parsed: Any = field(default=None, compare=False, repr=False)


@dataclass
class CaseResult:
    """Verdict of one case.

    Attributes:
        case: case name.
        verdict: ``"accepted"``, ``"wrong_answer"`` (a rule broken; ``rule`` names it),
            ``"time_limit"``, ``"runtime_error"``, ``"memory_limit"``, ``"output_limit"`` (output
            over the problem's cap: score 0, rule ``output_size``),
            ``"sandbox_error"`` or ``"skipped"`` (not run after an earlier failure).
        score: the case score (int) when accepted, else ``None``.
        message: the reason when not accepted.
        rule: the broken rule id for ``wrong_answer``.
        wall_s, cpu_s: the program's wall and CPU seconds (0 when not run).
    """

    case: str
    verdict: str
    score: int | None = None
    message: str | None = None
    rule: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0


@dataclass
class JudgeReport:
    """Everything a judging produced.

    Attributes:
        compiled: whether compilation succeeded; compile_log: compiler messages (truncated).
        cases: one :class:`CaseResult` per case, in the given order.
        compile_s, judge_s: wall seconds spent compiling and running + scoring all cases.
        workers: number of cases run at a time.
        backend: sandbox backend (``"bwrap"`` or ``"fallback"``).
    """

    compiled: bool
    compile_log: str
    cases: list[CaseResult] = field(default_factory=list)
    compile_s: float = 0.0
    judge_s: float = 0.0
    workers: int = 0
    backend: str = ""

    @property
    def ok(self) -> bool:
        """Compiled and every case accepted."""
        return self.compiled and bool(self.cases) and all(c.verdict == "accepted" for c in self.cases)

    @property
    def first_failure(self) -> CaseResult | None:
        """The first case (in case order) that was judged and not accepted."""
        return next((c for c in self.cases if c.verdict not in ("accepted", "skipped")), None)

    @property
    def scores(self) -> list[int | None]:
        """Per-case scores (``None`` where not accepted)."""
        return [c.score for c in self.cases]

    def as_dict(self) -> dict:
        """JSON-serialisable form."""
        out = asdict(self)
        out["ok"] = self.ok
        return out


def available_cpus() -> int:
    """CPUs this process may run on (affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


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


def parse_case(rules: ScoringRules, name: str, text: str) -> Any:
    """``rules.parse_input(text)``, any failure turned into one-line ``ValueError`` naming the case.

    Raises:
        ValueError: ``"case NAME: PROBLEM"``.
    """
    try:
        return rules.parse_input(text)
    except Exception as exc:  # noqa: BLE001 - whatever the parser raised, name the case
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"case {name}: {detail}") from None


def _judge_case(binary: str, case: Case, rules: ScoringRules, limits: NativeLimits, workdir: str) -> CaseResult:
    """Run and score one case in ``workdir`` (removed afterwards)."""
    os.mkdir(workdir)
    try:
        input_path = os.path.join(workdir, "input.txt")
        with open(input_path, "w", encoding="utf-8") as fh:
            fh.write(case.text)
        run = run_executable(binary, stdin_path=input_path, workdir=workdir, limits=limits)
        if run.status == "output_limit":
            message = (f"output too large: more than {limits.output_bytes} bytes, this problem's output cap"
                       " (a valid answer is far smaller)")
            return CaseResult(case.name, "output_limit", message=message, rule="output_size",
                              wall_s=run.wall_s, cpu_s=run.cpu_s)
        if not run.ok:
            return CaseResult(case.name, run.status, message=run.message, wall_s=run.wall_s, cpu_s=run.cpu_s)
        try:
            score = rules.score_output(case.parsed, decode_output(run.stdout[:limits.output_bytes]))
        except AHCInvalid as exc:
            return CaseResult(case.name, "wrong_answer", message=str(exc), rule=exc.rule,
                              wall_s=run.wall_s, cpu_s=run.cpu_s)
        return CaseResult(case.name, "accepted", score=score, wall_s=run.wall_s, cpu_s=run.cpu_s)
    finally:
        remove_tree(workdir)  # never raises (a 1,500-level tree once crashed shutil.rmtree)
