"""HFPolicy: a transformers causal LM with a peft LoRA adapter, sampled and trained in-process.

Sampling is an explicit loop over the KV cache (one prompt's ``n`` samples per batch, so no
padding): at every step the temperature-scaled distribution ``softmax(logits / T)`` is sampled
with a torch generator seeded from the caller's ``numpy`` generator, and the chosen token's
log-probability under that distribution is recorded: these are the behaviour log-probs of the
importance-sampling loss, and equal a fresh forward pass of prompt + completion (tested to 1e-4).

Training (:meth:`HFPolicy.train_step`) is TTT-Discover's update (App. A; docs/algorithms.md):
base-model log-probs with the adapter disabled, token-level KL shaping, importance-sampling loss
summed over action tokens, gradient accumulation over micro-batches, one Adam step
(lr 4e-5, β = (0.9, 0.95), eps 1e-8 by default). Only LoRA weights are trainable.

Requires the ``llm`` extra (``pip install 'discoverygym[llm]'``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from discoverygym.agents.policies.edits import answer_prefix, diff_answer_complete
from discoverygym.agents.policies.llm import (
    BackendUnavailable,
    LLMSample,
    ModelUnavailable,
    check_edit_format,
    context_messages,
    encode_chat,
    make_sample,
)
from discoverygym.agents.policies.prefix import cache_of
from discoverygym.agents.responses import FORCE_ANSWER, answer_complete, needs_forcing
from discoverygym.envs.operators.deadline import expired

__all__ = ["HFPolicy", "load_model_and_tokenizer"]


def _imports() -> tuple[Any, Any, Any]:
    try:
        import peft
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise BackendUnavailable(f"HFPolicy needs the llm extra: pip install 'discoverygym[llm]' ({exc})") from None
    return torch, transformers, peft


def _release_freed() -> None:
    """Hand the C heap's free pages back to the system (glibc ``malloc_trim(0)``; a no-op elsewhere).

    Why: an update's forward and backward passes free and reallocate activations of many sizes (a
    2.4 MB hidden state per layer kept, 7 MB MLP activations, 48 MB logit chunks); glibc's heap
    keeps freed blocks resident, so without a trim the process's RSS grew 0.8 GB above what its
    tensors held in one SmolLM2 update of a 1.1 k-token sequence, and kept growing with every
    micro-batch (2.2 GB for one sequence, 2.9 GB for eight). The update trims after the reference
    pass and after each micro-batch's forward and backward pass. (Serving every block of 1 MiB or
    more with its own ``mmap`` kept the peak lower still but cost 38 % more CPU time in the update.)
    Source: ours (issue 49), on glibc's documented ``malloc_trim``.
    """
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    """glibc as a ``ctypes.CDLL`` when it has ``malloc_trim`` (Linux), else ``None``."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 - absent in musl and others: AttributeError
    except (OSError, AttributeError):
        return None
    return libc


def _resolve_device(device: str) -> str:
    torch, _, _ = _imports()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _looks_like_path(model: str) -> bool:
    """Whether ``model`` names a local path rather than a hub id (``org/name``)."""
    text = str(model)
    return (text.startswith(("/", "./", "../", "~", ".\\")) or text in (".", "..") or Path(text).exists()
            or text.count("/") > 1 or text.endswith("/"))


def _check_local_model(model: str | os.PathLike) -> None:
    """Clear one-line errors for local model paths (missing, a file, a directory without a model).

    Raises:
        ModelUnavailable: the message names the path.
    """
    if not _looks_like_path(str(model)):
        return
    path = Path(str(model)).expanduser()
    if not path.exists():
        raise ModelUnavailable(f"no such directory: {model} (hf: takes a model directory or a hub id org/name)")
    if not path.is_dir():
        raise ModelUnavailable(f"{model} is not a directory (hf: takes a model directory or a hub id org/name)")
    if not (path / "config.json").is_file():
        raise ModelUnavailable(f"no model files (config.json) in {model}")
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        config = None
    if not isinstance(config, dict) or "model_type" not in config:
        raise ModelUnavailable(f"no model files in {model} (its config.json is not a model config: no model_type)")
    weights = ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json", "*.pt", "*.gguf")
    if not any(any(path.glob(pattern)) for pattern in weights):
        raise ModelUnavailable(f"no model weights (*.safetensors / *.bin) in {model}")


def load_model_and_tokenizer(model: str | os.PathLike, *, device: str = "cpu", dtype: str = "auto") -> tuple[Any, Any]:
    """Load a causal LM and its tokenizer from a local directory or a hub id.

    Args:
        model: local directory, a Hugging Face hub id (``org/name``), or the name of an embedded
            model (``smollm2``: :mod:`~discoverygym.agents.policies.embedded`, offline).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
        dtype: ``"auto"`` (float32 on CPU, bfloat16 on CUDA), ``"float32"``, ``"bfloat16"``, ``"float16"``.

    Returns:
        ``(model in eval mode on device, tokenizer)``.

    Raises:
        ModelUnavailable: a local path that does not exist, is not a directory or has no
            ``config.json``; not a local directory and the hub (or its cache, offline) does not have
            it; the message names the model.
        BackendUnavailable: an embedded model whose package is not installed (names the install).
    """
    torch, transformers, _ = _imports()
    if dtype == "auto":
        dtype = "float32" if str(device).startswith("cpu") else "bfloat16"
    torch_dtype = getattr(torch, dtype)
    from discoverygym.agents.policies.embedded import resolve_model

    model = resolve_model(model)  # hf:smollm2 (and its hub id, offline): the converted embedded model
    _check_local_model(model)
    if str(model).startswith("~"):
        model = Path(str(model)).expanduser()
    local = Path(model).is_dir()
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(model), local_files_only=offline or local)
        lm = transformers.AutoModelForCausalLM.from_pretrained(str(model), dtype=torch_dtype,
                                                               local_files_only=offline or local)
    except (OSError, ValueError) as exc:
        where = "local directory" if local else ("hub id (offline: HF_HUB_OFFLINE is set)" if offline else "hub id")
        text = " ".join(str(exc).split())
        raise ModelUnavailable(f"could not load model {str(model)!r} as a {where}: {text[:400]}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return lm.to(device).eval(), tokenizer


def adapter_shape(adapter: str | os.PathLike | None, lora_rank: int | None, lora_alpha: float | None,
                  target_modules: Any) -> tuple[int, float | None, Any]:
    """The LoRA rank, alpha and target modules of a policy that loads ``adapter`` (or of a fresh one).

    A saved adapter's ``adapter_config.json`` supplies what is not given, so that
    ``--policy-kwargs '{"adapter": DIR}'`` loads an adapter of any rank and targets (e.g. a warm start
    trained at rank 16 on q/k/v/o); without an adapter the defaults are rank 32 (TTT-Discover App. A)
    on all linear layers.

    Args:
        adapter: a saved adapter directory, or ``None``.
        lora_rank, lora_alpha, target_modules: what the caller asked for (``None``: not given).

    Returns:
        ``(rank, alpha or None, target_modules)``.

    Raises:
        ValueError: a given rank or target list that differs from the adapter's own.
    """
    if adapter is None or not (Path(adapter) / "adapter_config.json").is_file():
        return lora_rank or 32, lora_alpha, target_modules or "all-linear"
    saved = json.loads((Path(adapter) / "adapter_config.json").read_text())
    saved_targets = saved.get("target_modules")
    if isinstance(saved_targets, list):
        saved_targets = sorted(saved_targets)
    if lora_rank is not None and int(lora_rank) != int(saved["r"]):
        raise ValueError(f"the adapter in {adapter} has rank {saved['r']}, not lora_rank={lora_rank} "
                         f"(leave lora_rank out to use the adapter's)")
    if isinstance(target_modules, (list, tuple, set)) and sorted(target_modules) != saved_targets:
        raise ValueError(f"the adapter in {adapter} targets {saved_targets}, not {target_modules!r} "
                         f"(leave target_modules out to use the adapter's)")
    return int(saved["r"]), lora_alpha if lora_alpha is not None else saved.get("lora_alpha"), saved_targets


def merge_adapter(base: Any, path: str | os.PathLike) -> Any:
    """``base`` with the LoRA adapter saved in ``path`` merged into its weights (``peft``'s
    ``merge_and_unload``): a plain model again, on which a fresh adapter can be made.

    Raises:
        FileNotFoundError: ``path`` holds no ``adapter_config.json``.
    """
    _, _, peft = _imports()
    folder = Path(path)
    if not (folder / "adapter_config.json").is_file():
        raise FileNotFoundError(f"no adapter in {folder} (adapter_config.json missing)")
    return peft.PeftModel.from_pretrained(base, str(folder)).merge_and_unload()


class HFPolicy:
    """LLM policy on transformers + peft LoRA (sampling with log-probs, TTT-Discover LoRA training).

    Args:
        model: local directory or hub id of a causal LM (its tokenizer alongside).
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``.
        dtype: see :func:`load_model_and_tokenizer`.
        lora_rank: LoRA rank (default: ``adapter``'s own, else 32 as in TTT-Discover); lora_alpha: scaling
            numerator (default: the adapter's, else = rank); see :func:`adapter_shape`.
        target_modules: peft target modules (default: ``adapter``'s own, else ``"all-linear"``).
        max_new_tokens: completion length limit (tokens, forced text included).
        temperature: sampling temperature (> 0; 1.0 in the paper).
        thinking_budget: tokens of phase 1 before "stop thinking, answer now" forcing (None = off).
        batch_size: most sequences generated together (the ``n`` samples of one prompt are chunked).
        micro_batch: sequences per forward/backward in training (gradient accumulation; default 1:
            the least memory, and no slower on a CPU, where one sequence already fills the cores).
        gradient_checkpointing: recompute each decoder layer's activations in the backward pass
            instead of keeping them (transformers' ``activation_checkpointing_enable``, non-reentrant
            ``torch.utils.checkpoint``; about one more forward pass of time for a fraction of the memory).
        logprob_chunk: completion tokens whose vocabulary-wide log-probs are made at once when
            scoring (see :meth:`token_logprobs`; ``0``: one pass over all logits kept).
        lr, adam_beta1, adam_beta2, adam_eps: Adam settings (TTT-Discover App. A).
        system: optional system message.
        edit_format: ``"full"`` (whole programs) or ``"diff"`` (SEARCH/REPLACE blocks against the
            parent; :mod:`~discoverygym.agents.policies.edits`).
        adapter: a saved adapter directory to start from (loaded into the trainable adapter; its rank
            and targets must match).
        warm_start: a saved adapter directory (e.g. ``discoverygym post-train --warmup``'s
            ``<run_dir>/adapter``) merged into the base weights before a fresh adapter is made, so that
            the warm model is π_base of the KL term and what training changes starts at zero.
        shared_prompt: an update whose samples all answer one prompt (a TTT-Discover group) runs the
            prompt once and the completions on its KV cache, in one pass (``micro_batch`` is not used
            then; :mod:`~discoverygym.agents.policies.prefix`): the same gradient, a fraction of the
            time when the prompt is longer than the answers (off by default: its activations are
            those of the whole group at once).
        seed: seeds the LoRA initialisation.
        stop_at_answer: end a response as soon as its code block closes and it reads as a finished
            answer (:func:`~discoverygym.agents.prompts.answer_complete`): the rules ask for one block
            and nothing after it, so later text would never run. ``diff`` format: as soon as its first
            SEARCH/REPLACE block closes, or a full program's block does
            (:func:`~discoverygym.agents.policies.edits.diff_answer_complete`), so that a block the
            token budget would cut never makes the answer unreadable.
        answer_prefix: text the answer is made to start with (appended to the prompt ids, not
            sampled, not trained on; the sample's ``text`` includes it). ``"auto"`` (default), for a
            model without a reasoning section and no ``thinking_budget``: the opening fence
            ```` ```python ```` (the problem's language), or in the ``diff`` format for a parent with a
            program the block's first line ``<<<<<<< SEARCH``
            (:func:`~discoverygym.agents.policies.edits.answer_prefix`), so that a small model writes
            code instead of prose; ``None`` or ``""``: none.

    Attributes:
        model: the ``peft.PeftModel``; tokenizer: the tokenizer; name: ``"hf:<model>"``.
        loss: the loss seam (:class:`~discoverygym.agents.losses.Loss`) applied per micro-batch;
            ``None`` = :func:`~discoverygym.agents.losses.importance_sampling_loss`.

    Raises:
        ModelUnavailable: the model cannot be loaded (message names it).
        ValueError: temperature <= 0, max_new_tokens < 1, thinking_budget >= max_new_tokens,
            micro_batch < 1 or logprob_chunk < 0.
        BackendUnavailable: transformers/peft/torch missing.
    """

    action_modes = ("code",)
    loss = None  # the loss seam (class docstring); Trainer(loss=...) sets it

    def __init__(
        self,
        model: str | os.PathLike,
        *,
        device: str = "auto",
        dtype: str = "auto",
        lora_rank: int | None = None,
        lora_alpha: float | None = None,
        target_modules: Any = None,
        max_new_tokens: int = 1024,
        temperature: float = 1.0,
        thinking_budget: int | None = None,
        batch_size: int = 16,
        micro_batch: int = 1,
        gradient_checkpointing: bool = True,
        logprob_chunk: int = 256,
        lr: float = 4e-5,
        adam_beta1: float = 0.9,
        adam_beta2: float = 0.95,
        adam_eps: float = 1e-8,
        system: str | None = None,
        adapter: str | os.PathLike | None = None,
        warm_start: str | os.PathLike | None = None,
        shared_prompt: bool = False,
        seed: int = 0,
        edit_format: str = "full",
        stop_at_answer: bool = True,
        answer_prefix: str | None = "auto",
    ) -> None:
        torch, _, peft = _imports()
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if thinking_budget is not None and not 0 < thinking_budget < max_new_tokens:
            raise ValueError(f"thinking_budget must be in (0, max_new_tokens={max_new_tokens}), got {thinking_budget}")
        self.name = f"hf:{model}"
        self.model_id = str(model)
        self.device = _resolve_device(device)
        self.temperature = float(temperature)
        self.max_new_tokens = int(max_new_tokens)
        self.thinking_budget = thinking_budget
        self.batch_size = int(batch_size)
        self.micro_batch = int(micro_batch)
        self.gradient_checkpointing = bool(gradient_checkpointing)
        self.logprob_chunk = int(logprob_chunk)
        if self.micro_batch < 1 or self.logprob_chunk < 0:
            raise ValueError(f"micro_batch must be >= 1 and logprob_chunk >= 0, got {micro_batch}, {logprob_chunk}")
        self.system = system
        self.edit_format = check_edit_format(edit_format)
        self.stop_at_answer = bool(stop_at_answer)
        self.answer_prefix = answer_prefix
        base, self.tokenizer = load_model_and_tokenizer(model, device=self.device, dtype=dtype)
        self.warm_start = None if warm_start is None else str(warm_start)
        self.shared_prompt = bool(shared_prompt)
        if warm_start is not None:
            base = merge_adapter(base, warm_start)
        lora_rank, lora_alpha, target_modules = adapter_shape(adapter, lora_rank, lora_alpha, target_modules)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            config = peft.LoraConfig(r=lora_rank, lora_alpha=lora_alpha or lora_rank, lora_dropout=0.0,
                                     target_modules=target_modules, task_type="CAUSAL_LM")
            self.model = peft.get_peft_model(base, config)
        if self.gradient_checkpointing:  # acts in train mode only (the update), not in sampling / scoring
            causal = self.model.get_base_model()  # transformers >= 5.x: activation_checkpointing_enable
            enable = getattr(causal, "activation_checkpointing_enable", None)
            if enable is not None:
                enable(activation_checkpointing_kwargs={"use_reentrant": False})
            else:
                causal.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.model.eval()
        if adapter is not None:
            self.load_adapter(adapter)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=lr, betas=(adam_beta1, adam_beta2), eps=adam_eps)
        self.language_default = "python"
        self._stats: dict[str, float] = {}

    # ------------------------------------------------------------------ sampling
    @property
    def eos_ids(self) -> set[int]:
        """Token ids that end a completion (tokenizer eos + generation config eos)."""
        ids = {self.tokenizer.eos_token_id}
        extra = getattr(self.model.generation_config, "eos_token_id", None)
        ids.update(extra if isinstance(extra, list) else [extra])
        return {i for i in ids if i is not None}

    def generate_ids(self, prompt_ids: Sequence[int], n: int, max_new_tokens: int,
                     generator: Any, stop: Callable[[list[int]], bool] | None = None,
                     ) -> list[tuple[list[int], list[float], bool]]:
        """Sample ``n`` continuations of one prompt (no adapter change, no gradient).

        The prompt is run once per chunk and its KV cache repeated for the chunk's rows; rows that
        ended are dropped from the batch (their cache rows removed), so finished sequences cost nothing.

        Args:
            prompt_ids: token ids (length ≥ 1).
            n: continuations (generated in chunks of ``batch_size``).
            max_new_tokens: token limit per continuation.
            generator: ``torch.Generator`` on the model's device.
            stop: called with a row's token ids after it sampled a token of :meth:`_stop_token_ids`
                (a fence character, `` ` `` or ``~``; in ``diff`` also an ``E``); ``True`` ends that
                row there (a stop condition such as "the answer's code block just closed"). ``None``:
                only end-of-sequence ends a row.

        Returns:
            ``n`` tuples ``(token ids, log-probs under softmax(logits / temperature), ended)``;
            ``ended`` means an end-of-sequence token was sampled (it is included, last) or ``stop``
            said so. Under a wall deadline (:func:`~discoverygym.envs.operators.deadline.deadline_at`,
            which the trainer sets in budget mode) every row stops after the token during which it
            passed (at least one token each), unended.
        """
        torch, _, _ = _imports()
        eos = torch.tensor(sorted(self.eos_ids), device=self.device)
        triggers = self._stop_token_ids() if stop is not None else frozenset()
        out: list[tuple[list[int], list[float], bool]] = []
        for start in range(0, n, self.batch_size):
            rows = min(self.batch_size, n - start)
            toks: list[list[int]] = [[] for _ in range(rows)]
            lps: list[list[float]] = [[] for _ in range(rows)]
            ended = [False] * rows
            live = list(range(rows))  # the row of each batch position
            with torch.no_grad():
                result = self.model(input_ids=torch.tensor([list(prompt_ids)], device=self.device), use_cache=True,
                                    logits_to_keep=1)  # the last position's logits only, not [P, vocab]
                key, cache = self._cache_of(result)
                if rows > 1:
                    cache.batch_repeat_interleave(rows)
                logits = result.logits[:, -1, :].expand(rows, -1)
                for t in range(max_new_tokens):
                    logp = torch.log_softmax(logits.float() / self.temperature, dim=-1)
                    tok = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(1)
                    lp = logp.gather(1, tok[:, None]).squeeze(1).tolist()
                    finished = torch.isin(tok, eos).tolist()
                    keep = []
                    for j, (r, token) in enumerate(zip(live, tok.tolist())):
                        toks[r].append(token)
                        lps[r].append(lp[j])
                        if finished[j] or (token in triggers and stop(toks[r])):
                            ended[r] = True
                        else:
                            keep.append(j)
                    if not keep or t == max_new_tokens - 1 or expired():  # expired: the run's wall budget
                        break
                    if len(keep) < len(live):
                        index = torch.tensor(keep, device=self.device)
                        cache.batch_select_indices(index)
                        tok, live = tok[index], [live[j] for j in keep]
                    result = self.model(input_ids=tok[:, None], use_cache=True, **{key: cache})
                    logits = result.logits[:, -1, :]
            out.extend((toks[r], lps[r], ended[r]) for r in range(rows))
        return out

    def _answer_prefix(self, language: str, ctx: Any = None) -> str:
        """The text the answer to ``ctx`` starts with (:attr:`answer_prefix`; ``"auto"``:
        :func:`~discoverygym.agents.policies.edits.answer_prefix`: the opening fence
        ```` ```{language} ````, or ``<<<<<<< SEARCH`` for a ``diff`` answer to a parent with a program;
        nothing with a thinking budget or a chat template with a reasoning section, ``think`` in it)."""
        if self.answer_prefix != "auto":
            return self.answer_prefix or ""
        template = str(getattr(self.tokenizer, "chat_template", "") or "")
        has_program = bool(getattr(getattr(ctx, "parent", None), "code", None)) if ctx is not None else True
        return answer_prefix(language, self.edit_format, has_program=has_program,
                             reasoning=self.thinking_budget is not None or "think" in template.lower())

    def room(self, prompt_tokens: int) -> int:
        """New tokens that fit after a prompt of ``prompt_tokens`` in the model's context
        (``max_position_embeddings``; at least 1), so a long prompt never runs past it."""
        limit = getattr(self.model.config, "max_position_embeddings", None)
        return max(1, int(limit) - int(prompt_tokens)) if limit else self.max_new_tokens

    def _fence_token_ids(self) -> frozenset[int]:
        """Ids of the vocabulary's tokens that hold a fence character (`` ` `` or ``~``), cached."""
        if getattr(self, "_fence_ids", None) is None:
            vocab = self.tokenizer.get_vocab()
            self._fence_ids = frozenset(i for piece, i in vocab.items() if "`" in piece or "~" in piece)
        return self._fence_ids

    def _stop_token_ids(self) -> frozenset[int]:
        """Ids after which the stop rule is checked: the fence tokens (:meth:`_fence_token_ids`), and in
        the ``diff`` format also every token holding an ``E`` (a ``>>>>>>> REPLACE`` line ends in one)."""
        if self.edit_format != "diff":
            return self._fence_token_ids()
        if getattr(self, "_diff_stop_ids", None) is None:
            vocab = self.tokenizer.get_vocab()
            self._diff_stop_ids = self._fence_token_ids() | frozenset(i for piece, i in vocab.items() if "E" in piece)
        return self._diff_stop_ids

    _cache_of = staticmethod(cache_of)  # (keyword, cache) of a forward result's KV cache

    @staticmethod
    def _cache_kw(result: Any) -> dict:
        """The KV cache of a forward result as keyword arguments (``cache`` in transformers ≥ 5.x, else
        ``past_key_values``)."""
        cache = getattr(result, "cache", None)
        if cache is not None:
            return {"cache": cache}
        return {"past_key_values": result.past_key_values}

    def decode(self, ids: Sequence[int]) -> str:
        """Completion text with special tokens kept (reasoning / channel markers such as gpt-oss's
        ``<|channel|>`` must reach the parser) except end-of-sequence and padding tokens."""
        drop = self.eos_ids | {self.tokenizer.pad_token_id}
        return self.tokenizer.decode([t for t in ids if t not in drop], skip_special_tokens=False)

    def _generator(self, rng: np.random.Generator) -> Any:
        torch, _, _ = _imports()
        gen = torch.Generator(device=self.device)
        gen.manual_seed(int(rng.integers(2**62)))
        return gen

    def sample(self, contexts: Sequence[Any], n: int, rng: np.random.Generator) -> list[list[LLMSample]]:
        """``n`` :class:`LLMSample` per context (code mode; see the module docstring).

        With ``thinking_budget`` set, sampling is two-phase: ``thinking_budget`` tokens, then each
        sequence still reasoning (no ``</think>``, not ended) gets
        :data:`~discoverygym.agents.prompts.FORCE_ANSWER` (mask False) and continues up to
        ``max_new_tokens`` in total.
        """
        gen = self._generator(rng)
        out: list[list[LLMSample]] = []
        for c, ctx in enumerate(contexts):
            messages = context_messages(ctx, self.system, self.edit_format)
            prompt_ids = encode_chat(self.tokenizer, messages)
            language = getattr(ctx.problem, "language", "python") or "python"
            prefix = self._answer_prefix(language, ctx)
            if prefix:  # the answer's first line is given: part of the prompt, not trained on
                prompt_ids = prompt_ids + list(self.tokenizer(prefix, add_special_tokens=False)["input_ids"])
            phase1 = self.max_new_tokens if self.thinking_budget is None else self.thinking_budget
            phase1 = min(phase1, self.room(len(prompt_ids)))
            stop = None
            if self.stop_at_answer:
                done = diff_answer_complete if self.edit_format == "diff" else answer_complete

                def stop(ids: list[int], language: str = language, prefix: str = prefix, done: Any = done) -> bool:
                    return done(prefix + self.decode(ids), language)
            group = []
            for ids, lps, ended in self.generate_ids(prompt_ids, n, phase1, gen, stop=stop):
                mask = [True] * len(ids)
                text = prefix + self.decode(ids)
                if self.thinking_budget is not None and needs_forcing(text, ended):
                    forced = list(self.tokenizer(FORCE_ANSWER, add_special_tokens=False)["input_ids"])
                    room = min(self.max_new_tokens, self.room(len(prompt_ids))) - len(ids) - len(forced)
                    ids, lps, mask = ids + forced, lps + [0.0] * len(forced), mask + [False] * len(forced)
                    if room > 0 and not expired():
                        ids2, lps2, ended = self.generate_ids(prompt_ids + ids, 1, room, gen, stop=stop)[0]
                        ids, lps, mask = ids + ids2, lps + lps2, mask + [True] * len(ids2)
                    text = prefix + self.decode(ids)
                group.append(make_sample(
                    text, language, prompt_ids=list(prompt_ids), completion_ids=ids, logprobs=lps, mask=mask,
                    finish_reason="stop" if ended else "length", context=c, prompt=messages[-1]["content"],
                    ctx=ctx, edit_format=self.edit_format))
            out.append(group)
        return out

    # ------------------------------------------------------------------ scoring
    def token_logprobs(self, samples: Sequence[LLMSample], *, base: bool = False) -> Any:
        """Differentiable ``[B, T]`` log-probs of each sample's completion tokens (0 past its end).

        Args:
            samples: LLM samples (prompts may differ in length).
            base: score with the LoRA adapter disabled (the base model, π_base of the KL term;
                no gradient then).

        Returns:
            float32 tensor on the model's device, ``T = max completion length``.
        """
        torch, _, _ = _imports()
        width = max([len(s.completion_ids) for s in samples] + [1])
        seqs = [list(s.prompt_ids) + list(s.completion_ids) for s in samples]
        longest = max(len(x) for x in seqs)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(seqs), longest), pad, dtype=torch.long, device=self.device)
        attn = torch.zeros_like(ids)
        for i, x in enumerate(seqs):
            ids[i, : len(x)] = torch.tensor(x, device=self.device)
            attn[i, : len(x)] = 1
        # position of the logit that predicts completion token j of sample i: P_i - 1 + j
        pos = torch.zeros(len(samples), width, dtype=torch.long, device=self.device)
        tgt = torch.full((len(samples), width), pad, dtype=torch.long, device=self.device)
        valid = torch.zeros(len(samples), width, dtype=torch.bool, device=self.device)
        for i, s in enumerate(samples):
            p, t = len(s.prompt_ids), len(s.completion_ids)
            pos[i] = torch.clamp(torch.arange(width, device=self.device) + p - 1, max=longest - 1)
            if t:
                tgt[i, :t] = torch.tensor(s.completion_ids, device=self.device)
                valid[i, :t] = True
        if base:
            with torch.no_grad(), self.model.disable_adapter():
                return self._completion_logprobs(ids, attn, pos, tgt, valid)
        return self._completion_logprobs(ids, attn, pos, tgt, valid)

    def _completion_logprobs(self, ids: Any, attn: Any, pos: Any, tgt: Any, valid: Any) -> Any:
        """``[B, W]`` float32 log-probs of the targets ``tgt`` at the positions ``pos`` (0 where not ``valid``).

        Chunked (:attr:`logprob_chunk` > 0 and a model whose logits are its output layer applied to
        the decoder's last hidden state): the decoder runs once, the ``[B, W, H]`` hidden states of
        the completion positions are picked, and the output layer + ``log_softmax`` run on
        :attr:`logprob_chunk` valid tokens at a time, each chunk under ``torch.utils.checkpoint``
        when a gradient is recorded: no ``[tokens, vocab]`` logits of the prompt are ever made, and
        those of the completion are never all held at once (49k vocabulary × 4 B = 0.2 MB a token).
        Otherwise (``logprob_chunk = 0``, or a model with logit soft-capping / scaling): one forward
        pass keeping the logits from the shortest prompt's last position on (``logits_to_keep``).
        Both give the same numbers to float rounding (tested).
        """
        torch, _, _ = _imports()
        config = getattr(self.model, "config", None)
        plain_head = not any(getattr(config, k, None) for k in ("final_logit_softcapping", "logit_scale"))
        if self.logprob_chunk > 0 and plain_head:
            causal = self.model.get_base_model()
            hidden = causal.get_decoder()(input_ids=ids, attention_mask=attn, use_cache=False).last_hidden_state
            picked = hidden.gather(1, pos[:, :, None].expand(-1, -1, hidden.shape[-1]))[valid]  # [N, H]
            targets = tgt[valid]
            head = causal.get_output_embeddings()
            parts = []
            for i in range(0, picked.shape[0], self.logprob_chunk):
                h, t = picked[i:i + self.logprob_chunk], targets[i:i + self.logprob_chunk]
                if torch.is_grad_enabled():
                    parts.append(torch.utils.checkpoint.checkpoint(self._head_logprobs, head, h, t, use_reentrant=False))
                else:
                    parts.append(self._head_logprobs(head, h, t))
            flat = torch.cat(parts) if parts else picked.new_zeros(0)
            logp = torch.zeros(valid.shape, dtype=torch.float32, device=valid.device)
            return logp.masked_scatter(valid, flat.float())
        # the logits from the shortest prompt's last token on (the prompt's [P, vocab] logits are never made)
        first = max(0, int(pos[:, 0].min()))
        logits = self.model(input_ids=ids, attention_mask=attn, logits_to_keep=ids.shape[1] - first).logits
        picked = logits.gather(1, (pos - first)[:, :, None].expand(-1, -1, logits.shape[-1])).float()
        logp = torch.log_softmax(picked / self.temperature, dim=-1).gather(2, tgt[:, :, None]).squeeze(2)
        return torch.where(valid, logp, torch.zeros_like(logp))

    def _head_logprobs(self, head: Any, hidden: Any, targets: Any) -> Any:
        """``[N]`` float32 ``log softmax(head(hidden) / T)[targets]`` for ``[N, H]`` hidden states."""
        torch, _, _ = _imports()
        logp = torch.log_softmax(head(hidden).float() / self.temperature, dim=-1)
        return logp.gather(1, targets[:, None]).squeeze(1)

    def logprob(self, contexts: Any, samples: Sequence[LLMSample]) -> Any:
        """Differentiable ``[B]`` sequence log-probs (sum over action tokens)."""
        from discoverygym.agents.losses import pad_behaviour

        _, mask = pad_behaviour(samples)
        lp = self.token_logprobs(samples)
        return (lp * mask.to(lp.device)).sum(-1)

    # ------------------------------------------------------------------ training
    def parameters(self) -> list:
        """The trainable (LoRA) parameters."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def train_step(self, samples: Sequence[LLMSample], advantages: Any, *, kl_coef: float = 0.1) -> dict[str, float]:
        """One TTT-Discover update on ``samples`` with sequence ``advantages`` ``[B]``.

        Base log-probs (adapter disabled) → KL-shaped token advantages → importance-sampling loss,
        accumulated over micro-batches of ``micro_batch`` → one Adam step. Samples with zero
        advantage everywhere still contribute the KL term.

        Returns:
            ``{"loss", "kl", "tokens", "grad_norm"}`` (``kl`` = mean Δ per action token).
        """
        torch, _, _ = _imports()
        from discoverygym.agents.losses import importance_sampling_loss, pad_behaviour, token_advantages

        if not samples:
            return {"loss": 0.0, "kl": 0.0, "tokens": 0, "grad_norm": 0.0}
        if self.shared_prompt and len(samples) > 1 and len({tuple(s.prompt_ids) for s in samples}) == 1:
            return self._train_step_shared(samples, advantages, kl_coef=kl_coef)
        old_lp, mask = pad_behaviour(samples)
        old_lp, mask = old_lp.to(self.device), mask.to(self.device)
        mb = max(1, self.micro_batch)
        width = old_lp.shape[1]
        chunks = [self.token_logprobs(samples[i:i + mb], base=True).detach() for i in range(0, len(samples), mb)]
        base_lp = torch.cat([torch.nn.functional.pad(c, (0, width - c.shape[1])) for c in chunks])
        a_tok, delta = token_advantages(torch.as_tensor(advantages, device=self.device), old_lp, base_lp, mask,
                                        kl_coef)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        _release_freed()
        try:
            for i in range(0, len(samples), mb):
                if expired():  # the run's wall budget has passed: no partial step
                    self.optimizer.zero_grad(set_to_none=True)
                    self._stats = {"kl": 0.0, "grad_norm": 0.0, "deadline_skipped": 1.0}
                    return {"loss": 0.0, "kl": 0.0, "tokens": 0, "grad_norm": 0.0}
                new_lp = self.token_logprobs(samples[i:i + mb])
                _release_freed()
                w = new_lp.shape[1]
                loss = (self.loss or importance_sampling_loss)(new_lp, old_lp[i:i + mb, :w],
                                                              a_tok[i:i + mb, :w], mask[i:i + mb, :w])
                loss.backward()
                total += float(loss.detach())
                _release_freed()
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.parameters(), float("inf")))
            self.optimizer.step()
        finally:
            self.model.eval()
        n_tok = int(mask.sum())
        self._stats = {"kl": float(delta[mask].mean()) if n_tok else 0.0, "grad_norm": grad_norm}
        return {"loss": total, "kl": self._stats["kl"], "tokens": n_tok, "grad_norm": grad_norm}

    def _train_step_shared(self, samples: Sequence[LLMSample], advantages: Any, *, kl_coef: float) -> dict[str, float]:
        """:meth:`train_step` for samples that answer one prompt (a TTT-Discover group): the prompt runs
        once and every completion on its KV cache (:func:`~discoverygym.agents.policies.prefix.shared_prompt_logprobs`:
        the same log-probs and gradient as per-sequence passes), one backward pass for the group.
        Gradient checkpointing is off for the call (it would drop the cache)."""
        torch, _, _ = _imports()
        from discoverygym.agents.losses import importance_sampling_loss, pad_behaviour, token_advantages
        from discoverygym.agents.policies.prefix import checkpointing_off, shared_prompt_logprobs

        old_lp, mask = pad_behaviour(samples)
        old_lp, mask = old_lp.to(self.device), mask.to(self.device)
        prompt, comps = list(samples[0].prompt_ids), [list(s.completion_ids) for s in samples]
        pad = self.tokenizer.pad_token_id or 0
        width = old_lp.shape[1]
        with torch.no_grad(), self.model.disable_adapter():
            base_lp, _ = shared_prompt_logprobs(self.model, prompt, comps, temperature=self.temperature, pad_id=pad)
        base_lp = torch.nn.functional.pad(base_lp, (0, width - base_lp.shape[1]))[:, :width]
        a_tok, delta = token_advantages(torch.as_tensor(advantages, device=self.device), old_lp, base_lp, mask, kl_coef)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        try:
            with checkpointing_off(self.model):
                new_lp, _ = shared_prompt_logprobs(self.model, prompt, comps, temperature=self.temperature, pad_id=pad)
                w = new_lp.shape[1]
                loss = (self.loss or importance_sampling_loss)(new_lp, old_lp[:, :w], a_tok[:, :w], mask[:, :w])
                loss.backward()
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.parameters(), float("inf")))
            self.optimizer.step()
        finally:
            self.model.eval()
        n_tok = int(mask.sum())
        self._stats = {"kl": float(delta[mask].mean()) if n_tok else 0.0, "grad_norm": grad_norm}
        return {"loss": float(loss.detach()), "kl": self._stats["kl"], "tokens": n_tok, "grad_norm": grad_norm}

    def stats(self) -> dict[str, float]:
        """Scalars of the last update (``kl``, ``grad_norm``)."""
        return dict(self._stats)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        """The LoRA weights only (peft names)."""
        from peft import get_peft_model_state_dict

        return {k: v.detach().cpu().clone() for k, v in get_peft_model_state_dict(self.model).items()}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` into the adapter."""
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(self.model, state)

    def save_adapter(self, path: str | os.PathLike) -> Path:
        """Write the adapter (``adapter_config.json`` + ``adapter_model.safetensors``) to ``path``.

        The directory loads with ``peft.PeftModel.from_pretrained`` and vLLM's ``--enable-lora``.
        """
        out = Path(path)
        self.model.save_pretrained(str(out))
        return out

    def load_adapter(self, path: str | os.PathLike) -> None:
        """Load adapter weights saved by :meth:`save_adapter` (same rank/targets) into this policy.

        Raises:
            FileNotFoundError: no ``adapter_model.safetensors`` (or ``.bin``) in ``path``.
        """
        torch, _, _ = _imports()
        folder = Path(path)
        st = folder / "adapter_model.safetensors"
        if st.exists():
            from safetensors.torch import load_file

            state = load_file(str(st))
        elif (folder / "adapter_model.bin").exists():
            state = torch.load(folder / "adapter_model.bin", weights_only=True)
        else:
            raise FileNotFoundError(f"no adapter weights in {folder}")
        self.load_state_dict(state)

    def save_checkpoint(self, path: str | os.PathLike) -> None:
        """Adapter + optimizer state into directory ``path`` (resume)."""
        torch, _, _ = _imports()
        out = Path(path)
        self.save_adapter(out / "adapter")
        torch.save(self.optimizer.state_dict(), out / "optimizer.pt")

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restore :meth:`save_checkpoint`."""
        torch, _, _ = _imports()
        self.load_adapter(Path(path) / "adapter")
        self.optimizer.load_state_dict(torch.load(Path(path) / "optimizer.pt", weights_only=True))

    def config(self) -> dict[str, Any]:
        """Constructor arguments that matter for rebuilding (JSON)."""
        return {"model": self.model_id, "temperature": self.temperature, "max_new_tokens": self.max_new_tokens,
                "thinking_budget": self.thinking_budget, "warm_start": self.warm_start}
