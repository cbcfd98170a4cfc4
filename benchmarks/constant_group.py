"""What one update does to a fresh LoRA adapter when every reward of the step is equal (issue 49).

Samples one group of answers from a fresh adapter (still equal to the base model), gives them all the
same reward (the failure reward: the group is dropped) and runs
:func:`discoverygym.agents.batch.gradient_update` twice from the same weights: with
``update_on_constant=True`` (the old LLM default: a KL-only step) and with the default (no step).
Prints, for each, the update's mean KL, gradient norm and the largest change of a LoRA weight.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/constant_group.py                 # SmolLM2 (hf:smollm2), 4 x 48 tokens
    python benchmarks/constant_group.py --model runs/tiny --tokens 24     # the tiny random model

Measured (SmolLM2-135M, rank 16, lr 4e-5, 4 answers x 48 tokens, CirclePacking-26 code prompt, 2 CPU
cores): KL-only step: mean KL 8.7e-7, gradient norm 6.3e-5, max |dLoRA| 4.0e-5 (= lr: Adam normalises
any gradient into a full-size step); default: no step, max |dLoRA| 0. On the tiny float32 model the
rounding stays below ``losses.DELTA_NOISE`` and both leave the adapter as it was; the test
(``tests/agents/test_constant_group.py``) adds a separate sampler's rounding noise to show it there.
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def main() -> None:
    """Run the measurement (see the module docstring) and print one JSON line per setting."""
    import torch

    from discoverygym.agents.batch import TrainBatch, TrajectoryGroup, gradient_update
    from discoverygym.agents.policies import SamplingContext
    from discoverygym.agents.policies.hf import HFPolicy
    from discoverygym.envs.registry import ENVS
    from discoverygym.types import State

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="hf: model (default smollm2)")
    parser.add_argument("--tokens", type=int, default=48, help="new tokens per answer (default 48)")
    parser.add_argument("--group", type=int, default=4, help="answers (default 4)")
    parser.add_argument("--rank", type=int, default=16, help="LoRA rank (default 16)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    policy = HFPolicy(args.model, device="cpu", lora_rank=args.rank, max_new_tokens=args.tokens, micro_batch=1)
    problem = ENVS["CirclePacking-26-v0"]
    parent = State(solution=[[0.5, 0.5, 0.1]], score=0.1, reward=0.1, valid=True, code="def construct():\n  pass\n")
    ctx = SamplingContext(parent=parent, inspirations=(parent,), problem=problem, action_mode="code")
    samples = policy.sample([ctx], args.group, np.random.default_rng(0))[0]
    group = TrajectoryGroup.from_samples(0, parent, samples, [problem.failure_reward] * len(samples), keep=False)
    batch = TrainBatch((group,), 0, 0.1)
    lora = {k: v for k, v in policy.model.named_parameters() if v.requires_grad}
    before = {k: v.detach().clone() for k, v in lora.items()}
    for flag in (True, False):
        out = gradient_update(policy, batch, update_on_constant=flag)
        change = max(float((v.detach() - before[k]).abs().max()) for k, v in lora.items())
        print(json.dumps({"model": args.model, "update_on_constant": flag, "step_taken": out is not None,
                          "kl": (out or {}).get("kl", 0.0), "grad_norm": (out or {}).get("grad_norm", 0.0),
                          "max_abs_lora_change": change}))
        with torch.no_grad():
            for k, v in lora.items():
                v.copy_(before[k])
        policy.optimizer.state.clear()


if __name__ == "__main__":
    main()
