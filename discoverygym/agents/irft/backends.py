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
import importlib.util
import inspect
import os
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from discoverygym.agents.irft.sft import SFTSettings, run_weighted_sft
from discoverygym.errors import BackendUnavailable
from discoverygym.policy import llm_backend, split_spec

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


def _tinker_preflight(timeout_s: float = 10.0) -> None:
    """Fail fast where the Tinker SDK would retry for minutes: no API key, or no route to the service.

    Raises:
        ValueError: ``TINKER_API_KEY`` is not set.
        BackendUnavailable: the SDK is not installed, or the service's host does not accept a
            connection within ``timeout_s``.
    """
    if importlib.util.find_spec("tinker") is None:
        raise BackendUnavailable("tinker: policies need the tinker SDK: pip install 'discoverygym[tinker]'")
    if not os.environ.get("TINKER_API_KEY"):
        raise ValueError("tinker: policies need an API key: set TINKER_API_KEY in the environment")
    try:
        from tinker.lib.base_url import resolve_base_url

        url = resolve_base_url()
    except ImportError:  # older SDKs
        url = os.environ.get("TINKER_BASE_URL") or "https://tinker.thinkingmachines.dev/services/tinker-prod"
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=timeout_s).close()
    except OSError as exc:
        raise BackendUnavailable(f"the Tinker service at {url} is unreachable: {exc}") from None


def make_backend(spec: str, kwargs: dict | None = None) -> Backend:
    """Build the generator of ``spec`` (``hf:...`` or ``tinker:...``) with constructor ``kwargs``.

    The policy class is the backend's entry in the one backend table
    (:mod:`discoverygym.agents.policies.backends`); its ``post_train`` flag says whether IRFT can
    train it.

    Raises:
        ValueError: another backend prefix, a malformed spec, ``policy_kwargs`` the backend does
            not take, or (``tinker:``) no ``TINKER_API_KEY``.
        BackendUnavailable: (:class:`discoverygym.errors.BackendUnavailable`, exit 3) the backend's
            extra is not installed (message names it) or the Tinker service is unreachable.
        OSError: the model cannot be loaded (``ModelUnavailable``).
    """
    backend, target = split_spec(spec)
    entry = llm_backend(backend)
    if not entry.post_train or backend not in _GENERATORS:
        raise ValueError(f"post-training needs a trainable generator: hf:PATH or tinker:MODEL, got {spec!r}")
    generator, preflight = _GENERATORS[backend]
    preflight()
    try:
        cls = entry.policy()
        try:
            inspect.signature(cls).bind(os.fspath(target), **(kwargs or {}))
        except TypeError as exc:
            raise ValueError(f"policy_kwargs of {spec!r}: {exc}") from None
        policy = cls(os.fspath(target), **(kwargs or {}))
    except Exception as exc:
        if type(exc).__module__.split(".")[0] == "tinker":
            name = type(exc).__name__
            if "Connection" in name or "Timeout" in name:
                raise BackendUnavailable(f"the Tinker service is unreachable: {exc}") from None
            if "Authentication" in name or "PermissionDenied" in name:
                raise ValueError(f"tinker: the service refused TINKER_API_KEY: {exc}") from None
        raise
    return generator(policy)


def _hf_preflight() -> None:
    """Refuse ``hf:`` post-training at once when a library of the ``llm`` extra is missing.

    Raises:
        BackendUnavailable: torch, transformers, peft, trl or datasets is not installed.
    """
    missing = [m for m in ("torch", "transformers", "peft", "trl", "datasets") if importlib.util.find_spec(m) is None]
    if missing:
        raise BackendUnavailable(f"post-training hf: models needs {', '.join(missing)}: pip install 'discoverygym[llm]'")


#: backend name -> (the generator that wraps its policy, the check run before it is built); the
#: backends of the table whose ``post_train`` flag is set.
_GENERATORS: dict[str, tuple[Callable[[Any], Backend], Callable[[], None]]] = {
    "hf": (HFBackend, _hf_preflight),
    "tinker": (TinkerBackend, _tinker_preflight),
}
