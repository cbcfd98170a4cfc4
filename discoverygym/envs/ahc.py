"""AtCoder heuristic environments ``AHC039-v0`` and ``AHC058-v0``: C++ programs judged on cases.

An action is a C++ program that reads one case on stdin and prints its answer. It is compiled once
(g++ ``-std=gnu++20 -O2``, AtCoder's flags without ac-library/Boost/GMP) and run on every case in
the native sandbox, 2 s and 1 GiB per case as in the contests, several cases at a time. The score
is the mean per-case score (the contest total divided by the number of cases); the reward is that
mean scaled as in TTT-Discover (``/1500`` for AHC039, ``/3e6`` for AHC058). A compile error or any
case that crashes, runs out of time/memory/output or is judged invalid makes the candidate
invalid (reward 0), as one such case makes a contest submission WA/TLE.

Cases: ``n_cases`` generated inputs (default 150) from our generators, seeded ``0 … n−1`` (the
public seeds' numbering; ``vary_cases=True`` derives them from the evaluation seed instead), or
the ``*.txt`` input files in ``cases_dir`` (e.g. the official public inputs), in name order.

Example:
    >>> import gymnasium as gym, discoverygym
    >>> env = gym.make("AHC039-v0", n_cases=10)            # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                       # judges the baseline program
    >>> obs, reward, *_ , info = env.step(open("sol.cpp").read())  # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from discoverygym.envs.candidate import positive_int
from discoverygym.envs.program import ProgramTask
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.ahc import ahc039, ahc058
from discoverygym.rewards.ahc.cases import Case, parse_case
from discoverygym.rewards.ahc.standings import TOP_RESULTS, estimate_standing
from discoverygym.rewards.common import Score
from discoverygym.sandbox.ahc_judge import judge_program
from discoverygym.sandbox.native import MAX_TIME_LIMIT_S, NativeLimits
from discoverygym.types import State

__all__ = ["AHC039Task", "AHC058Task", "AHCTask", "make_ahc039", "make_ahc058"]

_CONTRACT = (
    "Write one complete C++20 program (`int main()`), compiled with `g++ -std=gnu++20 -O2` "
    "(no AtCoder Library, Boost or GMP). It reads one test case from standard input and writes its "
    "answer to standard output. Limits per case: 2 s (wall clock and CPU time), 1 GiB of address "
    "space, 1 MiB of output, one process (threads allowed, no fork), no network, no files besides "
    "a private /tmp (256 MiB at most). It is run on {cases}; the score is the mean case score. A "
    "compile error, a crash, a timeout or an invalid answer on any case gives reward 0."
)


class AHCTask(ProgramTask):
    """A contest problem judged on many cases (shared by AHC039 and AHC058).

    Args:
        n_cases: number of generated cases (default 150); with ``cases_dir``, the first
            ``n_cases`` files (default all).
        cases_dir: a directory of input files (``*.txt``) to judge on instead of generated cases.
        workers: cases run at a time (default: CPUs available; never more than those).
        vary_cases: generated cases depend on the evaluation seed (default: fixed seeds 0..n−1).
        time_limit_s: per-case time limit (2 s in the contests).
        memory_mb: per-case address-space limit in MiB (1024 in the contests).
        stop_on_failure: skip cases not started yet after a failure (the result is invalid anyway).
        allow_unconfined: run programs even where neither bubblewrap nor Landlock can confine
            their file-system writes (default: refuse with :class:`BackendUnavailable`).

    Raises:
        ValueError: ``n_cases``/``workers`` < 1, a time or memory limit out of range or not
            finite, a missing or empty ``cases_dir``.
        TypeError: an option of the wrong type (e.g. ``n_cases=1.5``).
    """

    language = "cpp"
    entry = "main"
    direction = "max"
    failure_reward = 0.0
    timed = True  # heuristics search until a time limit: a resume measures the best program again
    rules: ClassVar[ModuleType]
    reward_divisor: ClassVar[float]
    example: ClassVar[str]
    record_source: ClassVar[str]
    record_total: ClassVar[float]

    def __init__(self, n_cases: int | None = None, cases_dir: str | os.PathLike | None = None,
                 workers: int | None = None, vary_cases: bool = False, time_limit_s: float = 2.0,
                 memory_mb: int = 1024, stop_on_failure: bool = True, allow_unconfined: bool = False) -> None:
        n_cases = _count("n_cases", n_cases)
        workers = _count("workers", workers)
        if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float, np.integer, np.floating)):
            raise TypeError(f"time_limit_s must be a number of seconds, got {time_limit_s!r}")
        if not (math.isfinite(time_limit_s) and 0 < time_limit_s <= MAX_TIME_LIMIT_S):
            raise ValueError(f"time_limit_s must be > 0 and <= {MAX_TIME_LIMIT_S:g} s, got {time_limit_s!r}")
        memory_mb = _count("memory_mb", memory_mb)
        if memory_mb < 16 or memory_mb > 1 << 24:
            raise ValueError(f"memory_mb must be in [16, {1 << 24}], got {memory_mb}")
        self.cases_dir = None if cases_dir is None else Path(cases_dir)
        if self.cases_dir is not None:
            if not self.cases_dir.is_dir():
                raise ValueError(f"cases_dir {str(self.cases_dir)!r} is not a directory")
            if not any(self.cases_dir.glob("*.txt")):
                raise ValueError(f"cases_dir {str(self.cases_dir)!r} holds no *.txt input files")
        self.n_cases = n_cases
        self.workers = workers
        self.vary_cases = bool(vary_cases)
        self.limits = NativeLimits(time_limit_s=float(time_limit_s), memory_mb=memory_mb,
                                   allow_unconfined=bool(allow_unconfined))
        self.stop_on_failure = bool(stop_on_failure)

    # ------------------------------------------------------------------ facts
    @property
    def sota(self) -> dict:
        """Best published result as a mean per-case score (its 150-case total in ``total``)."""
        return {"value": self.record_total / 150, "source": self.record_source, "total": self.record_total,
                "top_results": dict(TOP_RESULTS[self.name])}

    @property
    def contract(self) -> str:  # type: ignore[override]
        """The program contract, naming the cases judged."""
        if self.cases_dir is not None:
            cases = f"the input files of {self.cases_dir}"
        else:
            cases = f"{self.n_cases or 150} generated test cases"
        return _CONTRACT.format(cases=cases)

    def initial_program(self) -> str:
        """The bundled baseline (``discoverygym/examples/<name>.cpp``)."""
        return (resources.files("discoverygym") / "examples" / self.example).read_text()

    def reward(self, score: float) -> float:
        """Mean case score divided by :attr:`reward_divisor` (TTT-Discover's scaling)."""
        return float(score) / self.reward_divisor

    # ------------------------------------------------------------------ cases
    def cases(self, seed: int = 0) -> list[Case]:
        """The cases an evaluation with ``seed`` judges on.

        Every input file of ``cases_dir`` is read and parsed here (before anything is compiled).

        Raises:
            ValueError: one line naming the input file of ``cases_dir`` and what is wrong with it
                (unreadable, too large, not UTF-8, not a valid input of the problem).
        """
        if self.cases_dir is not None:
            files = sorted(self.cases_dir.glob("*.txt"))[: self.n_cases]
            return [_read_case(self.rules, p) for p in files]
        n = self.n_cases or 150
        first = int(np.random.SeedSequence(seed).generate_state(1)[0]) if self.vary_cases else 0
        return [Case(f"{first + i:04d}", _generated(self.name, first + i)) for i in range(n)]

    def case_key(self, seed: int) -> Any:
        """The evaluation seed when generated cases vary with it (``vary_cases``), else ``None``."""
        return int(seed) if self.vary_cases and self.cases_dir is None else None

    # ------------------------------------------------------------------ judging
    def evaluate(self, source: str, *, seed: int) -> Score:
        """Compile and judge ``source`` on :meth:`cases` (see :class:`ProgramTask.evaluate`).

        Metrics: ``cases`` (one dict per case: case, verdict, score, and the rule/message when
        invalid), ``case_scores``, ``n_cases``, ``total``, ``mean``, ``first_failure``,
        ``compile_error`` (truncated), ``standing`` (estimated contest placement of the total
        scaled to 150 cases), ``workers``, ``backend``; ``sandbox_s`` holds the wall time.

        Raises:
            InvalidSolution: compile error, or a case that failed (the first one is named).
        """
        cases = self.cases(seed)
        report = judge_program(source, cases, self.rules, workers=self.workers, limits=self.limits,
                               stop_on_failure=self.stop_on_failure)
        rows = []
        for c in report.cases:
            row = {"case": c.case, "verdict": c.verdict, "score": c.score}
            if c.verdict != "accepted":
                row["message"] = c.message
            rows.append(row)
        metrics: dict = {"n_cases": len(cases), "cases": rows, "workers": report.workers,
                         "backend": report.backend, "sandbox_s": report.compile_s + report.judge_s}
        if not report.compiled:
            log = report.compile_log[-2000:]
            metrics["compile_error"] = log
            first = next((ln for ln in log.splitlines() if "error" in ln), log.strip()[:300])
            raise InvalidSolution(f"compile error: {first}", metrics=metrics)
        failure = report.first_failure
        if failure is not None:
            metrics["first_failure"] = {"case": failure.case, "verdict": failure.verdict,
                                        "rule": failure.rule, "message": failure.message}
            raise InvalidSolution(f"case {failure.case}: {failure.verdict}: {failure.message}", metrics=metrics)
        scores = [int(s) for s in report.scores]
        total = int(sum(scores))
        mean = total / len(scores)
        standing = estimate_standing(self.name, mean * 150)
        standing["projected"] = len(scores) != 150
        metrics.update(case_scores=scores, total=total, mean=mean, standing=standing)
        return Score(mean, metrics)

    # ------------------------------------------------------------------ display
    def report(self, state: State) -> list[tuple[str, str]]:
        """CLI rows: cases, total, estimated standing, workers and wall time."""
        meta = state.metadata
        rows = [("cases", str(meta.get("n_cases", "")))]
        if state.valid:
            rows.append(("total", f"{meta.get('total')}"))
            standing = meta.get("standing") or {}
            where = f"{standing.get('total', 0):.0f}" + (" (projected to 150 cases)" if standing.get("projected") else "")
            if "rank" in standing:
                where += f": rank {standing['rank']} of {standing['of']}, performance {standing['performance']}"
            where += "; beats " + (", ".join(standing.get("beats") or []) or "none of the published top results")
            rows.append(("contest standing (est.)", where))
        elif meta.get("first_failure"):
            f = meta["first_failure"]
            rows.append(("first failure", f"case {f['case']}: {f['verdict']} ({f['message']})"))
        if meta.get("compile_error"):
            rows.append(("compile error", meta["compile_error"][:500]))
        rows.append(("workers", str(meta.get("workers", ""))))
        if "sandbox_s" in meta:
            rows.append(("wall time (s)", f"{meta['sandbox_s']:.2f}"))
        return rows


_MAX_CASE_BYTES = 64 << 20


def _count(name: str, value) -> int | None:
    """An optional positive int option (``None`` kept; :func:`~discoverygym.envs.candidate.positive_int`).

    Raises:
        TypeError: not an integer; ValueError: < 1.
    """
    return None if value is None else positive_int(name, value)


def _read_case(rules: ModuleType, path: Path) -> Case:
    """One input file as a parsed :class:`Case`.

    Raises:
        ValueError: ``"input file NAME: PROBLEM"``.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_CASE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"input file {path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > _MAX_CASE_BYTES:
        raise ValueError(f"input file {path}: larger than {_MAX_CASE_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"input file {path}: not UTF-8 text (byte {exc.start})") from None
    try:
        parsed = parse_case(rules, path.name, text)
    except ValueError as exc:
        raise ValueError(f"input file {path}: {str(exc).removeprefix(f'case {path.name}: ')}") from None
    return Case(path.name, text, parsed)


@lru_cache(maxsize=1024)
def _generated(name: str, seed: int) -> str:
    """Cached generated input text of one case."""
    return (ahc039 if name == "ahc039" else ahc058).generate(seed)


class AHC039Task(AHCTask):
    """AHC039 "Purse Seine Fishing" (see :mod:`discoverygym.rewards.ahc.ahc039`)."""

    name = "ahc039"
    title = "AtCoder AHC039: Purse Seine Fishing"
    quantity = "mean case score, max(0, a − b + 1)"
    rules = ahc039
    reward_divisor = 1500.0
    example = "ahc039.cpp"
    record_source = "TTT-Discover, 567,062 over 150 cases (1st human 566,997)"
    record_total = 567_062.0
    description = (
        "A fishing area is the square [0, 100000] x [0, 100000]. It holds N = 5000 mackerels and "
        "N = 5000 sardines at distinct integer points, drawn around 10-25 Gaussian clusters per kind. "
        "Lay a net: a simple polygon whose edges are all horizontal or vertical, with at most 1000 "
        "vertices at integer coordinates inside the square and a total edge length of at most "
        "400000. Fish on the net count as caught. A case scores max(0, a - b + 1), where a and b are "
        "the mackerels and sardines caught.\n\n"
        "Input (stdin): a line with N, then 2N lines `x y`: the N mackerels, then the N sardines.\n"
        "Output (stdout): a line with m (4 <= m <= 1000), then m lines `x y`, the vertices in order "
        "(clockwise or counter-clockwise). All vertices must be distinct; three consecutive vertices "
        "may be collinear, but an edge may not turn back over the previous one, and edges that are "
        "not neighbours may not touch at all. Several polygons may be printed; the last one counts. "
        "Any broken rule scores the case 0 and invalidates the program."
    )


class AHC058Task(AHCTask):
    """AHC058 apple machines (see :mod:`discoverygym.rewards.ahc.ahc058`)."""

    name = "ahc058"
    title = "AtCoder AHC058: apple-producing machine hierarchy"
    quantity = "mean case score, round(1e5 · log2 apples)"
    rules = ahc058
    reward_divisor = 3e6
    example = "ahc058.cpp"
    record_source = "TTT-Discover, 848,414,228 over 150 cases (1st human 847,674,723)"
    record_total = 848_414_228.0
    description = (
        "There are N = 10 machine ids and L = 4 levels; machine (i, j) has level i and id j. "
        "Level-0 machine j has capacity A_j (1..100, A sorted ascending); machine (i, j) has base "
        "cost C_{i,j}. Every machine starts with count B = 1 and power P = 0, and you start with "
        "K = 1 apple. The plan has T = 500 turns. In each turn you first either strengthen one "
        "machine (i, j), paying C_{i,j} * (P_{i,j} + 1) apples (you may not go below zero) and "
        "adding 1 to P_{i,j}, or do nothing. Then, for levels 0, 1, 2, 3 in that order and every "
        "id j: a level-0 machine adds A_j * B_{0,j} * P_{0,j} apples; a machine of level i >= 1 "
        "adds B_{i,j} * P_{i,j} to B_{i-1,j}. A case scores round(100000 * log2(apples after the "
        "last turn)).\n\n"
        "Input (stdin): `N L T K`, then the N values A_j, then L lines of N values C_{i,j} "
        "(level 0 first).\n"
        "Output (stdout): exactly T action lines in turn order: `i j` to strengthen machine (i, j), "
        "or `-1` to do nothing. Empty lines and lines starting with `#` are ignored. Fewer than T "
        "actions, an unknown level or id, extra tokens on a line, or an unaffordable purchase "
        "invalidate the case (score 0) and the program."
    )


def make_ahc039(n_cases: int | None = None, cases_dir: str | os.PathLike | None = None,
                workers: int | None = None, **options) -> AHC039Task:
    """Factory of ``AHC039-v0`` (cheap: no compiling or case generation here).

    Args:
        n_cases, cases_dir, workers, **options: see :class:`AHCTask`.
    """
    return AHC039Task(n_cases=n_cases, cases_dir=cases_dir, workers=workers, **options)


def make_ahc058(n_cases: int | None = None, cases_dir: str | os.PathLike | None = None,
                workers: int | None = None, **options) -> AHC058Task:
    """Factory of ``AHC058-v0`` (cheap: no compiling or case generation here).

    Args:
        n_cases, cases_dir, workers, **options: see :class:`AHCTask`.
    """
    return AHC058Task(n_cases=n_cases, cases_dir=cases_dir, workers=workers, **options)
