"""Agents and policies: what proposes candidates (policies) and what learns from them (agents).

Subpackages: :mod:`discoverygym.agents.policies` (the policy protocol, the registry used by
``discoverygym search --policy``, and the numeric :class:`~discoverygym.agents.policies.mutation.GaussianMutation`).
"""
