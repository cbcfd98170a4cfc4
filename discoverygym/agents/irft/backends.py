"""The generator IRFT trains: one small adapter per policy backend (sample, train, save, load).

* ``hf:PATH_OR_ID``: :class:`~discoverygym.agents.policies.hf.HFPolicy` (transformers + peft LoRA);
  training is :func:`~discoverygym.agents.irft.sft.run_weighted_sft` on ``policy.model`` (the
  PeftModel: only the adapter trains); checkpoints are adapter directories.
* ``tinker:MODEL``: :class:`~discoverygym.agents.policies.tinker_policy.TinkerPolicy`; training is
  :func:`~discoverygym.agents.irft.tinker_sft.tinker_weighted_sft` on its training client, then
  the policy samples from the new weights; checkpoints are Tinker state paths
  (``tinker_state.json``, written by the policy).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from discoverygym.agents.irft.sft import SFTSettings, run_weighted_sft

__all__ = ["Backend", "HFBackend", "TinkerBackend", "make_backend"]


class Backend(Protocol):
    """What the IRFT loop needs from a generator.

    Attributes:
        policy: the search policy (``name``, ``sample(contexts, n, rng)``).
    """

    policy: Any

    def train(
        self,
        rows: Sequence[dict],
        settings: SFTSettings,
        scratch: Path,
        on_log: Callable[[int, dict], None] | None,
    ) -> dict:
        """Weighted SFT on buffer rows (``prompt``, ``completion``, token ids, ``weight``); returns a summary."""

    def save(self, path: Path) -> Path:
        """Write the current generator to ``path`` (a directory); returns it."""

    def load(self, path: Path) -> None:
        """Restore a generator written by :meth:`save`."""


class HFBackend:
    """A local transformers + peft generator (``hf:``).

    Args:
        policy: an :class:`~discoverygym.agents.policies.hf.HFPolicy` (``model``, ``tokenizer``,
            ``save_adapter``, ``load_adapter``).
    """

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def train(
        self,
        rows: Sequence[dict],
        settings: SFTSettings,
        scratch: Path,
        on_log: Callable[[int, dict], None] | None = None,
    ) -> dict:
        """:func:`~discoverygym.agents.irft.sft.run_weighted_sft` on the policy's PeftModel."""
        return run_weighted_sft(
            self.policy.model, self.policy.tokenizer, rows, settings, scratch, on_log=on_log
        )

    def save(self, path: Path) -> Path:
        """The LoRA adapter into ``path``."""
        return Path(self.policy.save_adapter(path))

    def load(self, path: Path) -> None:
        """Load the LoRA adapter saved in ``path``."""
        self.policy.load_adapter(path)


class TinkerBackend:
    """A Tinker generator (``tinker:``): trains remotely through the policy's training client.

    Args:
        policy: a :class:`~discoverygym.agents.policies.tinker_policy.TinkerPolicy` (``training``:
            the LoRA training client, ``tokenizer``, ``sampler``, ``version``,
            ``save_checkpoint(path)`` / ``load_checkpoint(path)``).
    """

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def train(
        self,
        rows: Sequence[dict],
        settings: SFTSettings,
        scratch: Path,
        on_log: Callable[[int, dict], None] | None = None,
    ) -> dict:
        """:func:`~discoverygym.agents.irft.tinker_sft.tinker_weighted_sft`, then a sampler of the new weights."""
        from discoverygym.agents.irft.tinker_sft import tinker_weighted_sft

        p = self.policy
        out = tinker_weighted_sft(p.training, p.tokenizer, rows, settings, on_log=on_log)
        if out["steps"]:
            p.version += 1
            p.sampler = p.training.save_weights_and_get_sampling_client(name=f"irft-{p.version}")
        return out

    def save(self, path: Path) -> Path:
        """Weights and optimizer state saved on the service; their path in ``path/tinker_state.json``."""
        self.policy.save_checkpoint(path)
        return Path(path)

    def load(self, path: Path) -> None:
        """Restore :meth:`save` (and sample from the restored weights)."""
        self.policy.load_checkpoint(path)


def make_backend(spec: str, kwargs: dict | None = None) -> Backend:
    """Build the generator of ``spec`` (``hf:...`` or ``tinker:...``) with constructor ``kwargs``.

    Raises:
        ValueError: another backend prefix or a malformed spec.
        ImportError: the backend's extra is not installed (message names it).
    """
    from discoverygym.agents.policies.llm import BACKENDS, split_spec

    backend, target = split_spec(spec)
    if backend not in ("hf", "tinker"):
        raise ValueError(f"post-training needs a trainable generator: hf:PATH or tinker:MODEL, got {spec!r}")
    module, attr = BACKENDS[backend].split(":")
    policy = getattr(importlib.import_module(module), attr)(os.fspath(target), **(kwargs or {}))
    return HFBackend(policy) if backend == "hf" else TinkerBackend(policy)
