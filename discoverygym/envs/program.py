"""ProgramEnv: the one Gymnasium environment class for problems whose candidates are programs.

Mathematical problems (:class:`~discoverygym.envs.construction.DiscoveryEnv`) score a construction, so a
program there is only a way to produce one. Other problems can only be judged by running the
program itself: a GPU kernel is timed, a C++ heuristic is judged on contest cases, a denoiser is
scored on held-out counts. Each such problem is one :class:`ProgramTask` (what to run and how to
score it); this module holds everything shared: spaces, reset/step, states, info, rendering.

A task's ``evaluate`` raises :class:`~discoverygym.errors.InvalidSolution` with a reason for any
failure (compile error, crash, timeout, wrong output, a rule broken); the env turns that into the
failure reward. The score is always measured by the task's own code, never read from the program.

**Unscored candidates.** When a task cannot score a candidate on this machine (it raises
:class:`~discoverygym.errors.BackendUnavailable`: a correct kernel and no GPU to time it, no
bubblewrap to judge it in), ``step`` does not raise: the candidate is *unscored*: its state is not
valid, carries the failure reward, ``error = "unscored: <reason>"`` and ``metadata["unscored"] =
True`` / ``metadata["unscored_reason"]`` (one line); ``info["unscored"]`` and
``info["unscored_reason"]`` say the same, and ``step`` returns ``truncated=True`` (the episode
ended for a reason outside the problem). discoverygym's trainers leave unscored rollouts out of
the advantages and its archives drop them. ``raise_unavailable=True`` (``gym.make(env_id,
raise_unavailable=True)``) raises the ``BackendUnavailable`` instead.

Example:
    >>> import gymnasium as gym, discoverygym
    >>> env = gym.make("AHC039-v0", n_cases=10)          # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                     # doctest: +SKIP
    >>> obs, reward, terminated, truncated, info = env.step(cpp_source)  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from gymnasium import spaces

from discoverygym.casestats import case_improvement
from discoverygym.envs.candidate import CandidateEnv, problem_header, reward_of
from discoverygym.envs.render import bars
from discoverygym.envs.spaces import UnicodeText
from discoverygym.errors import BackendUnavailable, InvalidSolution
from discoverygym.rewards.common import Score
from discoverygym.types import Direction, State

__all__ = ["INITIAL_CACHE_SIZE", "MAX_PROGRAM", "ProgramEnv", "ProgramTask", "unscored_reason"]

#: longest prompt / program accepted by the text spaces (characters).
MAX_PROGRAM = 1_000_000
#: initial-state evaluations a ProgramEnv keeps, one per program seed (see ``ProgramEnv.reset``).
INITIAL_CACHE_SIZE = 32


def unscored_reason(exc: BaseException, limit: int = 400) -> str:
    """The one-line reason of an unscored candidate: the first line of ``exc``'s message, cut to ``limit`` characters."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ProgramTask(ABC):
    """Everything problem-specific about a program-judged discovery problem.

    Subclasses set the class attributes and implement :meth:`initial_program` and
    :meth:`evaluate`; everything else has a default. Attribute names match
    :class:`~discoverygym.envs.problem.Problem` so that prompts, search and agents treat both
    kinds of problem alike.

    Attributes:
        name: short identifier, e.g. ``"ahc039"``.
        title: human title for prompts, ``list`` and renders.
        quantity: what ``score`` measures and its unit, e.g. ``"geometric-mean runtime (μs)"``.
        direction: :class:`~discoverygym.types.Direction` (a subclass may write ``"min"`` / ``"max"``:
            it is converted when the subclass is defined).
        language: ``"python"`` or ``"cpp"``: the language of the action program.
        example: file name of the bundled example program in ``discoverygym/examples/``
            (``discoverygym evaluate ID`` without a FILE), or ``None``.
        entry: the function the program must define (``"custom_kernel"``, ``"denoise"``; ``"main"``
            for C++ programs reading stdin).
        description: the problem statement for prompts, in our own words.
        contract: what the program must define/read/print, and the limits it runs under.
        sota: best published value: ``{"value": float, "source": str}`` plus optional extras.
        failure_reward: reward of an invalid candidate; strictly below every valid reward.
        reward_scale: for a minimised score (``Direction.MIN``) reward = reward_scale / score.
        evaluate_initial: whether ``reset()`` scores the initial program (False when scoring needs
            hardware that may be absent, e.g. a GPU; the initial state then has ``score=None``).
        nondeterministic: scores are measurements (timings) that vary between runs.
        timed: scores may depend on the clock (a heuristic that stops at a time limit, AtCoder):
            deterministic otherwise, so cached as usual, but a resume measures the best logged
            program again and keeps the new score instead of requiring the logged one
            (:func:`~discoverygym.search.runlog.verify_states`; issue 52, #14).
        thread_safe: :meth:`evaluate` may run in several threads of one process at once (default
            False: tasks may share a GPU, a compile directory or a data cache).
        row_len: always ``None`` (no construction); present for code that reads ``Problem.row_len``.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    quantity: ClassVar[str]
    direction: ClassVar[Direction] = Direction.MAX
    language: ClassVar[Literal["python", "cpp"]] = "python"
    example: ClassVar[str | None] = None
    entry: ClassVar[str] = "main"
    description: ClassVar[str] = ""
    contract: ClassVar[str] = ""
    failure_reward: ClassVar[float] = 0.0
    reward_scale: ClassVar[float] = 1.0
    evaluate_initial: ClassVar[bool] = True
    nondeterministic: ClassVar[bool] = False
    timed: ClassVar[bool] = False
    thread_safe: ClassVar[bool] = False
    row_len: ClassVar[None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.direction = Direction(cls.direction)  # a subclass may write "min" / "max"

    @property
    def sota(self) -> dict:
        """Best published value ``{"value": float, "source": str, ...}`` (override per task)."""
        return {"value": float("nan"), "source": "none"}

    # ------------------------------------------------------------------ to implement
    @abstractmethod
    def initial_program(self) -> str:
        """Source of the papers' initial state (a baseline program in :attr:`language`)."""

    @abstractmethod
    def evaluate(self, source: str, *, seed: int) -> Score:
        """Run and judge one program.

        Args:
            source: program text in :attr:`language`.
            seed: seeds generated inputs / measurement order (same seed, same cases).

        Returns:
            :class:`Score` with ``value`` (the problem's own number) and JSON-serialisable
            ``metrics`` (per-case scores, timings, verdicts...).

        Raises:
            InvalidSolution: the candidate failed (compile error, crash, timeout, wrong output, a
                rule broken); the message names the reason and is shown to the agent.
        """

    # ------------------------------------------------------------------ defaults
    def reward(self, score: float) -> float:
        """Reward of a valid score: ``score`` when maximised, ``reward_scale / score`` when minimised.

        Raises:
            ValueError: a minimised score that is not positive.
        """
        return reward_of(self.direction, self.reward_scale, score)

    def prompt(self) -> str:
        """The problem statement followed by the program contract (what an LLM policy reads)."""
        return f"{problem_header(self)}\n\n{self.contract}\n"

    def case_key(self, seed: int) -> Any:
        """What the cases judged depend on besides the program (default ``None``: the same for every seed).

        The per-case baseline (:meth:`case_baseline`) is cached per key; tasks whose cases vary
        with the evaluation seed return the seed.
        """
        return None

    def case_baseline(self, seed: int) -> list[float] | None:
        """Per-case scores (``metrics["case_scores"]``) of :meth:`initial_program` on the cases of ``seed``.

        Evaluated once per :meth:`case_key` and cached on the task (an evaluation of the initial
        program through :class:`ProgramEnv` fills the cache for free). ``None`` when the task has
        no per-case scores or the initial program cannot be scored here (e.g. no GPU).
        """
        cache = self.__dict__.setdefault("_case_baselines", {})
        key = self.case_key(seed)
        if key not in cache:
            try:
                scores = self.evaluate(self.initial_program(), seed=seed).metrics.get("case_scores")
            except (InvalidSolution, BackendUnavailable):
                scores = None
            cache[key] = list(scores) if scores else None
        return cache[key]

    def render(self, state: State, size: int) -> np.ndarray:
        """uint8 ``(size, size, 3)`` picture of a state (default: bars of ``metrics["case_scores"]``).

        Tasks override this (kernel timing bars, denoised vs test expression).
        """
        values = state.metadata.get("case_scores") if state.valid else None
        return bars(values or [], size)

    def report(self, state: State) -> list[tuple[str, str]]:
        """Rows ``(label, value)`` the CLI prints under a result (default: none)."""
        return []


class ProgramEnv(CandidateEnv[dict, str]):
    """Gymnasium environment whose actions are programs judged by a :class:`ProgramTask`.

    Args:
        task: a built :class:`ProgramTask` (registered ones are built by ``gym.make(env_id,
            **task_options)``, which resolves the name; this class takes objects only).
        action_mode: must be ``"code"`` (accepted so that code written for every env can pass it).
        horizon: steps per episode (1 = one proposal per episode, as in the papers). With
            horizon > 1 each valid child becomes the parent of the next step.
        render_mode: ``None``, ``"ansi"`` (text summary) or ``"rgb_array"`` (picture).
        raise_unavailable: raise :class:`~discoverygym.errors.BackendUnavailable` when the task
            cannot score a candidate here (default False: the candidate is *unscored*, see the
            module docstring, and ``step`` returns ``truncated=True``).
        **task_kwargs: refused (task options belong to ``gym.make(env_id, ...)``, which builds the
            task with them).

    Observation (``spaces.Dict``): ``prompt`` (str: statement, contract, current score and
    program) and ``score`` (float64 array of shape (1,); the worst value, -inf when maximising and
    +inf when minimising, while the state is unscored).

    Action: program text (str).

    Info (reset and step): ``score``, ``valid``, ``error``, ``state`` (:class:`State` with
    ``solution=None`` and ``code`` = the program; timings in ``metadata``), ``metrics`` (the task's
    facts, e.g. per-case scores), ``sota`` (a NaN record, i.e. none published, becomes ``None``),
    ``failure_reward``, ``unscored`` (bool) and ``unscored_reason`` (one line, or ``None``).

    Attributes:
        action_kind: always ``"code"``.
        thread_safe_evaluate: the task's ``thread_safe``.
        task: the :class:`ProgramTask` (also ``problem``, the name search and agents use).

    Raises (constructor):
        TypeError: a task name instead of a :class:`ProgramTask`.
        ValueError: task options, ``action_mode != "code"``, horizon < 1, bad render mode.
    """

    action_mode = "code"
    action_kind = "code"

    def __init__(
        self,
        task: ProgramTask,
        action_mode: str = "code",
        horizon: int = 1,
        render_mode: str | None = None,
        raise_unavailable: bool = False,
        **task_kwargs: Any,
    ) -> None:
        if not isinstance(raise_unavailable, bool):
            raise ValueError(f"raise_unavailable must be True or False, got {raise_unavailable!r}")  # noqa: TRY004 - a bad option value, as the task options
        self.raise_unavailable = raise_unavailable
        self._initial_cache: dict[tuple[int, str], State] = {}
        if isinstance(task, str):
            raise TypeError(
                f"ProgramEnv takes a built ProgramTask, not the name {task!r}: build a registered env with "
                "gym.make(env_id, **task_options)"
            )
        if task_kwargs:
            raise ValueError(f"task options {sorted(task_kwargs)} need a task name (gym.make(env_id, ...)), "
                             "not a built task")
        if action_mode != "code":
            raise ValueError(f"{task.title} candidates are programs: action_mode must be 'code', got {action_mode!r}")
        self._init_common(task, horizon, render_mode)  # ``problem``: the name search and agents use
        self.task = task
        self.thread_safe_evaluate = bool(getattr(task, "thread_safe", False))
        self.observation_space = spaces.Dict(
            {
                "prompt": UnicodeText(MAX_PROGRAM, min_length=0),
                "score": spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float64),
            }
        )
        self.action_space = UnicodeText(MAX_PROGRAM, min_length=0)

    # ----------------------------------------------------------------- evaluation
    def _judge(self, action: Any, parent: State | None, seed: int, fields: dict) -> State:
        """:meth:`CandidateEnv.evaluate`'s work: judge a program with the task."""
        return self.evaluate_program(action, seed=seed, **fields)

    def admit(self, state: State | Mapping) -> State:
        """A copy of ``state`` to start from: a :class:`State` object is taken as scored by this env
        (its program is not run again, an unscored initial state stays unscored); a mapping (read
        from disk) is judged again by running its ``code``, whatever score it claims.

        Raises:
            ValueError: a mapping without code, or whose program fails now.
        """
        if not isinstance(state, Mapping):
            return self._copy_given(state)
        stored = State.from_dict(dict(state))
        if not isinstance(stored.code, str):
            raise ValueError("options['state'] has no program ('code') to judge")  # noqa: TRY004 - a bad value
        checked = self.evaluate_program(stored.code, seed=self._new_seed(), id=stored.id,
                                        parent_ids=stored.parent_ids)
        if not checked.valid:
            raise ValueError(f"options['state'] fails as a {self.task.name} program: {checked.error}")
        return checked

    def evaluate_program(self, source: Any, parent: State | None = None, seed: int = 0, **state_fields: Any) -> State:
        """Judge one program with the task (never raises for a bad candidate; internal, use :meth:`evaluate`).

        Args:
            source: program text.
            parent: unused by program tasks (the parent's program is in the prompt); accepted
                for the search executors' common call.
            seed: seeds the task's generated inputs.
            **state_fields: extra :class:`State` fields (``id``, ``parent_ids``, ``metadata``).

        Returns:
            A :class:`State` with ``code = source``: valid with score and reward, or invalid with
            the failure reward and the reason in ``error``; an *unscored* one (module docstring)
            when the task raised ``BackendUnavailable``.

        Raises:
            BackendUnavailable: the task cannot score here and ``raise_unavailable`` is True.
        """
        del parent
        metadata = dict(state_fields.pop("metadata", {}) or {})
        if not isinstance(source, str):
            error = f"action must be program text (str), got {type(source).__name__}"
            return State(None, None, self.failure_reward, False, error=error, metadata=metadata, **state_fields)
        start = time.perf_counter()
        try:
            result = self.task.evaluate(source, seed=int(seed))
        except InvalidSolution as exc:
            metadata["elapsed_s"] = time.perf_counter() - start
            metadata.update(getattr(exc, "metrics", None) or {})
            return State(None, None, self.failure_reward, False, code=source, error=str(exc),
                         metadata=metadata, **state_fields)
        except BackendUnavailable as exc:
            if self.raise_unavailable:
                raise
            reason = unscored_reason(exc)
            metadata["elapsed_s"] = time.perf_counter() - start
            metadata.update(unscored=True, unscored_reason=reason)
            return State(None, None, self.failure_reward, False, code=source, error=f"unscored: {reason}",
                         metadata=metadata, **state_fields)
        metadata.update(result.metrics)
        metadata["elapsed_s"] = time.perf_counter() - start
        improvement = self._case_improvement(source, int(seed), result.metrics)
        if improvement is not None:
            metadata["case_improvement"] = improvement
        return State(None, float(result.value), self.task.reward(result.value), True, code=source,
                     metadata=metadata, **state_fields)

    def _case_improvement(self, source: str, seed: int, metrics: dict) -> list[float | None] | None:
        """``metrics["case_improvement"]``: per-case relative improvement over the initial program.

        Positive = better (:func:`discoverygym.casestats.case_improvement`, the task's direction).
        ``None`` (key left out) for a task without per-case scores, or when the initial program's
        per-case scores are unavailable or judge other cases. Scoring the initial program itself
        fills the task's baseline cache (its improvement is then 0 on every case).
        """
        scores = metrics.get("case_scores")
        if not scores:
            return None
        cache = self.task.__dict__.setdefault("_case_baselines", {})
        key = self.task.case_key(seed)
        if key not in cache and source == self.task.initial_program():
            cache[key] = list(scores)
        baseline = self.task.case_baseline(seed)
        if baseline is None or len(baseline) != len(scores):
            return None
        return case_improvement(scores, baseline, self.task.direction)

    # ----------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start an episode from the task's initial program, or from ``options["state"]``.

        Args:
            seed: seeds ``self.np_random`` (state ids and the seeds passed to :meth:`evaluate`).
            options: ``{"state": State | dict}`` injects a start state (how reuse wrappers work),
                through :meth:`admit`: a :class:`State` object is taken as scored by this env
                (the episode starts from a copy); a ``dict`` (read from disk) is re-judged by
                running its ``code`` again, whatever score it claims.

        Raises:
            ValueError: an injected dict state without code, or whose program fails now.
            RuntimeError: the task's own initial program fails (a bug in the task).

        The initial program's evaluation is cached per program seed (the last
        :data:`INITIAL_CACHE_SIZE` seeds; not for ``nondeterministic`` tasks), so resets with the
        same seed (``check_env``, vector envs, reuse wrappers) do not judge the baseline again.

        With ``evaluate_initial=False`` the initial state is *unscored* (``info["unscored"]``), so
        that trainers and search start from its program without counting it as a failure.
        """
        super().reset(seed=seed)
        self._steps = 0
        given = (options or {}).get("state")
        if given is None:
            program = self.task.initial_program()
            if self.task.evaluate_initial:
                program_seed, state_id = self._new_seed(), self._new_id()  # this order: as before the cache
                key = (program_seed, program)
                judged = self._initial_cache.get(key)
                if judged is None:
                    judged = self.evaluate_program(program, seed=program_seed, id=state_id)
                    if not judged.valid:
                        raise RuntimeError(f"initial program of {self.task.name} fails: {judged.error}")
                    if not self.task.nondeterministic:  # a measurement (a timing) is taken anew each time
                        if len(self._initial_cache) >= INITIAL_CACHE_SIZE:
                            self._initial_cache.pop(next(iter(self._initial_cache)))
                        self._initial_cache[key] = judged
                # a deep copy each time: callers keep (and may change) what reset returns to them
                self.state = dataclasses.replace(judged, id=state_id, metadata=copy.deepcopy(judged.metadata))
            else:
                reason = "not scored at reset (evaluate_initial=False: scoring may need hardware this machine lacks)"
                self.state = State(None, None, self.failure_reward, False, code=program, id=self._new_id(),
                                   error="not scored at reset (evaluate_initial=False)",
                                   metadata={"unscored": True, "unscored_reason": reason})
        else:
            self.state = self.admit(given)  # a copy: the caller's state is never mutated
        return self._observation(), self._info(self.state)

    def _picture(self, state: State, size: int) -> np.ndarray:
        """The task's picture of a state (``render_mode="rgb_array"``)."""
        return self.task.render(state, size)

    # ----------------------------------------------------------------- helpers
    def summary(self, state: State) -> str:
        """One-paragraph text description of a state (the ``ansi`` render mode)."""
        head = f"{self.task.title} — {self.task.quantity}"
        if state.unscored:
            return f"{head}\nunscored (not judged on this machine): {state.metadata.get('unscored_reason')}\n"
        if not state.valid:
            return f"{head}\ninvalid: {state.error}\n"
        rows = "".join(f"{k}: {v}\n" for k, v in self.task.report(state))
        if state.metadata.get("proxy"):
            head += f" [{state.metadata['proxy'].upper()} proxy, not comparable with the GPU record]"
        return (f"{head}\nscore {state.score:.12g} (reward {state.reward:.6g}); published best "
                f"{self.task.sota['value']} ({self.task.sota['source']})\n{rows}")

    def _observation(self) -> dict:
        assert self.state is not None
        score = self.state.score
        prompt = self.task.prompt() + f"\nCurrent program's score: {score!r}\n"
        if self.state.code:
            prompt += f"\nCurrent program:\n```{self.task.language}\n{self.state.code}\n```\n"
        value = Direction(self.task.direction).worst if score is None else score
        return {"prompt": prompt, "score": np.array([value], dtype=np.float64)}
