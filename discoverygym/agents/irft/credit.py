"""Credit rules: one weight per replay-buffer node, from its trajectory's final best reward only.

* ``irft`` (TES Algorithm 2, docs/algorithms.md "IRFT"): rank the nodes of each problem by
  ``traj_best_reward`` and give the top R% weight 1, the rest 0. Intermediate rewards are ignored,
  so every node of a trajectory that ended well is imitated, including its failed attempts.
* ``grpo`` (ours, beyond the paper): a trajectory-level advantage. Within each group of
  trajectories sampled together (same problem, same round: same policy, same budget), the
  advantage of a trajectory is ``(F - mean F) / (std F + eps)`` over the group's trajectories'
  final best rewards ``F``; every node of the trajectory gets it (GRPO's group normalisation,
  Shao et al. 2024, §4.1.2, at the level of whole search trajectories). A group whose
  trajectories all tie gets advantage 0.

Rewards are used, not raw scores: reward is higher-is-better for every problem (minimised
quantities are inverted by the env), so one rule fits all. Ranking for ``irft`` is per problem
by default, since rewards of different problems are not comparable (``scope="buffer"`` ranks
the whole buffer as the paper's text literally says).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["CREDIT_RULES", "assign_credit", "grpo_weights", "irft_weights"]

CREDIT_RULES = ("irft", "grpo")


def irft_weights(rows: Sequence[dict], top_percent: float, *, scope: str = "problem") -> np.ndarray:
    """IRFT 0/1 weights: the top ``top_percent`` % of nodes by ``traj_best_reward`` get 1.

    Args:
        rows: buffer rows (need ``problem``, ``traj_best_reward``).
        top_percent: R in (0, 100]. ``ceil(R/100 · n)`` nodes of each ranked set are selected.
        scope: ``"problem"`` (rank each problem's nodes separately, default) or ``"buffer"``.

    Returns:
        float64 array (len(rows),) of 0.0/1.0. Ties at the cut are broken by buffer order (earlier
        rows first), so the count is exact and the result deterministic.

    Raises:
        ValueError: ``top_percent`` outside (0, 100] or an unknown ``scope``.
    """
    if not 0 < top_percent <= 100:
        raise ValueError(f"top_percent must be in (0, 100], got {top_percent!r}")
    if scope not in ("problem", "buffer"):
        raise ValueError(f"scope must be 'problem' or 'buffer', got {scope!r}")
    weights = np.zeros(len(rows))
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r["problem"] if scope == "problem" else "", []).append(i)
    for idx in groups.values():
        values = np.array([rows[i]["traj_best_reward"] for i in idx], dtype=np.float64)
        n_top = math.ceil(top_percent / 100.0 * len(idx) - 1e-9)
        order = np.argsort(-values, kind="stable")[:n_top]
        weights[np.asarray(idx)[order]] = 1.0
    return weights


def grpo_weights(rows: Sequence[dict], *, eps: float = 1e-6) -> np.ndarray:
    """Group-normalised trajectory advantages (see the module docstring).

    Args:
        rows: buffer rows (need ``problem``, ``round``, ``trajectory``, ``traj_best_reward``).
        eps: added to the standard deviation (population std over the group's trajectories).

    Returns:
        float64 array (len(rows),): each node's trajectory advantage; zero-mean over the
        trajectories of each (problem, round) group, unit std unless all tie (then all 0).
    """
    traj_value: dict[tuple, float] = {}
    for r in rows:
        traj_value[(r["problem"], r["round"], r["trajectory"])] = float(r["traj_best_reward"])
    groups: dict[tuple, list[tuple]] = {}
    for key in traj_value:
        groups.setdefault(key[:2], []).append(key)
    advantage: dict[tuple, float] = {}
    for keys in groups.values():
        f = np.array([traj_value[k] for k in keys])
        std = f.std()
        adv = np.zeros_like(f) if std == 0 else (f - f.mean()) / (std + eps)
        advantage.update(zip(keys, adv.tolist()))
    return np.array([advantage[(r["problem"], r["round"], r["trajectory"])] for r in rows], dtype=np.float64)


def assign_credit(
    rows: Sequence[dict], rule: str, *, top_percent: float = 10.0, scope: str = "problem"
) -> np.ndarray:
    """Weights of ``rows`` under ``rule`` (``"irft"`` or ``"grpo"``); see the two rules above.

    Raises:
        ValueError: unknown ``rule`` (or bad arguments of the rule).
    """
    if rule == "irft":
        return irft_weights(rows, top_percent, scope=scope)
    if rule == "grpo":
        return grpo_weights(rows)
    raise ValueError(f"unknown credit rule {rule!r}; use one of {', '.join(CREDIT_RULES)}")
