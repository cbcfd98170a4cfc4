"""IRFT: trajectory-level post-training of the generator from its own search histories (TES Algorithm 2).

Modules, in the order a round uses them:

* :mod:`~discoverygym.agents.irft.recording` — wraps the generator during search and records each
  sample's exact prompt/completion (texts and token ids) next to the search log;
* :mod:`~discoverygym.agents.irft.buffer` — the replay buffer (``buffer.jsonl``; format documented
  there; readable by ``pandas.read_json(lines=True)`` and ``datasets.load_dataset("json")``);
* :mod:`~discoverygym.agents.irft.credit` — credit rules: ``irft`` (top R% of nodes by their
  trajectory's final best → 1, else 0) and ``grpo`` (group-normalised trajectory advantages);
* :mod:`~discoverygym.agents.irft.sft` — weighted SFT on TRL's ``SFTTrainer`` (``hf:`` models);
* :mod:`~discoverygym.agents.irft.tinker_sft` — the same loss through Tinker's weighted ``cross_entropy``;
* :mod:`~discoverygym.agents.irft.backends` — the trainable generator per backend;
* :mod:`~discoverygym.agents.irft.loop` — the resumable round loop (:class:`IRFT`, :class:`IRFTConfig`).

The command line is ``discoverygym post-train`` (:mod:`discoverygym.cli.post_train`).
"""

from discoverygym.agents.irft.buffer import COLUMNS, ReplayBuffer
from discoverygym.agents.irft.credit import assign_credit, grpo_weights, irft_weights

__all__ = ["COLUMNS", "IRFT", "IRFTConfig", "ReplayBuffer", "assign_credit", "grpo_weights", "irft_weights"]


def __getattr__(name: str):
    if name in ("IRFT", "IRFTConfig"):
        from discoverygym.agents.irft import loop

        return getattr(loop, name)
    raise AttributeError(name)
