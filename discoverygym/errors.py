"""Exception types of discoverygym, one per family (see docs: style.md, "Errors")."""

from __future__ import annotations


class DiscoveryGymError(Exception):
    """Base class of every error raised by discoverygym."""


class InvalidSolution(DiscoveryGymError, ValueError):
    """A candidate solution breaks a rule of its problem.

    The message names the rule, e.g. ``"h[17] = 1.2 is outside [0, 1]"``. Environments turn it
    into the failure reward and put the message in ``info["error"]``.
    """


class SandboxError(DiscoveryGymError):
    """The sandbox itself could not run (not raised for failures of the program it runs)."""


class BackendUnavailable(DiscoveryGymError):
    """An optional backend (bubblewrap, a GPU, a model server, an extra) is not installed or reachable."""
