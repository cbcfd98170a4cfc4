"""What the Python sandbox shows under /tmp, and paths hidden from programs.

Each behaviour test runs on both backends (see ``support.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from discoverygym.sandbox import python as sandbox
from discoverygym.sandbox.python import SandboxLimits, bwrap_available, run_program
from tests.sandbox.support import (
    PACKAGE_DIR,
)


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
from discoverygym.sandbox import python as sandbox
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


ALIAS_READER = """
import os
def main(routes):
    out = {}
    for route in routes:
        try:
            with open(route, "rb") as fh:
                out[route] = fh.read().decode("utf-8", "replace")
        except OSError as exc:
            out[route] = type(exc).__name__ + ": " + str(exc)
    return out
"""


def test_hidden_paths_cannot_be_read_through_an_alias(use_bwrap):
    """Issue 14, item 4: a symlinked directory (the venv's ``lib64``), ``/proc/self/root`` and
    ``/proc/self/cwd/..`` lead to the hidden file under another text; none of them may read it."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="dg-alias-"))
    try:
        (base / "lib").mkdir()
        secret = base / "lib" / "counts.csv"
        secret.write_text("held-out data")
        os.symlink("lib", base / "lib64")  # as a venv's lib64 -> lib
        depth = "/".join([".."] * 8)  # from the private directory up to /, whatever the temp root
        routes = [str(base / "lib64" / "counts.csv"), "/proc/self/root" + str(secret),
                  "/proc/thread-self/root" + str(secret), f"/proc/{os.getpid()}/root" + str(secret),
                  f"/proc/self/cwd/{depth}{secret}", "/dev/fd/../root" + str(secret)]
        limits = SandboxLimits(timeout_s=20, use_bwrap=use_bwrap, hidden_paths=(str(secret),))
        result = run_program(ALIAS_READER, entry="main", kwargs={"routes": routes}, limits=limits)
        assert result.ok, result.error
        leaked = {route: text for route, text in result.value.items() if "held-out data" in text}
        assert leaked == {}
        if not use_bwrap:  # the audit hook names the refusal (under bwrap the file is simply empty)
            assert all("PermissionError" in text for text in result.value.values()), result.value
    finally:
        shutil.rmtree(base)


def test_proc_root_cwd_and_fd_routes_are_refused(use_bwrap):
    """``/proc/<pid|self|thread-self>/{root,cwd,fd}`` lead anywhere in the file system (or to open
    descriptors): opening a path through them is refused outright, not resolved."""
    routes = ["/proc/self/root/etc/hostname", "/proc/self/cwd/program.py", "/proc/self/fd/0",
              "/proc/thread-self/root/etc/hostname", "/dev/stdin"]
    limits = SandboxLimits(timeout_s=20, use_bwrap=use_bwrap)
    result = run_program(ALIAS_READER, entry="main", kwargs={"routes": routes}, limits=limits)
    assert result.ok, result.error
    for route, text in result.value.items():
        assert text.startswith("PermissionError: sandbox:") and "/proc" in text, (route, text)


MINIMAL_FS_PROBE = """
import os
def construct(paths):
    import numpy, scipy.optimize  # the libraries a program needs still import
    return {p: os.path.exists(p) for p in paths}
"""


@pytest.mark.skipif(not bwrap_available(), reason="minimal_fs is a bubblewrap mount layout")
def test_minimal_fs_shows_the_interpreter_but_not_the_checkout_or_other_files():
    repo = Path(__file__).resolve().parents[2]
    others = [str(repo / "tests"), str(repo / "README.md"), str(repo / ".git")]
    others = [p for p in others if os.path.exists(p)]
    wide = run_program(MINIMAL_FS_PROBE, kwargs={"paths": others}, limits=SandboxLimits(use_bwrap=True))
    assert wide.ok and all(wide.value.values()), wide  # the default layout shows them (read-only)
    narrow = run_program(MINIMAL_FS_PROBE, kwargs={"paths": others + [sys.executable]},
                         limits=SandboxLimits(use_bwrap=True, minimal_fs=True))
    assert narrow.ok, narrow.error
    assert narrow.value.pop(sys.executable) is True
    assert not any(narrow.value.values()), narrow.value


def test_minimal_fs_must_be_a_bool():
    with pytest.raises(TypeError, match="minimal_fs"):
        SandboxLimits(minimal_fs="yes")
