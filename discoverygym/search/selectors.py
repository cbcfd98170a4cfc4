"""The simple selection rules (greedy, ε-greedy, OpenEvolve-like elite/explore mix, no reuse) and
the one registry of rule names (:data:`SELECTORS`, :func:`selector_class`, :func:`make_selector`).

The contract of a rule (:class:`~discoverygym.search.rule.Selector`) and the shared commit step
live in the leaf module :mod:`~discoverygym.search.rule`; the paper rules live in
:mod:`~discoverygym.search.puct` (TTT-Discover App. A.2) and :mod:`~discoverygym.search.rpucg` (TES).
This module imports them all for the registry; none of them imports this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from discoverygym.search.archive import Archive
from discoverygym.search.lookahead import RPUCGLookahead
from discoverygym.search.puct import PUCT
from discoverygym.search.rpucg import RPUCG
from discoverygym.search.rule import Selector, best_child, commit  # Selector, best_child: re-exported
from discoverygym.types import State

__all__ = [
    "SELECTORS",
    "Elite",
    "EliteConfig",
    "EpsilonGreedy",
    "Greedy",
    "Initial",
    "Selector",
    "best_child",
    "make_selector",
    "selector_class",
]


def _top_valid(archive: Archive, k: int, skip: set[str] | None = None) -> list[State]:
    order, _ = archive.sorted_valid()
    out: list[State] = []
    for slot in order:
        state = archive.state_at(int(slot))
        if skip and state.id in skip:
            continue
        out.append(state)
        if len(out) >= k:
            break
    return out


class _Stateless:
    """Shared plumbing of the rules without statistics."""

    name = "base"
    default_inspirations = 1
    dag = False

    def new_archive(self) -> Archive:
        """TTT-Discover App. A.2 archive: top-2 children per parent, 1000 states, valid only."""
        return Archive(max_states=1000, children_per_parent=2, keep_invalid=False)

    def update(self, archive: Archive, parents: Sequence[State], children: Sequence[State]) -> State | None:
        """No statistics: return the best valid child (resolved to its kept twin)."""
        return commit(archive, children)

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        return None


class Greedy(_Stateless):
    """Always the best kept states: ``select(k)`` = the ``k`` highest rewards (ties: earliest).

    With C = 1, K = 1 this is greedy refinement (TES §"(C, L, K, Φ)").
    """

    name = "greedy"

    def select(self, archive: Archive, k: int, rng: np.random.Generator) -> list[State]:
        return _top_valid(archive, k)


class EpsilonGreedy(_Stateless):
    """ε-greedy reuse (TTT-Discover's ablation baseline, ε = 0.1).

    Each of the ``k`` picks is, with probability ε, a state drawn uniformly among the kept valid
    states not picked yet, else the best state not picked yet. Draws per pick: one
    ``rng.random()``, then one ``rng.integers`` when exploring.
    """

    name = "epsilon"

    def __init__(self, epsilon: float = 0.1) -> None:  # TTT-Discover ablation: ε = 0.1
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
        self.epsilon = float(epsilon)

    def select(self, archive: Archive, k: int, rng: np.random.Generator) -> list[State]:
        order, _ = archive.sorted_valid()
        picked: list[State] = []
        taken: set[int] = set()
        for _ in range(min(k, len(order))):
            if rng.random() < self.epsilon:
                pool = sorted(int(s) for s in order if int(s) not in taken)  # insertion order
                slot = pool[int(rng.integers(len(pool)))]
            else:
                slot = next(int(s) for s in order if int(s) not in taken)
            taken.add(slot)
            picked.append(archive.state_at(slot))
        return picked


@dataclass
class EliteConfig:
    """Hyper-parameters of the elite/explore mix (OpenEvolve's database defaults)."""

    exploitation_ratio: float = 0.7  # OpenEvolve DatabaseConfig.exploitation_ratio
    elite_fraction: float = 0.1  # OpenEvolve DatabaseConfig.elite_selection_ratio


class Elite(_Stateless):
    """OpenEvolve-like elite/explore mix (a simplification, not a port of OpenEvolve).

    The parent is, with probability ``exploitation_ratio``, drawn uniformly among the elites (the
    top ``ceil(elite_fraction * N)`` kept valid states), else uniformly among all kept valid
    states. The other ``k - 1`` inspirations are the best remaining states (OpenEvolve shows its
    top programs as inspirations). Draws: one ``rng.random()`` then one ``rng.integers``.
    """

    name = "elite"

    def __init__(self, config: EliteConfig | None = None, **overrides: Any) -> None:
        self.config = config or EliteConfig(**overrides)

    def select(self, archive: Archive, k: int, rng: np.random.Generator) -> list[State]:
        order, _ = archive.sorted_valid()
        n = len(order)
        if n == 0 or k <= 0:
            return []
        if rng.random() < self.config.exploitation_ratio:
            pool = order[: max(1, math.ceil(self.config.elite_fraction * n))]
        else:
            pool = order
        pool = np.sort(pool)  # insertion order, so the draw does not depend on reward ties
        parent = archive.state_at(int(pool[int(rng.integers(len(pool)))]))
        return [parent] + _top_valid(archive, k - 1, skip={parent.id})


class Initial(_Stateless):
    """No reuse: every prompt starts from the first initial state (TTT-Discover's ablation; with
    the evolutionary-search runner, ``none`` makes the search best-of-N).

    ``select(k)`` returns ``k`` copies of it, as TTT-Discover's ``SimpleStateSampler`` does.
    """

    name = "none"

    def select(self, archive: Archive, k: int, rng: np.random.Generator) -> list[State]:
        ids = archive.initial_ids
        if not ids:
            return []
        state = archive.get(ids[0])
        return [state] * k if state is not None else []


#: the one registry of selection rules: name -> (class, one-line description).
_REGISTRY: dict[str, tuple[type, str]] = {
    "rpucg": (RPUCG, "TES RPUCG: γ-propagated percentile value + rank-based exploration, anti-inbreeding"),
    "rpucg-lookahead": (
        RPUCGLookahead,
        "RPUCG + β·U: discounted gain a node's past prompts produced (lookahead; β=1, δ=0.9)",
    ),
    "puct": (PUCT, "TTT-Discover PUCT (App. A.2): best-child value + rank prior, lineage blocking"),
    "greedy": (Greedy, "always the best states"),
    "epsilon": (EpsilonGreedy, "ε-greedy reuse (ε = 0.1)"),
    "elite": (Elite, "OpenEvolve-like elite/explore mix"),
    "none": (Initial, "no reuse: always the initial state (best-of-N)"),
}

#: selector name -> one-line description (``--selector`` choices), in registry order.
SELECTORS: dict[str, str] = {name: text for name, (_, text) in _REGISTRY.items()}


def selector_class(name: str) -> type:
    """The class of the selection rule ``name`` (see :data:`SELECTORS`).

    Raises:
        ValueError: unknown name (the message lists the known ones).
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown selector {name!r}; known: {', '.join(SELECTORS)}")
    return _REGISTRY[name][0]


def make_selector(name: str, **kwargs: Any) -> Selector:
    """Build a selection rule by name (see :data:`SELECTORS`).

    Args:
        name: ``rpucg``, ``rpucg-lookahead``, ``puct``, ``greedy``, ``epsilon``, ``elite`` or ``none``.
        **kwargs: the rule's hyper-parameters (e.g. ``gamma=0.8`` for RPUCG, ``c=1.0`` for PUCT).

    Raises:
        ValueError: unknown name (the message lists the known ones).
        TypeError: unknown hyper-parameter.
    """
    return selector_class(name)(**kwargs)
