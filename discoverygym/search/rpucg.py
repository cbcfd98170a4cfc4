"""RPUCG (rank-based PUCT with γ decay) of TES, after its released code (SimpleTES
``simpletes/policies/rpucg.py`` and ``policies/base.py``), with one documented set of differences.

Nodes form a DAG: a child lists every inspiration of its prompt as a parent. Over the whole
population (every node of the archive, failures included with value -inf):

* propagated value ``V_i = max(r_i, γ · max_{j ∈ children(i)} V_j)``, γ = 0.8;
* ``Q_i`` = percentile rank of ``V_i``, ``ρ_i`` = percentile rank of ``r_i``, where the percentile
  rank of x is ``#{values < x} / population size`` (ties share the lowest rank);
* ``score_i = Q_i + c · ρ_i · sqrt(1 + T) / (1 + n_i)`` (the code's form, default c = 1.0), or the
  seed text's ``Q_i + λ · ρ_i · sqrt((1 + |S|) / (1 + n_i))`` (``form="paper"``, λ = 1.0; we read
  |S| as the number of candidates, i.e. the trajectory's history since its last restart).

Candidates are the trajectory's committed history (its valid nodes since the last restart),
ordered by reward (ties: smaller id, as SimpleTES's sorted cache) and then stably by score. The
top ``inspirations`` are picked greedily, skipping the parents and children of nodes already
picked (anti-inbreeding). After each finished batch: the best valid child is committed to the
history; ``n_i += 1`` for every inspiration of the batch; ``T += 1``. Every ``restart_every``
commits the trajectory restarts from its best node (history = [best], n and T reset); the
population is kept.

Where the default (``compat="discoverygym"``) differs from the released code — it does not match
it in every case. SimpleTES sees only a node's score (its evaluator's ``combined_score``, which must
be finite for the node to be stored); discoverygym sees validity. Three cases differ:

1. **A whole batch fails.** SimpleTES stores the failed children with their (finite) failure score
   and commits the best of them to the history (it counts towards ``restart_every``); discoverygym
   commits nothing (n and T still grow).
2. **Crashes** (a child without a finite score). SimpleTES never stores them: they are not in the
   population, so they change no rank. discoverygym keeps every invalid child as a node of value
   -inf and ranks it (it enlarges the population size N of the percentile ranks).
3. **Duplicate programs.** SimpleTES keeps each evaluation as its own node; discoverygym's archive
   deduplicates by solution (a duplicate resolves to its kept twin).

``compat="simpletes"`` reproduces the released code in all three: a node's value is its reward
whenever the reward is finite, valid or not (an invalid child's reward is the env's finite
``failure_reward``: SimpleTES's failure score); a child whose reward is not finite (-inf, NaN) is a
crash and is left out of the population, the candidates and the commit; the archive keeps
duplicates (:class:`~discoverygym.search.archive.Archive` ``dedup=False``); a batch commits its
highest-reward child with a finite reward (ties: the first), valid or not.

One :class:`RPUCG` object is one trajectory (n, T and the history are per trajectory).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from discoverygym.search.archive import Archive
from discoverygym.search.rule import best_child
from discoverygym.types import State

__all__ = ["RPUCG", "RPUCGConfig", "RPUCGTerms"]


@dataclass
class RPUCGConfig:
    """Hyper-parameters of RPUCG (paper/code defaults).

    ``compat``: ``"discoverygym"`` (default) or ``"simpletes"`` (the released code's handling of
    failed batches, crashes and duplicates; see the module docstring).
    """

    gamma: float = 0.8  # TES: value decay over the DAG (SimpleTES rpucg.py gamma=0.8)
    c: float = 1.0  # exploration constant of the code's form (SimpleTES RpucgPolicy c=1.0)
    inspirations: int = 5  # TES: 3 or 5 nodes per prompt (SimpleTES --num-inspirations 5)
    restart_every: int | None = 25  # SimpleTES restart_every_n = 25; None = never restart
    form: Literal["code", "paper"] = "code"  # exploration term: code's sqrt(1+T)/(1+n) or seed text's
    lam: float = 1.0  # λ of the seed text's form
    compat: Literal["discoverygym", "simpletes"] = "discoverygym"  # see the module docstring


@dataclass
class RPUCGTerms:
    """RPUCG terms of one candidate: V, Q = rank(V), ρ = rank(r), n, score."""

    V: float
    Q: float
    rho: float
    n: int
    score: float


class RPUCG:
    """The RPUCG rule of TES for one trajectory (implements :class:`~discoverygym.search.rule.Selector`).

    Args:
        config: hyper-parameters; keyword overrides are accepted instead (``RPUCG(gamma=0.9)``).

    Attributes:
        history: ids of the trajectory's committed nodes since the last restart (candidates).
        n: visit counts per node id; T: finished batches since the last restart.
        commits: commits since the last restart; restarts: restarts so far.
    """

    name = "rpucg"
    dag = True

    def __init__(self, config: RPUCGConfig | None = None, **overrides: Any) -> None:
        self.config = config or RPUCGConfig(**overrides)
        if self.config.form not in ("code", "paper"):
            raise ValueError(f"form must be 'code' or 'paper', got {self.config.form!r}")
        if self.config.compat not in ("discoverygym", "simpletes"):
            raise ValueError(f"compat must be 'discoverygym' or 'simpletes', got {self.config.compat!r}")
        if self.config.restart_every is not None and self.config.restart_every < 1:
            raise ValueError("restart_every must be >= 1 or None")
        self.history: list[str] = []
        self.n: dict[str, int] = {}
        self.T = 0
        self.commits = 0
        self.restarts = 0
        self._initialized = False
        self._cache_key: tuple[int, int, int] | None = None
        self._synced = 0
        self._v = np.zeros(0)

    @property
    def default_inspirations(self) -> int:
        """Nodes per prompt (``config.inspirations``)."""
        return self.config.inspirations

    @property
    def simpletes(self) -> bool:
        """Whether the released code's behaviours are reproduced (``compat="simpletes"``)."""
        return self.config.compat == "simpletes"

    def new_archive(self) -> Archive:
        """A TES population: no caps, failures kept (value -inf); duplicates kept with ``compat="simpletes"``."""
        return Archive(max_states=None, children_per_parent=None, keep_invalid=True, dedup=not self.simpletes)

    def is_node(self, state: State) -> bool:
        """Whether ``state`` can be a candidate: valid (default); a finite reward (``compat="simpletes"``)."""
        return math.isfinite(state.reward) if self.simpletes else state.valid

    def _member(self, archive: Archive) -> np.ndarray:
        """bool mask over slots: the population (kept states; with ``simpletes`` only finite rewards)."""
        alive = archive.alive
        return alive & np.isfinite(archive.rewards) if self.simpletes else alive

    def _scores(self, archive: Archive) -> np.ndarray:
        """Raw value r per slot: reward (valid; any finite reward with ``simpletes``), else -inf."""
        rewards = archive.rewards
        ok = np.isfinite(rewards) if self.simpletes else archive.valid
        return np.where(ok, rewards, -math.inf)

    # ------------------------------------------------------------------ values
    def _ensure_init(self, archive: Archive) -> None:
        if not self._initialized and archive.initial_ids:
            self.history = [i for i in archive.initial_ids if i not in self.history] + self.history
            self._initialized = True

    def _raw(self, archive: Archive, slot: int) -> float:
        reward = float(archive.rewards[slot])
        if self.simpletes:
            return reward if math.isfinite(reward) else -math.inf
        return reward if archive.valid[slot] else -math.inf

    def _sync(self, archive: Archive) -> None:
        """Bring the propagated values V up to date (incremental when nothing was evicted)."""
        size = archive.size
        key = (id(archive), archive.layout, archive.evictions)
        if key != self._cache_key:  # full recompute: reverse insertion order = children first
            self._v = np.full(max(16, size), -math.inf)
            gamma = self.config.gamma
            for slot in range(size - 1, -1, -1):
                if not archive.alive[slot]:
                    continue
                sid = archive.state_at(slot).id
                value = self._raw(archive, slot)
                kids = [archive.slot(c) for c in archive.children(sid)]
                if kids:
                    best = max(self._v[k] for k in kids)  # type: ignore[index]
                    value = max(value, gamma * best)
                self._v[slot] = value
            self._cache_key, self._synced = key, size
            return
        if size > len(self._v):
            grown = np.full(max(2 * len(self._v), size), -math.inf)
            grown[: len(self._v)] = self._v
            self._v = grown
        for slot in range(self._synced, size):
            if not archive.alive[slot]:
                continue
            value = self._raw(archive, slot)
            self._v[slot] = value
            if value == -math.inf:
                continue
            stack = [(pid, self.config.gamma * value) for pid in archive.parents(archive.state_at(slot).id)]
            while stack:
                pid, cand = stack.pop()
                ps = archive.slot(pid)
                if ps is None or not cand > self._v[ps]:
                    continue
                self._v[ps] = cand
                stack.extend((gp, self.config.gamma * cand) for gp in archive.parents(pid))
        self._synced = size

    def values(self, archive: Archive) -> dict[str, float]:
        """Propagated value V of every kept node (``{id: V}``, -inf for failures)."""
        self._sync(archive)
        return {s.id: float(self._v[archive.slot(s.id)]) for s in archive}  # type: ignore[index]

    def terms(self, archive: Archive) -> dict[str, RPUCGTerms]:
        """RPUCG terms of every candidate (history node kept and valid), ``{id: RPUCGTerms}``."""
        self._ensure_init(archive)
        self._sync(archive)
        cands = [s for s in (archive.get(i) for i in self.history) if s is not None and self.is_node(s)]
        if not cands:
            return {}
        member = self._member(archive)
        pop_v = np.sort(self._v[: archive.size][member])
        pop_r = np.sort(self._scores(archive)[member])
        N = len(pop_v)
        out: dict[str, RPUCGTerms] = {}
        sqrt_t = math.sqrt(1 + self.T)
        for s in cands:
            v = float(self._v[archive.slot(s.id)])  # type: ignore[index]
            q = int(np.searchsorted(pop_v, v, side="left")) / N
            rho = int(np.searchsorted(pop_r, s.reward, side="left")) / N
            nc = self.n.get(s.id, 0)
            if self.config.form == "code":
                score = q + self.config.c * rho * sqrt_t / (1 + nc)
            else:
                score = q + self.config.lam * rho * math.sqrt((1 + len(cands)) / (1 + nc))
            out[s.id] = RPUCGTerms(v, q, rho, nc, score)
        return out

    # ------------------------------------------------------------------ selection
    def select(
        self, archive: Archive, k: int | None = None, rng: np.random.Generator | None = None
    ) -> list[State]:
        """Up to ``k`` inspirations (default ``config.inspirations``), best first, anti-inbreeding.

        ``rng`` is unused (deterministic); accepted for the protocol.
        """
        k = self.config.inspirations if k is None else k
        terms = self.terms(archive)
        if not terms or k <= 0:
            return []
        states = [archive.get(i) for i in terms]
        states.sort(key=lambda s: (-s.reward, s.id))  # type: ignore[union-attr]
        states.sort(key=lambda s: terms[s.id].score, reverse=True)  # type: ignore[union-attr]
        picked: list[State] = []
        excluded: set[str] = set()
        for s in states:
            assert s is not None
            if s.id in excluded:
                continue
            picked.append(s)
            if len(picked) >= k:
                break
            excluded.add(s.id)
            excluded.update(archive.parents(s.id))
            excluded.update(archive.children(s.id))
        return picked

    def update(self, archive: Archive, parents: Sequence[State], children: Sequence[State]) -> State | None:
        """A finished batch: commit its best valid child, count visits, maybe restart.

        Args:
            archive: the population the children were added to.
            parents: the batch's inspirations (each gets ``n += 1``).
            children: all K candidates of the batch (failures included).

        Returns:
            The committed node (resolved to its kept duplicate if deduplicated) or ``None`` when every
            child failed (the batch still counts: n and T grow). With ``compat="simpletes"``: the
            child with the highest finite reward, valid or not (``None`` only when every child
            crashed, i.e. has no finite reward).
        """
        self._ensure_init(archive)
        if self.simpletes:
            best = None
            for child in children:
                if math.isfinite(child.reward) and (best is None or child.reward > best.reward):
                    best = child
            committed = (archive.get(best.id) or best) if best is not None else None
        else:
            best = best_child(children)
            committed = archive.resolve(best) if best is not None else None
        if committed is not None:
            if committed.id not in self.history:
                self.history.append(committed.id)
            archive.protect(committed.id)
            self.commits += 1
        for p in parents:
            self.n[p.id] = self.n.get(p.id, 0) + 1
        self.T += 1
        every = self.config.restart_every
        if committed is not None and every is not None and self.commits >= every:
            self.restart(archive)
        return committed

    def restart(self, archive: Archive) -> None:
        """Restart from the history's best node (reward, ties: smaller id): history = [best], n = {}, T = 0."""
        kept = [s for s in (archive.get(i) for i in self.history) if s is not None and self.is_node(s)]
        if kept:
            best = min(kept, key=lambda s: (-s.reward, s.id))
            self.history = [best.id]
        self.n = {}
        self.T = 0
        self.commits = 0
        self.restarts += 1

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict:
        """Plain-JSON statistics: history, n, T, commits, restarts, config."""
        return {
            "config": asdict(self.config),
            "history": list(self.history),
            "n": dict(self.n),
            "T": self.T,
            "commits": self.commits,
            "restarts": self.restarts,
            "initialized": self._initialized,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` output (the config is not changed)."""
        self.history = list(state.get("history", []))
        self.n = {str(k): int(v) for k, v in state.get("n", {}).items()}
        self.T = int(state.get("T", 0))
        self.commits = int(state.get("commits", 0))
        self.restarts = int(state.get("restarts", 0))
        self._initialized = bool(state.get("initialized", bool(self.history)))
        self._cache_key = None
