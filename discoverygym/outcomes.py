"""What became of every sample: one :class:`~discoverygym.policy.Outcome` each, and the run's record of them.

Ground floor (imports only :mod:`discoverygym.policy`, :mod:`discoverygym.types` and
:mod:`discoverygym.io`), so that search and agents both use it.

:func:`classify` decides the category of one sample after judging: the category the response parser
set (``sample.outcome``: no code, truncated), else the judge's verdict read from the judged state
(or a step's ``info``): valid; the program did not compile (``"program has a syntax error"``,
``"program could not be compiled"``, a C++ ``"compile error"``); it did not define its entry
function (``"entry function 'construct' not defined"``, the scaling-law wrapper's ``"the program
must define a function fit(...)"``); it ran past its time limit (``"timed out after ..."``); it
raised, exited or was killed (``"program raised ..."``, ``"program exited ..."``, ``"memory limit
... exceeded"``, ``"ended abnormally"``, any other ``"program failed: ..."`` / ``"... failed: ..."``
of a sandbox run); anything else is a result the verifier refused (:attr:`Outcome.INVALID`). These
are the messages of :mod:`discoverygym.sandbox.python`, :mod:`discoverygym.envs.construction` (code mode:
``"program failed: <sandbox error>"``) and the program envs (``InvalidSolution`` messages). A
candidate that could not be scored on this machine (``metadata["unscored"]``) has no category
(``None``; counted as ``"unscored"``).

:class:`OutcomeLog` keeps a run's record in its run directory:

* ``samples.jsonl`` — one JSON line per sample that has response text (an LLM's): the text, the
  outcome, the judge's error, the score, and what the caller adds (step, trajectory...);
* ``outcomes.json`` — counts per category (every category present, zeros included), the total and
  the valid fraction; rewritten at most once per second and on :meth:`OutcomeLog.flush`;
* :meth:`OutcomeLog.scalars` — the same counts as TensorBoard tags ``outcome/<category>``.

Example:
    >>> from discoverygym.policy import Outcome, Sample
    >>> from discoverygym.types import State
    >>> classify(Sample(action="x = 1\\n"), State(None, None, 0.0, False,
    ...          error="program failed: entry function 'construct' not defined"))
    <Outcome.WRONG_ENTRY: 'wrong_entry_point'>
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from discoverygym.io import atomic_write_json
from discoverygym.policy import Outcome, Sample

__all__ = ["CATEGORIES", "FAILURE_TIERS", "FAILURE_TIER_STEP", "NO_CODE_ERROR", "OUTCOMES_FILE", "OUTCOME_TAG",
           "SAMPLES_FILE", "UNREAD_PREFIX", "UNSCORED", "OutcomeLog", "classify", "classify_error", "count_outcomes",
           "failure_tier_reward", "format_counts", "rewind_counts", "unread_reason"]

OUTCOMES_FILE = "outcomes.json"
SAMPLES_FILE = "samples.jsonl"
#: TensorBoard tag prefix (``outcome/valid``, ``outcome/no_code``, ...).
OUTCOME_TAG = "outcome/"
#: the count key of candidates that could not be scored on this machine (no category).
UNSCORED = "unscored"
#: every key of ``outcomes.json``'s counts, in table order: each :class:`Outcome`, then :data:`UNSCORED`
CATEGORIES = (*(o.value for o in Outcome), UNSCORED)

#: the judge's error for a response that held no program (``"no code in the response: <parser's reason>"``;
#: :meth:`discoverygym.envs.candidate.CandidateEnv.evaluate` gives it without running anything).
NO_CODE_ERROR = "no code in the response"
#: the words after the comment sign of the stub program that stands for a response without a program
#: (:func:`~discoverygym.agents.responses.failed_program`; read back by :func:`unread_reason`).
UNREAD_PREFIX = "no program could be read from the response: "

#: the failure ladder (issue 49, ours): how many :data:`FAILURE_TIER_STEP` s below the env's failure
#: reward each failed outcome's reward sits with ``TrainConfig.failure_tiers``: truncated < no code <
#: syntax error < wrong entry point < runtime error = timeout < invalid (the failure reward itself).
FAILURE_TIERS: dict[Outcome, int] = {Outcome.TRUNCATED: 5, Outcome.NO_CODE: 4, Outcome.SYNTAX_ERROR: 3,
                                     Outcome.WRONG_ENTRY: 2, Outcome.RUNTIME_ERROR: 1, Outcome.TIMEOUT: 1,
                                     Outcome.INVALID: 0}
#: reward units between two rungs of :data:`FAILURE_TIERS`.
FAILURE_TIER_STEP = 0.1

_SYNTAX = ("syntax error", "could not be compiled", "compile error", "compilation error", "failed to compile")
_ENTRY = ("the program must define a function",)
_RUNTIME = ("program raised", "program exited", "memory limit", "ended abnormally", "killed by signal")


def classify_error(error: str | None) -> Outcome:
    """The category of a judge's error message (``None``: valid). See the module docstring."""
    if not error:
        return Outcome.VALID
    text = str(error).lower()
    if text.startswith(NO_CODE_ERROR):  # the parser's reason follows; it may quote any other message
        return Outcome.TRUNCATED if "truncat" in text else Outcome.NO_CODE
    if "timed out" in text or "time limit" in text:
        return Outcome.TIMEOUT
    if any(key in text for key in _SYNTAX):
        return Outcome.SYNTAX_ERROR
    if ("entry function" in text and ("not defined" in text or "not callable" in text)) or any(
            key in text for key in _ENTRY):
        return Outcome.WRONG_ENTRY
    if any(key in text for key in _RUNTIME) or text.startswith("program failed") or " failed: " in text[:80]:
        return Outcome.RUNTIME_ERROR
    return Outcome.INVALID


def unread_reason(program: Any) -> str | None:
    """The parser's reason when ``program`` is the stub of a response without a program, else ``None``.

    The stub (:func:`~discoverygym.agents.responses.failed_program`) is one comment line,
    ``# no program could be read from the response: <reason>`` (``//`` for C++). The envs judge it as
    :data:`NO_CODE_ERROR` without running it, so the reason a user reads is the parser's, not the
    missing entry function of an empty program.
    """
    if not isinstance(program, str):
        return None
    text = program.strip()
    if "\n" in text:
        return None
    for comment in ("#", "//"):
        head = f"{comment} {UNREAD_PREFIX}"
        if text.startswith(head):
            return text[len(head):]
    return None


def failure_tier_reward(reward: float, outcome: Outcome | None, step: float = FAILURE_TIER_STEP) -> float:
    """A failed rollout's reward on the failure ladder (``TrainConfig.failure_tiers``, issue 49; ours).

    Args:
        reward: the judged reward (for a failure, the env's ``failure_reward``, which is strictly below
            every valid reward).
        outcome: the rollout's :class:`Outcome` (:func:`classify`); ``None`` (unscored) and
            :attr:`Outcome.VALID` leave ``reward`` unchanged.
        step: reward units per rung (> 0).

    Returns:
        ``reward - step * FAILURE_TIERS[outcome]`` (float): truncated < no code < syntax error < wrong
        entry point < runtime error = timeout < invalid = ``reward``; every rung is <= ``reward``, so
        all stay below every valid reward.

    Example:
        >>> failure_tier_reward(-1.0, Outcome.NO_CODE)
        -1.4
    """
    if outcome is None or outcome is Outcome.VALID:
        return float(reward)
    return float(reward) - float(step) * FAILURE_TIERS.get(outcome, 0)


def count_outcomes(outcomes: Any) -> dict[str, int]:
    """``{category: count}`` of an iterable of :class:`Outcome` (``None`` counts as :data:`UNSCORED`),
    nonzero categories only, in :data:`CATEGORIES` order."""
    counts = dict.fromkeys(CATEGORIES, 0)
    for outcome in outcomes:
        counts[UNSCORED if outcome is None else Outcome(outcome).value] += 1
    return {k: v for k, v in counts.items() if v}


def format_counts(counts: Mapping[str, int]) -> str:
    """One console line of outcome counts: ``"valid 1, truncated 6, no_code 1 (8)"``: the nonzero
    categories in :data:`CATEGORIES` order, then the total in brackets (``"none (0)"`` when empty)."""
    items = [(k, int(counts.get(k, 0))) for k in CATEGORIES if int(counts.get(k, 0) or 0)]
    total = sum(v for _, v in items)
    return (", ".join(f"{k} {v}" for k, v in items) or "none") + f" ({total})"


def _judged_fields(judged: Any) -> tuple[bool, str | None, bool]:
    """``(valid, error, unscored)`` of a :class:`~discoverygym.types.State` or a step's ``info`` mapping."""
    if isinstance(judged, Mapping):
        state = judged.get("state")
        if state is not None and not isinstance(state, Mapping):
            return _judged_fields(state)
        return bool(judged.get("valid")), judged.get("error"), bool(judged.get("unscored"))
    metadata = getattr(judged, "metadata", None) or {}
    return bool(getattr(judged, "valid", False)), getattr(judged, "error", None), bool(metadata.get("unscored"))


def classify(sample: Sample | None, judged: Any) -> Outcome | None:
    """The :class:`Outcome` of one sample.

    Args:
        sample: a :class:`~discoverygym.policy.Sample`, or ``None`` (only the judge's verdict counts).
        judged: the judged :class:`~discoverygym.types.State`, or a step's ``info`` dict
            (``valid``, ``error``, ``unscored``, or ``state``).

    Returns:
        ``sample.outcome`` when the parser set one; else :attr:`Outcome.TRUNCATED` /
        :attr:`Outcome.NO_CODE` for a response that could not be read (``parse_error`` mentions
        truncation / otherwise; a ``diff`` that did not apply is no code); else the judge's verdict
        (:func:`classify_error`); ``None`` for an unscored candidate.
    """
    sample = Sample() if sample is None else sample
    if sample.outcome is not None:
        return Outcome(sample.outcome)
    parse_error = sample.error
    if parse_error:
        return Outcome.TRUNCATED if "truncated" in str(parse_error).lower() else Outcome.NO_CODE
    valid, error, unscored = _judged_fields(judged)
    if unscored:
        return None
    if valid:
        return Outcome.VALID
    return classify_error(error or "invalid")


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


class OutcomeLog:
    """Appends ``samples.jsonl`` and keeps ``outcomes.json`` of one run directory (module docstring).

    Reopening a run directory (``--resume``) recounts the lines already in ``samples.jsonl`` and the
    counts in ``outcomes.json`` (whichever total is larger), so counts continue.

    Args:
        run_dir: the run directory (created if missing).
        keep_all: also write a ``samples.jsonl`` line for samples without text (numeric policies).
        min_interval_s: least seconds between two rewrites of ``outcomes.json`` (``0``: every record).

    Attributes:
        counts: ``{category value: count}`` (every :class:`Outcome`, plus ``"unscored"``).
    """

    def __init__(self, run_dir: str | os.PathLike, *, keep_all: bool = False, min_interval_s: float = 1.0) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.keep_all = keep_all
        self.min_interval_s = float(min_interval_s)
        self.counts: dict[str, int] = dict.fromkeys(CATEGORIES, 0)
        self._lines = 0
        self._written = 0.0
        self._dirty = False
        self._restore()

    @property
    def samples_path(self) -> Path:
        return self.run_dir / SAMPLES_FILE

    @property
    def outcomes_path(self) -> Path:
        return self.run_dir / OUTCOMES_FILE

    def _restore(self) -> None:
        from_lines = dict.fromkeys(self.counts, 0)
        if self.samples_path.exists():
            with open(self.samples_path, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        key = json.loads(line).get("outcome") or UNSCORED
                    except (ValueError, AttributeError):
                        continue  # a line cut by a kill
                    self._lines += 1
                    if key in from_lines:
                        from_lines[key] += 1
        stored: dict[str, int] = {}
        try:
            data = json.loads(self.outcomes_path.read_text())
            stored = {k: int(v) for k, v in (data.get("counts") or {}).items() if k in self.counts}
        except (OSError, ValueError, AttributeError, TypeError):
            pass
        best = stored if sum(stored.values()) > sum(from_lines.values()) else from_lines
        self.counts.update(best)

    @property
    def total(self) -> int:
        """Samples recorded (unscored included)."""
        return sum(self.counts.values())

    def record(self, sample: Sample | None, judged: Any, **fields: Any) -> Outcome | None:
        """Classify one judged sample, count it, and append its line (if it has text, or ``keep_all``).

        Args:
            sample: the policy's sample (``text``, ``finish_reason``, ``parse_error`` are kept).
            judged: its judged state or step ``info`` (:func:`classify`).
            **fields: more JSON-able facts for its line (``step``, ``trajectory``, ``env_id``...).

        Returns:
            The outcome (``None``: unscored).
        """
        outcome = classify(sample, judged)
        key = outcome.value if outcome is not None else UNSCORED
        self.counts[key] += 1
        sample = Sample() if sample is None else sample
        text = sample.text
        if text is not None or self.keep_all:
            valid, error, _ = _judged_fields(judged)
            score = judged.get("score") if isinstance(judged, Mapping) else getattr(judged, "score", None)
            line = {"i": self._lines, "outcome": outcome.value if outcome is not None else None,
                    "valid": valid, "score": _jsonable(score),
                    "error": None if error is None else str(error)[:2000],
                    "parse_error": sample.error,
                    "finish_reason": sample.finish_reason,
                    "edit": sample.edit,
                    "tokens": len(getattr(sample, "completion_ids", None) or []) or None,  # LLM samples
                    **{k: _jsonable(v) for k, v in fields.items()},
                    "text": text}
            with open(self.samples_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            self._lines += 1
        self._dirty = True
        if time.monotonic() - self._written >= self.min_interval_s:
            self.flush()
        return outcome

    def summary(self) -> dict[str, Any]:
        """What ``outcomes.json`` holds: ``counts``, ``total``, ``scored`` and ``valid_fraction``."""
        return _summary(self.counts)

    def scalars(self) -> dict[str, float]:
        """``{"outcome/<category>": count}`` for TensorBoard (every category, zeros included)."""
        return {OUTCOME_TAG + key: float(value) for key, value in self.counts.items()}

    def flush(self) -> None:
        """Rewrite ``outcomes.json`` now (atomically) if anything was recorded since the last write."""
        if not self._dirty and self.outcomes_path.exists():
            return
        atomic_write_json(self.outcomes_path, self.summary(), fsync=False)
        self._written = time.monotonic()
        self._dirty = False

    close = flush


def rewind_counts(run_dir: str | os.PathLike, scalars: Mapping[str, Any] | None) -> None:
    """Set ``run_dir``'s ``outcomes.json`` back to the counts of a logged step, when a resumed run
    drops the steps a killed run logged after its checkpoint (their ``samples.jsonl`` lines are cut).

    Args:
        run_dir: the run directory.
        scalars: that step's metrics row (its ``outcome/<category>`` values, :meth:`OutcomeLog.scalars`,
            are the counts so far), or ``None`` / a row without them: no step kept, so
            ``outcomes.json`` is removed and :class:`OutcomeLog` recounts from ``samples.jsonl``.

    Raises:
        OSError: the file cannot be written or removed (a full disk, a read-only run directory).

    Source: ours (issue 39: a resumed run's counts must match its ``samples.jsonl`` and ``metrics.jsonl``).
    """
    path = Path(run_dir) / OUTCOMES_FILE
    counts = {key: int(scalars[OUTCOME_TAG + key]) for key in CATEGORIES
              if scalars is not None and isinstance(scalars.get(OUTCOME_TAG + key), (int, float))}
    if not counts:
        path.unlink(missing_ok=True)
        return
    atomic_write_json(path, _summary(dict.fromkeys(CATEGORIES, 0) | counts), fsync=False)


def _summary(counts: Mapping[str, int]) -> dict[str, Any]:
    """``outcomes.json`` of ``counts`` (every key of :data:`CATEGORIES`)."""
    total = sum(counts.values())
    scored = total - counts[UNSCORED]
    return {"counts": dict(counts), "total": total, "scored": scored,
            "valid_fraction": (counts[Outcome.VALID.value] / scored) if scored else None}
