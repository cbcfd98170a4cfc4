"""ZonedNeutralAtom bounds a placer's result before the parent parses it (issue 52, #10).

On main a placer returning ``[[]] * 20_000_000`` cost the parent 34 s and 1.5 GB per circuit (an
honest run: 45 MB), 16 circuits in a row; QubitRouting already had such a cap.
"""

from __future__ import annotations

import json

import pytest

from discoverygym.envs.znaa import ZonedNeutralAtomTask
from discoverygym.errors import InvalidSolution
from discoverygym.rewards import znaa as verifier

FLOOD = "def place(num_qubits, stages, reuse, arch, **kw):\n    return [[]] * 2_000_000\n"


def test_a_flood_of_empty_lists_is_refused_before_parsing():
    task = ZonedNeutralAtomTask(circuits=["ising_n10"], case_time_limit_s=30)
    with pytest.raises(InvalidSolution, match=r"circuit ising_n10: place failed: result (larger than \d+ bytes|holds more than)"):
        task.judge(FLOOD, "ising_n10", 0)


def test_the_bound_holds_a_valid_placement_of_the_largest_shape():
    """A placement with the most snapshots every stage allows, sites of 3-digit numbers, fits the bound."""
    n, stages = 20, 30
    site = [0, 99, 99]
    result = {"initial": [site] * n, "stages": [[[site] * n] * verifier.MAX_SNAPSHOTS for _ in range(stages)]}
    raw = json.dumps({"ok": True, "value": result}).encode()
    values = raw.count(b",") + raw.count(b"[") + raw.count(b"{") - 2  # as the sandbox counts them
    most, size = verifier.max_result_size(n, stages)
    assert values <= most and len(raw) <= size
