"""The Python sandbox's normal behaviour: arguments, returned data, output capture, argument checks.

Each behaviour test runs on both backends (see ``support.py``).
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

from discoverygym.errors import BackendUnavailable
from discoverygym.sandbox import python as sandbox
from discoverygym.sandbox.python import SandboxLimits, bwrap_available, run_program
from tests.sandbox.support import (
    assert_failed,
)


def test_trivial_program_is_fast_and_clean(run):
    result = run("def construct():\n    return [1.0]\n")
    assert result.ok and result.value == [1.0] and result.error is None
    assert (result.stdout, result.stderr, result.returncode, result.timed_out) == ("", "", 0, False)
    assert result.elapsed_s > 0  # measured; how fast depends on the machine's load, not on the sandbox


def test_kwargs_are_passed_by_signature(run):
    kwargs = {"seed": 3, "budget_s": 5.0, "parent": [0.5]}
    assert run("def construct():\n    return [1, 2]\n", kwargs).value == [1, 2]
    picked = run("def construct(seed, *, budget_s=None):\n    return [seed, budget_s]\n", kwargs)
    assert picked.value == [3, 5.0]
    everything = run("def construct(**kw):\n    return sorted(kw)\n", kwargs)
    assert everything.value == ["budget_s", "parent", "seed"]
    missing = run("def construct(seed, other):\n    return [seed]\n", kwargs)
    assert_failed(missing, "program raised TypeError", "other")


def test_program_reads_parent_and_returns_modified_copy(run):
    parent = np.random.default_rng(0).random(50_000).tolist()
    matrix = np.arange(29 * 29, dtype=float).reshape(29, 29).tolist()
    source = """
        import numpy as np
        def construct(parent, matrix):
            flipped = -np.asarray(matrix)
            return {"parent": [x * 2 for x in parent], "matrix": flipped.T}
    """
    result = run(source, {"parent": parent, "matrix": matrix})
    assert result.ok, result.error
    assert result.value["parent"] == [x * 2 for x in parent]
    assert result.value["matrix"] == (-np.asarray(matrix)).T.tolist()


def test_seed_is_passed_through(run):
    source = "import random\ndef construct(seed):\n    return [random.Random(seed).random()]\n"
    assert run(source, {"seed": 7}).value == [random.Random(7).random()]


def test_numpy_values_are_converted(run):
    source = """
        import numpy as np
        def construct():
            return [np.linspace(0, 1, 3), np.arange(3, dtype=np.int32), np.array([True, False]),
                    np.float32(0.5), np.int64(7), np.bool_(True), np.array([1.5], dtype=np.float16),
                    np.array([1, "a"], dtype=object)]
    """
    value = run(source).value
    assert value == [[0.0, 0.5, 1.0], [0, 1, 2], [True, False], 0.5, 7, True, [1.5], [1, "a"]]
    assert [type(v) for v in value[1]] == [int, int, int] and type(value[4]) is int


def test_dataclasses_and_custom_entry_name(run):
    source = """
        from __future__ import annotations
        from dataclasses import dataclass
        @dataclass
        class Point:
            x: float
        def solve():
            return [Point(2.5).x]
    """
    assert run(source, entry="solve").value == [2.5]


def test_writing_inside_private_directory_works_and_it_is_removed(run):
    source = """
        import os, tempfile
        from pathlib import Path
        def construct():
            Path("notes.txt").write_text("hi")
            os.mkdir("sub")
            os.rename("notes.txt", "sub/notes.txt")
            with tempfile.NamedTemporaryFile("w") as fh:
                fh.write("x")
            return [os.getcwd(), os.environ["HOME"], os.environ["TMPDIR"], Path("sub/notes.txt").read_text()]
    """
    result = run(source)
    assert result.ok, result.error
    cwd, home, tmp, text = result.value
    assert cwd == home == tmp and text == "hi"
    assert os.path.basename(cwd).startswith("discoverygym-sandbox-")
    assert not os.path.exists(cwd)


def test_environment_is_minimal(run, monkeypatch):
    monkeypatch.setenv("DISCOVERYGYM_TEST_SECRET", "hunter2")
    result = run("import os\ndef construct():\n    return dict(os.environ)\n", cpus=1)
    env = result.value
    assert "DISCOVERYGYM_TEST_SECRET" not in env
    assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "1"
    assert env["PYTHONHASHSEED"] == "0" and env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_dev_null_and_reading_files_are_allowed(run):
    source = f"""
        import os
        def construct():
            open(os.devnull, "w").write("x")
            return [open({__file__!r}).read(20)]
    """
    result = run(source)
    assert result.ok and result.value == [Path(__file__).read_text()[:20]], result.error


def test_scipy_is_usable(run):
    pytest.importorskip("scipy.optimize")
    source = """
        import scipy.optimize
        def construct():
            return [float(scipy.optimize.minimize_scalar(lambda x: (x - 0.25) ** 2).x)]
    """
    result = run(source)
    assert result.ok and abs(result.value[0] - 0.25) < 1e-6, result.error


def test_stdout_and_stderr_are_captured(run):
    source = """
        import sys
        def construct():
            print("héllo")
            print("oops", file=sys.stderr)
            return []
    """
    result = run(source)
    assert (result.stdout, result.stderr, result.value) == ("héllo\n", "oops\n", [])


def test_concurrent_runs(use_bwrap):
    limits = SandboxLimits(use_bwrap=use_bwrap, timeout_s=10.0)
    results = [None] * 3

    def work(i: int) -> None:
        results[i] = run_program(f"def construct():\n    return [{i}]\n", limits=limits)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.value for r in results] == [[0], [1], [2]]


def test_syntax_error_returns_without_starting_a_process(monkeypatch):
    def no_popen(*args, **kwargs):
        raise AssertionError("a process was started")

    monkeypatch.setattr(subprocess, "Popen", no_popen)
    result = run_program("def construct(:\n    return 1\n")
    assert_failed(result, "syntax error", "line 1")
    assert result.returncode is None and not result.timed_out


@pytest.mark.parametrize("call, error", [
    (lambda: run_program(b"def construct(): pass"), TypeError),
    (lambda: run_program("", entry="not an identifier"), ValueError),
    (lambda: run_program("", entry=3), TypeError),
    (lambda: run_program("", kwargs=[1]), TypeError),
    (lambda: run_program("", kwargs={1: 2}), TypeError),
    (lambda: run_program("", kwargs={"x": object()}), TypeError),
    (lambda: run_program("", limits={"timeout_s": 1}), TypeError),
    (lambda: SandboxLimits(timeout_s=0), ValueError),
    (lambda: SandboxLimits(timeout_s=float("nan")), ValueError),
    (lambda: SandboxLimits(memory_mb=1.5), TypeError),
    (lambda: SandboxLimits(cpus=0), ValueError),
    (lambda: SandboxLimits(use_bwrap="yes"), TypeError),
])
def test_bad_arguments_raise(call, error):
    with pytest.raises(error):
        call()


def test_kwargs_accept_numpy_arrays():
    result = run_program("def construct(parent):\n    return parent\n",
                         kwargs={"parent": np.arange(3.0)}, limits=SandboxLimits(use_bwrap=False))
    assert result.value == [0.0, 1.0, 2.0]


def test_forcing_fallback_with_environment_variable(monkeypatch):
    monkeypatch.setenv(sandbox.NO_BWRAP_ENV, "1")
    assert bwrap_available() is False
    with pytest.raises(BackendUnavailable):
        run_program("def construct():\n    return []\n", limits=SandboxLimits(use_bwrap=True))
    assert run_program("def construct():\n    return []\n").backend == "fallback"


def test_limits_defaults():
    limits = SandboxLimits(timeout_s=2.5)
    assert limits.cpu_limit_s == 4 and SandboxLimits(cpu_s=7).cpu_limit_s == 7
    assert (limits.memory_mb, limits.cpus, limits.output_bytes, limits.result_bytes) == (
        2048, 1, 64_000, 64_000_000)
    assert limits.network is False and limits.use_bwrap is None and limits.allow_subprocess is False


def test_hidden_paths_must_be_absolute():
    with pytest.raises(TypeError, match="absolute"):
        SandboxLimits(hidden_paths=("relative/file",))
    with pytest.raises(TypeError, match="tuple"):
        SandboxLimits(hidden_paths=["/x"])
