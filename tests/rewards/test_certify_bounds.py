"""certify is total and agrees with evaluate (issue 52, #1-#9): one test per class of break.

Every input is bounded before exact arithmetic (claims by exponent and length; constructions by
the env's float64 range and by the cost of their exact integers), a valid construction stays
valid for certify, ``--out`` cannot replace the input, files are read through one checked
descriptor, and ``--init`` has one loader with one error style.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from fractions import Fraction

import gymnasium as gym
import pytest

import discoverygym  # noqa: F401  (registers the envs)
from discoverygym.cli import main
from discoverygym.io import read_input_bytes
from discoverygym.rewards.certify import certify, read_exact_json
from discoverygym.rewards.certify.exact import CertifyLimit, affordable

ERDOS = "ErdosMinOverlap-v0"


def _write(tmp_path, text, name="c.json"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _evaluate(env_id, text):
    """The env's verdict on the file's text, read as every other command reads JSON (float64)."""
    env = gym.make(env_id)
    try:
        return env.unwrapped.evaluate(json.loads(text))
    finally:
        env.close()


@pytest.mark.parametrize("claim", ['"score": 1e-999999999', '"claimed": "1e999999999"', '"value": 1e999999999',
                                   '"claim": "' + "9" * 5000 + '"'])
def test_an_extreme_claim_is_unreadable_not_computed(tmp_path, claim):
    """#1, #2: claims far outside any value are never turned into exact fractions (on main: no answer in 60 s)."""
    cert = certify(ERDOS, read_exact_json(_write(tmp_path, '{"construction": [1, 1, 0, 0], ' + claim + "}")))
    assert cert["valid"] and cert["claims"][0]["verdict"] == "unreadable"


@pytest.mark.parametrize(("env_id", "text"), [
    (ERDOS, "[1e400, 1e400, 0, 0]"),  # #3: the env reads inf
    (ERDOS, "[1, 1, 1e-5000, 0]"),  # #4: the env reads 0.0; exact integers of 5,000 digits
    ("FirstAutocorrelation-v0", "[1, 1, 1e-3000]"),
    (ERDOS, "[1, -1e-400, 1, 0]"),  # the env reads -0.0: valid; as written, -1e-400 is negative
])
def test_valid_for_certify_exactly_when_valid_for_the_env(tmp_path, env_id, text):
    judged = _evaluate(env_id, text)
    cert = certify(env_id, read_exact_json(_write(tmp_path, text)))
    assert cert["valid"] == judged.valid, (cert["error"], judged.error)
    if "-1e-400" in text:  # negative as written, -0.0 for the env: certified as the env reads it, and said
        assert "read as float64" in cert["convention"]
    if judged.valid:  # the exact value is within the tiny perturbation of the env's float value
        assert abs(float(cert["value"].rstrip("…")) - judged.score) < 1e-12


def test_a_packing_with_a_radius_of_1e_490000_is_read_as_the_env_reads_it(tmp_path):
    """#5: 25 grid circles and one of radius 1e-490000 (a 1 KB file; on main 144 s, then an error)."""
    rows = [[0.1 + 0.2 * (k % 5), 0.1 + 0.2 * (k // 5), 0.1] for k in range(25)]
    text = json.dumps(rows)[:-1] + ", [0.2, 0.2, 1e-490000]]"
    judged = _evaluate("CirclePacking-26-v0", text)
    cert = certify("CirclePacking-26-v0", read_exact_json(_write(tmp_path, text)))
    assert judged.valid and cert["valid"] and "read as float64" in cert["convention"]
    assert Fraction(cert["value_exact"]) == sum(Fraction(r[2]) for r in json.loads(text))  # the float64 radii, exactly


def test_inputs_too_costly_even_as_float64_are_one_line_of_ours():
    values = [Decimal("1e300"), Decimal("5e-324")] * 40_000  # 80,000 numbers of ~1,400 digits each as float64
    with pytest.raises(CertifyLimit, match="not certified: .* over certify's limits"):
        affordable(values, "h")


def test_out_refuses_the_input_a_directory_and_a_path_under_a_file(tmp_path, capsys):
    """#6, #7: one line, exit 2 (exit 1 means "invalid"), and the input is never replaced."""
    path = _write(tmp_path, "[1, 1, 0, 0]")
    (tmp_path / "f").write_text("x")
    for out in (path, tmp_path, tmp_path / "f" / "x.json", "/proc/self/x.json"):
        assert main(["certify", ERDOS, str(path), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "--out" in err and "Traceback" not in err
    assert path.read_text() == "[1, 1, 0, 0]"
    assert main(["certify", ERDOS, str(path), "--out", str(tmp_path / "cert.json")]) == 0
    assert json.loads((tmp_path / "cert.json").read_text())["valid"] is True


def test_the_file_checked_is_the_file_read(tmp_path, monkeypatch):
    """#8: a path that flips after a stat is judged by what is opened (on main a flip to /dev/zero was read
    until the OOM killer came; here the flip goes to a 100 MB sparse file, beyond the 64 MiB limit)."""
    (tmp_path / "ok.json").write_text("[1, 1, 0, 0]")
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(100 << 20)
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "ok.json")
    real_stat = os.stat

    def flipping_stat(p, *args, **kwargs):
        out = real_stat(p, *args, **kwargs)
        if str(p).endswith("link.json") and os.readlink(link).endswith("ok.json"):
            link.unlink()
            link.symlink_to(big)
        return out

    monkeypatch.setattr(os, "stat", flipping_stat)
    try:
        assert read_exact_json(link) == [1, 1, 0, 0]
    except ValueError as exc:  # opened after a flip: refused on the descriptor, never read
        assert "limit" in str(exc)


def test_devices_and_fifos_are_refused_on_the_descriptor(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, kind in (("/dev/zero", "a device"), (fifo, "a FIFO"), (tmp_path, "a directory")):
        with pytest.raises(ValueError, match=kind):
            read_input_bytes(path)


@pytest.mark.parametrize("command", [
    ["train", ERDOS, "--budget-s", "1"],
    ["compare", ERDOS, "--configs", "full", "--seeds", "1", "--budget-s", "1"],
    ["search", ERDOS],
])
def test_init_has_one_loader_and_one_error_style(tmp_path, capsys, command):
    """#9: a 4,301-digit integer and an invalid construction: one line, exit 2, in every command."""
    for text, words in (("[" + "1" * 4301 + ", 1, 0, 0]", "a number too long"),
                        ("[1, 1, -1, 0]", "not a valid construction")):
        path = _write(tmp_path, text, "init.json")
        code = main([*command, "--init", str(path), "--run-dir", str(tmp_path / "run")])
        err = capsys.readouterr().err.strip()
        assert code == 2 and err.count("\n") == 0 and words in err and "Traceback" not in err, err
        assert not (tmp_path / "run").exists()
