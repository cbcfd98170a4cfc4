"""Controllers of the evolutionary-search runner: adaptive inspirations, restart-or-fresh, budgets.

Each is deterministic given its inputs (randomness only from an ``rng`` argument the runner
derives from the run seed), JSON-serialisable (``state_dict`` / ``load_state_dict``; the runner
also writes them into ``archive.json``) and recomputed exactly when a killed run replays its log
(the runner checks every logged decision against the recomputed one). Rewards and feedback are
unit-free: improvements are divided by a reward span, so they lie in [0, 1].

* :class:`InspirationBandit` (``inspirations="auto"``): per trajectory, UCB1
  (:class:`~discoverygym.search.bandits.UCB1`) over the number of states per prompt
  ``insp ∈ {1, 3, 5, 10}`` (the TES ablation's range: insp = 1 collapses, insp = 10 degrades,
  3-5 is its fixed guess). Reward of a step: ``max(0, r_commit − r_parent) / span``, the committed
  node's improvement over the prompt's parent (its first state), ``span`` = max − min valid reward
  of the trajectory's archive (0 when the span is 0 or nothing was committed). With backpressure > 1
  a step chosen before the previous ones were rewarded counts them as pending pulls.
* :class:`RestartController` (``restart_controller="ucb"|"thompson"``): per trajectory, each time
  the selector restarts (RPUCG's ``restart_every``), a bandit over the arms ``("best", "fresh")``
  chooses between the selector's own restart (history = [its best node]) and a fresh start
  (history = [the initial state]; the population is kept either way). Reward of a decision, paid
  when the next segment ends (the next restart, or the end of the trajectory's budget): 1 when the
  segment raised the trajectory's best reward above its value at the decision, else 0.
* :class:`SuccessiveHalving` and :class:`BudgetBandit` (``budget_controller=...``): the total
  budget stays ``N = C·L·K`` evaluations (``S = C·L`` steps); the controller hands steps to
  trajectories in rounds; a round ends when every trajectory has committed the steps it was
  given (a barrier, so decisions never depend on worker timing); the next round is decided from
  trajectory-level feedback:

  - ``best_c``: trajectory ``c``'s best reward so far;
  - ``slope_c = (best_c(now) − best_c(w steps ago)) / (w · span)`` with ``w = min(window, steps
    taken)`` (default window 5) and ``span`` = max − min of every trajectory's best-so-far curve,
    initial value included (1 when that is 0).

  Successive halving (Jamieson & Talwalkar 2016; Karnin et al. 2013): ``R = ⌊log2 C⌋ + 1`` rungs;
  rung ``r`` has ``⌊S/R⌋`` steps (the last rung the rest), split evenly over its active
  trajectories (the remainder one step each to the best ranked); after a rung the better half
  (``⌈|A|/2⌉``) stays active, ranked by ``(best_c, slope_c)`` descending (ties: smaller ``c``).
  Needs ``L >= R`` so that the first rung gives every trajectory at least one step.

  Budget bandit (UCB over trajectories; our rule): a warm-up round gives every trajectory
  ``max(1, ⌊L·warmup⌋)`` steps (default ``warmup = 0.25``); every later round hands out
  ``min(C, steps left)`` steps one at a time to the trajectory with the largest
  ``slope_c + c · sqrt(2 · ln t / n_c)`` (``n_c`` steps given to ``c`` so far, this round's
  included; ``t = Σ n_c``; default ``c = 0.5``; ties: larger ``best_c``, then smaller ``c``).

Errors: ``ValueError`` for bad hyper-parameters (messages name the option) and, for
:class:`SuccessiveHalving`, ``L < R``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from discoverygym.search.bandits import UCB1, make_bandit

__all__ = [
    "BUDGET_CONTROLLERS",
    "INSPIRATION_ARMS",
    "RESTART_CONTROLLERS",
    "BudgetBandit",
    "InspirationBandit",
    "RestartController",
    "SuccessiveHalving",
    "make_budget_controller",
]

#: the inspiration counts the adaptive bandit chooses from (TES ablation range)
INSPIRATION_ARMS: tuple[int, ...] = (1, 3, 5, 10)
#: ``restart_controller`` choices
RESTART_CONTROLLERS: tuple[str, ...] = ("ucb", "thompson")
#: ``budget_controller`` choices
BUDGET_CONTROLLERS: tuple[str, ...] = ("successive-halving", "bandit")


def _norm_gain(new: float, old: float, span: float) -> float:
    if not (math.isfinite(new) and math.isfinite(old)) or not span > 0 or not math.isfinite(span):
        return 0.0
    return min(1.0, max(0.0, (new - old) / span))


# ----------------------------------------------------------------------------- inspirations
class InspirationBandit:
    """UCB1 over ``arms`` inspiration counts for one trajectory (module docstring).

    Args:
        arms: the counts to choose from (default ``(1, 3, 5, 10)``), each >= 1.
        c: UCB1 exploration constant (default 1 = published UCB1).
    """

    def __init__(self, arms: Sequence[int] = INSPIRATION_ARMS, c: float = 1.0) -> None:
        arms = tuple(int(a) for a in arms)
        if not arms or any(a < 1 for a in arms):
            raise ValueError(f"inspiration arms must be integers >= 1, got {arms!r}")
        self.arms = arms
        self.bandit = UCB1(len(arms), c=c)
        self.pending: dict[int, int] = {}  # step -> arm chosen, not yet rewarded

    def choose(self, step: int) -> int:
        """The inspiration count of ``step`` (remembered until :meth:`reward`)."""
        extra = [0] * len(self.arms)
        for a in self.pending.values():
            extra[a] += 1
        arm = self.bandit.choose(extra=extra)
        self.pending[step] = arm
        return self.arms[arm]

    def reward(self, step: int, committed: float | None, parent: float, span: float) -> float:
        """Pay ``step``'s arm ``max(0, committed − parent) / span`` (0 without a commit); returns it."""
        arm = self.pending.pop(step)
        value = 0.0 if committed is None else _norm_gain(committed, parent, span)
        self.bandit.update(arm, value)
        return value

    def state_dict(self) -> dict:
        return {"arms": list(self.arms), "bandit": self.bandit.state_dict(),
                "pending": {str(k): v for k, v in self.pending.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.bandit.load_state_dict(state["bandit"])
        self.pending = {int(k): int(v) for k, v in state.get("pending", {}).items()}


# ----------------------------------------------------------------------------- restart or fresh
class RestartController:
    """Restart-or-fresh bandit of one trajectory (module docstring).

    Args:
        kind: ``"ucb"`` (UCB1) or ``"thompson"`` (Beta(1, 1) prior).
        **kwargs: the bandit's constants (``c`` for UCB1; ``alpha``, ``beta`` for Thompson).

    Attributes:
        decisions: one dict per decision: ``step``, ``choice``, ``best_at`` (trajectory best reward
            at the decision), ``reward`` (``None`` while its segment runs).
    """

    ARMS = ("best", "fresh")

    def __init__(self, kind: str = "ucb", **kwargs: Any) -> None:
        if kind not in RESTART_CONTROLLERS:
            raise ValueError(f"restart_controller must be one of {RESTART_CONTROLLERS}, got {kind!r}")
        self.kind = kind
        self.bandit = make_bandit(kind, 2, **kwargs)
        self.decisions: list[dict] = []

    def close(self, best_now: float) -> float | None:
        """End the running segment (if any): pay its arm 1 if ``best_now`` beat ``best_at``; returns the reward."""
        if not self.decisions or self.decisions[-1]["reward"] is not None:
            return None
        d = self.decisions[-1]
        value = 1.0 if best_now > d["best_at"] else 0.0
        d["reward"] = value
        self.bandit.update(self.ARMS.index(d["choice"]), value)
        return value

    def decide(self, step: int, best_now: float, rng: np.random.Generator) -> str:
        """A restart after ``step``: close the last segment, choose ``"best"`` or ``"fresh"``."""
        self.close(best_now)
        choice = self.ARMS[self.bandit.choose(rng)]
        self.decisions.append({"step": step, "choice": choice, "best_at": best_now, "reward": None})
        return choice

    def state_dict(self) -> dict:
        return {"kind": self.kind, "bandit": self.bandit.state_dict(), "decisions": [dict(d) for d in self.decisions]}

    def load_state_dict(self, state: dict) -> None:
        self.bandit.load_state_dict(state["bandit"])
        self.decisions = [dict(d) for d in state.get("decisions", [])]


# ----------------------------------------------------------------------------- budgets
def trajectory_feedback(curves: Sequence[Sequence[float]], window: int = 5) -> tuple[list[float], list[float]]:
    """``(best_c, slope_c)`` of every trajectory from its best-so-far curve (module docstring).

    ``curves[c]`` is ``[best before any step, best after step 1, ...]`` (rewards; non-finite values
    are replaced by the smallest finite one).
    """
    finite = [v for cur in curves for v in cur if math.isfinite(v)]
    low = min(finite) if finite else 0.0
    clean = [[v if math.isfinite(v) else low for v in cur] for cur in curves]
    span = (max(finite) - low) if finite else 0.0
    span = span if span > 0 else 1.0
    best, slope = [], []
    for cur in clean:
        best.append(cur[-1])
        w = min(window, len(cur) - 1)
        slope.append((cur[-1] - cur[-1 - w]) / (w * span) if w > 0 else 0.0)
    return best, slope


class _Budget:
    name = "base"

    def __init__(self, C: int, L: int, window: int = 5) -> None:
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window!r}")
        self.C, self.L, self.window = int(C), int(L), int(window)
        self.total = self.C * self.L
        self.round = 0
        self.limits = [0] * self.C
        self.rounds: list[list[int]] = []  # limits after each round

    def _rank(self, curves) -> list[int]:
        best, slope = trajectory_feedback(curves, self.window)
        return sorted(range(self.C), key=lambda c: (-best[c], -slope[c], c))

    @property
    def left(self) -> int:
        """Steps not handed out yet."""
        return self.total - sum(self.limits)

    def next_round(self, curves: Sequence[Sequence[float]]) -> list[int]:
        """The cumulative step limits after the next round (decided from ``curves``)."""
        if self.left <= 0:
            raise RuntimeError("the budget is spent")
        add = self._allocate(curves)
        self.limits = [a + b for a, b in zip(self.limits, add)]
        self.round += 1
        self.rounds.append(list(self.limits))
        return list(self.limits)

    def state_dict(self) -> dict:
        return {"name": self.name, "round": self.round, "limits": list(self.limits), "rounds": self.rounds}

    def load_state_dict(self, state: dict) -> None:
        self.round = int(state["round"])
        self.limits = [int(x) for x in state["limits"]]
        self.rounds = [list(map(int, r)) for r in state.get("rounds", [])]


class SuccessiveHalving(_Budget):
    """Successive halving over trajectories (module docstring). Args: C, L, window (default 5)."""

    name = "successive-halving"

    def __init__(self, C: int, L: int, window: int = 5) -> None:
        super().__init__(C, L, window)
        self.rungs = math.floor(math.log2(self.C)) + 1
        if self.L < self.rungs:
            raise ValueError(
                f"successive-halving needs L >= {self.rungs} (its rungs for C={self.C}), got L={self.L}"
            )
        self.active = list(range(self.C))

    def _allocate(self, curves) -> list[int]:
        r = self.round
        if r > 0:
            ranked = [c for c in self._rank(curves) if c in self.active]
            self.active = ranked[: max(1, math.ceil(len(ranked) / 2))]
        budget = self.left if r >= self.rungs - 1 else self.total // self.rungs
        share, extra = divmod(budget, len(self.active))
        add = [0] * self.C
        for i, c in enumerate(self.active):
            add[c] = share + (1 if i < extra else 0)
        return add

    def state_dict(self) -> dict:
        return {**super().state_dict(), "active": list(self.active)}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.active = [int(c) for c in state["active"]]


class BudgetBandit(_Budget):
    """UCB over trajectories on their recent slope (module docstring).

    Args: C, L, window (default 5), c (exploration, default 0.5), warmup (fraction of L given to
    every trajectory first, default 0.25).
    """

    name = "bandit"

    def __init__(self, C: int, L: int, window: int = 5, c: float = 0.5, warmup: float = 0.25) -> None:
        super().__init__(C, L, window)
        if not c >= 0:
            raise ValueError(f"c must be >= 0, got {c!r}")
        if not 0 <= warmup <= 1:
            raise ValueError(f"warmup must be in [0, 1], got {warmup!r}")
        self.c, self.warmup = float(c), float(warmup)

    def _allocate(self, curves) -> list[int]:
        if self.round == 0:
            return [max(1, int(self.L * self.warmup))] * self.C
        best, slope = trajectory_feedback(curves, self.window)
        n = list(self.limits)
        add = [0] * self.C
        for _ in range(min(self.C, self.left)):
            t = sum(n)
            idx = [slope[c] + self.c * math.sqrt(2.0 * math.log(t) / n[c]) for c in range(self.C)]
            pick = min(range(self.C), key=lambda c: (-idx[c], -best[c], c))
            add[pick] += 1
            n[pick] += 1
        return add


def make_budget_controller(name: str, C: int, L: int, **kwargs: Any) -> SuccessiveHalving | BudgetBandit:
    """``"successive-halving"`` or ``"bandit"`` for a C × L step budget.

    Raises:
        ValueError: another name, or the controller's own checks.
        TypeError: an unknown keyword argument.
    """
    if name == "successive-halving":
        return SuccessiveHalving(C, L, **kwargs)
    if name == "bandit":
        return BudgetBandit(C, L, **kwargs)
    raise ValueError(f"unknown budget controller {name!r}; use one of {BUDGET_CONTROLLERS}")
