"""``train``'s "vs start" row says by how much the best improved on the start.

From TTT-Discover's CP26 packing, a run printed "start 2.635977395", "best 2.635977395" and then
"vs start: improved" (the polish had gained 1.1e-13): the row now gives the gain, so equal printed
numbers and "improved" no longer contradict each other.
"""

from __future__ import annotations

from types import SimpleNamespace

from rich.console import Console

from discoverygym.cli.train import _print_summary
from discoverygym.envs.registry import ENVS


def test_vs_start_gives_the_gain(tmp_path):
    problem = ENVS["CirclePacking-26-v0"]
    summary = {"run_dir": str(tmp_path), "best_score": 2.6359773947543683, "proxy": None,
               "initial_score": 2.6359773947542573, "record": 2.6359830853, "record_source": "Numaro 2026",
               "gap_to_record": -5.69e-6, "beats_record": False, "verdict": "does not beat", "improved": True}
    config = SimpleNamespace(family="numeric", name="full", policy="operators")
    result = SimpleNamespace(steps=1, initial=SimpleNamespace(unscored=False), history=[], elapsed_s=1.0,
                             best=SimpleNamespace(valid=True, metadata={}))
    console = Console(width=200, record=True)
    _print_summary(console, summary, problem, config, result)
    text = console.export_text()
    row = next(line for line in text.splitlines() if "vs start" in line)
    assert "improved by +1.110e-13" in row, row
