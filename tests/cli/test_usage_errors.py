"""Issue 14, item 6 (and item 4's exit code): command-line mistakes are usage errors (exit 2, one
line, no traceback), a missing sandbox backend is exit 3, as the CLI's help documents."""

from __future__ import annotations

import pytest

from discoverygym.cli import main

DEEP = "[" * 100_000 + "]" * 100_000


def _run(capsys, argv: list[str]) -> tuple[int, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        rc = exc.code
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return rc, err


@pytest.mark.parametrize("argv", [
    ["evaluate", "CirclePacking-26-v0", "--seed", "-1"],
    ["search", "CirclePacking-26-v0", "--seed", "-1"],
    ["search", "CirclePacking-26-v0", "--policy-kwargs", DEEP],
    ["search", "CirclePacking-26-v0", "--task-options", DEEP],
])
def test_negative_seeds_and_over_deep_json_options_are_usage_errors(capsys, tmp_path, argv):
    rc, err = _run(capsys, [*argv, "--run-dir", str(tmp_path / "run")] if argv[0] == "search" else argv)
    assert rc == 2, err
    assert "seed" in err or "JSON" in err, err


def test_over_deep_json_file_is_a_usage_error(capsys, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    rc, err = _run(capsys, ["evaluate", "CirclePacking-26-v0", str(path)])
    assert rc == 2 and "nested too deeply" in err, err


def test_denoising_without_bubblewrap_is_exit_3_naming_the_opt_in(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("DISCOVERYGYM_SANDBOX_NO_BWRAP", "1")
    program = tmp_path / "denoise.py"
    program.write_text("def denoise(X_train, **kwargs):\n    return X_train\n")
    rc, err = _run(capsys, ["evaluate", "ScRNADenoising-v0", str(program), "--dataset", "pbmc68k-reduced"])
    assert rc == 3, err
    assert "allow_unconfined=True" in err and len(err.strip().splitlines()) == 1, err
