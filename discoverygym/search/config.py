"""What defines an evolutionary search (:class:`SearchConfig`) and the one place it is checked.

Every check of a configuration's values lives here: :meth:`SearchConfig.validate` (sizes, action
mode, env id and task options, selector and its hyper-parameters, policy and its arguments and
action modes), :meth:`SearchConfig.check_policy` (a built policy object against the action mode)
and :func:`check_env_id` (the command line's first check, before it looks at the run directory).
The keyword-argument machinery they use is :mod:`~discoverygym.search.checks`. The runner
(:mod:`~discoverygym.search.evolution`) and the command line (:mod:`~discoverygym.cli.search`) call
these and check nothing of the configuration themselves.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

from discoverygym.envs.registry import find_env, problem_of
from discoverygym.policy import policy_factory
from discoverygym.search import controllers as ctl
from discoverygym.search.checks import ACTION_MODES, check_action_mode, check_kwargs
from discoverygym.search.selectors import selector_class

__all__ = ["SearchConfig", "check_env_id"]


def check_env_id(env_id: str) -> None:
    """Refuse an env id that is neither a registered env nor a program task
    (:func:`~discoverygym.envs.registry.find_env`, the one lookup).

    Raises:
        UnknownEnvError: ``unknown env 'X'; run `discoverygym list```, with close ids suggested
            (a ``ValueError``).
    """
    find_env(env_id)


@dataclass
class SearchConfig:
    """What defines a search (all of it must match to resume a run).

    Attributes:
        env_id: registered env id (e.g. ``"CirclePacking-26-v0"``).
        policy: registered policy name (``discoverygym.agents.policies.POLICIES``).
        selector: Φ: ``rpucg``, ``puct``, ``greedy``, ``epsilon``, ``elite`` or ``none``.
        C, L, K: trajectories, committed steps per trajectory, candidates per step (TES).
        seed: the run seed (every random stream derives from it).
        inspirations: states per prompt (``None``: the selector's default — RPUCG 5, others 1;
            ``"auto"``: a per-trajectory UCB1 over {1, 3, 5, 10},
            :class:`~discoverygym.search.controllers.InspirationBandit`).
        backpressure: outstanding batches per trajectory (TES: 1).
        action_mode: ``"construction"`` or ``"code"``.
        policy_kwargs, selector_kwargs, env_kwargs: extra arguments (plain JSON).
        restart_controller: ``None`` (the selector restarts from its best node), ``"ucb"`` or
            ``"thompson"``: a per-trajectory bandit chooses best node or fresh start at each restart
            (:class:`~discoverygym.search.controllers.RestartController`; needs a selector that
            restarts, RPUCG's ``restart_every``).
        budget_controller: ``None`` (every trajectory takes L steps), ``"successive-halving"`` or
            ``"bandit"``: the C·L steps are handed to trajectories in rounds by their feedback
            (:mod:`~discoverygym.search.controllers`); still exactly C·L·K evaluations.
        controller_kwargs: hyper-parameters of the controllers, ``{"inspirations": {...},
            "restart": {...}, "budget": {...}}`` (plain JSON).
        initial: a construction to start from (``discoverygym search --init FILE``; plain JSON,
            re-verified by the env, kept in ``config.json`` so a resumed run starts from it
            again), or ``None`` for the env's seeded initial state. Construction mode only.

    The last four fields are left out of ``config.json`` at their
    defaults, so runs written before they existed still resume.
    """

    env_id: str
    policy: str = "mutation"
    selector: str = "rpucg"
    C: int = 4  # TES: trajectories
    L: int = 20  # TES: committed steps per trajectory
    K: int = 4  # TES: candidates per step
    seed: int = 0
    inspirations: int | str | None = None  # TES: 3 or 5 for RPUCG (selector default)
    backpressure: int = 1  # TES: at most one outstanding batch per trajectory
    action_mode: str = "construction"
    policy_kwargs: dict = field(default_factory=dict)
    selector_kwargs: dict = field(default_factory=dict)
    env_kwargs: dict = field(default_factory=dict)
    restart_controller: str | None = None
    budget_controller: str | None = None
    controller_kwargs: dict = field(default_factory=dict)
    initial: Any = None

    #: fields written to ``config.json`` only when they differ from their default
    OPTIONAL_FIELDS = ("restart_controller", "budget_controller", "controller_kwargs", "initial")

    def validate(self, check_policy: bool = True, *, policy: Any = None) -> None:
        """Raise ``ValueError`` for an impossible configuration, before anything runs.

        Checks the sizes, the action mode, the env id, the selector (its name and
        ``selector_kwargs``: names and types of its hyper-parameters, then its own value checks)
        and the policy: with ``policy`` (an object used instead of the name), whether it supports
        ``action_mode`` (:meth:`check_policy`); otherwise, with ``check_policy``, the registered
        name's ``policy_kwargs`` (names and types) and whether it supports ``action_mode`` (its
        ``action_modes``).

        Args:
            check_policy: check the policy name and ``policy_kwargs`` (ignored with ``policy``).
            policy: a ready policy object (its name is not looked up).

        Raises:
            ValueError: the first problem found (one line a user can act on).
        """
        for name in ("C", "L", "K", "backpressure"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.inspirations is not None and self.inspirations != "auto" and (
            not isinstance(self.inspirations, numbers.Integral)
            or isinstance(self.inspirations, bool)
            or self.inspirations < 1
        ):
            raise ValueError(f"inspirations must be an integer >= 1, got {self.inspirations!r} (or 'auto')")
        if self.action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode must be 'construction' or 'code', got {self.action_mode!r}")
        if self.initial is not None and self.action_mode != "construction":
            raise ValueError("an initial construction (--init) needs --action-mode construction; "
                             "in code mode the search starts from the env's initial program")
        for name in ("policy_kwargs", "selector_kwargs", "env_kwargs"):
            if not isinstance(getattr(self, name), dict):
                raise ValueError(  # noqa: TRY004 - every configuration error is a ValueError
                    f"{name} must be a JSON object, got {getattr(self, name)!r}"
                )
        self.problem()
        rule = selector_class(self.selector)
        check_kwargs(rule, self.selector_kwargs, f"selector_kwargs of {self.selector!r}")
        try:
            rule(**self.selector_kwargs)  # the rule's own value checks
        except TypeError as exc:
            raise ValueError(f"selector_kwargs of {self.selector!r}: {exc}") from None
        self._check_controllers(rule)
        if policy is not None:
            self.check_policy(policy)
        elif check_policy:
            factory = policy_factory(self.policy)
            check_kwargs(factory, self.policy_kwargs, f"policy_kwargs of {self.policy!r}")
            check_action_mode(factory, self.action_mode, self.policy)

    def _check_controllers(self, rule_class: type) -> None:
        """Refuse unknown controllers, bad ``controller_kwargs`` and a restart controller without restarts."""
        kw = self.controller_kwargs
        if not isinstance(kw, dict) or set(kw) - {"inspirations", "restart", "budget"}:
            raise ValueError(
                f"controller_kwargs takes the keys 'inspirations', 'restart', 'budget', got {kw!r}"
            )
        for key in kw:
            if not isinstance(kw[key], dict):
                raise ValueError(f"controller_kwargs[{key!r}] must be a JSON object, got {kw[key]!r}")  # noqa: TRY004
        try:
            if self.inspirations == "auto":
                ctl.InspirationBandit(**kw.get("inspirations", {}))
            if self.restart_controller is not None:
                if self.restart_controller not in ctl.RESTART_CONTROLLERS:
                    raise ValueError(
                        f"restart_controller must be one of {', '.join(ctl.RESTART_CONTROLLERS)}, "
                        f"got {self.restart_controller!r}"
                    )
                rule = rule_class(**self.selector_kwargs)
                if not hasattr(rule, "restart") or getattr(getattr(rule, "config", None), "restart_every", None) is None:
                    raise ValueError(
                        f"restart_controller needs a selector that restarts (rpucg, rpucg-lookahead with "
                        f"restart_every set); {self.selector!r} does not"
                    )
                ctl.RestartController(self.restart_controller, **kw.get("restart", {}))
            if self.budget_controller is not None:
                if self.budget_controller not in ctl.BUDGET_CONTROLLERS:
                    raise ValueError(
                        f"budget_controller must be one of {', '.join(ctl.BUDGET_CONTROLLERS)}, "
                        f"got {self.budget_controller!r}"
                    )
                ctl.make_budget_controller(self.budget_controller, self.C, self.L, **kw.get("budget", {}))
        except TypeError as exc:
            raise ValueError(f"controller_kwargs: {exc}") from None

    def check_policy(self, policy: Any) -> None:
        """Refuse a built policy object that cannot propose actions of :attr:`action_mode`.

        Raises:
            ValueError: the policy declares its ``action_modes`` and ``action_mode`` is not one.
        """
        check_action_mode(policy, self.action_mode, self.policy)

    def problem(self) -> Any:
        """The problem of ``env_id``; for a program env its task built with ``env_kwargs`` (task options).

        Raises:
            ValueError: unknown env id; a program env with ``action_mode`` other than ``"code"``; a
                task option the task does not take or rejects.
        """
        return problem_of(self.env_id, self.action_mode, **self.env_kwargs)

    @property
    def budget(self) -> int:
        """C·L·K, the number of candidate evaluations of the run."""
        return self.C * self.L * self.K
