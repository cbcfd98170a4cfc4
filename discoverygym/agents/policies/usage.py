"""Token and cost accounting for hosted chat backends (``litellm:MODEL``), with run-wide limits.

One :class:`UsageTracker` per run. Every chat call is one record appended to ``usage.jsonl`` in
the run directory (prompt / completion / reasoning tokens, latency, retries, cost in USD) and the
running totals are rewritten atomically to ``usage.json``. On ``--resume`` the totals are rebuilt
from ``usage.jsonl``, so ``--max-cost-usd`` and ``--max-tokens`` count across resumes.

Prices: a user price table (:class:`PriceTable`, JSON, dollars per million tokens) wins;
otherwise LiteLLM's own price map (``litellm.cost_per_token``, the map shipped with the installed
LiteLLM; no network). Reasoning tokens are part of the completion tokens, as providers bill them.

Limits are checked before each batch of calls (one prompt's K samples), so a batch is never cut in
half: a run may overshoot a cap by the batches already being sampled (at most the generation
workers' batches).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from discoverygym.io import atomic_write_json, json_lines

__all__ = ["USAGE_JSON", "USAGE_LOG", "PriceTable", "UsageLimitReached", "UsageTracker"]

USAGE_LOG = "usage.jsonl"
USAGE_JSON = "usage.json"

#: the totals kept per run (all start at zero).
_TOTAL_KEYS = ("calls", "prompt_tokens", "completion_tokens", "reasoning_tokens", "total_tokens", "cost_usd",
               "unpriced_calls", "retries", "latency_s")


class UsageLimitReached(RuntimeError):
    """A run-wide usage limit (``max_cost_usd`` or ``max_tokens``) is reached; no new call is made.

    Attributes:
        limit: ``"max_cost_usd"`` or ``"max_tokens"``.
        cap: the limit's value.
        used: what the run has used of it so far.
        totals: a copy of the tracker's totals.
    """

    def __init__(self, limit: str, cap: float, used: float, totals: dict) -> None:
        self.limit, self.cap, self.used, self.totals = limit, cap, used, dict(totals)
        flag = "--" + limit.replace("_", "-")
        shown = f"${used:.6g} of ${cap:.6g}" if limit == "max_cost_usd" else f"{int(used)} of {int(cap)} tokens"
        super().__init__(f"usage limit {flag} reached ({shown} used)")


class PriceTable:
    """User prices in dollars per million tokens, by model name.

    The JSON file maps a model name (as given after ``litellm:``, or without its provider prefix)
    to ``{"input": USD_PER_1M, "output": USD_PER_1M}`` (``input_per_1m`` / ``output_per_1m``
    are accepted too), e.g. ``{"openai/my-model": {"input": 0.15, "output": 0.6}}``.

    Raises:
        ValueError: the table is not an object of such entries (the message names the entry).
    """

    def __init__(self, table: Mapping[str, Any]) -> None:
        if not isinstance(table, Mapping):
            raise ValueError(f"a price table is a JSON object of model -> prices, got {type(table).__name__}")  # noqa: TRY004 - a usage error (exit 2)
        self.prices: dict[str, tuple[float, float]] = {}
        for model, entry in table.items():
            try:
                inp = entry.get("input", entry.get("input_per_1m"))
                out = entry.get("output", entry.get("output_per_1m"))
                self.prices[str(model)] = (float(inp), float(out))
            except (AttributeError, TypeError, ValueError):
                raise ValueError(f"price table entry {model!r} needs numbers 'input' and 'output' "
                                 f"(USD per 1M tokens), got {entry!r}") from None
            if min(self.prices[str(model)]) < 0:
                raise ValueError(f"price table entry {model!r} has a negative price")

    @classmethod
    def load(cls, path: str | os.PathLike) -> PriceTable:
        """Read a price table from a JSON file.

        Raises:
            OSError: the file cannot be read; ValueError: it is not a valid table.
        """
        with open(path) as fh:
            try:
                data = json.load(fh)
            except ValueError as exc:
                raise ValueError(f"price table {path} is not JSON: {exc}") from None
        return cls(data)

    def lookup(self, model: str) -> tuple[float, float] | None:
        """``(input, output)`` USD per 1M tokens of ``model`` (also tried without ``provider/``), or ``None``."""
        if model in self.prices:
            return self.prices[model]
        short = model.split("/", 1)[1] if "/" in model else None
        return self.prices.get(short) if short else None


def litellm_price(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Cost in USD from LiteLLM's price map, or ``None`` when LiteLLM does not know ``model``."""
    try:
        import litellm

        inp, out = litellm.cost_per_token(model=model, prompt_tokens=int(prompt_tokens),
                                          completion_tokens=int(completion_tokens))
    except Exception:  # noqa: BLE001 - LiteLLM raises various errors for unmapped models
        return None
    return float(inp) + float(out)


class UsageTracker:
    """Thread-safe per-run usage totals, their files, and the run-wide limits (module docstring).

    Args:
        run_dir: where ``usage.jsonl`` / ``usage.json`` live (``None``: in memory only).
        max_cost_usd: stop before a batch once the run's cost reaches this (USD).
        max_tokens: stop before a batch once the run's prompt + completion tokens reach this.
        prices: a :class:`PriceTable` consulted before LiteLLM's map.
        resume: rebuild the totals from an existing ``usage.jsonl`` (a new run must have none).

    Raises:
        ValueError: a limit that is not positive.
    """

    def __init__(self, run_dir: str | os.PathLike | None = None, *, max_cost_usd: float | None = None,
                 max_tokens: int | None = None, prices: PriceTable | None = None, resume: bool = False) -> None:
        for name, value in (("max_cost_usd", max_cost_usd), ("max_tokens", max_tokens)):
            if value is not None and not value > 0:
                raise ValueError(f"--{name.replace('_', '-')} must be positive, got {value!r}")
        self.dir = Path(run_dir) if run_dir is not None else None
        self.max_cost_usd = None if max_cost_usd is None else float(max_cost_usd)
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.prices = prices
        self._lock = threading.Lock()
        self.totals: dict[str, float] = dict.fromkeys(_TOTAL_KEYS, 0)
        self.totals["cost_usd"] = 0.0
        self.totals["latency_s"] = 0.0
        self.before: dict[str, float] = dict(self.totals)  # totals when this process started
        if resume and self.dir is not None:
            self.bind(self.dir, resume=True)

    def bind(self, run_dir: str | os.PathLike, resume: bool = False) -> None:
        """Write to ``run_dir`` from now on; with ``resume``, first add the totals of its ``usage.jsonl``."""
        with self._lock:
            self.dir = Path(run_dir)
            if resume:
                for record in self.read_log(self.dir):
                    self._add(record)
                self.before = dict(self.totals)

    # ------------------------------------------------------------------ prices
    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD of one call: the user's price table first, then LiteLLM's map; ``None`` if neither prices it."""
        if self.prices is not None:
            found = self.prices.lookup(model)
            if found is not None:
                return (prompt_tokens * found[0] + completion_tokens * found[1]) / 1e6
        return litellm_price(model, prompt_tokens, completion_tokens)

    def check_priced(self, model: str) -> None:
        """Refuse a cost cap on a model nobody can price.

        Raises:
            ValueError: ``max_cost_usd`` is set and neither the price table nor LiteLLM prices ``model``.
        """
        if self.max_cost_usd is not None and self.cost(model, 1000, 1000) is None:
            raise ValueError(f"--max-cost-usd needs prices for {model!r}, which LiteLLM's price map does not "
                             "have; pass --price-table FILE.json ({\"MODEL\": {\"input\": USD_PER_1M, "
                             "\"output\": USD_PER_1M}})")

    # ------------------------------------------------------------------ limits
    def check(self) -> None:
        """Raise :class:`UsageLimitReached` when a limit is reached (called before each batch)."""
        with self._lock:
            t = self.totals
            if self.max_cost_usd is not None and t["cost_usd"] >= self.max_cost_usd:
                raise UsageLimitReached("max_cost_usd", self.max_cost_usd, t["cost_usd"], t)
            if self.max_tokens is not None and t["total_tokens"] >= self.max_tokens:
                raise UsageLimitReached("max_tokens", self.max_tokens, t["total_tokens"], t)

    # ------------------------------------------------------------------ records
    def _add(self, r: Mapping[str, Any]) -> None:
        t = self.totals
        t["calls"] += 1
        for key in ("prompt_tokens", "completion_tokens", "reasoning_tokens", "retries"):
            t[key] += int(r.get(key) or 0)
        t["total_tokens"] += int(r.get("prompt_tokens") or 0) + int(r.get("completion_tokens") or 0)
        t["latency_s"] += float(r.get("latency_s") or 0.0)
        if r.get("cost_usd") is None:
            t["unpriced_calls"] += 1
        else:
            t["cost_usd"] += float(r["cost_usd"])

    def record(self, call: dict) -> None:
        """Add one call's usage (a dict with the keys of ``usage.jsonl``) and write the files."""
        with self._lock:
            self._add(call)
            if self.dir is not None:
                with open(self.dir / USAGE_LOG, "a") as fh:
                    fh.write(json.dumps(call) + "\n")
                atomic_write_json(self.dir / USAGE_JSON, self.summary(), fsync=False)

    def summary(self) -> dict:
        """The totals, the totals of this process (``this_run``) and the limits (``usage.json``)."""
        now = {k: self.totals[k] - self.before[k] for k in _TOTAL_KEYS}
        return {"totals": dict(self.totals), "this_run": now,
                "limits": {"max_cost_usd": self.max_cost_usd, "max_tokens": self.max_tokens}}

    def scalars(self) -> dict[str, float]:
        """TensorBoard scalars: ``cost/usd`` and ``cost/tokens`` (run totals)."""
        with self._lock:
            return {"cost/usd": float(self.totals["cost_usd"]), "cost/tokens": float(self.totals["total_tokens"])}

    def line(self) -> str:
        """One summary line: tokens (prompt / completion / reasoning), calls, retries and cost."""
        t, now = self.totals, self.summary()["this_run"]
        cost = f"${t['cost_usd']:.6f}"
        if t["unpriced_calls"]:
            cost += f" (+{int(t['unpriced_calls'])} unpriced calls)"
        return (f"tokens {int(t['total_tokens'])} (prompt {int(t['prompt_tokens'])}, completion "
                f"{int(t['completion_tokens'])}, reasoning {int(t['reasoning_tokens'])}) in {int(t['calls'])} chat "
                f"calls ({int(now['calls'])} now, {int(t['retries'])} retries); cost {cost} "
                f"(${now['cost_usd']:.6f} now)")

    @staticmethod
    def read_log(run_dir: str | os.PathLike) -> list[dict]:
        """The complete records of ``run_dir/usage.jsonl`` (a torn last line is ignored)."""
        path = Path(run_dir) / USAGE_LOG
        return json_lines(path.read_text()) if path.exists() else []
