"""The one backend table: every policy backend, what samples, what learns, what it needs.

One :class:`~discoverygym.policy.LLMBackend` entry per LLM backend (the prefix of a ``--policy``
spec ``backend:target``):

============  ===========================================  =====================  ========  ============
spec          sampler                                      learner (``train``)    chat      extra
============  ===========================================  =====================  ========  ============
``hf:M``      :class:`~.hf.HFPolicy` (transformers + peft)  the same HFPolicy      no        ``llm``
``openai:U``  :class:`~.openai_server.OpenAIServerPolicy`   a local HFPolicy       no        ``vllm``
``vllm:M``    :class:`~.vllm_engine.VLLMPolicy`             a local HFPolicy       no        ``vllm``
``tinker:M``  :class:`~.tinker_policy.TinkerPolicy`         the same TinkerPolicy  no        ``tinker``
``litellm:M`` :class:`~.chat.LiteLLMPolicy` (hosted chat)   none (search only)     yes       ``chat``
============  ===========================================  =====================  ========  ============

The numeric policies (``mutation``, ``gaussian``, ``operators``) are registered here too. Importing
``discoverygym`` imports this module (as it registers the envs), so the ground-floor registry
(:data:`discoverygym.policy.LLM_BACKENDS`, :data:`discoverygym.policy.POLICIES`) is filled before
search or training looks anything up, while :mod:`discoverygym.policy` itself points at nothing
above it. The classes are imported only when an entry's ``policy`` loader is called, and those
imports are ordinary ``import`` statements that the import-layer test reads.

``build_learners`` (``discoverygym train``), IRFT's ``make_backend`` (``discoverygym post-train``)
and the CLI help texts (:func:`~discoverygym.policy.llm_specs`) are lookups in this table.
"""

from __future__ import annotations

from typing import Any

from discoverygym.policy import LLMBackend, register_backend, register_policy

__all__ = ["BACKENDS"]


def _hf_policy() -> type:
    from discoverygym.agents.policies.hf import HFPolicy

    return HFPolicy


def _openai_policy() -> type:
    from discoverygym.agents.policies.openai_server import OpenAIServerPolicy

    return OpenAIServerPolicy


def _vllm_policy() -> type:
    from discoverygym.agents.policies.vllm_engine import VLLMPolicy

    return VLLMPolicy


def _tinker_policy() -> type:
    from discoverygym.agents.policies.tinker_policy import TinkerPolicy

    return TinkerPolicy


def _litellm_policy() -> type:
    from discoverygym.agents.policies.chat import LiteLLMPolicy

    return LiteLLMPolicy


def _hf_kwargs(config: Any) -> dict[str, Any]:
    """The :class:`~.hf.HFPolicy` arguments of a :class:`~discoverygym.agents.config.TrainConfig`."""
    llm = config.llm
    return {"device": llm.device, "lora_rank": llm.lora_rank, "max_new_tokens": llm.max_new_tokens,
            "temperature": llm.temperature, "thinking_budget": llm.thinking_budget,
            "micro_batch": llm.micro_batch, "lr": config.lr, "adam_beta1": config.adam_beta1,
            "adam_beta2": config.adam_beta2, "adam_eps": config.adam_eps, "seed": config.seed,
            "edit_format": llm.edit_format}


def _hf_learners(config: Any, target: str) -> tuple[Any, Any]:
    """``hf:``: one :class:`~.hf.HFPolicy` samples and learns (LoRA, locally)."""
    llm = config.llm
    policy = _hf_policy()(target, warm_start=llm.warm_start, shared_prompt=llm.shared_prompt, **_hf_kwargs(config))
    return policy, policy


def _tinker_learners(config: Any, target: str) -> tuple[Any, Any]:
    """``tinker:``: one :class:`~.tinker_policy.TinkerPolicy` samples and learns (remotely)."""
    llm = config.llm
    policy = _tinker_policy()(target, lora_rank=llm.lora_rank, max_new_tokens=llm.max_new_tokens,
                              temperature=llm.temperature, lr=config.lr, adam_beta1=config.adam_beta1,
                              adam_beta2=config.adam_beta2, adam_eps=config.adam_eps, seed=config.seed,
                              edit_format=llm.edit_format)
    return policy, policy


def _openai_learners(config: Any, target: str) -> tuple[Any, Any]:
    """``openai:URL``: the server samples, a local HFPolicy of ``train_model`` learns.

    Raises:
        ValueError: a malformed URL, or no ``train_model``.
        BackendUnavailable: the server cannot be reached (checked before the learner loads).
    """
    from discoverygym.agents.policies.openai_server import check_url, probe_server

    llm = config.llm
    check_url(target)  # a malformed URL is refused before the learner loads
    if not llm.train_model:
        raise ValueError("--policy openai:URL trains a local copy: pass --train-model PATH_OR_ID "
                         "(the model the server serves)")
    probe_server(target)  # an unreachable server is reported before the learner loads
    learner = _hf_policy()(llm.train_model, **_hf_kwargs(config))
    sampler = _openai_policy()(target, tokenizer=learner.tokenizer, max_new_tokens=llm.max_new_tokens,
                               temperature=llm.temperature, edit_format=llm.edit_format)
    return sampler, learner


def _vllm_learners(config: Any, target: str) -> tuple[Any, Any]:
    """``vllm:M``: an in-process vLLM engine samples, a local HFPolicy (``train_model`` or ``M``) learns."""
    llm = config.llm
    sampler = _vllm_policy()(target, max_new_tokens=llm.max_new_tokens, temperature=llm.temperature,
                             max_lora_rank=llm.lora_rank, edit_format=llm.edit_format)
    learner = _hf_policy()(llm.train_model or target, **_hf_kwargs(config))
    return sampler, learner


_SAMPLING = ("max_new_tokens", "temperature", "edit_format")

#: the LLM backends, in the order help texts list them.
BACKENDS: tuple[LLMBackend, ...] = (
    LLMBackend("hf", "PATH_OR_ID", "transformers + LoRA, trains locally on CPU or CUDA", _hf_policy,
               learners=_hf_learners, post_train=True, extra="llm",
               settings=(*_SAMPLING, "device", "lora_rank", "thinking_budget", "micro_batch", "warm_start",
                         "shared_prompt")),
    LLMBackend("openai", "URL", "an OpenAI-compatible server (vLLM) samples, a local --train-model learns",
               _openai_policy, learners=_openai_learners, extra="vllm",
               settings=(*_SAMPLING, "train_model", "device", "lora_rank", "micro_batch", "OPENAI_API_KEY")),
    LLMBackend("vllm", "MODEL", "an in-process vLLM engine samples (Linux + CUDA), a local HF copy learns",
               _vllm_policy, learners=_vllm_learners, extra="vllm",
               settings=(*_SAMPLING, "train_model", "device", "lora_rank", "micro_batch")),
    LLMBackend("tinker", "MODEL", "the Tinker service samples and trains remotely", _tinker_policy,
               learners=_tinker_learners, post_train=True, extra="tinker",
               settings=(*_SAMPLING, "lora_rank", "TINKER_API_KEY", "TINKER_BASE_URL")),
    LLMBackend("litellm", "MODEL", "hosted chat models through LiteLLM: text only, search only", _litellm_policy,
               chat=True, extra="chat", settings=("temperature", "max_tokens", "api_base", "max_concurrency")),
)

for _backend in BACKENDS:
    register_backend(_backend)

register_policy("mutation", "discoverygym.agents.policies.mutation:GaussianMutation")
register_policy("gaussian", "discoverygym.agents.policies.gaussian:GaussianPolicy")
register_policy("operators", "discoverygym.agents.policies.operators:OperatorPolicy")
