"""The records table (discoverygym records): today's anchors, and every improvement of ours certifies.

Ground truth for the anchors: the published figures (EinsteinArena 2026 for AC1/AC2, TTT-Discover
for Erdős, SimpleTES for AC3 and sum-difference, AlphaEvolve v2 for circle packing).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from discoverygym.cli import main
from discoverygym.envs.registry import ENVS
from discoverygym.records import RECORDS
from discoverygym.rewards.certify import CERTIFIERS, certify, read_exact_json

ROOT = Path(__file__).resolve().parents[1]
OURS = [(e.env_id, o) for e in RECORDS.values() for o in e.ours]


@pytest.mark.parametrize("env_id, value, source", [
    ("ErdosMinOverlap-v0", 0.3808753, "TTT-Discover"),
    ("FirstAutocorrelation-v0", 1.5028609, "EinsteinArena"),
    ("SecondAutocorrelation-v0", 0.96272, "EinsteinArena"),
    ("ThirdAutocorrelation-v0", 1.4536755, "SimpleTES"),
    ("CirclePacking-26-v0", 2.6359830849, "AlphaEvolve v2"),
    ("SumDifference-v0", 1.1448869, "SimpleTES"),
    ("SumDifference-Large-v0", 1.1448869, "SimpleTES"),
])
def test_anchors_are_todays_and_the_envs_read_them(env_id, value, source):
    assert RECORDS[env_id].record.value == value and RECORDS[env_id].record.source.startswith(source)
    assert ENVS[env_id].sota["value"] == value and source in ENVS[env_id].sota["source"]
    assert RECORDS[env_id].record.date.startswith("202")


def test_every_math_env_has_a_record_and_a_certifier():
    assert set(RECORDS) == set(CERTIFIERS) == set(ENVS) & set(CERTIFIERS)


@pytest.mark.parametrize("env_id, ours", OURS, ids=[o.file.rsplit("/", 1)[-1] for _, o in OURS])
def test_each_improvement_of_ours_certifies_and_beats_the_record(env_id, ours):
    path = ROOT / ours.file
    cert = certify(env_id, read_exact_json(path))
    assert cert["valid"], cert["error"]
    assert cert["value"].startswith(ours.value) and cert["beats_record"]
    stored = json.loads((ROOT / ours.certificate).read_text())
    assert stored["value"] == cert["value"] and stored["env_id"] == env_id
    assert ours.command.split()[0] in ("discoverygym", "python")


def test_records_and_list_print_the_same_anchors(capsys):
    assert main(["records", "--json"]) == 0
    rows = {r["env_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert main(["list", "--json"]) == 0
    listed = {r["env_id"]: r for r in json.loads(capsys.readouterr().out)}
    for env_id, row in rows.items():
        assert listed[env_id]["record"] == row["best_known"]
        if row["ours"]:
            assert f"ours {row['ours'][0]['value']}" in listed[env_id]["source"]
