"""State reuse: one ``gymnasium.Wrapper`` that chooses each episode's start state from an archive.

:class:`ReuseWrapper` ``(env, rule)`` takes any selection rule of the one registry
(:data:`~discoverygym.search.selectors.SELECTORS`), by name with its hyper-parameters as keyword
arguments, or as a rule object:

* ``ReuseWrapper(env, "puct", c=1.0)`` — TTT-Discover App. A.2 (:mod:`~discoverygym.search.puct`);
* ``ReuseWrapper(env, "rpucg", gamma=0.8)`` — TES (:mod:`~discoverygym.search.rpucg`);
* ``ReuseWrapper(env, "epsilon", epsilon=0.1)`` and ``ReuseWrapper(env, "none")`` — the ablation
  baselines (also ``greedy``, ``elite``, ``rpucg-lookahead``);
* ``ReuseWrapper(env, PUCT(PUCTConfig(c=2.0)))`` — a rule object (its own or a registered class).

Contract (every rule):

* ``reset(seed=None, options=None)`` picks the start state with the rule and passes it down as
  ``options["state"]`` (the env admits a copy of it, see ``CandidateEnv.admit``).
  ``options["state"]`` given by the caller is used as is (a batched agent's start state, see
  below). The first reset seeds the archive with the env's initial state (or the
  ``initial_states`` given to the constructor, admitted by the env: re-verified constructions,
  programs taken as scored).
* ``step(action)`` adds the child (``info["state"]``) to the archive through :meth:`record`;
  with RPUCG the child lists every inspiration of the prompt as a parent (TES's DAG), and
  ``info["state"]`` is that record. A caller that judged a candidate itself (e.g. programs in
  parallel threads with ``env.unwrapped.evaluate``) records it with ``record(child, parent)``,
  which does exactly what ``reset(options={"state": parent}); step(...)`` does to the archive.
* Batches: the statistics are updated when a batch closes. A batch opens with :meth:`select`
  (``k`` start states; lineage blocking for PUCT, anti-inbreeding for RPUCG) or with a reset that
  picks its own start state, and closes at the next such call, or :meth:`close_batch`. A batched
  agent therefore does ``starts = env.select(8)``, then for each rollout
  ``env.reset(options={"state": s}); env.step(a)``; the next ``select`` accounts for all of them.
  Without explicit batching every episode is its own batch.
* Randomness: the wrapper owns a generator (:attr:`ReuseWrapper.rng`) for the rule's picks and
  for the seed it passes to every ``env.reset(seed=...)`` it makes, so the env's own generator
  (state ids, program seeds) is determined by it too and is never written from outside.
  ``reset(seed=s)`` (or the constructor's ``seed``) seeds it; without either it is seeded once
  from the env's generator, so an env reset with a seed before wrapping gives seeded runs.
* :meth:`save` / :meth:`load` persist the archive, the rule's statistics, the open batch and the
  wrapper's generator state atomically (exact resume).

Example:
    >>> import gymnasium as gym, discoverygym
    >>> from discoverygym.search.reuse import ReuseWrapper
    >>> env = ReuseWrapper(gym.make("CirclePacking-26-v0"), "puct")
    >>> obs, info = env.reset(seed=0)
    >>> _, reward, *_ , info = env.step(info["state"].solution)
    >>> len(env.archive)
    1
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from discoverygym.io import MAX_RUN_FILE_BYTES, atomic_write_json, read_input_text
from discoverygym.search.archive import Archive
from discoverygym.search.rule import Selector
from discoverygym.search.selectors import make_selector
from discoverygym.types import State

__all__ = ["ReuseWrapper"]


class ReuseWrapper(gym.Wrapper):
    """State reuse with any selection rule: an archive, the rule, and the batch bookkeeping.

    Args:
        env: any environment whose unwrapped env is a :class:`~discoverygym.envs.construction.DiscoveryEnv`.
        rule: a rule name of the registry (:data:`~discoverygym.search.selectors.SELECTORS`:
            ``"puct"``, ``"rpucg"``, ``"epsilon"``, ``"none"``...), built with ``rule_kwargs``; or
            a rule object (:class:`~discoverygym.search.rule.Selector`).
        archive: the archive to use (default: ``rule.new_archive()``, the rule's paper caps).
        initial_states: states seeding the archive, each admitted by the env
            (``env.unwrapped.admit``: a construction is re-verified, a program state taken as
            scored); default: the env's initial state from a reset. The state the env's
            ``reset()`` returned may always be passed here.
        inspirations: states per prompt when ``reset`` picks (default: the rule's
            ``default_inspirations``, e.g. RPUCG's ``inspirations`` hyper-parameter).
        seed: seeds :attr:`rng` (default: seeded from the env's generator on first use).
        reward_rtol: set on the default archive: a child whose reward equals a kept state's to
            this relative tolerance stands for that state
            (:class:`~discoverygym.search.archive.Archive`; ``None``, the papers' archive: off).
        **rule_kwargs: the rule's hyper-parameters when ``rule`` is a name (``c=1.0`` for PUCT,
            ``gamma=0.8`` for RPUCG, ``epsilon=0.1``...: the paper defaults when left out).

    Raises:
        ValueError: an unknown rule name (the message lists the known ones); both ``archive`` and
            ``reward_rtol`` given (set it on the archive instead), or a ``reward_rtol`` that is not a
            finite number >= 0.
        TypeError: an unknown hyper-parameter, or ``rule_kwargs`` with a rule object.

    Attributes:
        archive: the :class:`~discoverygym.search.archive.Archive`.
        rule: the rule object (its statistics: ``rule.n``, ``rule.T``...).
        inspirations: the states of the open batch's prompt (start state first).
        rng: the wrapper's ``np.random.Generator`` (picks, and the seeds of the env's resets).

    Example:
        >>> import gymnasium as gym, discoverygym
        >>> env = ReuseWrapper(gym.make("CirclePacking-26-v0"), "epsilon", epsilon=0.0)
        >>> env.rule.name, env.rule.epsilon
        ('epsilon', 0.0)
    """

    def __init__(
        self,
        env: gym.Env,
        rule: str | Selector,
        archive: Archive | None = None,
        initial_states: Sequence[State] | None = None,
        inspirations: int | None = None,
        seed: int | None = None,
        reward_rtol: float | None = None,
        **rule_kwargs: Any,
    ) -> None:
        super().__init__(env)
        if isinstance(rule, str):
            rule = make_selector(rule, **rule_kwargs)
        elif rule_kwargs:
            raise TypeError(f"hyper-parameters {sorted(rule_kwargs)} go with a rule name, not a rule object")
        elif not hasattr(rule, "new_archive"):
            raise TypeError(f"rule must be a selector name or a Selector object, got {type(rule).__name__}")
        self.rule = rule
        if archive is None:
            archive = rule.new_archive()
            if reward_rtol is not None:
                archive.reward_rtol = reward_rtol
        elif reward_rtol is not None:
            raise ValueError("reward_rtol is set on the default archive; with archive=, set archive.reward_rtol")
        self.archive = archive
        self._initial_states = list(initial_states or [])
        self.n_inspirations = inspirations or rule.default_inspirations
        self.inspirations: list[State] = []
        self._batch_children: list[State] = []
        self._batch_starts: list[State] = []
        self._start: State | None = None
        self._rng: np.random.Generator | None = None if seed is None else _generator(seed)

    @property
    def rng(self) -> np.random.Generator:
        """The wrapper's generator (created from the env's generator on first use when unseeded)."""
        if self._rng is None:
            self._rng = _generator(int(self.env.np_random.integers(2**63)))
        return self._rng

    # ------------------------------------------------------------------ archive seeding
    def _ensure_initial(self, seed: int | None) -> dict | None:
        """Seed an empty archive. Returns the env's reset info when it had to reset for it."""
        if len(self.archive) or self.archive.initial_ids:
            return None
        env = self.env.unwrapped
        if self._initial_states:
            checked = []
            for s in self._initial_states:
                try:
                    checked.append(env.admit(s))
                except ValueError as exc:
                    sid = s.get("id") if isinstance(s, dict) else s.id
                    raise ValueError(f"initial state {sid} is invalid: {exc}") from None
            self.archive.add_batch(checked, initial=True)
            return None
        _, info = self.env.reset(seed=seed)
        self.archive.add(info["state"], initial=True)
        return info

    # ------------------------------------------------------------------ batches
    def select(self, k: int) -> list[State]:
        """Close the open batch and open a new one with ``k`` start states chosen by the rule.

        Returns:
            Up to ``k`` kept valid states (PUCT: lineage-blocked; RPUCG: anti-inbreeding
            inspirations; no-reuse: ``k`` copies of the initial state).
        """
        self.close_batch()
        self._ensure_initial(None)
        picks = self.rule.select(self.archive, k, self.rng)
        self.inspirations = list(picks)
        self._batch_starts = list(picks)
        return picks

    def close_batch(self) -> State | None:
        """Account for the open batch's children in the rule's statistics.

        Returns:
            The committed state (best valid child) or ``None`` (no children, or all failed).
        """
        if not self._batch_children:
            return None
        parents = self._batch_parents()
        committed = self.rule.update(self.archive, parents, self._batch_children)
        self._batch_children = []
        return committed

    def _batch_parents(self) -> list[State]:
        """The states the batch's statistics are credited to."""
        if self.rule.dag:
            return list(self.inspirations)
        seen: dict[str, State] = {s.id: s for s in self._batch_starts}
        for c in self._batch_children:
            pid = c.parent_ids[0]
            if pid not in seen and self._start is not None and self._start.id == pid:
                seen[pid] = self._start
        return list(seen.values())

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        """Pick the start state (or take ``options["state"]``) and reset the env from it.

        Args:
            seed: seeds the wrapper's generator (:attr:`rng`) before the rule picks; the first
                reset of an empty archive also passes it to the env's reset that makes the
                initial state.
            options: ``{"state": State}`` starts from that state inside the open batch (the
                caller's state is not mutated).

        Returns:
            The env's ``(obs, info)``; ``info["reuse"]`` holds ``rule``, ``start_id``,
            ``inspiration_ids`` and ``archive_size``; ``info["inspirations"]`` the prompt's states.
        """
        options = dict(options or {})
        self._ensure_initial(seed)
        if seed is not None:
            self._rng = _generator(seed)
        start = options.get("state")
        if start is None:
            picks = self.select(self.n_inspirations)
            if not picks:
                raise RuntimeError("the archive holds no valid state to start from")
            start = picks[0]
        elif isinstance(start, dict):
            start = State.from_dict(start)
        options["state"] = start
        obs, info = self.env.reset(seed=int(self.rng.integers(2**63)), options=options)
        self._start = info["state"]
        info["inspirations"] = list(self.inspirations) if self.inspirations else [self._start]
        info["reuse"] = {
            "rule": self.rule.name,
            "start_id": self._start.id,
            "inspiration_ids": [s.id for s in info["inspirations"]],
            "archive_size": len(self.archive),
        }
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        """Step the env and record the child in the archive (and the open batch), see :meth:`record`."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._start is not None:
            info["state"] = self.record(info["state"], self._start)
        else:  # stepped without a reset through this wrapper: archived, no prompt to credit
            self.archive.add(info["state"])
            self._batch_children.append(info["state"])
        return obs, reward, terminated, truncated, info

    def record(self, child: State, parent: State) -> State:
        """Add a child judged from ``parent`` to the archive and the open batch.

        What ``reset(options={"state": parent}); step(action)`` does to the archive, for a child
        the caller judged itself (``env.unwrapped.evaluate(action, parent=parent, ...)``, e.g. in
        parallel threads): ``parent`` becomes the start state credited by the batch's statistics
        and, with a DAG rule (RPUCG), a child whose only parent is ``parent`` lists every
        inspiration of the open prompt as a parent (TES).

        Args:
            child: the judged :class:`State` (not mutated).
            parent: the state it was derived from (its id should be ``child.parent_ids[0]``).

        Returns:
            The state as archived (``child`` itself, or a copy with the prompt's parents).
        """
        self._start = parent
        ids = [s.id for s in self.inspirations]
        if (
            self.rule.dag
            and child.parent_ids == (parent.id,)
            and len(ids) > 1
            and parent.id in ids
        ):  # TES: the child lists every inspiration of its prompt
            parents = (parent.id, *(i for i in ids if i != parent.id))
            child = dataclasses.replace(child, parent_ids=parents)
        self.archive.add(child)
        self._batch_children.append(child)
        return child

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict:
        """Everything needed for an exact resume except the archive (see :meth:`save`)."""
        return {
            "rule": self.rule.state_dict(),
            "inspirations": [s.to_dict() for s in self.inspirations],
            "batch_starts": [s.to_dict() for s in self._batch_starts],
            "batch_children": [s.to_dict() for s in self._batch_children],
            "start": self._start.to_dict() if self._start is not None else None,
            "np_random": self.rng.bit_generator.state,  # the wrapper's generator
        }

    def save(self, directory: str | os.PathLike) -> None:
        """Write ``archive.json`` and ``reuse.json`` atomically into ``directory``."""
        directory = Path(directory)
        self.archive.save(directory / "archive.json")
        atomic_write_json(directory / "reuse.json", self.state_dict())

    def load(self, directory: str | os.PathLike) -> None:
        """Restore what :meth:`save` wrote (the wrapper must be built with the same arguments).

        Each file is opened once and checked on the descriptor (:func:`~discoverygym.io.read_input_text`).

        Raises:
            ValueError: a file that is not a regular file within the run-file cap, or not JSON.
        """
        directory = Path(directory)
        self.archive = Archive.load(directory / "archive.json")
        state = json.loads(read_input_text(directory / "reuse.json", MAX_RUN_FILE_BYTES))
        self.rule.load_state_dict(state["rule"])
        self.inspirations = [State.from_dict(d) for d in state["inspirations"]]
        self._batch_starts = [State.from_dict(d) for d in state["batch_starts"]]
        self._batch_children = [State.from_dict(d) for d in state["batch_children"]]
        self._start = State.from_dict(state["start"]) if state["start"] else None
        rng = np.random.Generator(np.random.PCG64())
        rng.bit_generator.state = state["np_random"]
        self._rng = rng


def _generator(seed: int) -> np.random.Generator:
    """A PCG64 generator on a child of ``SeedSequence(seed)`` (a stream apart from ``default_rng(seed)``,
    which the env's own generator uses for the same seed)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed)).spawn(1)[0]))

