"""TinkerPolicy: sampling and LoRA training on the Tinker service (``tinker`` SDK).

The model is trained remotely (LoRA rank 32 by default, as in TTT-Discover): rollouts are turned
into ``tinker.types.Datum`` records and sent with the SDK's built-in losses:

* ``importance_sampling`` (TTT-Discover's update): per position of the shifted sequence
  ``target_tokens``, ``logprobs`` (behaviour log-probs of the sampler) and ``advantages``
  (KL-shaped token advantages; 0 on prompt and forced tokens) — :func:`rl_datums`;
* ``cross_entropy`` with per-token ``weights`` (IRFT's weighted SFT) — :func:`sft_datums`.

The KL term's base log-probs come from a sampling client of the base model
(``compute_logprobs``). The API key is read by the SDK from ``TINKER_API_KEY`` in the
environment, never from files. The conversions are tested against the SDK's types; the remote
service itself is not exercised by this project's tests.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from discoverygym.agents.policies.llm import (
    BackendUnavailable,
    LLMSample,
    check_edit_format,
    context_messages,
    encode_chat,
    make_sample,
)

__all__ = ["TinkerPolicy", "rl_datums", "sft_datums"]


def _types() -> Any:
    try:
        from tinker import types
    except ImportError:
        raise BackendUnavailable("TinkerPolicy needs the tinker SDK: pip install 'discoverygym[tinker]'") from None
    return types


def _check_reachable(timeout_s: float = 15.0) -> None:
    """Fail fast when the Tinker service's host cannot be reached (the SDK retries for minutes).

    Raises:
        BackendUnavailable: no route / DNS failure / refused connection to the service.
    """
    import socket
    from urllib.parse import urlsplit

    try:
        from tinker.lib.base_url import resolve_base_url

        base = resolve_base_url()
    except Exception:  # noqa: BLE001 - older SDKs: the environment override or the documented default
        base = os.environ.get("TINKER_BASE_URL") or "https://tinker.thinkingmachines.dev"
    parts = urlsplit(base)
    if not parts.hostname:
        raise BackendUnavailable(f"the Tinker service is not available: TINKER_BASE_URL {base!r} is not a URL")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout_s).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise BackendUnavailable(f"the Tinker service is not available: cannot reach {base} ({reason}); "
                                 "check the network or TINKER_BASE_URL") from None


def _shifted(sample: LLMSample) -> tuple[list[int], list[int], int]:
    """``(model input ids, target ids, index of the first completion target)`` of one sample."""
    tokens = list(sample.prompt_ids) + list(sample.completion_ids)
    return tokens[:-1], tokens[1:], len(sample.prompt_ids) - 1


def rl_datums(samples: Sequence[LLMSample], token_adv: Any) -> list[Any]:
    """Tinker ``importance_sampling`` data for ``samples``.

    Args:
        samples: LLM samples (prompt ids P, completion ids T, behaviour log-probs, mask).
        token_adv: ``[B, T_max]`` array-like of token advantages (already KL-shaped; only the first
            ``T_i`` entries of row i are read; masked tokens are set to 0).

    Returns:
        One ``tinker.types.Datum`` per sample: ``model_input`` = prompt + completion without its
        last token; ``loss_fn_inputs`` ``target_tokens`` (int64), ``logprobs`` and ``advantages``
        (float32), all of length ``P + T − 1``, zero on prompt positions.

    Raises:
        BackendUnavailable: the SDK is not installed.
    """
    types = _types()
    adv = np.asarray(token_adv, dtype=np.float32)
    out = []
    for i, s in enumerate(samples):
        inputs, targets, start = _shifted(s)
        n = len(targets)
        logprobs = np.zeros(n, dtype=np.float32)
        advantages = np.zeros(n, dtype=np.float32)
        t = len(s.completion_ids)
        mask = np.asarray(s.mask, dtype=bool)
        logprobs[start:start + t] = np.where(mask, np.asarray(s.logprobs, dtype=np.float32), 0.0)
        advantages[start:start + t] = np.where(mask, adv[i, :t], 0.0)
        out.append(types.Datum(
            model_input=types.ModelInput.from_ints(inputs),
            loss_fn_inputs={"target_tokens": types.TensorData.from_numpy(np.asarray(targets, dtype=np.int64)),
                            "logprobs": types.TensorData.from_numpy(logprobs),
                            "advantages": types.TensorData.from_numpy(advantages)}))
    return out


def sft_datums(samples: Sequence[LLMSample], weights: Sequence[float]) -> list[Any]:
    """Tinker ``cross_entropy`` data: completion tokens weighted by the sample's weight (IRFT).

    Args:
        samples: LLM samples; weights: one float per sample (TES: 1 for the top R% nodes, else 0).

    Returns:
        ``Datum`` per sample with ``target_tokens`` (int64) and ``weights`` (float32, the sample's
        weight on sampled completion tokens, 0 on prompt and forced tokens).
    """
    types = _types()
    out = []
    for s, w in zip(samples, weights):
        inputs, targets, start = _shifted(s)
        wt = np.zeros(len(targets), dtype=np.float32)
        wt[start:start + len(s.completion_ids)] = np.asarray(s.mask, dtype=np.float32) * float(w)
        out.append(types.Datum(
            model_input=types.ModelInput.from_ints(inputs),
            loss_fn_inputs={"target_tokens": types.TensorData.from_numpy(np.asarray(targets, dtype=np.int64)),
                            "weights": types.TensorData.from_numpy(wt)}))
    return out


class TinkerPolicy:
    """Sampling + LoRA training of ``model`` on the Tinker service (see the module docstring).

    Args:
        model: Tinker base model name (e.g. ``"Qwen/Qwen3-8B"``).
        lora_rank: LoRA rank (32); lr, adam_beta1, adam_beta2, adam_eps: Adam (TTT-Discover App. A).
        max_new_tokens, temperature: sampling settings; system: optional system message.
        edit_format: ``"full"`` or ``"diff"`` (SEARCH/REPLACE blocks; :mod:`~discoverygym.agents.policies.edits`).
        seed: seeds the LoRA initialisation on the service.

    Raises:
        BackendUnavailable: SDK missing, ``TINKER_API_KEY`` not set, or the service refused / cannot
            be reached (bad key, unknown model, no network).
    """

    action_modes = ("code",)

    def __init__(self, model: str, *, lora_rank: int = 32, max_new_tokens: int = 1024, temperature: float = 1.0,
                 lr: float = 4e-5, adam_beta1: float = 0.9, adam_beta2: float = 0.95, adam_eps: float = 1e-8,
                 system: str | None = None, seed: int = 0, edit_format: str = "full") -> None:
        self.edit_format = check_edit_format(edit_format)
        _types()
        import tinker

        if not os.environ.get("TINKER_API_KEY"):
            raise BackendUnavailable("TinkerPolicy needs the TINKER_API_KEY environment variable: set "
                                     "TINKER_API_KEY (never put it in a file)")
        self.name = f"tinker:{model}"
        self.model_name = model
        self.max_new_tokens, self.temperature, self.system = int(max_new_tokens), float(temperature), system
        self.adam = {"learning_rate": lr, "beta1": adam_beta1, "beta2": adam_beta2, "eps": adam_eps}
        try:
            self.service = tinker.ServiceClient()
            _check_reachable()
            self.training = self.service.create_lora_training_client(base_model=model, rank=lora_rank, seed=seed)
            self.tokenizer = self.training.get_tokenizer()
            self.base_sampler = self.service.create_sampling_client(base_model=model)
        except tinker.TinkerError as exc:
            text = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise BackendUnavailable(f"the Tinker service is not available for {model!r}: {text}") from None
        self.sampler = self.base_sampler
        self.version = 0
        self._stats: dict[str, float] = {}

    def sample(self, contexts: Sequence[Any], n: int, rng: np.random.Generator) -> list[list[LLMSample]]:
        """``n`` samples per context (all requests submitted before waiting on any)."""
        types = _types()
        futures, prompts = [], []
        for ctx in contexts:
            messages = context_messages(ctx, self.system, self.edit_format)
            ids = encode_chat(self.tokenizer, messages)
            params = types.SamplingParams(max_tokens=self.max_new_tokens, temperature=self.temperature,
                                          seed=int(rng.integers(2**31 - 1)), stop=[self.tokenizer.eos_token_id])
            futures.append(self.sampler.sample(prompt=types.ModelInput.from_ints(ids), num_samples=n,
                                               sampling_params=params))
            prompts.append((messages, ids, getattr(ctx.problem, "language", "python") or "python", ctx))
        out = []
        for c, (fut, (messages, ids, language, ctx)) in enumerate(zip(futures, prompts)):
            group = []
            for seq in fut.result().sequences:
                toks, lps = list(seq.tokens), [float(x) for x in seq.logprobs]
                text = self.tokenizer.decode(toks, skip_special_tokens=True)
                group.append(make_sample(text, language, prompt_ids=list(ids), completion_ids=toks, logprobs=lps,
                                         mask=[True] * len(toks), finish_reason=seq.stop_reason, context=c,
                                         prompt=messages[-1]["content"], ctx=ctx, edit_format=self.edit_format))
            out.append(group)
        return out

    def base_logprobs(self, samples: Sequence[LLMSample]) -> Any:
        """``[B, T]`` float32 tensor of base-model log-probs of each completion (``compute_logprobs``)."""
        import torch

        types = _types()
        width = max([len(s.completion_ids) for s in samples] + [1])
        out = torch.zeros(len(samples), width)
        futures = [self.base_sampler.compute_logprobs(types.ModelInput.from_ints(list(s.prompt_ids)
                                                                                 + list(s.completion_ids)))
                   for s in samples]
        for i, (s, fut) in enumerate(zip(samples, futures)):
            values = fut.result()[len(s.prompt_ids):]
            out[i, : len(values)] = torch.tensor([0.0 if v is None else float(v) for v in values])
        return out

    def train_step(self, samples: Sequence[LLMSample], advantages: Any, *, kl_coef: float = 0.1) -> dict[str, float]:
        """KL-shaped ``importance_sampling`` forward-backward + one Adam step, then a new sampler."""
        import torch

        from discoverygym.agents.losses import pad_behaviour, token_advantages

        types = _types()
        old_lp, mask = pad_behaviour(samples)
        base = self.base_logprobs(samples) if kl_coef else old_lp
        a_tok, delta = token_advantages(torch.as_tensor(advantages), old_lp, base, mask, kl_coef)
        result = self.training.forward_backward(rl_datums(samples, a_tok.numpy()), "importance_sampling").result()
        self.training.optim_step(types.AdamParams(**self.adam)).result()
        self.version += 1
        self.sampler = self.training.save_weights_and_get_sampling_client(name=f"step-{self.version}")
        n_tok = int(mask.sum())
        self._stats = {"kl": float(delta[mask].mean()) if n_tok else 0.0}
        loss = float(result.metrics.get("loss:sum", 0.0)) if getattr(result, "metrics", None) else 0.0
        return {"loss": loss, "kl": self._stats["kl"], "tokens": n_tok, "grad_norm": float("nan")}

    def stats(self) -> dict[str, float]:
        """Scalars of the last update."""
        return dict(self._stats)

    def save_adapter(self, path: str | os.PathLike) -> Path:
        """Save sampler weights on the service; writes ``{"tinker_path": ...}`` to ``path/tinker.json``."""
        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        saved = self.training.save_weights_for_sampler(name=f"adapter-{self.version}").result()
        (out / "tinker.json").write_text(json.dumps({"tinker_path": saved.path, "model": self.model_name}))
        return out

    def save_checkpoint(self, path: str | os.PathLike) -> None:
        """Save weights + optimizer state on the service; the path goes to ``path/tinker_state.json``."""
        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        saved = self.training.save_state(name=f"state-{self.version}").result()
        (out / "tinker_state.json").write_text(json.dumps({"tinker_path": saved.path, "version": self.version}))

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restore :meth:`save_checkpoint` (weights and optimizer) and refresh the sampler."""
        state = json.loads((Path(path) / "tinker_state.json").read_text())
        self.training.load_state_with_optimizer(state["tinker_path"]).result()
        self.version = int(state["version"])
        self.sampler = self.training.save_weights_and_get_sampling_client(name=f"resume-{self.version}")
