"""GPU check of the LLM policy stack (run by ``benchmarks/gpu_llm_check.sh`` on a GPU machine).

With a tiny random Llama built offline (:func:`discoverygym.agents.policies.tiny.build_tiny_model`)
on CUDA, for float32 and bfloat16:

1. HFPolicy sampling: ``contexts x n`` completions of ``--max-new-tokens`` tokens from the
   CirclePacking-26 code-mode prompt; generated tokens per second (wall clock, synchronised);
2. the largest |behaviour log-prob − forward-pass log-prob| over sampled tokens;
3. one TTT-Discover LoRA step (base log-probs, KL shaping, IS loss, Adam): median time of 3;
   whether only LoRA weights changed.

Prints a table; with ``$OUT`` set also writes ``$OUT/gpu_llm_check.json``. Exit code 0 when
everything ran, 2 when no GPU is visible, 1 when a check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--contexts", type=int, default=4)
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--device", default="cuda", help="cuda (default); cpu only to smoke-test this script")
    args = parser.parse_args()

    import numpy as np
    import torch

    from discoverygym.agents.losses import pad_behaviour
    from discoverygym.agents.policies import SamplingContext
    from discoverygym.agents.policies.hf import HFPolicy
    from discoverygym.agents.policies.tiny import build_tiny_model
    from discoverygym.envs.registry import ENVS
    from discoverygym.types import State

    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        print("no CUDA device visible", file=sys.stderr)
        return 2
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    print("device", torch.cuda.get_device_name(0) if cuda else "cpu", "torch", torch.__version__)
    path = build_tiny_model(tempfile.mkdtemp() + "/tiny", n_layer=args.layers, n_embd=args.hidden, n_head=4)
    problem = ENVS["CirclePacking-26-v0"]
    parent = State(solution=problem.initial(np.random.default_rng(0)), score=1.3, reward=1.3, valid=True,
                   code="def construct(parent):\n    return parent\n")
    ctx = [SamplingContext(parent=parent, inspirations=(parent,), problem=problem, action_mode="code")] * args.contexts
    rows, ok = [], True
    for dtype in ("float32", "bfloat16"):
        pol = HFPolicy(path, device=args.device, dtype=dtype, lora_rank=32, max_new_tokens=args.max_new_tokens,
                       batch_size=args.n, micro_batch=16, lr=1e-3)
        pol.sample(ctx[:1], 2, np.random.default_rng(0))  # warm-up
        sync()
        t0 = time.perf_counter()
        groups = pol.sample(ctx, args.n, np.random.default_rng(1))
        sync()
        sample_s = time.perf_counter() - t0
        flat = [s for g in groups for s in g]
        n_tok = sum(len(s.completion_ids) for s in flat)
        old, mask = pad_behaviour(flat)
        with torch.no_grad():
            fresh = pol.token_logprobs(flat).float().cpu()
        diff = float((fresh - old)[mask].abs().max())
        before = {k: v.detach().clone() for k, v in pol.model.named_parameters()}
        adv = torch.linspace(-1, 1, len(flat))
        times = []
        for _ in range(3):
            sync()
            t = time.perf_counter()
            pol.train_step(flat, adv, kl_coef=0.1)
            sync()
            times.append(time.perf_counter() - t)
        changed = [k for k, v in pol.model.named_parameters() if not torch.equal(v, before[k])]
        lora_only = bool(changed) and all("lora_" in k for k in changed)
        tol = 1e-3 if dtype == "float32" else 0.1
        ok &= lora_only and diff <= tol
        rows.append({"dtype": dtype, "sequences": len(flat), "tokens": n_tok, "tokens_per_s": n_tok / sample_s,
                     "sample_s": sample_s, "max_logprob_diff": diff, "logprob_tol": tol,
                     "train_step_s_median": statistics.median(times), "lora_only": lora_only,
                     "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None})
        del pol
        if cuda:
            torch.cuda.empty_cache()
    print(f"{'dtype':9} {'seqs':>5} {'tokens':>7} {'tok/s':>9} {'|Δlogp|max':>11} {'step s':>8} {'LoRA only':>9}")
    for r in rows:
        print(f"{r['dtype']:9} {r['sequences']:5d} {r['tokens']:7d} {r['tokens_per_s']:9.0f} "
              f"{r['max_logprob_diff']:11.2e} {r['train_step_s_median']:8.3f} {r['lora_only']!s:>9}")
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "gpu_llm_check.json"), "w") as fh:
            json.dump({"rows": rows, "ok": ok, "args": vars(args)}, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
