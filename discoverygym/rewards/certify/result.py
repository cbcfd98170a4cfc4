"""What a certifier returns: the certified value (exact rational or rigorous interval) and how it was checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from discoverygym.rewards.certify.exact import fraction_text


@dataclass(frozen=True)
class Certified:
    """A quantity proved from the exact inputs, without float64.

    Attributes:
        exact: the value as a fraction when it is rational (Erdős, AC1-3, circle packing), else ``None``.
        interval: ``(lo, hi)`` decimals with ``lo <= value <= hi`` (``lo == hi`` for an exact value
            with a finite decimal expansion; otherwise a rigorous enclosure).
        formula: the value in terms of the exact integers, e.g. ``"max_k (H ⋆ G)_k / (2 S²)"``.
        method: how it was checked (which arithmetic, which checks), one paragraph.
        convention: the rule that could change the number (tolerance, quadrature), or ``""``.
        facts: JSON-safe details (n, the maximising index, exact integers as strings, strict validity).
        inputs: the exact inputs: ``{"scale": "10^-D", "integers": [...]}`` or the decimals themselves.
    """

    exact: Fraction | None
    interval: tuple[Decimal, Decimal]
    formula: str
    method: str
    convention: str = ""
    facts: dict = field(default_factory=dict)
    inputs: dict = field(default_factory=dict)

    @classmethod
    def rational(cls, value: Fraction, **kwargs) -> Certified:
        """A certificate for an exact rational value (its interval is the 60-digit truncations around it)."""
        lo = Decimal(fraction_text(value, 60).rstrip("…"))
        hi = lo if Fraction(lo) == value else lo + (Decimal(1).scaleb(lo.adjusted() - 59) if value > 0
                                                       else -Decimal(1).scaleb(lo.adjusted() - 59))
        return cls(value, (min(lo, hi), max(lo, hi)), **kwargs)

    def text(self, digits: int = 20) -> str:
        """The value for people: the exact fraction's first ``digits`` digits, or the interval's."""
        if self.exact is not None:
            return fraction_text(self.exact, digits)
        lo, hi = self.interval
        return f"{fraction_text(Fraction(lo), digits)} (rigorous interval, width {hi - lo:.1e})"

    def below(self, bound: Fraction) -> bool:
        """True when the value is proved ``< bound``."""
        return Fraction(self.interval[1]) < bound if self.exact is None else self.exact < bound

    def above(self, bound: Fraction) -> bool:
        """True when the value is proved ``> bound``."""
        return Fraction(self.interval[0]) > bound if self.exact is None else self.exact > bound
