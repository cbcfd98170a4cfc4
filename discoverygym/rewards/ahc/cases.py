"""The cases, verdicts and reports of a judged contest program, and the scoring of one case's output.

Pure: nothing here compiles or runs a program (that is :mod:`discoverygym.sandbox.ahc_judge`,
which runs each case in the native sandbox and hands its stdout to :func:`score_case_output`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from discoverygym.rewards.ahc.textio import AHCInvalid, decode_output

__all__ = ["Case", "CaseResult", "JudgeReport", "ScoringRules", "parse_case", "score_case_output"]


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
            over the problem's cap: score 0, rule ``output_size``; or more files or bytes left in
            the working directory than ``NativeLimits.max_files``/``scratch_mb``: rule
            ``scratch_space``),
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


def score_case_output(case: Case, rules: ScoringRules, stdout: bytes, *, wall_s: float = 0.0,
                      cpu_s: float = 0.0) -> CaseResult:
    """Score what a program wrote on one case (it ran within every limit and exited with 0).

    Args:
        case: the case, with ``parsed`` set (see :func:`parse_case`).
        rules: the problem's scorer (``score_output(parsed_input, text) -> int``).
        stdout: the program's standard output (bytes; decoded with the official tools' rules).
        wall_s, cpu_s: the run's wall and CPU seconds, copied into the result.

    Returns:
        ``"accepted"`` with the integer score, or ``"wrong_answer"`` naming the broken rule
        (also for output that is not UTF-8 text).
    """
    try:
        score = rules.score_output(case.parsed, decode_output(stdout))
    except AHCInvalid as exc:
        return CaseResult(case.name, "wrong_answer", message=str(exc), rule=exc.rule, wall_s=wall_s, cpu_s=cpu_s)
    return CaseResult(case.name, "accepted", score=score, wall_s=wall_s, cpu_s=cpu_s)
