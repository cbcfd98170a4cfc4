"""Problem-declared search operators: the moves a numeric policy chooses among.

An :class:`~discoverygym.envs.operators.base.Operator` is a named, deterministic map
``(construction, params, rng) -> construction`` with declared continuous parameters
(:class:`~discoverygym.envs.operators.base.ParamSpec`). Problems list theirs in
:attr:`Problem.operators <discoverygym.envs.problem.Problem.operators>` (set in
:mod:`~discoverygym.envs.mathematics`), exactly like :attr:`Problem.polish`; the learning policy
(:class:`~discoverygym.agents.policies.operators.OperatorPolicy`) learns which operator to apply and
with which parameters, and every output is verified by the env like any other candidate.

Families: :mod:`.circles` (circle packing), :mod:`.steps` (step functions: Erdős, AC1, AC2, AC3).
"""

from discoverygym.envs.operators.base import Operator, ParamSpec, apply_operator

__all__ = ["Operator", "ParamSpec", "apply_operator"]
