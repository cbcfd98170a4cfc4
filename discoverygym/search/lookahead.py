"""``rpucg-lookahead``: RPUCG plus an estimate of a node's future use as an inspiration.

Source of the idea: the TES paper lists among its own limitations that RPUCG "selects greedily"
and does not value a node's future use (issue 19 quotes it); this rule adds the simplest such
value, learnt from the node's own record as an inspiration. It is our formula, not the paper's.

Formula (one trajectory; everything else is :class:`~discoverygym.search.rpucg.RPUCG`)::

    score_i  = score_i^RPUCG + β · U_i
    U_i      = Σ_{b ∈ B_i} δ^(t − t_b) · g_{i,b}  /  ((1 + |B_i|) · span)
    g_{i,b}  = max(0, r*_b − r_i)

* ``B_i``: the finished batches whose prompt showed node ``i`` (as parent or extra inspiration);
* ``t``: batches finished by this trajectory so far; ``t_b``: the value of ``t`` when batch ``b``
  finished (so the newest batch has age ``t − t_b = 0``); neither is reset by a restart (unlike
  RPUCG's ``T`` and ``n``: a node's record as an inspiration outlives a restart);
* ``r*_b``: the best valid child reward of batch ``b`` (a batch with no valid child gives 0);
* ``span``: max − min reward of the valid nodes of the population (``U_i = 0`` when it is 0), so
  ``U_i`` is unit-free and lies in [0, 1), like RPUCG's ``Q`` and ``ρ``.
* The ``1 +`` in the denominator shrinks ``U`` of nodes with few uses towards 0 (a prior mean of 0
  with weight one batch).

Hyper-parameters (our defaults; no paper prescribes them): ``beta = 1.0`` (weight of the lookahead
term, same scale as RPUCG's exploration term at ``n = 0``), ``delta = 0.9`` (per-batch discount of
old evidence; about ten batches of memory). ``beta = 0`` is RPUCG exactly. All RPUCG
hyper-parameters (``gamma``, ``c``, ``inspirations``, ``restart_every``, ``form``, ``lam``) apply.

Errors: ``ValueError`` for ``beta < 0`` or ``delta`` outside (0, 1], and RPUCG's own checks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from discoverygym.search.archive import Archive
from discoverygym.search.rpucg import RPUCG, RPUCGConfig, RPUCGTerms
from discoverygym.search.rule import best_child
from discoverygym.types import State

__all__ = ["LookaheadConfig", "RPUCGLookahead"]


@dataclass
class LookaheadConfig(RPUCGConfig):
    """RPUCG's hyper-parameters plus the lookahead's (module docstring)."""

    beta: float = 1.0  # weight of U_i (our default)
    delta: float = 0.9  # per-batch discount of a node's past gains (our default)
    form: Literal["code", "paper"] = "code"


class RPUCGLookahead(RPUCG):
    """RPUCG with the lookahead term ``β · U_i`` (module docstring); one object per trajectory.

    Attributes (besides RPUCG's):
        t: batches finished by this trajectory (never reset).
        uses: per node id ``[d, t_d, m]``: discounted gain sum ``d`` as of batch ``t_d`` and the
            number of batches ``m`` that showed the node.
    """

    name = "rpucg-lookahead"

    def __init__(self, config: LookaheadConfig | None = None, **overrides) -> None:
        cfg = config or LookaheadConfig(**overrides)
        if not cfg.beta >= 0:
            raise ValueError(f"beta must be >= 0, got {cfg.beta!r}")
        if not 0 < cfg.delta <= 1:
            raise ValueError(f"delta must be in (0, 1], got {cfg.delta!r}")
        super().__init__(cfg)
        self.t = 0
        self.uses: dict[str, list] = {}

    @staticmethod
    def _span(archive: Archive) -> float:
        mask = archive.alive & archive.valid
        if not mask.any():
            return 0.0
        r = archive.rewards[mask]
        return float(np.max(r) - np.min(r))

    def lookahead(self, archive: Archive) -> dict[str, float]:
        """``U_i`` of every node with a record (``{id: U}``; absent ids have ``U = 0``)."""
        span = self._span(archive)
        if span <= 0 or not math.isfinite(span):
            return {i: 0.0 for i in self.uses}
        delta = self.config.delta
        return {i: d * delta ** (self.t - td) / ((1 + m) * span) for i, (d, td, m) in self.uses.items()}

    def terms(self, archive: Archive) -> dict[str, RPUCGTerms]:
        """RPUCG terms with ``score`` raised by ``β · U_i``."""
        base = super().terms(archive)
        if not base or self.config.beta == 0:
            return base
        u = self.lookahead(archive)
        beta = self.config.beta
        return {
            i: RPUCGTerms(t.V, t.Q, t.rho, t.n, t.score + beta * u.get(i, 0.0)) for i, t in base.items()
        }

    def update(self, archive: Archive, parents: Sequence[State], children: Sequence[State]) -> State | None:
        """Record each inspiration's gain ``g_{i,b}``, then RPUCG's update (commit, visits, restart)."""
        best = best_child(children)
        self.t += 1
        delta = self.config.delta
        for p in {p.id: p for p in parents}.values():
            gain = max(0.0, best.reward - p.reward) if best is not None else 0.0
            d, td, m = self.uses.get(p.id, (0.0, self.t, 0))
            self.uses[p.id] = [d * delta ** (self.t - td) + gain, self.t, m + 1]
        return super().update(archive, parents, children)

    def state_dict(self) -> dict:
        out = super().state_dict()
        out["config"] = asdict(self.config)
        out["t"] = self.t
        out["uses"] = {k: list(v) for k, v in self.uses.items()}
        return out

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.t = int(state.get("t", 0))
        self.uses = {str(k): [float(v[0]), int(v[1]), int(v[2])] for k, v in state.get("uses", {}).items()}
