"""A tiny, randomly initialised causal language model built entirely offline (tests, GPU checks).

:func:`build_tiny_model` writes a directory that ``transformers.AutoModelForCausalLM`` and
``AutoTokenizer`` load with ``from_pretrained``: a Llama-architecture model with random weights
(a few hundred thousand parameters) and a byte-level BPE tokenizer trained on a small built-in
corpus of Python-ish text, so that every byte string can be encoded and decoded exactly. Nothing is
downloaded. The model is useless as a solver; it exists so that every stage of the LLM pipeline
(prompting, sampling with log-probabilities, LoRA updates, adapter checkpoints, serving) can be
exercised on a CPU in seconds.

Prompt format (also installed as the tokenizer's chat template)::

    <|user|>\\n{content}\\n<|assistant|>\\n{assistant content}<|eos|>

Requires the ``llm`` extra (``torch``, ``transformers``, ``tokenizers``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHAT_TEMPLATE", "SPECIAL_TOKENS", "build_tiny_model", "build_tiny_tokenizer"]

#: special tokens of the tiny tokenizer (bos, eos, pad, chat roles).
SPECIAL_TOKENS = ("<|bos|>", "<|eos|>", "<|pad|>", "<|user|>", "<|assistant|>", "<|system|>")

#: Jinja chat template: role markers on their own lines, the assistant turn closed by ``<|eos|>``.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}<|assistant|>\n{{ message['content'] }}<|eos|>"
    "{% elif message['role'] == 'system' %}<|system|>\n{{ message['content'] }}\n"
    "{% else %}<|user|>\n{{ message['content'] }}\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

_CORPUS = [
    "def construct(seed, budget_s, parent):\n    import numpy as np\n    return parent\n",
    "```python\nimport numpy as np\n\ndef construct():\n    return np.zeros(10)\n```\n",
    "for i in range(n):\n    x[i] = x[i] + 0.5 * (y[i] - x[i])\nreturn x\n",
    "The score is the sum of the radii. Improve the program so that the score gets higher.\n",
    "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n",
    "#include <bits/stdc++.h>\nint main() { std::cout << 0 << std::endl; }\n",
    "yes no yes no maybe 0 1 2 3 4 5 6 7 8 9 [ ] ( ) { } , . : ; = + - * / < > ' \" #\n",
]


def build_tiny_tokenizer(vocab_size: int = 384):
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on a small built-in corpus.

    Args:
        vocab_size: target vocabulary size (≥ 256 + number of special tokens; the 256 byte symbols
            are always present, so any text round-trips exactly).

    Returns:
        ``transformers.PreTrainedTokenizerFast`` with bos/eos/pad tokens and :data:`CHAT_TEMPLATE`.

    Raises:
        ImportError: ``tokenizers``/``transformers`` are not installed (``pip install 'discoverygym[llm]'``).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|bos|>",
        eos_token="<|eos|>",
        pad_token="<|pad|>",
        additional_special_tokens=["<|user|>", "<|assistant|>", "<|system|>"],
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_model(
    path: str | Path,
    *,
    seed: int = 0,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 4,
    vocab_size: int = 384,
    max_positions: int = 4096,
) -> Path:
    """Write a tiny random Llama-style causal LM and its byte-level tokenizer to ``path``.

    Args:
        path: output directory (created; existing files of the same names are overwritten).
        seed: torch seed for the random weights (same seed → identical weights).
        n_layer: transformer blocks.
        n_embd: hidden size (must be divisible by ``n_head``); the MLP is ``2 * n_embd`` wide.
        n_head: attention heads.
        vocab_size: tokenizer vocabulary target; the model's embedding matches the real size.
        max_positions: ``max_position_embeddings`` (RoPE, so only a bookkeeping limit).

    Returns:
        ``Path(path)``, loadable with ``AutoModelForCausalLM.from_pretrained`` and
        ``AutoTokenizer.from_pretrained`` (float32 weights, safetensors).

    Raises:
        ValueError: ``n_embd`` not divisible by ``n_head``.
        ImportError: the ``llm`` extra is missing.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    if n_embd % n_head:
        raise ValueError(f"n_embd={n_embd} must be divisible by n_head={n_head}")
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_tokenizer(vocab_size)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=n_embd,
        intermediate_size=2 * n_embd,
        num_hidden_layers=n_layer,
        num_attention_heads=n_head,
        num_key_value_heads=n_head,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    gen = torch.random.fork_rng()
    with gen:
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m discoverygym.agents.policies.tiny PATH [--seed S]``: write the tiny model to PATH."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m discoverygym.agents.policies.tiny", description=main.__doc__)
    parser.add_argument("path")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    args = parser.parse_args(argv)
    print(build_tiny_model(args.path, seed=args.seed, n_layer=args.layers, n_embd=args.hidden))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
