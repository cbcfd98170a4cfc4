"""Small deterministic bandits for the search controllers (UCB1 and Beta-Bernoulli Thompson).

Both keep plain counts (``n`` pulls and ``s`` summed rewards per arm), are JSON-serialisable
(:meth:`state_dict` / :meth:`load_state_dict`) and take all randomness from an ``rng`` argument,
so a seeded search repeats and a resumed one continues exactly.

UCB1 (Auer, Cesa-Bianchi & Fischer 2002, "Finite-time analysis of the multiarmed bandit problem"):
every arm is pulled once in arm order; afterwards the arm with the largest index

    ``mean_a + c · sqrt(2 · ln t / n_a)``,   ``mean_a = s_a / n_a``,  ``t = Σ_a n_a``,

is pulled (ties: the smallest arm index). ``c = 1`` is UCB1 as published. Rewards are unit-free
numbers, meant to lie in [0, 1] (the controllers pass normalised improvements).

Thompson sampling (Thompson 1933; Beta-Bernoulli form, Chapelle & Li 2011): arm ``a`` has the
posterior ``Beta(α₀ + s_a, β₀ + n_a − s_a)``; one draw per arm (in arm order, ``rng.beta``), the
largest draw wins (ties: smallest index). A reward must lie in [0, 1] (a fractional reward counts
as a fractional success, as in Agrawal & Goyal 2012).

Errors: ``ValueError`` for fewer than one arm, a bad constant, an arm out of range or a reward that
is not a finite number (Thompson: not in [0, 1]).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["UCB1", "ThompsonBernoulli", "make_bandit"]


class _Counts:
    kind = "base"

    def __init__(self, n_arms: int) -> None:
        if not isinstance(n_arms, int) or n_arms < 1:
            raise ValueError(f"a bandit needs n_arms >= 1, got {n_arms!r}")
        self.n_arms = n_arms
        self.n = [0] * n_arms
        self.s = [0.0] * n_arms

    def _check_arm(self, arm: int) -> None:
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm must be in [0, {self.n_arms}), got {arm!r}")

    def update(self, arm: int, reward: float) -> None:
        """Record ``reward`` for one pull of ``arm``."""
        self._check_arm(arm)
        reward = float(reward)
        if not math.isfinite(reward):
            raise ValueError(f"a bandit reward must be finite, got {reward!r}")
        self.n[arm] += 1
        self.s[arm] += reward

    def means(self) -> list[float]:
        """Mean reward per arm (0 for an arm never pulled)."""
        return [s / n if n else 0.0 for s, n in zip(self.s, self.n)]

    def state_dict(self) -> dict:
        return {"kind": self.kind, "n": list(self.n), "s": list(self.s)}

    def load_state_dict(self, state: dict) -> None:
        if len(state["n"]) != self.n_arms:
            raise ValueError(f"state has {len(state['n'])} arms, this bandit {self.n_arms}")
        self.n = [int(x) for x in state["n"]]
        self.s = [float(x) for x in state["s"]]


class UCB1(_Counts):
    """UCB1 over ``n_arms`` arms (formula in the module docstring).

    Args:
        n_arms: number of arms (>= 1).
        c: exploration constant (>= 0; 1 = published UCB1).
    """

    kind = "ucb"

    def __init__(self, n_arms: int, c: float = 1.0) -> None:
        super().__init__(n_arms)
        if not c >= 0:
            raise ValueError(f"UCB1 needs c >= 0, got {c!r}")
        self.c = float(c)

    def indices(self, extra: list[int] | None = None) -> list[float]:
        """The UCB1 index of every arm (``inf`` for an arm not pulled yet).

        ``extra``: pulls per arm already decided but not yet rewarded (they count in ``n_a`` and
        ``t``, shrinking the bonus, as in batched UCB; default none).
        """
        extra = extra or [0] * self.n_arms
        n = [a + b for a, b in zip(self.n, extra)]
        t = sum(n)
        out = []
        for a in range(self.n_arms):
            if n[a] == 0:
                out.append(math.inf)
                continue
            mean = self.s[a] / self.n[a] if self.n[a] else 0.0
            out.append(mean + self.c * math.sqrt(2.0 * math.log(t) / n[a]))
        return out

    def choose(self, rng: np.random.Generator | None = None, extra: list[int] | None = None) -> int:
        """The arm to pull next (``rng`` unused: UCB1 is deterministic)."""
        idx = self.indices(extra)
        return max(range(self.n_arms), key=lambda a: (idx[a], -a))


class ThompsonBernoulli(_Counts):
    """Beta-Bernoulli Thompson sampling (module docstring).

    Args:
        n_arms: number of arms (>= 1).
        alpha, beta: the prior ``Beta(alpha, beta)`` of every arm (> 0; default uniform).
    """

    kind = "thompson"

    def __init__(self, n_arms: int, alpha: float = 1.0, beta: float = 1.0) -> None:
        super().__init__(n_arms)
        if not (alpha > 0 and beta > 0):
            raise ValueError(f"Thompson needs alpha, beta > 0, got {alpha!r}, {beta!r}")
        self.alpha, self.beta = float(alpha), float(beta)

    def update(self, arm: int, reward: float) -> None:
        if not 0.0 <= float(reward) <= 1.0:
            raise ValueError(f"a Thompson reward must lie in [0, 1], got {reward!r}")
        super().update(arm, reward)

    def choose(self, rng: np.random.Generator | None = None, extra: list[int] | None = None) -> int:
        """Draw one posterior sample per arm from ``rng`` (required); the largest wins."""
        if rng is None:
            raise ValueError("Thompson sampling needs an rng")
        draws = [
            float(rng.beta(self.alpha + self.s[a], self.beta + self.n[a] - self.s[a])) for a in range(self.n_arms)
        ]
        return max(range(self.n_arms), key=lambda a: (draws[a], -a))


def make_bandit(kind: str, n_arms: int, **kwargs: Any) -> UCB1 | ThompsonBernoulli:
    """``"ucb"`` → :class:`UCB1`, ``"thompson"`` → :class:`ThompsonBernoulli`.

    Raises:
        ValueError: another kind.
    """
    if kind == "ucb":
        return UCB1(n_arms, **kwargs)
    if kind == "thompson":
        return ThompsonBernoulli(n_arms, **kwargs)
    raise ValueError(f"unknown bandit {kind!r}; use 'ucb' or 'thompson'")
