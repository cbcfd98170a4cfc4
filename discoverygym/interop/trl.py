"""TRL on discoverygym envs: a prompt dataset from an env's start states and a reward function that judges
completions through the env.

`TRL <https://github.com/huggingface/trl>`_'s ``GRPOTrainer`` takes a ``datasets.Dataset`` with a
``"prompt"`` column and reward functions ``reward(prompts, completions, **kwargs) -> list[float]``
(every other dataset column arrives as a keyword argument, one value per completion). This module
builds both from a registered env, with discoverygym's own pieces, so that a TRL run sees the prompts
``discoverygym train`` shows its LLM and gets the rewards discoverygym's verifier gives:

* :func:`prompt_dataset`: one row per start state (``env.reset(seed=seed + i)``), its prompt built by
  :func:`~discoverygym.agents.policies.llm.context_messages` (the problem statement, the program
  contract, the start state and its program or the problem's example program, the answer rules), as
  chat messages (TRL's conversational format) or, with a tokenizer, as text rendered by its chat
  template (TRL's standard format) followed by the answer prefix that :class:`~discoverygym.agents.policies.hf.HFPolicy`
  gives (```` ```python ```` + newline for a model without a reasoning section).
* :func:`reward_function`: each completion is parsed by :func:`~discoverygym.agents.policies.llm.make_sample`
  (the one place where a response becomes a program; a response with no program becomes a failing
  stub) and judged by ``env.unwrapped.evaluate(program, parent=start, seed=start_seed)``: the program
  runs in discoverygym's sandbox and its construction is verified there; the reward is the env's
  (the problem's failure reward for anything invalid, unparseable responses included).

Example (not run here: it needs ``trl`` and a model)::

    from trl import GRPOConfig, GRPOTrainer
    from discoverygym.interop.trl import prompt_dataset, reward_function

    data = prompt_dataset("ErdosMinOverlap-v0", 8, tokenizer=tokenizer)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, train_dataset=data,
                          reward_funcs=reward_function("ErdosMinOverlap-v0"),
                          args=GRPOConfig(num_generations=4, max_completion_length=256))
    trainer.train()

Needs ``datasets`` for :func:`prompt_dataset` (``pip install trl`` brings it); :func:`reward_function`
needs nothing beyond discoverygym.

Layer: interop; it imports ``agents`` (the prompt builder and the parser) and ``envs`` (the registry).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym

from discoverygym.agents.policies.edits import answer_prefix as auto_answer_prefix
from discoverygym.agents.policies.llm import check_edit_format, context_messages, make_sample
from discoverygym.envs.registry import env_ids
from discoverygym.errors import UnknownEnvError
from discoverygym.io import available_cpus
from discoverygym.policy import SamplingContext
from discoverygym.types import State

__all__ = ["answer_prefix_for", "completion_text", "prompt_dataset", "reward_function"]

#: the dataset columns that :func:`reward_function` reads back (besides ``"prompt"``).
START_SEED, ANSWER_PREFIX = "start_seed", "answer_prefix"


def _make_env(env_id: str, action_mode: str, env_kwargs: dict) -> gym.Env:
    """``gym.make(env_id, action_mode=..., **env_kwargs)`` without the passive checker.

    Raises:
        ValueError: ``env_id`` is not registered (the message points to ``discoverygym list``).
    """
    try:
        return gym.make(env_id, action_mode=action_mode, disable_env_checker=True, **env_kwargs)
    except gym.error.Error as exc:
        raise UnknownEnvError(env_id, env_ids(), detail=str(exc)) from None


def _context(env: gym.Env, start: State, action_mode: str) -> SamplingContext:
    """The sampling context of one prompt: the start state as parent and only inspiration (as ``train``)."""
    return SamplingContext(parent=start, inspirations=(start,), problem=env.unwrapped.problem, action_mode=action_mode)


def _chat_text(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    """The text :func:`~discoverygym.agents.policies.llm.encode_chat` tokenizes: the chat template with the
    generation prompt, or ``"{content}\\n"`` per message for a tokenizer without a template."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return "".join(m["content"] + "\n" for m in messages)


def answer_prefix_for(tokenizer: Any, language: str, edit_format: str = "full", *, has_program: bool = True) -> str:
    """The text :class:`~discoverygym.agents.policies.hf.HFPolicy` (``answer_prefix="auto"``, no thinking
    budget) starts an answer with (:func:`~discoverygym.agents.policies.edits.answer_prefix`): when the
    tokenizer's chat template has no reasoning section (no ``think`` in it), the opening fence
    ```` ```{language} ```` and a newline, or for a ``diff`` answer to a start state with a program
    (``has_program``) the line ``<<<<<<< SEARCH``; else ``""``.

    Raises:
        ValueError: an unknown ``edit_format``.
    """
    template = str(getattr(tokenizer, "chat_template", "") or "")
    return auto_answer_prefix(language, edit_format, has_program=has_program, reasoning="think" in template.lower())


def prompt_dataset(env_id: str, n: int, *, action_mode: str = "code", seed: int = 0, tokenizer: Any = None,
                   answer_prefix: str | None = "auto", system: str | None = None, edit_format: str = "full",
                   **env_kwargs: Any) -> Any:
    """A ``datasets.Dataset`` of ``n`` prompts, one per start state of ``env_id``, for TRL's trainers.

    Row ``i`` is built from the start state ``env.reset(seed=seed + i)`` (a construction problem's
    seeded initial construction; a program task's initial program) with discoverygym's prompt builder
    (:func:`~discoverygym.agents.policies.llm.context_messages`, the prompt ``discoverygym train`` shows).

    Args:
        env_id: a registered env id (``discoverygym list``).
        n: rows (>= 1).
        action_mode: ``"code"`` (programs; the only mode an LLM prompt is built for).
        seed: the first start state's reset seed.
        tokenizer: ``None``: ``"prompt"`` holds chat messages (``[{"role", "content"}]``, TRL's
            conversational format; TRL applies the chat template). A tokenizer: ``"prompt"`` holds the
            text of its chat template with the generation prompt (TRL's standard format; a tokenizer
            without a template: each message's content and a newline, as ``HFPolicy``), then the
            answer prefix.
        answer_prefix: with a tokenizer, the text appended after the generation prompt (the start of the
            answer, not generated, not trained on); ``"auto"``: :func:`answer_prefix_for`; ``None``/``""``:
            none. Ignored without a tokenizer (a chat-format prompt cannot end inside the answer).
        system: an optional system message.
        edit_format: ``"full"`` (whole programs) or ``"diff"`` (SEARCH/REPLACE blocks against the start
            state's program); give :func:`reward_function` the same.
        **env_kwargs: env / task options passed to ``gym.make``.

    Returns:
        A ``datasets.Dataset`` with ``n`` rows and the columns ``"prompt"`` (str or list of message
        dicts), ``"start_seed"`` (int: the reset seed of the row's start state) and ``"answer_prefix"``
        (str, possibly empty). :func:`reward_function` reads the last two back (TRL passes dataset
        columns to reward functions as keyword arguments).

    Raises:
        ImportError: ``datasets`` is not installed (the message names the install).
        ValueError: ``n`` < 1, an unknown env id, an action mode other than ``"code"``, an unknown
            ``edit_format``.
    """
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(f"prompt_dataset needs the datasets package: pip install trl (or datasets) ({exc})") from None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1 (rows), got {n!r}")
    if action_mode != "code":
        raise ValueError(f"LLM prompts ask for programs: action_mode must be 'code', got {action_mode!r}")
    check_edit_format(edit_format)
    env = _make_env(env_id, action_mode, env_kwargs)
    rows: dict[str, list] = {"prompt": [], START_SEED: [], ANSWER_PREFIX: []}
    try:
        for i in range(n):
            _, info = env.reset(seed=seed + i)
            messages = context_messages(_context(env, info["state"], action_mode), system, edit_format)
            prefix = ""
            if tokenizer is not None:
                language = str(getattr(env.unwrapped.problem, "language", "python") or "python")
                has_program = bool(info["state"].code)
                prefix = (answer_prefix_for(tokenizer, language, edit_format, has_program=has_program)
                          if answer_prefix == "auto" else answer_prefix or "")
                prompt: Any = _chat_text(tokenizer, messages) + prefix
            else:
                prompt = messages
            rows["prompt"].append(prompt)
            rows[START_SEED].append(seed + i)
            rows[ANSWER_PREFIX].append(prefix)
    finally:
        env.close()
    return datasets.Dataset.from_dict(rows)


def completion_text(completion: Any) -> str:
    """The text of one TRL completion: a string as is; a chat completion (a list of message dicts,
    TRL's conversational format) as the concatenated ``content`` of its assistant messages (content
    given as a list of parts contributes its ``"text"`` parts). Anything else gives ``""`` (judged as
    a response without a program)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if not isinstance(completion, (list, tuple)):
        return ""
    parts = []
    for message in completion:
        if not isinstance(message, dict) or message.get("role", "assistant") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, (list, tuple)):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "".join(parts)


def reward_function(env_id: str, *, action_mode: str = "code", seed: int = 0, edit_format: str = "full",
                    workers: int | None = None, **env_kwargs: Any) -> Callable[..., list[float]]:
    """A TRL reward function that judges each completion's program through ``env_id``.

    The returned ``reward(prompts, completions, **kwargs) -> list[float]`` (TRL's custom reward
    signature) reads, for completion ``i``: its text (:func:`completion_text`), the row's
    ``start_seed`` and ``answer_prefix`` columns (keyword arguments, one value per completion, as
    :func:`prompt_dataset` writes them; missing: ``seed`` and ``""``). The answer prefix + text is
    parsed by :func:`~discoverygym.agents.policies.llm.make_sample` and the program judged by
    ``env.unwrapped.evaluate(program, parent=start, seed=start_seed)``, where ``start`` is
    ``env.reset(seed=start_seed)``'s state (made once per seed and kept): the sandbox runs the
    program and the verifier checks what it returns, as in ``discoverygym train``. The program seed is
    the start seed, so a completion's reward does not depend on the batch it comes in.

    Args:
        env_id: a registered env id.
        action_mode: ``"code"``.
        seed: the start seed of completions whose batch carries no ``start_seed`` column.
        edit_format: as given to :func:`prompt_dataset`.
        workers: programs judged at once (threads; each program runs in its own sandbox process);
            ``None``: every CPU when the env's evaluations are thread-safe, else 1.
        **env_kwargs: env / task options passed to ``gym.make``.

    Returns:
        The reward function. Its values are the env's rewards (floats; higher is better): a valid
        program's reward, else the problem's failure reward (unparseable response, crash, timeout,
        invalid construction). It also has the attributes ``env`` (the env it judges with) and
        ``last_states`` (the judged :class:`~discoverygym.types.State` of each completion of the
        latest call, with ``error`` saying why an invalid one failed).

    Raises:
        ValueError: an unknown env id, an action mode other than ``"code"``, an unknown ``edit_format``,
            ``workers`` < 1; (when called) ``prompts`` and ``completions`` of different lengths.
    """
    if action_mode != "code":
        raise ValueError(f"LLM completions are programs: action_mode must be 'code', got {action_mode!r}")
    check_edit_format(edit_format)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1 or None, got {workers!r}")
    env = _make_env(env_id, action_mode, env_kwargs)
    problem = env.unwrapped.problem
    language = str(getattr(problem, "language", "python") or "python")
    n_workers = workers or (available_cpus() if env.unwrapped.thread_safe_evaluate else 1)
    starts: dict[int, State] = {}
    lock = threading.Lock()

    def start_state(start_seed: int) -> State:
        with lock:
            if start_seed not in starts:
                _, info = env.reset(seed=start_seed)
                starts[start_seed] = info["state"]
            return starts[start_seed]

    def judge(text: str, start_seed: int) -> State:
        start = start_state(start_seed)
        ctx = _context(env, start, action_mode)
        sample = make_sample(text, language, ctx=ctx, edit_format=edit_format)
        return env.unwrapped.evaluate(sample.action, parent=start, seed=start_seed)

    def reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        if len(prompts) != len(completions):
            raise ValueError(f"{len(prompts)} prompts but {len(completions)} completions (one prompt per completion)")
        seeds = kwargs.get(START_SEED) or [seed] * len(completions)
        prefixes = kwargs.get(ANSWER_PREFIX) or [""] * len(completions)
        jobs = [(str(p or "") + completion_text(c), int(s)) for c, s, p in zip(completions, seeds, prefixes)]
        for s in sorted({s for _, s in jobs}):  # start states in a fixed order, before any thread runs
            start_state(s)
        if n_workers > 1 and len(jobs) > 1:
            with ThreadPoolExecutor(max_workers=min(n_workers, len(jobs))) as pool:
                states = list(pool.map(lambda job: judge(*job), jobs))
        else:
            states = [judge(*job) for job in jobs]
        reward.last_states = states
        return [float(s.reward) for s in states]

    reward.__name__ = f"discoverygym_{env_id}"
    reward.env = env
    reward.last_states = []
    return reward
