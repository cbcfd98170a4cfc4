"""Spaces used by discoverygym environments."""

from __future__ import annotations

from typing import Any

from gymnasium import spaces


class UnicodeText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` that contains any Unicode string up to ``max_length``.

    Gymnasium's ``Text`` only contains strings over its charset (alphanumeric by default), which
    rejects prompts and programs. Sampling still draws from the alphanumeric charset.
    """

    def contains(self, x: Any) -> bool:
        """True for any ``str`` with ``min_length <= len(x) <= max_length``."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"
