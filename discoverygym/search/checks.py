"""Up-front checks of a search configuration: keyword arguments of selectors and policies (names
and types, from the constructor's annotations or the dataclass of hyper-parameters it accepts) and
the action modes a policy supports, so that a bad configuration is refused before the run starts
instead of failing mid-run.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union

__all__ = [
    "ACTION_MODES",
    "check_action_mode",
    "check_kwargs",
    "kwargs_schema",
    "policy_action_modes",
]

#: every action mode of :class:`~discoverygym.envs.construction.DiscoveryEnv`.
ACTION_MODES: tuple[str, ...] = ("construction", "code")


# ----------------------------------------------------------------------------- keyword arguments
def _hints(obj: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(obj)
    except Exception:  # noqa: BLE001 - unresolvable annotations: no type checks
        return {}


def _config_dataclass(hint: Any) -> type | None:
    """The dataclass in ``hint`` (``XConfig`` or ``XConfig | None``), if any."""
    candidates = typing.get_args(hint) if _is_union(hint) else (hint,)
    for c in candidates:
        if isinstance(c, type) and dataclasses.is_dataclass(c):
            return c
    return None


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) is Union or isinstance(hint, types.UnionType)


def kwargs_schema(factory: Callable) -> tuple[dict[str, Any], bool]:
    """The keyword arguments ``factory`` accepts.

    Returns:
        ``({name: type hint}, open)``: ``Any`` where the hint is unknown; ``open`` is True when
        other names are accepted too (``**kwargs`` that are not the fields of a hyper-parameter
        dataclass). For ``factory(config: XConfig | None = None, **overrides)`` these are the
        fields of ``XConfig`` (the plain-JSON way to configure it).
    """
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return {}, True
    hints = _hints(factory.__init__ if isinstance(factory, type) else factory)
    accepted: dict[str, Any] = {}
    var_kw = False
    config: tuple[str, type] | None = None
    for name, p in sig.parameters.items():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            var_kw = True
        elif p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            accepted[name] = hints.get(name, Any)
            dc = _config_dataclass(hints.get(name))
            if dc is not None and config is None:
                config = (name, dc)
    if var_kw and config is not None:
        name, config_class = config
        del accepted[name]  # the dataclass itself cannot be given as plain JSON; its fields can
        field_hints = _hints(config_class)
        for f in dataclasses.fields(config_class):
            if f.init:
                accepted.setdefault(f.name, field_hints.get(f.name, Any))
        return accepted, False
    return accepted, var_kw


def _matches(value: Any, hint: Any) -> bool:
    if hint is Any or hint is inspect.Parameter.empty:
        return True
    if hint is None or hint is type(None):
        return value is None
    if _is_union(hint):
        return any(_matches(value, h) for h in typing.get_args(hint))
    origin = typing.get_origin(hint)
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in typing.get_args(hint))
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, tuple, collections.abc.Sequence):
        return isinstance(value, (list, tuple))
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, dict)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # a typing construct we do not check


def _describe(hint: Any) -> str:
    if hint is None or hint is type(None):
        return "null"
    if _is_union(hint):
        return " or ".join(_describe(h) for h in typing.get_args(hint))
    if typing.get_origin(hint) is Literal:
        return " or ".join(repr(a) for a in typing.get_args(hint))
    if isinstance(hint, type):
        return {"float": "a number", "int": "an integer", "bool": "true/false", "str": "a string"}.get(
            hint.__name__, hint.__name__
        )
    return str(hint)


def check_kwargs(factory: Callable, kwargs: Any, what: str) -> None:
    """Check ``kwargs`` against what ``factory`` accepts (names and annotated types).

    Args:
        factory: the class or function the keyword arguments are for.
        kwargs: the arguments (must be a dict with string keys).
        what: how to name them in messages (e.g. ``"selector_kwargs of 'rpucg'"``).

    Raises:
        ValueError: not a dict, an unknown name, or a value of the wrong type.
    """
    if not isinstance(kwargs, dict):
        raise ValueError(  # noqa: TRY004 - every configuration error is a ValueError
            f"{what} must be a JSON object, got {type(kwargs).__name__} {kwargs!r}"
        )
    accepted, open_ = kwargs_schema(factory)
    for name, value in kwargs.items():
        if name not in accepted:
            if open_:
                continue
            known = ", ".join(accepted) or "none"
            raise ValueError(f"{what}: unknown argument {name!r} (accepted: {known})")
        hint = accepted[name]
        if not _matches(value, hint):
            raise ValueError(
                f"{what}: {name!r} must be {_describe(hint)}, got {type(value).__name__} {value!r}"
            )


# ----------------------------------------------------------------------------- policies
#: the one policy registry lives on the ground floor (discoverygym.policy); re-exported here.
def policy_action_modes(policy: Any) -> tuple[str, ...] | None:
    """The action modes a policy (class or instance) supports, or ``None`` when it does not say.

    A policy declares them with an ``action_modes`` attribute (e.g. ``("construction",)``).
    """
    modes = getattr(policy, "action_modes", None)
    if modes is None:
        return None
    return (modes,) if isinstance(modes, str) else tuple(modes)


def check_action_mode(policy: Any, action_mode: str, name: str | None = None) -> None:
    """Refuse a policy that cannot propose actions of ``action_mode``.

    Raises:
        ValueError: the policy declares its action modes and ``action_mode`` is not one of them.
    """
    modes = policy_action_modes(policy)
    if modes is None or action_mode in modes:
        return
    label = name or getattr(policy, "name", None) or getattr(policy, "__name__", repr(policy))
    raise ValueError(
        f"policy {label!r} proposes {' or '.join(modes)} actions and cannot run with "
        f"action_mode={action_mode!r} (use --action-mode {modes[0]}, or a policy for {action_mode})"
    )
