"""A wall-clock deadline that operators honour: they return their best so far when it passes.

A run under a wall budget (``discoverygym train --budget-s``, ``compare --budget-s``, the discovery
benchmark) must not launch work that cannot finish: an Erdős ``hop`` makes up to 160 LP solves of
about 2 s each, so one operator call used to run minutes past a 30 s budget (issue 41). The trainer
therefore wraps each operator job in :class:`WithDeadline`; in the worker process that runs it, the
deadline is set for the job's duration, and the operators' loops (the LP iterations of ``lp`` and
``hop``, the hops, the annealed Adam schedules, the circle-packing basin-hopping chain, the polish
that ends a variation) check :func:`expired` between iterations and return the best iterate they
hold. A job that starts after the deadline does not run at all: it returns its fallback (the parent
construction, which the trainer then treats as a repeat of its start state: no advantage).

The deadline is an absolute ``time.time()`` (seconds since the epoch), so it means the same moment
in the parent and in every worker process. Without a deadline (the default) nothing changes.

Example:
    >>> from discoverygym.envs.operators.deadline import deadline_at, expired, remaining
    >>> import time
    >>> with deadline_at(time.time() + 60):
    ...     expired(), remaining() > 50
    (False, True)
    >>> remaining()
    inf

Source: ours (issue 41, "budgets are kept, not just scored").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["RESERVE_SHARE", "WithDeadline", "deadline_at", "expired", "remaining", "step_reserve"]

#: the deadline of the job running in this process (``time.time()`` seconds), ``None`` = none
_DEADLINE: float | None = None


def remaining() -> float:
    """Seconds left before this process's deadline (may be negative); ``inf`` without one."""
    return math.inf if _DEADLINE is None else _DEADLINE - time.time()


def expired() -> bool:
    """Whether this process's deadline has passed (``False`` without one)."""
    return _DEADLINE is not None and time.time() >= _DEADLINE


@contextmanager
def deadline_at(when: float | None) -> Iterator[None]:
    """Set this process's deadline to ``when`` (``time.time()`` seconds; ``None``: none) inside the block.

    An outer deadline that is earlier stays in force (deadlines only tighten). Not thread-safe: a
    process runs one operator job at a time (the trainer's worker processes do).
    """
    global _DEADLINE
    before = _DEADLINE
    if when is not None:
        _DEADLINE = when if before is None else min(before, when)
    try:
        yield
    finally:
        _DEADLINE = before


@dataclass(frozen=True)
class WithDeadline:
    """A picklable zero-argument job run under a deadline (an operator's ``Sample.pending``).

    Attributes:
        job: the zero-argument job (e.g. ``partial(apply_operator, ...)``).
        deadline: ``time.time()`` seconds at which the job's loops stop and return their best so far.
        fallback: returned without running ``job`` when the deadline has already passed at the start
            (the parent construction: a no-op child); ``None`` runs the job anyway.
    """

    job: Callable[[], Any]
    deadline: float
    fallback: Any = None

    def __call__(self) -> Any:
        """Run the job under the deadline (or return the fallback when it is already past)."""
        if self.fallback is not None and time.time() >= self.deadline:
            return self.fallback
        with deadline_at(self.deadline):
            return self.job()


#: shares of the wall budget that bound the reserve kept after the operators' deadline (:func:`step_reserve`)
RESERVE_SHARE = (0.05, 0.25)


def step_reserve(overhead_s: float, budget_s: float) -> float:
    """Seconds of the wall budget kept free after the operators' deadline: the last step's work
    outside its operators (sampling, update, logging, checkpoint: ``overhead_s``), at least 5% and at
    most 25% of ``budget_s`` (:data:`RESERVE_SHARE`): the 5% floor pays for verifying the children
    and the final archive save, so that a run under ``budget_s`` ends within it. Source: ours (issue 41)."""
    low, high = RESERVE_SHARE
    return float(min(high * budget_s, max(low * budget_s, overhead_s)))
