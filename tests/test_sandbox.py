"""Tests of discoverygym.rewards.sandbox: normal behaviour and a suite of hostile programs.

Every behaviour test runs on both backends: ``bwrap`` (skipped where bubblewrap is missing or
unusable) and ``fallback`` (always). Each run gets a unique token (in the child's environment)
and afterwards no process may carry it; programs that start processes also put a marker in the
command line, checked the same way.
"""

from __future__ import annotations

import json
import math
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from discoverygym.errors import BackendUnavailable
from discoverygym.rewards import _sandbox_runner as runner
from discoverygym.rewards import sandbox
from discoverygym.rewards.sandbox import SandboxLimits, SandboxResult, bwrap_available, run_program

REPO = Path(__file__).resolve().parents[1]
PACKAGE_DIR = Path(sandbox.__file__).resolve().parent

#: Landlock confines the fallback backend's writes here (the kernel offers it and it is not
#: switched off, as DISCOVERYGYM_SANDBOX_NO_LANDLOCK=1 does to simulate a machine without it).
LANDLOCK = (runner.landlock_abi(runner._libc()) >= 1
            and os.environ.get(sandbox.NO_LANDLOCK_ENV, "") in ("", "0"))

BACKENDS = [
    pytest.param(True, id="bwrap",
                 marks=pytest.mark.skipif(not bwrap_available(), reason="bubblewrap unavailable")),
    pytest.param(False, id="fallback"),
]


def processes_containing(marker: str) -> list[int]:
    """Pids (not ours) whose command line or environment contains ``marker``."""
    needle, found = marker.encode(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{name}/{part}", "rb") as fh:
                    if needle in fh.read():
                        found.append(int(name))
                        break
            except OSError:
                continue
    return found


def snapshot(path: Path) -> dict:
    """Names, sizes, modes and contents of everything below ``path``."""
    state = {}
    for item in sorted(path.rglob("*")):
        info = item.lstat()
        state[str(item)] = (info.st_mode, info.st_size,
                            item.read_bytes() if item.is_file() and not item.is_symlink() else None)
    return state


@pytest.fixture(params=BACKENDS)
def use_bwrap(request) -> bool:
    return request.param


@pytest.fixture
def marker() -> str:
    return f"dgmark{uuid.uuid4().hex}"


@pytest.fixture
def run(use_bwrap, marker, monkeypatch):
    """``run(source, kwargs=None, entry="construct", **limits)`` on one backend, then no stray process."""
    token = f"dgtok{uuid.uuid4().hex}"
    monkeypatch.setattr(sandbox, "_new_token", lambda: token)

    def _run(source: str, kwargs: dict | None = None, entry: str = "construct",
             **overrides) -> SandboxResult:
        overrides.setdefault("timeout_s", 10.0)
        limits = SandboxLimits(use_bwrap=use_bwrap, **overrides)
        result = run_program(textwrap.dedent(source), entry=entry, kwargs=kwargs, limits=limits)
        assert result.backend == ("bwrap" if use_bwrap else "fallback")
        assert processes_containing(token) == [], "a sandboxed process survived"
        assert processes_containing(marker) == [], "a process started by the program survived"
        return result

    return _run


def assert_failed(result: SandboxResult, *fragments: str) -> None:
    assert result.ok is False, result
    assert result.value is None
    for fragment in fragments:
        assert fragment in (result.error or ""), result.error


# --------------------------------------------------------------------------- normal behaviour


def test_trivial_program_is_fast_and_clean(run):
    result = run("def construct():\n    return [1.0]\n")
    assert result.ok and result.value == [1.0] and result.error is None
    assert (result.stdout, result.stderr, result.returncode, result.timed_out) == ("", "", 0, False)
    assert 0 < result.elapsed_s < 2.0


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


# --------------------------------------------------------------------------- arguments and fast paths


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


# --------------------------------------------------------------------------- hostile programs


def test_infinite_loop_times_out(run):
    result = run("def construct():\n    while True:\n        pass\n", timeout_s=1.5)
    assert_failed(result, "timed out after 1.5 s (wall clock)")
    assert result.timed_out and 1.5 <= result.elapsed_s < 6.0


def test_cpu_time_limit(run):
    result = run("def construct():\n    while True:\n        pass\n", timeout_s=10.0, cpu_s=1)
    assert_failed(result, "CPU time limit 1 s exceeded")
    assert not result.timed_out and result.elapsed_s < 8.0


@pytest.mark.parametrize("bomb", [
    "x = []\n    while True:\n        x.append(bytearray(10**7))",
    "import numpy as np\n    return np.ones(10**9)",
])
def test_memory_bomb(run, bomb):
    result = run(f"def construct():\n    {bomb}\n", memory_mb=256)
    assert_failed(result, "memory limit 256 MB exceeded (MemoryError)")


@pytest.mark.parametrize("code, event", [
    ("import os\n    while True:\n        os.fork()", "os.fork"),
    ("import os\n    os.system('echo {marker}')", "os.system"),
    ("import subprocess\n    subprocess.run(['sh', '-c', ':(){{ :|:& }};: {marker}'])", "subprocess.Popen"),
    ("import os\n    os.posix_spawn('/bin/sh', ['sh', '-c', 'sleep 9 # {marker}'], {{}})", "os.posix_spawn"),
    ("import os\n    os.execv('/bin/sh', ['sh', '-c', 'sleep 9 # {marker}'])", "os.exec"),
    ("import multiprocessing as mp\n    mp.get_context('fork').Process(target=print).start()", "os.fork"),
])
def test_fork_bomb_and_process_creation_are_blocked(run, marker, code, event):
    result = run(f"def construct():\n    {code.format(marker=marker)}\n")
    assert_failed(result, "PermissionError: sandbox: process creation is disabled", event)


def test_writing_outside_private_directory_is_blocked(run, use_bwrap, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    outside_dir = tmp_path / "dir"
    outside_dir.mkdir()
    package_file = PACKAGE_DIR / "pwned_by_sandbox.py"
    before, package_before = snapshot(tmp_path), sorted(os.listdir(PACKAGE_DIR))
    source = """
        import os, shutil
        from pathlib import Path
        def construct(victim, outside_dir, package_file):
            attempts = {
                "open_w": lambda: open(os.path.join(outside_dir, "new.txt"), "w"),
                "open_a": lambda: open(victim, "a"),
                "package": lambda: Path(package_file).write_text("import os"),
                "os_open": lambda: os.open(victim, os.O_WRONLY | os.O_TRUNC),
                "remove": lambda: os.remove(victim),
                "rename": lambda: os.rename(victim, "stolen.txt"),
                "chmod": lambda: os.chmod(victim, 0o777),
                "fchmod": lambda: os.fchmod(os.open(victim, os.O_RDONLY), 0o777),
                "utime": lambda: os.utime(victim, (0, 0)),
                "truncate": lambda: os.truncate(victim, 0),
                "mkdir": lambda: os.mkdir(os.path.join(outside_dir, "sub")),
                "rmdir": lambda: os.rmdir(outside_dir),
                "copy": lambda: shutil.copy("program.py", outside_dir),
                "rmtree": lambda: shutil.rmtree(outside_dir),
                "symlink": lambda: os.symlink(outside_dir, "link"),
                "hardlink": lambda: os.link(victim, "hard"),
                "dotdot": lambda: open("../" * 30 + victim.lstrip("/"), "w"),
                "chdir": lambda: os.chdir(outside_dir),
                "dir_handle": lambda: os.open(outside_dir, os.O_RDONLY),
                "dir_fd": lambda: os.open("x", os.O_WRONLY | os.O_CREAT,
                                          dir_fd=os.open("..", os.O_RDONLY)),
                "path_like": lambda: os.mkdir(Path(outside_dir) / "p"),
                "sqlite": lambda: __import__("sqlite3").connect(os.path.join(outside_dir, "d.db")),
                "sqlite_uri": lambda: __import__("sqlite3").connect(
                    b"file:" + os.path.join(outside_dir, "u.db").encode() + b"?mode=rwc", uri=True),
            }
            outcome = {}
            for name, attempt in attempts.items():
                try:
                    attempt()
                    outcome[name] = "succeeded"
                except (OSError, ImportError) as exc:  # the hook's PermissionError (ImportError for
                    # sqlite3 where nothing else confines writes), or the kernel's refusal
                    outcome[name] = str(exc) if str(exc).startswith("sandbox: ") else repr(exc)
            return outcome
    """
    result = run(source, {"victim": str(victim), "outside_dir": str(outside_dir),
                          "package_file": str(package_file)})
    assert result.ok, result.error
    assert len(result.value) == 23 and "succeeded" not in result.value.values(), result.value
    denied_by_hook = [name for name, text in result.value.items() if text.startswith("sandbox: ")]
    if not use_bwrap:  # without bwrap the audit hook alone must refuse every attempt
        assert len(denied_by_hook) == 23, result.value
    assert {"open_w", "package", "rename", "symlink", "dotdot", "dir_fd"} <= set(denied_by_hook)
    assert snapshot(tmp_path) == before
    assert sorted(os.listdir(PACKAGE_DIR)) == package_before and not package_file.exists()


def test_write_outside_reports_clear_error(run, tmp_path):
    target = tmp_path / "pwned.txt"
    result = run(f"def construct():\n    open({str(target)!r}, 'w').write('x')\n")
    assert_failed(result, "program raised PermissionError: sandbox: writing outside the sandbox "
                          "directory is not allowed", str(target))
    assert not target.exists()


def test_network_is_blocked(run, use_bwrap):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.3)
        port = listener.getsockname()[1]
        source = f"import socket\ndef construct():\n    socket.create_connection(('127.0.0.1', {port}), 2)\n"
        assert_failed(run(source), "PermissionError: sandbox: network access is disabled")
        with pytest.raises(socket.timeout):
            listener.accept()
        raw = f"import _socket\ndef construct():\n    _socket.socket().connect(('127.0.0.1', {port}))\n"
        assert_failed(run(raw), "network access is disabled")
        with pytest.raises(socket.timeout):
            listener.accept()
        if not use_bwrap:  # control: the listener does see a permitted connection
            assert run(source.replace("2)\n", "2)\n    return []\n"), network=True).ok
            listener.accept()[0].close()


def test_program_cannot_patch_host_modules(run):
    original = sandbox.run_program
    source = """
        def construct():
            try:
                import discoverygym.rewards.sandbox as s
            except ImportError:
                return ["not importable"]
            s.run_program = None
            s.SandboxLimits = None
            return ["patched its own copy"]
    """
    result = run(source)
    assert result.ok and result.value[0] in ("not importable", "patched its own copy")
    assert sandbox.run_program is original and callable(sandbox.run_program)
    assert sandbox.SandboxLimits is SandboxLimits


def test_fake_score_on_stdout_is_just_output(run):
    source = "def construct():\n    print('score: 999')\n    print('x' * 500)\n    return [0.5]\n"
    result = run(source, output_bytes=100)
    assert result.ok and result.value == [0.5]
    assert result.stdout.startswith("score: 999\n")
    assert result.stdout.endswith("\n[output truncated after 100 bytes]")
    assert len(result.stdout) == 100 + len("\n[output truncated after 100 bytes]")
    assert not hasattr(result, "score")


def test_nan_and_inf_come_back_as_floats(run):
    source = """
        import numpy as np
        def construct():
            return [float('nan'), float('inf'), -np.inf, np.array([np.nan, 1.0])]
    """
    value = run(source).value
    assert math.isnan(value[0]) and value[1] == math.inf and value[2] == -math.inf
    assert math.isnan(value[3][0]) and value[3][1] == 1.0


def test_wrong_shapes_come_back_as_data(run):
    source = """
        def construct():
            return {"ragged": [[1, 2], [3]], "scalar": 3.0, "nested": [[[]]], "none": None}
    """
    assert run(source).value == {"ragged": [[1, 2], [3]], "scalar": 3.0, "nested": [[[]]], "none": None}
    assert run("def construct():\n    return 2.5\n").value == 2.5


def test_lying_subclasses_give_their_true_values(run):
    source = """
        import numpy as np
        class Liar(np.ndarray):
            def tolist(self): return [999.0]
            def __array__(self, *a, **k): return np.full(3, 999.0)
            def __float__(self): return 999.0
            def __iter__(self): return iter([999.0])
            def __len__(self): return 1
            def __getitem__(self, i): return 999.0
            def view(self, *a, **k): return np.full(3, 999.0)
            def astype(self, *a, **k): return np.full(3, 999.0)
            @property
            def dtype(self): return np.dtype(object)
        class F(float):
            def __float__(self): return 999.0
            def __repr__(self): return "999.0"
        class L(list):
            def __iter__(self): return iter([999.0])
            def __len__(self): return 1
        class D(dict):
            def items(self): return [("a", 999.0)]
        def construct():
            return [np.array([1.0, 2.0, 3.0]).view(Liar), F(0.25), L([1, 2]), D(b=4)]
    """
    assert run(source).value == [[1.0, 2.0, 3.0], 0.25, [1, 2], {"b": 4}]


@pytest.mark.parametrize("value, reason", [
    ("1j", "type complex"),
    ("object()", "type object"),
    ("{1: 2}", "dict keys must be str"),
    ("np.array(['a'])", "dtype <U1"),
    ("[np.array([1j])]", "dtype complex128"),
    ("l", "nested"),
])
def test_unsupported_return_values(run, value, reason):
    source = f"import numpy as np\nl = []\nl.append(l)\ndef construct():\n    return {value}\n"
    assert_failed(run(source), "returned value is not JSON-serialisable numeric data", reason)


@pytest.mark.parametrize("expr", ["[0.123456789] * 100_000", "[1.23456789012345] * 1000",
                                  "'x' * 20_000", "np.zeros(100_000)"])
def test_huge_result_is_rejected(run, expr):
    result = run(f"import numpy as np\ndef construct():\n    return {expr}\n", result_bytes=10_000)
    assert_failed(result, "result larger than 10000 bytes")


def test_raising_names_exception_and_message(run):
    source = "def helper():\n    raise ValueError('bad value 42')\ndef construct():\n    helper()\n"
    result = run(source)
    assert_failed(result, "program raised ValueError: bad value 42", 'File "program.py", line 2')
    assert "_sandbox_runner" not in result.error


def test_raising_at_import_time(run):
    assert_failed(run("import not_a_module_xyz\n"), "program raised ModuleNotFoundError")


def test_recursion_error(run):
    assert_failed(run("def construct():\n    return construct()\n"), "program raised RecursionError")


@pytest.mark.parametrize("code, exit_code", [
    ("import os\n    os._exit(3)", 3),
    ("import sys\n    sys.exit(0)", 0),
    ("import sys\n    sys.exit('bye')", 1),
    ("raise SystemExit", 0),
])
def test_exiting_before_returning(run, code, exit_code):
    result = run(f"def construct():\n    {code}\n")
    assert_failed(result, f"program exited with code {exit_code} before returning a value")


DAEMON = """
    import os, time
    def construct():
        r, w = os.pipe()
        if os.fork() == 0:                      # child
            os.setsid()
            if os.fork() == 0:                  # grandchild: the daemon
                os.write(w, b"up")
                {daemon}
            os._exit(0)
        os.waitpid(-1, 0)
        started = os.read(r, 2).decode()
        {after}
        return [started]
"""
DAEMON_KINDS = {
    "python": "time.sleep(60)",
    "exec_clean_env": "os.execve('/bin/sh', ['sh', '-c', 'sleep 60; : {marker}'], {{}})",
}


def test_daemon_is_blocked_by_default(run):
    source = DAEMON.format(daemon="time.sleep(60)", after="")
    assert_failed(run(source), "PermissionError: sandbox: process creation is disabled (os.fork)")


@pytest.mark.parametrize("kind", sorted(DAEMON_KINDS))
def test_double_forked_daemon_is_killed_by_the_supervisor(run, marker, monkeypatch, kind):
    monkeypatch.setattr(sandbox, "_sweep", lambda token: None)  # only the subreaper may clean up
    source = DAEMON.format(daemon=DAEMON_KINDS[kind].format(marker=marker), after="")
    result = run(source, allow_subprocess=True)
    assert result.ok and result.value == ["up"], result.error


def test_daemon_is_killed_after_timeout(run, marker):
    source = DAEMON.format(daemon=DAEMON_KINDS["exec_clean_env"].format(marker=marker),
                           after="while True: pass")
    result = run(source, allow_subprocess=True, timeout_s=1.5)
    assert_failed(result, "timed out after 1.5 s")


def test_printing_100_mb(run):
    source = """
        import sys
        def construct():
            for _ in range(100):
                sys.stdout.write("x" * 10**6)
            return [1]
    """
    result = run(source, output_bytes=1000)
    assert result.ok and result.value == [1]
    assert result.stdout == "x" * 1000 + "\n[output truncated after 1000 bytes]"


def test_raw_writes_to_stdout_are_stopped_by_file_size_limit(run):
    source = "import os\ndef construct():\n    for _ in range(100):\n        os.write(1, b'y' * 10**6)\n"
    result = run(source, output_bytes=1000, result_bytes=1000)
    assert_failed(result, "program raised OSError", "File too large")
    assert result.stdout == "y" * 1000 + "\n[output truncated after 1000 bytes]"


@pytest.mark.parametrize("source, error", [
    ("x = 1\n", "entry function 'construct' not defined"),
    ("construct = 5\n", "entry function 'construct' not callable (it is a int)"),
])
def test_missing_entry_function(run, source, error):
    assert_failed(run(source), error)


@pytest.mark.parametrize("code, error", [
    ("import ctypes\n    ctypes.CDLL(None)", "ctypes is disabled (ctypes.dlopen)"),
    ("import ctypes\n    ctypes.memmove(0, 0, 1)", "ctypes is disabled (raw memory access)"),
    ("import _ctypes\n    _ctypes.call_function(1, ())", "ctypes is disabled (ctypes.call_function)"),
    ("open('/proc/self/maps').read()", "reading process memory and memory maps is disabled"),
    ("open('/proc/self/mem', 'rb')", "reading process memory and memory maps is disabled"),
    ("import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)",
     "sending signals to other processes is disabled"),
    ("import os, signal\n    signal.pidfd_send_signal(os.pidfd_open(os.getppid()), 9)",
     "PermissionError: [Errno 1]"),
    ("import os\n    open('/proc/%d/environ' % os.getppid(), 'rb').read()", "other processes' /proc"),
    ("import sys\n    sys.settrace(lambda *a: None)", "sys.settrace is disabled"),
    ("import gc\n    gc.get_objects()", "gc.get_objects is disabled"),
    ("import resource\n    resource.setrlimit(resource.RLIMIT_AS, (-1, -1))", "resource.setrlimit"),
])
def test_escape_hatches_are_closed(run, code, error):
    assert_failed(run(f"def construct():\n    {code}\n"), "PermissionError", error)


def test_audit_hook_cannot_be_patched_through_traceback_frames(run, tmp_path):
    target = tmp_path / "x.txt"
    source = f"""
        def construct():
            try:
                open({str(target)!r}, "w")
            except PermissionError as exc:
                tb = exc.__traceback__
            def patches(fn):
                yield lambda: setattr(fn, "__defaults__", None)
                yield lambda: setattr(fn, "__defaults__", (True,) * len(fn.__defaults__ or ()))
                yield lambda: setattr(fn, "__kwdefaults__", {{}})
                yield lambda: setattr(fn, "__code__", (lambda *a, **k: True).__code__)
            tried = 0
            while tb is not None:
                for name, value in tb.tb_frame.f_locals.items():
                    if type(value) is type(construct) and value.__module__ != "program":
                        for patch in patches(value):
                            tried += 1
                            try:
                                patch()
                            except PermissionError:
                                continue
                            print("patched", name)
                tb = tb.tb_next
            print("tried", tried)
            open({str(target)!r}, "w").write("escaped")
    """
    result = run(source)
    assert_failed(result, "writing outside the sandbox directory is not allowed")
    assert "patched" not in result.stdout and int(result.stdout.split()[-1]) >= 20
    assert not target.exists()


def test_kernel_layers_are_active(run):
    source = """
        def construct():
            status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
            return {key: status[key].strip() for key in ("CapEff", "CapPrm", "NoNewPrivs", "Seccomp")}
    """
    value = run(source).value
    assert value["CapEff"] == value["CapPrm"] == "0000000000000000"
    assert value["NoNewPrivs"] == "1"
    if platform.machine() in runner._ARCHES:
        assert value["Seccomp"] == "2"  # filter mode


def test_pipes_work_and_sqlite_in_private_directory(run, use_bwrap):
    source = """
        import os
        def construct():
            r, w = os.pipe()
            with os.fdopen(w, "w") as fh:
                fh.write("through a pipe")
            import sqlite3
            db = sqlite3.connect("local.db")
            db.execute("create table t (x)")
            db.execute("insert into t values (1.5)")
            return [os.read(r, 100).decode(), db.execute("select x from t").fetchone()[0]]
    """
    if use_bwrap or LANDLOCK:
        assert run(source).value == ["through a pipe", 1.5]
    else:  # sqlite's ATTACH could write anywhere: refused where no kernel layer confines writes
        assert_failed(run(source), "ImportError: sandbox: module _sqlite3 is disabled")


def test_too_little_memory_for_python_is_reported_as_a_sandbox_failure(run):
    result = run("def construct():\n    return [1]\n", memory_mb=16)
    assert_failed(result, "the sandbox ")
    assert "failed before the program started" in result.error or "ended abnormally" in result.error


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"ok": true}', '{"ok": false, "error": 3}'])
def test_forged_malformed_result_is_a_protocol_error(run, text):
    source = f"import os\ndef construct():\n    open('result.json', 'w').write({text!r})\n    os._exit(0)\n"
    assert_failed(run(source), "sandbox protocol error")


def test_host_side_sweep_kills_processes_carrying_the_token():
    token = uuid.uuid4().hex
    env = dict(os.environ, **{sandbox.TOKEN_ENV: token})
    procs = [subprocess.Popen(["sleep", "30"], env=env, start_new_session=True) for _ in range(3)]
    try:
        deadline = time.monotonic() + 5
        while len(sandbox._pids_with_env(f"{sandbox.TOKEN_ENV}={token}".encode())) < 3:
            assert time.monotonic() < deadline, "the test processes never showed the token"
            time.sleep(0.01)
        sandbox._sweep(token)
        assert [p.wait(timeout=5) for p in procs] == [-9, -9, -9]
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_audit_hook_functions_have_no_closures():
    hook = runner._make_audit_hook("/nonexistent/root", False, False, True)
    own = hook.__defaults__[-1]
    assert hook in own and len(own) == 9
    assert all(fn.__closure__ is None for fn in own)


def test_audit_hook_defaults_are_immutable():
    """The hook's frames (and so its defaults) are reachable from tracebacks: a dict there could be
    emptied by the program (``_PATH_EVENTS`` was one: clearing it allowed os.remove anywhere)."""
    immutable = (str, int, bool, frozenset, tuple, type(None))
    for confined in (False, True):
        hook = runner._make_audit_hook("/nonexistent/root", False, False, False, confined)
        for fn in hook.__defaults__[-1]:
            for value in fn.__defaults__ or ():
                assert isinstance(value, immutable) or callable(value), (fn.__name__, value)
                if isinstance(value, (tuple, frozenset)):
                    hash(value)  # TypeError if anything inside is mutable
        defaults = dict(zip(hook.__code__.co_varnames[2:], hook.__defaults__))
        assert {"readline", "_testcapi", "_posixsubprocess"} <= defaults["_blocked_modules"]
        assert ("_sqlite3" in defaults["_blocked_modules"]) is not confined


def test_audit_hook_state_cannot_be_emptied_through_traceback_frames(monkeypatch, tmp_path):
    """In the weakest configuration (no bwrap, no Landlock) the hook is the only guard."""
    monkeypatch.setenv(sandbox.NO_LANDLOCK_ENV, "1")
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    source = """
        import os
        def construct(victim):
            emptied = 0
            try:
                os.remove(victim)
            except PermissionError as exc:
                tb = exc.__traceback__
            while tb is not None:
                for value in list(tb.tb_frame.f_locals.values()):
                    if type(value) in (dict, list, set):
                        value.clear()
                        emptied += 1
                tb = tb.tb_next
            os.remove(victim)
            return [emptied]
    """
    result = run_program(textwrap.dedent(source), kwargs={"victim": str(victim)},
                         limits=SandboxLimits(use_bwrap=False))
    assert_failed(result, "PermissionError: sandbox: os.remove outside the sandbox directory")
    assert victim.read_text() == "original"


def test_program_may_add_an_audit_hook_but_not_loosen_the_sandbox(run, tmp_path):
    target = tmp_path / "x.txt"
    source = """
        import sys
        def construct(target):
            seen = []
            sys.addaudithook(lambda event, args: seen.append(event))
            try:
                open(target, "w")
            except PermissionError as exc:
                sys._getframe()
                return [str(exc), "sys._getframe" in seen, "open" in seen]
    """
    result = run(source, {"target": str(target)})
    assert result.ok, result.error
    assert result.value[0].startswith("sandbox: writing outside the sandbox directory")
    assert result.value[1:] == [True, False]  # the program's hook runs after the sandbox's
    assert not target.exists()


# --------------------------------------------------------------------------- paths under /tmp


def test_bwrap_binds_paths_under_tmp_back_and_keeps_the_temp_directory_hidden(monkeypatch):
    visible = ["/tmp/a", "/tmp/a/b", "/tmp/a/tmp", "/tmp/a/tmp/c", "/tmp/z", "/tmp/z/y"]
    monkeypatch.setattr(sandbox, "_visible_paths_under_tmp", lambda: visible)
    args = sandbox._bwrap_prefix("bwrap", "/tmp/a/tmp/discoverygym-sandbox-x", network=False)
    mounts = args[args.index("--tmpfs"):args.index("--chdir")]
    assert mounts == ["--tmpfs", "/tmp", "--ro-bind", "/tmp/a", "/tmp/a", "--tmpfs", "/tmp/a/tmp",
                      "--ro-bind", "/tmp/a/tmp/c", "/tmp/a/tmp/c", "--ro-bind", "/tmp/z", "/tmp/z",
                      "--bind", "/tmp/a/tmp/discoverygym-sandbox-x", "/tmp/a/tmp/discoverygym-sandbox-x"]
    args = sandbox._bwrap_prefix("bwrap", "/tmp/discoverygym-sandbox-x", network=False)
    assert "/tmp/a/tmp" not in args[args.index("--tmpfs") + 2:]  # /tmp itself is the temp root


PROJECT_UNDER_TMP = """
import json, sys
import discoverygym
from discoverygym.rewards import sandbox
PROGRAM = '''
import os
import discoverygym
def construct(data_file, hidden_file):
    def read(path):
        try:
            return open(path).read()
        except OSError as exc:
            return type(exc).__name__
    return {"package": discoverygym.__file__, "data": read(data_file), "hidden": read(hidden_file),
            "temp_dir": sorted(os.listdir(os.path.dirname(os.getcwd())))}
'''
out = {"parent_package": discoverygym.__file__}
for use_bwrap in ([True] if sandbox.bwrap_available() else []) + [False]:
    result = sandbox.run_program(PROGRAM, kwargs=json.loads(sys.argv[1]),
                                 limits=sandbox.SandboxLimits(use_bwrap=use_bwrap, timeout_s=20))
    out[result.backend] = result.value if result.ok else result.error
print(json.dumps(out))
"""


def test_project_cloned_under_tmp_works_on_both_backends():
    """A project (and its venv) below /tmp, imported through a .pth file as an editable install is.

    Under bwrap the private /tmp used to hide the package, sys.path entries and the working
    directory; they are bound back read-only, while the temp directory holding the runs' private
    directories (here inside the working directory) stays hidden.
    """
    numpy_site = Path(np.__file__).resolve().parents[1]
    if (numpy_site / "discoverygym").exists():
        pytest.skip("discoverygym is installed next to numpy (not editable): the copy would be shadowed")
    base = Path(tempfile.mkdtemp(prefix="discoverygym-clone-", dir="/tmp"))
    try:
        shutil.copytree(PACKAGE_DIR.parent, base / "proj" / "discoverygym",
                        ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "venv")], check=True,
                       capture_output=True, timeout=60)
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        site_dir = base / "venv" / "lib" / version / "site-packages"
        deps = [p for p in dict.fromkeys(sys.path) if p and os.path.isdir(p) and not p.startswith(str(base))]
        (site_dir / "clone.pth").write_text("\n".join([str(base / "proj"), *deps]) + "\n")
        workdir, temp_dir = base / "cwd", base / "cwd" / "tmp"
        temp_dir.mkdir(parents=True)
        (workdir / "data.txt").write_text("data in the working directory")
        (temp_dir / "other-run.txt").write_text("another run's file")
        (base / "hidden.txt").write_text("not on any path")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["TMPDIR"] = str(temp_dir)
        kwargs = {"data_file": str(workdir / "data.txt"), "hidden_file": str(base / "hidden.txt")}
        done = subprocess.run([str(base / "venv" / "bin" / "python"), "-c", PROJECT_UNDER_TMP,
                               json.dumps(kwargs)], cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["parent_package"].startswith(str(base / "proj")), out
        for backend in ("bwrap", "fallback") if bwrap_available() else ("fallback",):
            value = out[backend]
            assert isinstance(value, dict), f"{backend}: {value}"
            assert value["package"] == out["parent_package"]
            assert value["data"] == "data in the working directory"
        assert out["fallback"]["hidden"] == "not on any path"
        assert "other-run.txt" in out["fallback"]["temp_dir"]
        if bwrap_available():
            assert out["bwrap"]["hidden"] == "FileNotFoundError"
            assert len(out["bwrap"]["temp_dir"]) == 1  # only its own private directory
            assert out["bwrap"]["temp_dir"][0].startswith("discoverygym-sandbox-")
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------- C code writing files


UNAUDITED_WRITES = """
import importlib.util, os, sys
LOADED_BEFORE = set(sys.modules)
import discoverygym  # gymnasium imports multiprocessing.synchronize, so _multiprocessing

def attempt(fn):
    try:
        fn()
        return "succeeded"
    except BaseException as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"

def spoofed(name, alias):  # the extension module loaded from its file under another name
    found = importlib.util.find_spec(name)
    if found is None:
        raise ImportError(f"sandbox: module {name} is disabled (absent from this Python anyway)")
    spec = importlib.util.spec_from_file_location(alias, found.origin)
    return importlib.util.module_from_spec(spec)

def history(module, path):
    module.add_history("x = 1")
    module.write_history_file(path)

def append_history(path):
    import readline
    readline.add_history("appended")
    readline.append_history_file(1, path)

def sql(database, statement):
    import sqlite3
    sqlite3.connect(database).execute(statement)

def tcl(path):
    import _tkinter
    _tkinter.create(None, "x", "Tk", 0, 0, 0, 0, None).eval(f"set f [open {path} w]; puts $f x; close $f")

def sub_interpreter(path):
    import _testcapi
    _testcapi.run_in_subinterp(f"open({path!r}, 'w').write('x')")

def construct(out, victim, shm, blocked, seccomp):
    preloaded = sorted(name for name in blocked if name in LOADED_BEFORE)
    attempts = {
        "readline_write": lambda: history(__import__("readline"), os.path.join(out, "h1")),
        "readline_append": lambda: append_history(victim),
        "readline_spoofed": lambda: history(spoofed("readline", "x.readline"), os.path.join(out, "h2")),
        "sqlite_attach": lambda: sql(":memory:", f"ATTACH DATABASE '{out}/a.db' AS a"),
        "sqlite_vacuum_into": lambda: sql("local.db", f"VACUUM INTO '{out}/v.db'"),
        "shm_open": lambda: __import__("_posixshmem").shm_open(shm, os.O_CREAT | os.O_RDWR, 0o600),
        "sem_unlink": lambda: __import__("_multiprocessing").sem_unlink("/discoverygym-none"),
        "sem_unlink_fresh_copy": lambda: spoofed("_multiprocessing", "x._multiprocessing").sem_unlink(
            "/discoverygym-none"),
        "dbm": lambda: __import__("dbm.ndbm").ndbm.open(os.path.join(out, "db"), "c"),
        "gdbm": lambda: __import__("dbm.gnu").gnu.open(os.path.join(out, "gdb"), "c"),
        "tcl": lambda: tcl(os.path.join(out, "tcl.txt")),
        "curses": lambda: __import__("_curses"),
        "sub_interpreter": lambda: sub_interpreter(os.path.join(out, "sub.txt")),
        "sub_interpreters": lambda: __import__("_xxsubinterpreters").create(),
        "syslog": lambda: __import__("syslog").syslog("discoverygym sandbox test"),
    }
    if seccomp:  # no audit event: only the seccomp filter (x86_64, aarch64) stops these
        attempts["mkfifo"] = lambda: os.mkfifo(os.path.join(out, "fifo"))
        attempts["mknod"] = lambda: os.mknod(os.path.join(out, "node"))
    return {"preloaded": preloaded, **{name: attempt(fn) for name, fn in attempts.items()}}
"""


@pytest.mark.parametrize("backend, landlock", [
    pytest.param(False, False, id="fallback-without-landlock"),
    pytest.param(False, True, id="fallback"),
    pytest.param(True, False, id="bwrap-without-landlock",
                 marks=pytest.mark.skipif(not bwrap_available(), reason="bubblewrap unavailable")),
])
def test_c_code_writing_files_without_audit_events_changes_nothing(monkeypatch, tmp_path, backend,
                                                                   landlock):
    """readline, sqlite's ATTACH, shared memory, Tcl, sub-interpreters... write outside unaudited.

    Without bubblewrap and Landlock (simulated with DISCOVERYGYM_SANDBOX_NO_LANDLOCK) the audit
    hook is all there is, so it must refuse each of them itself; elsewhere the kernel layers may
    answer first. Either way nothing outside the private directory changes.
    """
    if not landlock:
        monkeypatch.setenv(sandbox.NO_LANDLOCK_ENV, "1")
    weakest = not backend and not (landlock and LANDLOCK)
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    shm = f"/discoverygym-test-{uuid.uuid4().hex}"
    blocked = sorted(runner._UNAUDITED_MODULES | runner._UNCONFINED_MODULES)
    before = snapshot(tmp_path)
    try:
        kwargs = {"out": str(out), "victim": str(victim), "shm": shm, "blocked": blocked,
                  "seccomp": platform.machine() in runner._ARCHES}
        result = run_program(UNAUDITED_WRITES, kwargs=kwargs,
                             limits=SandboxLimits(use_bwrap=backend, timeout_s=20))
        assert result.ok, result.error
        outcome = result.value
        # a module loaded before the hook could be had again without an audit event (only
        # _multiprocessing is, disarmed, where nothing else confines file changes)
        assert outcome.pop("preloaded") == (["_multiprocessing"] if weakest else [])
        assert snapshot(tmp_path) == before, outcome
        assert not os.path.exists("/dev/shm" + shm), outcome
    finally:
        if os.path.exists("/dev/shm" + shm):
            os.unlink("/dev/shm" + shm)
    private_shm = backend  # bubblewrap's /dev, /dev/shm included, is private to the run
    assert "succeeded" not in {k: v for k, v in outcome.items()
                               if not (k == "shm_open" and private_shm)}.values(), outcome
    for name in ("readline_write", "readline_append", "readline_spoofed"):
        assert outcome[name].startswith("ImportError: sandbox: module readline is disabled"), outcome
    assert outcome["sub_interpreter"].startswith("ImportError: sandbox: module _testcapi is disabled")
    assert outcome["syslog"] == "PermissionError: sandbox: network access is disabled (syslog.syslog)"
    if weakest:  # no bwrap, no Landlock: the sandbox's own checks refuse everything
        for name, text in outcome.items():
            refused = text.startswith(("ImportError: sandbox: module ", "PermissionError: sandbox: "))
            seccomp = name in ("mkfifo", "mknod") and text.startswith("PermissionError: [Errno 1]")
            assert refused or seccomp, (name, text)
        assert "neither bubblewrap nor Landlock" in outcome["sqlite_attach"]
        assert outcome["sem_unlink"].startswith("PermissionError: sandbox: sem_unlink is disabled")
    else:
        assert "ImportError: sandbox" not in outcome["sqlite_attach"]  # sqlite stays usable


# --------------------------------------------------------------------------- the seccomp layer


@pytest.mark.skipif(platform.machine() not in runner._ARCHES or not sys.platform.startswith("linux"),
                    reason="seccomp filter only built for Linux x86_64/aarch64")
def test_seccomp_filter_blocks_processes_signals_and_sockets_without_the_audit_hook():
    probe = textwrap.dedent("""
        import json, os, resource, socket, threading
        from discoverygym.rewards import _sandbox_runner as r
        active = r.install_seccomp(r._libc(), network=False, subprocess_ok=False)
        def attempt(fn):
            try:
                fn()
                return "ok"
            except OSError as exc:
                return exc.errno
            except ValueError:  # what resource.setrlimit raises for EPERM
                return "ValueError"
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        box = []
        thread = threading.Thread(target=box.append, args=(1,))
        outcome = {
            "active": active,
            "fork": attempt(os.fork),
            "socket": attempt(socket.socket),
            "kill_parent": attempt(lambda: os.kill(os.getppid(), 0)),
            "kill_self": attempt(lambda: os.kill(os.getpid(), 0)),
            "getrlimit": attempt(lambda: resource.getrlimit(resource.RLIMIT_AS)),
            "setrlimit": attempt(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))),
            "symlink": attempt(lambda: os.symlink("/", "/tmp/never-created-by-seccomp-test")),
            "thread": attempt(lambda: (thread.start(), thread.join())),
        }
        outcome["thread_ran"] = len(box)
        print(json.dumps(outcome))
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["active"] is True
    assert outcome["fork"] == outcome["socket"] == outcome["kill_parent"] == 1  # EPERM
    assert outcome["setrlimit"] == "ValueError" and outcome["symlink"] == 1
    assert outcome["kill_self"] == outcome["getrlimit"] == outcome["thread"] == "ok"
    assert outcome["thread_ran"] == 1


def test_landlock_blocks_writes_outside_without_the_audit_hook(tmp_path):
    if runner.landlock_abi(runner._libc()) < 1:
        pytest.skip("the kernel offers no Landlock")
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("original")
    probe = textwrap.dedent("""
        import json, os, sys
        from discoverygym.rewards import _sandbox_runner as r
        inside, outside = sys.argv[1], sys.argv[2]
        active = r.install_landlock(r._libc(), inside)
        def attempt(fn):
            try:
                fn()
                return "ok"
            except OSError as exc:
                return exc.errno
        print(json.dumps({
            "active": active,
            "write_inside": attempt(lambda: open(os.path.join(inside, "a.txt"), "w").write("x")),
            "mkdir_inside": attempt(lambda: os.mkdir(os.path.join(inside, "d"))),
            "write_outside": attempt(lambda: open(os.path.join(outside, "new.txt"), "w")),
            "truncate_outside": attempt(lambda: open(os.path.join(outside, "victim.txt"), "r+")),
            "remove_outside": attempt(lambda: os.remove(os.path.join(outside, "victim.txt"))),
            "mkdir_outside": attempt(lambda: os.mkdir(os.path.join(outside, "d"))),
            "dev_null": attempt(lambda: open(os.devnull, "w").write("x")),
            "read_outside": attempt(lambda: open(os.path.join(outside, "victim.txt")).read()),
        }))
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", probe, str(inside), str(outside)],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["active"] is True
    assert outcome["write_inside"] == outcome["mkdir_inside"] == "ok"
    assert outcome["dev_null"] == outcome["read_outside"] == "ok"
    assert outcome["write_outside"] == outcome["remove_outside"] == outcome["mkdir_outside"] == 13
    assert outcome["truncate_outside"] in (13, "ok")  # TRUNCATE is only handled from Landlock ABI 3
    assert sorted(os.listdir(outside)) == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == "original"


def test_seccomp_program_shape():
    prog = runner.seccomp_program("x86_64", network=False, subprocess_ok=False, self_pid=1234)
    assert prog[-1] == (0x06, 0, 0, 0x7FFF0000)  # default: allow
    assert (0x15, 0, 1, 41) in prog  # socket is checked
    assert len(prog) < 4096 and all(0 <= jt < 256 and 0 <= jf < 256 for _, jt, jf, _ in prog)
    open_net = runner.seccomp_program("aarch64", network=True, subprocess_ok=True, self_pid=1)
    assert (0x15, 0, 1, 198) not in open_net and (0x15, 0, 1, 220) not in open_net


def test_hidden_paths_cannot_be_read(use_bwrap):
    """A hidden file (e.g. the raw counts behind a held-out split) is unreadable from Python."""
    import tempfile

    secret_dir = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="dg-hidden-"))  # /tmp is private in bwrap
    try:
        secret = secret_dir / "counts.csv"
        secret.write_text("held-out data")
        program = f"def main():\n    return open({str(secret)!r}).read()\n"
        # without hiding, the program reads it (so the checks below can fail)
        plain = run_program(program, entry="main", limits=SandboxLimits(timeout_s=20, use_bwrap=use_bwrap))
        assert plain.ok and plain.value == "held-out data"
        for hidden in (secret, secret_dir):  # the file itself, or a directory above it
            limits = SandboxLimits(timeout_s=20, use_bwrap=use_bwrap, hidden_paths=(str(hidden),))
            result = run_program(program, entry="main", limits=limits)
            assert not result.ok and "hidden from programs" in result.error  # the audit hook
            if use_bwrap:  # and, for C libraries too, an empty file / an empty directory
                probe = ("import os\ndef main():\n    try:\n"
                         f"        return os.stat({str(secret)!r}).st_size\n"
                         "    except FileNotFoundError:\n        return -1\n")
                size = run_program(probe, entry="main", limits=limits)
                assert size.ok and size.value in (0, -1)
    finally:
        shutil.rmtree(secret_dir)


def test_hidden_paths_must_be_absolute():
    with pytest.raises(TypeError, match="absolute"):
        SandboxLimits(hidden_paths=("relative/file",))
    with pytest.raises(TypeError, match="tuple"):
        SandboxLimits(hidden_paths=["/x"])
