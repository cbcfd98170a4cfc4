"""DiscoveryEnv: the Gymnasium environment of every construction problem (program problems have
:class:`~discoverygym.envs.program.ProgramEnv`; both derive from :class:`~discoverygym.envs.candidate.CandidateEnv`).

A state is a candidate solution (a construction, and in ``action_mode="code"`` the program that
produced it); an action proposes a new one; the reward is continuous, higher is better, and an
invalid candidate gets the problem's failure reward (strictly below every valid reward) with the
reason in ``info["error"]``. The problem itself is a :class:`~discoverygym.envs.problem.Problem`.

Example:
    >>> import gymnasium as gym, discoverygym
    >>> env = gym.make("CirclePacking-26-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(info["state"].solution)
    >>> info["valid"], terminated
    (True, True)
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from gymnasium import spaces

from discoverygym.envs.candidate import CandidateEnv
from discoverygym.envs.problem import Problem
from discoverygym.envs.spaces import StackedSequence, UnicodeText
from discoverygym.errors import InvalidSolution
from discoverygym.rewards import common
from discoverygym.sandbox.python import SandboxLimits, run_program
from discoverygym.types import State, to_jsonable

#: longest prompt / program accepted by the text spaces (characters).
MAX_TEXT = 1_000_000


class DiscoveryEnv(CandidateEnv[dict, Any]):
    """Gymnasium environment over candidate solutions of one discovery problem.

    Args:
        problem: a :class:`Problem` (registered ones are built by ``gym.make(env_id)``, which
            resolves the name; this class takes objects only).
        action_mode: ``"construction"`` (action = array/list, scored directly) or ``"code"``
            (action = Python source defining ``construct(seed, budget_s, parent)``, run in the
            sandbox; the returned construction is re-verified here).
        horizon: steps per episode (1 = one proposal per episode, as in the papers). With
            horizon > 1 each valid child becomes the parent of the next step (refinement chain).
        render_mode: ``None``, ``"ansi"`` (text summary) or ``"rgb_array"`` (picture).
        sandbox: limits for ``action_mode="code"`` (default: 60 s wall clock, 4 GiB). Its
            ``result_values`` is lowered to what a construction of at most
            :data:`~discoverygym.rewards.common.MAX_ENTRIES` entries can hold (one list per row
            included), so an oversized return value is refused on its raw bytes, before parsing.
        program_budget_s: the ``budget_s`` passed to programs in seconds (default: 80% of the
            timeout); a finite number > 0.

    Observation (``spaces.Dict``):
        ``prompt``: str, the problem statement + program contract + parent's score (and code);
        ``score``: float64 array of shape (1,), the current state's score;
        ``construction``: float64 array, shape (n,) or (n, row_len), the current construction.

    Info (reset and step): ``score`` (float or None), ``valid`` (bool), ``error`` (str or None),
    ``state`` (:class:`State`; its ``metadata`` holds the timings ``elapsed_s`` and ``sandbox_s`` in
    seconds and the program's output tails), ``metrics`` (the verifier's facts), ``sota`` (dict),
    ``failure_reward``. Everything in ``info`` except ``state.metadata`` is deterministic given the
    seed and the action, so seeded runs repeat exactly (``check_env``'s determinism check).

    Attributes:
        action_kind: ``action_mode`` (``"construction"`` or ``"code"``).
        thread_safe_evaluate: True (verifiers are pure; programs run in their own process).

    Raises (constructor):
        TypeError: a problem name instead of a :class:`Problem`.
        ValueError: unknown action mode, horizon not an integer >= 1, ``program_budget_s`` not a
            finite number > 0.
    """

    thread_safe_evaluate = True  # a pure verifier, and programs run in their own sandbox process
    #: wall-clock budget in seconds of the parent-side checks of one construction (the verifier's
    #: Python-level scans of untrusted input); spent, the candidate fails with a clear message.
    verify_budget_s: float = 60.0

    def __init__(
        self,
        problem: Problem,
        action_mode: Literal["construction", "code"] = "construction",
        horizon: int = 1,
        render_mode: str | None = None,
        sandbox: SandboxLimits | None = None,
        program_budget_s: float | None = None,
    ) -> None:
        if isinstance(problem, str):
            raise TypeError(
                f"DiscoveryEnv takes a Problem, not the name {problem!r}: build a registered env with "
                "gym.make(env_id) (or pass discoverygym.envs.get_problem(name))"
            )
        if action_mode not in ("construction", "code"):
            raise ValueError(f"action_mode must be 'construction' or 'code', got {action_mode!r}")
        self._init_common(problem, horizon, render_mode)
        self.action_mode = action_mode
        self.action_kind = action_mode
        if program_budget_s is not None and (
                isinstance(program_budget_s, bool) or not isinstance(program_budget_s, (int, float))
                or not math.isfinite(program_budget_s) or program_budget_s <= 0):
            raise ValueError(f"program_budget_s must be a finite number of seconds > 0 (or None for 80% of "
                             f"the sandbox timeout), got {program_budget_s!r}")
        sandbox = sandbox or SandboxLimits(timeout_s=60.0, memory_mb=4096)
        values = 2 * common.MAX_ENTRIES + 1  # entries plus one list per row, plus the outer list
        if sandbox.result_values is None or sandbox.result_values > values:
            sandbox = dataclasses.replace(sandbox, result_values=values)
        self.sandbox = sandbox
        self.program_budget_s = program_budget_s or 0.8 * self.sandbox.timeout_s
        self._construction_space = self._make_construction_space()
        self.observation_space = spaces.Dict(
            {
                "prompt": UnicodeText(MAX_TEXT, min_length=0),
                "score": spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float64),
                "construction": self._construction_space,
            }
        )
        self.action_space = (
            UnicodeText(MAX_TEXT, min_length=0) if action_mode == "code" else self._construction_space
        )

    # ----------------------------------------------------------------- spaces
    def _make_construction_space(self) -> StackedSequence:
        """Variable-length float64 array: shape (n,) or (n, row_len) (a stacked Gymnasium ``Sequence``)."""
        row = () if self.problem.row_len is None else (self.problem.row_len,)
        return StackedSequence(spaces.Box(-np.inf, np.inf, shape=row, dtype=np.float64))

    # ----------------------------------------------------------------- evaluation
    def _judge(self, action: Any, parent: State | None, seed: int, fields: dict) -> State:
        """:meth:`CandidateEnv.evaluate`'s work: verify a construction, or run a program (code mode)."""
        if self.action_mode == "code":
            return self.evaluate_program(action, parent=parent, seed=seed, **fields)
        return self.evaluate_construction(action, **fields)

    def admit(self, state: State | Mapping) -> State:
        """A copy of ``state`` with its solution re-verified here, whatever score it claims.

        Args:
            state: a :class:`State` or its ``to_dict()`` form; it is not mutated.

        Returns:
            A copy with the verified ``score``/``reward``, ``valid=True`` and ``error=None``; id,
            parents, code and (a copy of the) metadata are kept.

        Raises:
            ValueError: the solution is not a valid construction of this problem.
        """
        given = State.from_dict(dict(state)) if isinstance(state, Mapping) else state
        checked = self.evaluate_construction(given.solution)
        if not checked.valid:
            raise ValueError(f"options['state'] is not a valid {self.problem.name} construction: {checked.error}")
        return self._copy_given(given, score=checked.score, reward=checked.reward, valid=True, error=None)

    def evaluate_construction(self, construction: Any, **state_fields: Any) -> State:
        """Verify a construction and wrap it in a :class:`State` (never raises for bad input).

        Internal to ``envs/`` (and kept for existing callers); use :meth:`evaluate`.

        Args:
            construction: anything; the problem's verifier decides validity.
            **state_fields: extra :class:`State` fields (``code``, ``parent_ids``, ``metadata``).

        Returns:
            A valid State with score and reward, or an invalid one with the failure reward and the
            verifier's message in ``error``.
        """
        start = time.perf_counter()
        metadata = dict(state_fields.pop("metadata", {}) or {})
        try:
            with common.verification_budget(self.verify_budget_s):
                result = self.problem.verifier(construction)
        except InvalidSolution as exc:
            metadata["elapsed_s"] = time.perf_counter() - start
            return State(
                solution=_safe_json(construction),
                score=None,
                reward=self.failure_reward,
                valid=False,
                error=str(exc),
                metadata=metadata,
                **state_fields,
            )
        metadata.update(result.metrics)
        metadata["elapsed_s"] = time.perf_counter() - start
        return State(
            solution=_canonical(construction),
            score=result.value,
            reward=self.problem.reward(result.value),
            valid=True,
            metadata=metadata,
            **state_fields,
        )

    def evaluate_program(self, source: str, parent: State | None = None, seed: int = 0, **state_fields: Any) -> State:
        """Run a program in the sandbox and verify the construction it returns (internal; use :meth:`evaluate`).

        Args:
            source: Python source defining the problem's entry function (see ``problem.prompt()``).
            parent: state whose construction is passed to the program as ``parent``.
            seed: integer passed to the program as ``seed``.

        Returns:
            A :class:`State` with ``code = source``; invalid (failure reward) when the program
            fails, times out, or returns an invalid construction. ``metadata`` holds the sandbox's
            ``stdout``/``stderr`` tails and ``sandbox_s``.
        """
        if not isinstance(source, str):
            error = f"action must be program text (str), got {type(source).__name__}"
            return State(None, None, self.failure_reward, False, error=error, **state_fields)
        kwargs = {"seed": int(seed), "budget_s": float(self.program_budget_s),
                  "parent": None if parent is None else parent.solution}
        run = run_program(source, entry=self.problem.entry, kwargs=kwargs, limits=self.sandbox)
        meta = dict(state_fields.pop("metadata", {}) or {})
        meta.update(stdout=run.stdout[-2000:], stderr=run.stderr[-2000:], sandbox_s=run.elapsed_s)
        if not run.ok:
            return State(None, None, self.failure_reward, False, code=source,
                         error=f"program failed: {run.error}", metadata=meta, **state_fields)
        state = self.evaluate_construction(run.value, code=source, metadata=meta, **state_fields)
        return state

    # ----------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start an episode from the initial state, or from ``options["state"]``.

        Args:
            seed: seeds ``self.np_random`` (initial construction and program seeds).
            options: ``{"state": State | dict}`` injects a start state (how reuse wrappers work);
                its solution is re-verified here, whatever score it claims (:meth:`admit`: the
                episode starts from a copy, the caller's state is not mutated).

        Raises:
            ValueError: the injected state's solution is invalid.
        """
        super().reset(seed=seed)
        self._steps = 0
        given = (options or {}).get("state")
        if given is None:
            initial = self.problem.initial(self.np_random)
            code = "" if self.action_mode == "code" else None
            self.state = self.evaluate_construction(initial, code=code, id=self._new_id())
            if not self.state.valid:  # a bug in the problem definition, not user input
                raise RuntimeError(f"initial state of {self.problem.name} is invalid: {self.state.error}")
        else:
            self.state = self.admit(given)  # a copy: the caller's state is never mutated
        return self._observation(), self._info(self.state)

    def _picture(self, state: State, size: int) -> np.ndarray:
        """The problem's picture of a construction (``render_mode="rgb_array"``)."""
        return self.problem.render(np.asarray(state.solution, dtype=np.float64), size)

    # ----------------------------------------------------------------- helpers
    def summary(self, state: State) -> str:
        """One-paragraph text description of a state (used by the ``ansi`` render mode)."""
        shape = np.shape(state.solution) if state.solution is not None else ()
        head = f"{self.problem.title} — {self.problem.quantity}"
        if not state.valid:
            return f"{head}\ninvalid: {state.error}\n"
        best = self.problem.sota["value"]
        return (
            f"{head}\nscore {state.score:.12g} (reward {state.reward:.6g}); "
            f"published best {best} ({self.problem.sota['source']})\nconstruction shape {shape}\n"
        )

    def _observation(self) -> dict:
        assert self.state is not None
        prompt = self.problem.prompt() + f"\nCurrent construction's score: {self.state.score!r}\n"
        if self.action_mode == "code" and self.state.code:
            prompt += f"\nProgram that produced it:\n```python\n{self.state.code}\n```\n"
        return {
            "prompt": prompt,
            "score": np.array([self.state.score], dtype=np.float64),
            "construction": np.array(self.state.solution, dtype=np.float64),
        }



def _canonical(construction: Any) -> list:
    """A verified construction as plain lists: ints stay ints, everything else float64.

    Only called after the verifier accepted ``construction``, so it is a rectangular numeric array;
    numpy subclasses are read through a plain ``np.ndarray`` view.
    """
    if isinstance(construction, np.ndarray):
        construction = construction.view(np.ndarray)
    arr = np.asarray(construction)
    if arr.dtype.kind not in "iu":
        arr = arr.astype(np.float64)
    return arr.tolist()


def _safe_json(value: Any, limit: int = 10_000) -> Any:
    """Keep an invalid candidate only when it is small plain JSON data; else record ``None``.

    Every JSON value takes at least one character plus a two-character separator, so anything with
    more than ``limit // 2`` entries cannot fit: it is dropped before being walked or serialised.
    """
    if isinstance(value, np.ndarray):
        if value.size > limit // 2:
            return None
    elif isinstance(value, (list, tuple, dict)) and len(value) > limit // 2:
        return None
    try:
        data = to_jsonable(value)
        text = json.dumps(data)
    except (TypeError, ValueError, RecursionError):
        return None
    return data if len(text) <= limit else None
