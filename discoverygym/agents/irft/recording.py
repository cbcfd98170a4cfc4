"""Record the exact prompt and completion texts of a policy while the search runner samples from it.

The search log (``archive.jsonl``) stores each candidate's *action* (the extracted program) and its
parents, but not the prompt text Φ's choice of states was rendered into, nor the raw model text.
IRFT trains on prompt → completion pairs exactly as they were sampled, so
:class:`RecordingPolicy` wraps the generator and appends one line per sampled batch to
``prompts.jsonl`` in the search run directory::

    {"traj": c, "step": l, "prompts": [str] * K, "completions": [str] * K, "actions": [...] * K,
     "prompt_ids": [[int]] * K, "completion_ids": [[int]] * K, "completion_mask": [[bool]] * K}

Token ids come from LLM samples (:class:`~discoverygym.agents.policies.llm.LLMSample`:
``prompt_ids``, ``completion_ids`` and ``mask``, sampled vs forced tokens); they are the exact
sequences the model saw and produced, and SFT trains on them. ``null`` for other samples (then SFT
tokenises the texts); a chat backend's LLM samples carry empty lists. Where the texts come from,
per :class:`~discoverygym.policy.Sample` ``s`` (first that exists): for an LLM sample the decoded
``s.prompt_ids`` (special tokens kept, so the chat template shows) when the policy has a
``tokenizer``, else ``s.prompt``; then ``policy.prompt_text(context)``, else ``problem.prompt()``;
``s.text``, else the action itself when it is a string (JSON otherwise). A search resumed after
a kill may sample a batch again: :func:`read_prompts` keeps, per (trajectory, step), the last line
whose actions equal the actions the runner logged, so the pairs always match what was evaluated.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from discoverygym.agents.policies import SamplingContext
from discoverygym.agents.policies.llm import LLMSample
from discoverygym.io import json_lines
from discoverygym.policy import Sample
from discoverygym.search.runlog import RunLog
from discoverygym.types import to_jsonable

__all__ = ["PROMPTS_FILE", "RecordingPolicy", "read_prompts"]

PROMPTS_FILE = "prompts.jsonl"


def _ids(values: Sequence[Any], kind: type = int) -> list:
    return [kind(v) for v in values]


def _prompt_of(policy: Any, sample: Sample, ctx: SamplingContext) -> str:
    tokenizer = getattr(policy, "tokenizer", None)
    if isinstance(sample, LLMSample):
        if sample.prompt_ids and tokenizer is not None:
            return str(tokenizer.decode(list(sample.prompt_ids), skip_special_tokens=False))
        if sample.prompt:
            return sample.prompt
    build = getattr(policy, "prompt_text", None)
    if callable(build):
        return str(build(ctx))
    return ctx.problem.prompt()


def _completion_of(sample: Sample) -> str:
    if sample.text is not None:
        return sample.text
    if isinstance(sample.action, str):
        return sample.action
    return json.dumps(to_jsonable(sample.action))


class RecordingPolicy:
    """A :class:`~discoverygym.agents.policies.Policy` that forwards to ``policy`` and logs its texts.

    Args:
        policy: the generator (``sample(contexts, n, rng)``; see the module docstring for the text
            attributes it may expose).
        run_dir: the search run directory; ``prompts.jsonl`` is appended there (one flushed line
            per context, so a kill loses at most the batch being written).

    Attributes:
        name, action_modes: those of ``policy`` (the search runner checks them).
    """

    def __init__(self, policy: Any, run_dir: str | os.PathLike) -> None:
        self.policy = policy
        self.name = getattr(policy, "name", type(policy).__name__)
        if hasattr(policy, "action_modes"):
            self.action_modes = policy.action_modes
        self.path = Path(run_dir) / PROMPTS_FILE
        self._lock = threading.Lock()

    def sample(
        self, contexts: Sequence[SamplingContext], n: int, rng: np.random.Generator
    ) -> list[list[Sample]]:
        """``policy.sample(contexts, n, rng)`` (pending actions resolved), after appending the texts of
        each context's samples."""
        # pending jobs (an operator, a polish) run here, once: the runner gets the resolved samples
        out = [[s.resolved() for s in group] for group in self.policy.sample(contexts, n, rng)]
        lines = []
        for ctx, samples in zip(contexts, out):
            llm = [s if isinstance(s, LLMSample) else None for s in samples]
            lines.append(
                {
                    "traj": int(ctx.trajectory),
                    "step": int(ctx.step),
                    "prompts": [_prompt_of(self.policy, s, ctx) for s in samples],
                    "completions": [_completion_of(s) for s in samples],
                    "actions": [to_jsonable(s.action) for s in samples],
                    "prompt_ids": [None if s is None else _ids(s.prompt_ids) for s in llm],
                    "completion_ids": [None if s is None else _ids(s.completion_ids) for s in llm],
                    "completion_mask": [None if s is None else _ids(s.mask, bool) for s in llm],
                }
            )
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
                fh.flush()
                os.fsync(fh.fileno())
        return out


def read_prompts(run_dir: str | os.PathLike) -> dict[tuple[int, int, int], dict]:
    """``(trajectory, step, k) -> {prompt, completion, prompt_ids, completion_ids, completion_mask}``.

    One entry per candidate of every batch the runner logged (ids ``None`` when not recorded).

    Only recorded lines whose actions equal the logged batch's actions are used (the last such
    line wins); a torn last line (a kill mid-write) is ignored.

    Raises:
        ValueError: a logged batch has no matching recorded line.
    """
    path = Path(run_dir) / PROMPTS_FILE
    recorded: dict[tuple[int, int], list[dict]] = {}
    if path.exists():
        for rec in json_lines(path.read_text(encoding="utf-8")):  # only "\n" ends a line (U+2028 in a response)
            recorded.setdefault((rec["traj"], rec["step"]), []).append(rec)
    out: dict[tuple[int, int, int], dict] = {}
    for r in RunLog(run_dir, create=False).read_records():
        if r.get("kind") != "batch":
            continue
        key = (r["traj"], r["step"])
        match = [rec for rec in recorded.get(key, []) if rec["actions"] == r["actions"]]
        if not match:
            raise ValueError(f"{run_dir}: no recorded prompt matches the logged batch {key}")
        rec = match[-1]
        n = len(rec["prompts"])
        for k in range(n):
            out[(key[0], key[1], k)] = {
                "prompt": rec["prompts"][k],
                "completion": rec["completions"][k],
                **{
                    f: (rec.get(f) or [None] * n)[k]
                    for f in ("prompt_ids", "completion_ids", "completion_mask")
                },
            }
    return out
