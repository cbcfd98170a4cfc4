"""Exception types of discoverygym, one per family (see docs: style.md, "Errors")."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class DiscoveryGymError(Exception):
    """Base class of every error raised by discoverygym."""


class InvalidSolution(DiscoveryGymError, ValueError):
    """A candidate solution breaks a rule of its problem.

    The message names the rule, e.g. ``"h[17] = 1.2 is outside [0, 1]"``. Environments turn it
    into the failure reward and put the message in ``info["error"]``.

    Args:
        message: the rule broken.
        metrics: optional JSON-serialisable facts gathered before the failure (per-case scores,
            the failing case's name); program environments copy them into the state's metadata.
    """

    def __init__(self, message: str = "", metrics: dict | None = None) -> None:
        super().__init__(message)
        self.metrics = dict(metrics or {})


class SandboxError(DiscoveryGymError):
    """The sandbox itself could not run (not raised for failures of the program it runs)."""


class BackendUnavailable(DiscoveryGymError, ImportError):
    """An optional backend (bubblewrap, a GPU, a model server, an extra) is not installed or reachable.

    The message names what is missing and how to get it (the extra to install, the key to set). An
    :class:`ImportError` too, so that callers which catch a missing library keep catching it; the
    CLI exits with code 3.
    """


class UsageError(DiscoveryGymError):
    """A command-line mistake (a bad flag value, an unknown env, a run directory that cannot be used).

    Every ``discoverygym`` sub-command prints it on one line and exits with code 2.
    """


class UnknownEnvError(DiscoveryGymError, ValueError):
    """An env id (or problem name) that no registry holds: the one unknown-env error.

    The message is ``unknown env 'X'; run `discoverygym list``` with up to three close registered
    names suggested, as Gymnasium's ``_find_spec`` does with :func:`difflib.get_close_matches`
    (``unknown env 'CirclePacking-62-v0' (did you mean 'CirclePacking-26-v0'?); run ...``). The
    CLI prints it as a usage error (exit 2). Raised by
    :func:`discoverygym.envs.registry.find_env`, the one lookup.

    Args:
        name: the id or name asked for.
        known: the registered ids (and names) to suggest from.
        what: what was looked for (``"env"``, ``"env id"``, ``"program env"``, ``"problem"``...).
        detail: what else to say, in parentheses at the end (e.g. Gymnasium's own error).

    Attributes:
        name: the id asked for.
        suggestions: the close names, closest first (may be empty).
    """

    def __init__(self, name: str, known: Iterable[str] = (), what: str = "env", detail: str = "") -> None:
        self.name = name
        self.suggestions = difflib.get_close_matches(str(name), sorted(set(known)), n=3)
        hint = f" (did you mean {' or '.join(map(repr, self.suggestions))}?)" if self.suggestions else ""
        super().__init__(f"unknown {what} {name!r}{hint}; run `discoverygym list`" + (f" ({detail})" if detail else ""))
