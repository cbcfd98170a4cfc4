"""OperatorPolicy: a trainable policy that chooses among a problem's registered operators.

The numeric analogue of an LLM proposing a program: instead of one Gaussian nudge, each proposal is
a *decision sequence*

1. an operator ``k ~ Cat(π)`` with ``π = (1 − ε) softmax(logits) + ε / K`` over the problem's
   :attr:`Problem.operators <discoverygym.envs.problem.Problem.operators>` (``K`` of them; the
   ε-floor keeps every operator alive), then
2. for each of its ``P_k`` declared parameters a unit value ``u_i ~ Beta(a_ki, b_ki)`` on ``[0, 1]``
   (mapped into the parameter's bounds by :meth:`ParamSpec.value
   <discoverygym.envs.operators.base.ParamSpec.value>`), and
3. an operator seed drawn from the trainer's generator.

The child is ``operator.apply(parent, u, default_rng(seed))``: deterministic given the decisions, so
the operator is part of the reward function and the log-probability of a proposal is
``log π_k + Σ_i log Beta(u_i; a_ki, b_ki)``. Tokens (for KL shaping and the IS loss) are the
decisions: :meth:`token_logprobs` is ``[B, 1 + P_max]`` (token 0 the operator, then its
parameters, right-padded with 0 and :meth:`token_mask` False). Learned: ``logits [K]``,
``log a, log b [K, P_max]`` (Beta(1, 1) = uniform at the start).

The child is not computed in :meth:`sample`: each sample carries ``pending``, a picklable
zero-argument job (:func:`~discoverygym.envs.operators.base.apply_operator`), which the trainer runs
in its worker processes together with the verification. Sources: TTT-Discover (arXiv 2601.16175)
§3 for the objective; the operator view follows AlphaEvolve's programs (Novikov et al. 2025).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch
from torch import nn

from discoverygym.envs.operators.base import apply_operator
from discoverygym.policy import Sample, SamplingContext

__all__ = ["OperatorPolicy", "OperatorSample"]

#: unit values are kept inside [U_EPS, 1 − U_EPS] so that Beta log-densities stay finite
U_EPS = 1e-6


@dataclass(frozen=True, kw_only=True)
class OperatorSample(Sample):
    """One proposal of :class:`OperatorPolicy` (a :class:`~discoverygym.policy.Sample`).

    ``action`` is ``None`` until ``pending`` (the operator run, a zero-argument picklable job
    returning the float64 child) has run: in the trainer's worker processes
    (:meth:`~discoverygym.policy.Sample.with_action` stores the child) or here by
    :meth:`~discoverygym.policy.Sample.resolved`. ``operator`` is the operator's name.

    Attributes (besides those of :class:`~discoverygym.policy.Sample`):
        op: index of the chosen operator.
        units: ``[P_max]`` float64 tensor, the unit parameter values (0 beyond the operator's ``P_k``).
        token_mask: ``[1 + P_max]`` bool tensor, the decision tokens (operator, then its parameters).
        logprob: ``[1 + P_max]`` float64 tensor, behaviour log-probabilities (0 on padding).
        seed: the operator's generator seed.
    """

    op: int
    units: torch.Tensor
    token_mask: torch.Tensor
    logprob: torch.Tensor
    seed: int = 0


class OperatorPolicy(nn.Module):
    """Learned choice of operator and parameters (see the module docstring).

    Args:
        operators: operator names, in the problem's order (:meth:`problem_kwargs` fills them).
        n_params: the number of parameters of each operator.
        epsilon: uniform floor of the operator distribution, in [0, 1).
        init_units: per operator, the unit value of each parameter's declared default (or ``None``):
            its Beta starts with its mode there (``a = 1 + c·m``, ``b = 1 + c·(1 − m)``); else Beta(1, 1).
        concentration: ``c`` above (> 0).
        shape: ignored (the policy takes parents of any shape; kept for the policy factory's call).

    Raises:
        ValueError: no operators, mismatched lengths, epsilon outside [0, 1); in :meth:`sample`, a
            problem whose operators differ from the policy's.
    """

    name = "operators"

    #: this policy proposes constructions
    action_modes = ("construction",)

    def __init__(self, operators: Sequence[str] = (), n_params: Sequence[int] = (), epsilon: float = 0.05,
                 init_units: Sequence[Sequence[float | None]] | None = None, concentration: float = 4.0,
                 shape: Sequence[int] | None = None) -> None:
        super().__init__()
        operators, n_params = [str(o) for o in operators], [int(p) for p in n_params]
        if not operators or len(operators) != len(n_params) or min(n_params) < 0:
            raise ValueError("OperatorPolicy needs the problem's operators (names and parameter counts): "
                             "this problem declares none; use --policy gaussian")
        if not 0 <= epsilon < 1:
            raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
        self.operators, self.n_params, self.epsilon = operators, n_params, float(epsilon)
        k, p = len(operators), max(max(n_params), 1)
        self.logits = nn.Parameter(torch.zeros(k, dtype=torch.float64))
        self.log_a = nn.Parameter(torch.zeros(k, p, dtype=torch.float64))
        self.log_b = nn.Parameter(torch.zeros(k, p, dtype=torch.float64))
        self.register_buffer("param_mask", torch.arange(p)[None, :] < torch.tensor(n_params)[:, None])
        self.init_units = [list(u) for u in init_units] if init_units is not None else None
        self.concentration = float(concentration)
        with torch.no_grad():  # Beta with mode at the declared default: a = 1 + c m, b = 1 + c (1 - m)
            for k, units in enumerate(self.init_units or []):
                for i, m in enumerate(units[: n_params[k]]):
                    if m is not None:
                        self.log_a[k, i] = math.log(1 + self.concentration * m)
                        self.log_b[k, i] = math.log(1 + self.concentration * (1 - m))

    @staticmethod
    def problem_kwargs(problem: Any) -> dict[str, Any]:
        """Constructor arguments describing ``problem``'s operators (names and parameter counts)."""
        ops = tuple(getattr(problem, "operators", ()) or ())
        return {"operators": [o.name for o in ops], "n_params": [len(o.params) for o in ops],
                "init_units": [[None if p.default is None else p.unit(p.default) for p in o.params] for o in ops]}

    # ------------------------------------------------------------------ distribution
    def op_probs(self) -> torch.Tensor:
        """``[K]`` operator probabilities (differentiable)."""
        return (1 - self.epsilon) * torch.softmax(self.logits, 0) + self.epsilon / len(self.operators)

    def _token_logprob(self, op: torch.Tensor, units: torch.Tensor) -> torch.Tensor:
        """``[B, 1 + P]`` log-probabilities of operators ``op [B]`` and unit values ``units [B, P]``."""
        lp_op = torch.log(self.op_probs())[op]
        a, b = self.log_a.exp()[op], self.log_b.exp()[op]
        u = units.clamp(U_EPS, 1 - U_EPS)
        beta = torch.distributions.Beta(a, b).log_prob(u)
        mask = self.param_mask[op]
        beta = torch.where(mask, beta, torch.zeros_like(beta))
        return torch.cat([lp_op[:, None], beta], dim=1)

    def token_logprobs(self, samples: Sequence[OperatorSample]) -> torch.Tensor:
        """Differentiable ``[B, 1 + P_max]`` float64 per-decision log-probabilities (0 on padding)."""
        op = torch.tensor([s.op for s in samples], dtype=torch.long)
        units = torch.stack([s.units for s in samples])
        return self._token_logprob(op, units)

    def token_mask(self, samples: Sequence[OperatorSample]) -> torch.Tensor:
        """``[B, 1 + P_max]`` bool: which tokens are decisions (the operator and its parameters)."""
        return torch.stack([s.token_mask for s in samples])

    def logprob(self, contexts: Sequence[SamplingContext] | None, samples: Sequence[OperatorSample]) -> torch.Tensor:
        """Differentiable ``[B]`` sequence log-probabilities (the contexts are not used)."""
        return self.token_logprobs(samples).sum(-1)

    def stats(self) -> dict[str, float]:
        """Scalars for logging: operator entropy (nats) and each operator's probability."""
        with torch.no_grad():
            p = self.op_probs()
            out = {"op_entropy": float(-(p * p.log()).sum())}
            out.update({f"p_{name}": float(v) for name, v in zip(self.operators, p)})
            return out

    # ------------------------------------------------------------------ sampling
    def _resolve(self, problem: Any) -> tuple[Any, ...]:
        ops = tuple(getattr(problem, "operators", ()) or ())
        if [o.name for o in ops] != self.operators or [len(o.params) for o in ops] != self.n_params:
            raise ValueError(f"the problem's operators {[o.name for o in ops]} differ from the policy's {self.operators}")
        return ops

    def sample(self, contexts: Sequence[SamplingContext], n: int, rng: np.random.Generator) -> list[list[OperatorSample]]:
        """``n`` proposals per context (the Policy protocol); each sample's ``pending`` computes its child."""
        with torch.no_grad():
            probs = self.op_probs().numpy()
            a, b = self.log_a.exp().numpy(), self.log_b.exp().numpy()
        out = []
        for c, ctx in enumerate(contexts):
            ops = self._resolve(ctx.problem)
            parent = np.asarray(ctx.parent.solution, dtype=np.float64)
            group = []
            for _ in range(n):
                k = int(rng.choice(len(ops), p=probs))
                units = np.zeros(a.shape[1])
                units[: self.n_params[k]] = np.clip(rng.beta(a[k, : self.n_params[k]], b[k, : self.n_params[k]]),
                                                    U_EPS, 1 - U_EPS)
                seed = int(rng.integers(2**63))
                units_t = torch.from_numpy(units)
                with torch.no_grad():
                    lp = self._token_logprob(torch.tensor([k]), units_t[None])[0]
                mask = torch.cat([torch.ones(1, dtype=torch.bool), self.param_mask[k]])
                job = partial(apply_operator, ops[k], parent, units[: self.n_params[k]].tolist(), seed)
                group.append(OperatorSample(pending=job, op=k, units=units_t, token_mask=mask, logprob=lp,
                                            operator=ops[k].name, seed=seed, context=c, parent_id=ctx.parent.id))
            out.append(group)
        return out

    # ------------------------------------------------------------------ reference
    def reference(self) -> OperatorPolicy:
        """A frozen deep copy (``requires_grad=False``): the KL reference π_ref."""
        ref = copy.deepcopy(self)
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref

    def config(self) -> dict[str, Any]:
        """Constructor arguments (JSON) that rebuild a policy of the same architecture."""
        return {"operators": list(self.operators), "n_params": list(self.n_params), "epsilon": self.epsilon,
                "init_units": self.init_units, "concentration": self.concentration}


