"""What a judged program leaves behind is removed, whatever its shape, and writes are bounded.

A program that built a 1,500-level directory chain made ``shutil.rmtree`` raise ``RecursionError``
in the judge's cleanup: the judging crashed and the tree stayed in ``/tmp`` for good. Under
bubblewrap the program's private ``/tmp`` (tmpfs, in RAM) had no size limit.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from discoverygym.rewards.ahc.cases import Case
from discoverygym.sandbox import _process, ahc_judge, native
from discoverygym.sandbox.ahc_judge import judge_program
from discoverygym.sandbox.native import (
    NativeLimits,
    compile_cpp,
    native_bwrap_available,
    native_landlock_available,
    remove_tree,
    run_executable,
)
from discoverygym.sandbox.probes import NO_LANDLOCK_ENV, bwrap_has_size

DEPTH = 1500  # deeper than Python's default recursion limit (1000)

BACKENDS = [pytest.param(True, id="bwrap", marks=pytest.mark.skipif(not native_bwrap_available(),
                                                                    reason="bubblewrap does not work here")),
            pytest.param(False, id="fallback", marks=pytest.mark.skipif(
                not native_landlock_available(), reason="no Landlock: unconfined native runs are refused"))]
needs_gpp = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

# Builds a DEPTH-level chain of directories with a tiny file on every level, a few files at the
# bottom, makes a middle level unreadable, and prints the depth it reached.
DEEP_TREE = r"""
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
int main(){
  int dfd = open(".", O_RDONLY | O_DIRECTORY), depth = 0, locked = -1;
  for (; depth < DEPTH; depth++) {
    int f = openat(dfd, "t", O_WRONLY | O_CREAT, 0644); if (f >= 0) { write(f, "x", 1); close(f); }
    if (mkdirat(dfd, "a", 0755)) break;
    int n = openat(dfd, "a", O_RDONLY | O_DIRECTORY); close(dfd); dfd = n; if (n < 0) break;
    if (depth == 700) locked = openat(dfd, "..", O_RDONLY | O_DIRECTORY);
  }
  for (int i = 0; i < 20; i++) { char name[16]; snprintf(name, sizeof name, "p%d", i);
    int f = openat(dfd, name, O_WRONLY | O_CREAT, 0644); if (f >= 0) { write(f, "yy", 2); close(f); } }
  if (locked >= 0) fchmod(locked, 0);  /* an unreadable level in the middle */
  printf("%d\n", depth);
}
""".replace("DEPTH", str(DEPTH))


class _DepthRules:
    """Scores a case by the depth the program printed (so the tree provably existed)."""

    @staticmethod
    def parse_input(text):
        return text

    @staticmethod
    def score_output(inp, text):
        return int(text.split()[0])


def _leftovers(folder) -> list[str]:
    return [name for name in os.listdir(folder) if name.startswith("discoverygym-ahc-")]


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Judge work directories go to tmp_path (so leftovers are ours to see and to remove)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    if shutil.which("gcc") or shutil.which("g++"):
        native._launcher()  # built once per process: not into this short-lived folder
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    remove_tree(str(folder))


def _make_chain(root: str, depth: int) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(depth):
            with open(os.open("t", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as fh:
                fh.write("x")
            os.mkdir("a", dir_fd=fd)
            child = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def test_remove_tree_removes_a_deep_chain_that_breaks_rmtree(tmp_path):
    root = tmp_path / "deep"
    root.mkdir()
    _make_chain(str(root), DEPTH)
    try:
        with pytest.raises(RecursionError):
            shutil.rmtree(root, ignore_errors=True)  # the original failure
        assert root.exists()
        assert remove_tree(str(root)) is True
        assert not root.exists()
    finally:
        remove_tree(str(root))


def test_remove_tree_handles_links_unreadable_folders_files_and_missing_paths(tmp_path):
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious").write_text("x")
    root = tmp_path / "tree"
    (root / "locked" / "inner").mkdir(parents=True)
    (root / "locked" / "inner" / "f").write_text("x")
    (root / "link").symlink_to(keep)  # removed as a link, never followed
    (root / "locked" / "link2").symlink_to(keep / "precious")
    os.mkfifo(root / "fifo")
    os.chmod(root / "locked" / "inner", 0)
    os.chmod(root / "locked", 0)
    assert remove_tree(str(root)) and not root.exists()
    assert (keep / "precious").read_text() == "x"
    link = tmp_path / "dirlink"
    link.symlink_to(keep)
    assert remove_tree(str(link)) and not os.path.lexists(link) and (keep / "precious").exists()
    (tmp_path / "file").write_text("x")
    assert remove_tree(str(tmp_path / "file")) and not (tmp_path / "file").exists()
    assert remove_tree(str(tmp_path / "missing")) is True
    assert remove_tree(str(tmp_path / "missing" / "below")) is True


def test_remove_tree_never_raises_and_falls_back_to_rm(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    (root / "a" / "b").mkdir(parents=True)

    def broken(path, deadline):
        raise RecursionError("simulated")

    monkeypatch.setattr(_process, "_remove_walk", broken)
    if shutil.which("rm", path="/usr/bin:/bin"):
        assert remove_tree(str(root)) is True and not root.exists()
    monkeypatch.setattr(_process.shutil, "which", lambda *a, **k: 1 / 0)
    root.mkdir()
    assert remove_tree(str(root)) is False  # no exception escapes, even from the fallback
    monkeypatch.undo()
    assert remove_tree(str(root))


@needs_gpp
@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_judge_survives_a_deep_tree_and_removes_it(private_tmp, use_bwrap):
    """The 1,500-level tree is built (the score is its depth), judged, and gone afterwards."""
    cases = [Case("0", "x\n"), Case("1", "x\n")]
    report = judge_program(DEEP_TREE, cases, _DepthRules, workers=2,
                           limits=NativeLimits(use_bwrap=use_bwrap, time_limit_s=10.0))
    assert report.compiled, report.compile_log
    assert [c.verdict for c in report.cases] == ["accepted", "accepted"], report.cases
    assert report.scores == [DEPTH, DEPTH]
    assert report.backend == ("bwrap" if use_bwrap else "fallback")
    assert _leftovers(private_tmp) == [] and ahc_judge._live_roots == set()


@needs_gpp
def test_judge_removes_its_folders_on_keyboard_interrupt(private_tmp, monkeypatch):
    seen = []

    def interrupted(binary, case, rules, limits, workdir):
        os.mkdir(workdir)
        _make_chain(workdir, DEPTH)
        seen.append(workdir)
        raise KeyboardInterrupt

    monkeypatch.setattr(ahc_judge, "_judge_case", interrupted)
    with pytest.raises(KeyboardInterrupt):
        judge_program("int main(){}", [Case("0", "x\n")], _DepthRules, workers=1,
                      limits=NativeLimits(use_bwrap=False if not native_bwrap_available() else None))
    assert seen and not os.path.exists(seen[0])
    assert _leftovers(private_tmp) == [] and ahc_judge._live_roots == set()


def test_roots_left_by_an_interrupted_cleanup_are_removed_at_exit(private_tmp, monkeypatch):
    root = os.path.realpath(tempfile.mkdtemp(prefix="discoverygym-ahc-"))
    _make_chain(root, 50)
    ahc_judge._live_roots.add(root)
    monkeypatch.setattr(ahc_judge, "remove_tree", lambda path: False)  # cleanup interrupted
    ahc_judge._remove_root(root)
    assert root in ahc_judge._live_roots and os.path.exists(root)
    monkeypatch.undo()
    ahc_judge._remove_leftover_roots()  # what atexit runs
    assert root not in ahc_judge._live_roots and not os.path.exists(root)


DISK_FILL = r"""
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
int main(){
  static char buf[1 << 20]; memset(buf, 'a', sizeof buf);
  long total = 0;
  for (int i = 0; i < 24; i++) {
    char name[32]; snprintf(name, sizeof name, "/tmp/f%d", i);
    int fd = open(name, O_WRONLY | O_CREAT, 0644); if (fd < 0) break;
    ssize_t w = write(fd, buf, sizeof buf); close(fd); if (w <= 0) break; total += w;
  }
  const char *elsewhere[] = {"/x", "/dev/x", "/dev/shm/x"};
  for (const char *path : elsewhere) {
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    printf("%s %s\n", path, fd >= 0 ? "written" : "refused");
  }
  printf("%ld\n", total >> 20);
}
"""


@needs_gpp
@pytest.mark.skipif(not native_bwrap_available(), reason="bubblewrap does not work here")
@pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "no-landlock"])
def test_bwrap_scratch_tmpfs_is_capped_and_the_rest_is_read_only(tmp_path, monkeypatch, landlock):
    if not bwrap_has_size():
        pytest.skip("this bubblewrap has no --size: the private /tmp is not capped")
    (tmp_path / "b").mkdir()
    built = compile_cpp(DISK_FILL, str(tmp_path / "b"), use_bwrap=True)
    assert built.ok, built.log
    if not landlock:  # bubblewrap alone must keep / and /dev read-only
        monkeypatch.setenv(NO_LANDLOCK_ENV, "1")
    (tmp_path / "c").mkdir()
    (tmp_path / "in.txt").write_text("")
    result = run_executable(built.binary, stdin_path=str(tmp_path / "in.txt"), workdir=str(tmp_path / "c"),
                            limits=NativeLimits(use_bwrap=True, scratch_mb=8))
    assert result.ok, result
    lines = result.stdout.decode().split("\n")
    assert lines[:3] == ["/x refused", "/dev/x refused", "/dev/shm/x refused"]
    assert int(lines[3]) <= 8  # 24 MiB attempted, the tmpfs holds 8
    default = run_executable(built.binary, stdin_path=str(tmp_path / "in.txt"), workdir=str(tmp_path / "c"),
                             limits=NativeLimits(use_bwrap=True))
    assert default.ok and int(default.stdout.decode().split("\n")[3]) == 24  # default 256 MiB


def test_scratch_limit_is_validated():
    with pytest.raises(ValueError, match="scratch_mb"):
        NativeLimits(scratch_mb=0)
    with pytest.raises(TypeError):
        NativeLimits(scratch_mb=1.5)


# Creates N empty files (half of them directories) in its working directory, or, given "B N",
# N files of 1 MiB; prints how many it made, then how many descriptors it could hold open.
MANY_FILES = r"""
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
int main(){
  char kind; long n; if (scanf(" %c %ld", &kind, &n) != 2) return 3;
  static char buf[1 << 20]; memset(buf, 'b', sizeof buf);
  long made = 0;
  for (long i = 0; i < n; i++) {
    char name[32]; snprintf(name, sizeof name, "e%ld", i);
    if (kind == 'F' && (i % 2 ? mkdir(name, 0755) : close(open(name, O_WRONLY | O_CREAT, 0644)))) break;
    if (kind == 'B') { int fd = open(name, O_WRONLY | O_CREAT, 0644); if (fd < 0) break;
      ssize_t w = write(fd, buf, sizeof buf); close(fd); if (w != (ssize_t)sizeof buf) break; }
    made++;
  }
  int fds = 0; while (fds < 4096 && open("/dev/null", O_RDONLY) >= 0) fds++;
  printf("%ld %d\n", made, fds);
}
"""


class _FirstNumberRules:
    """Scores a case by the first number the program printed."""

    @staticmethod
    def parse_input(text):
        return text

    @staticmethod
    def score_output(inp, text):
        return int(text.split()[0])


def _run_many(tmp_path, use_bwrap, text, **limits):
    folder = tmp_path / f"b{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    built = compile_cpp(MANY_FILES, str(folder), use_bwrap=use_bwrap)
    assert built.ok, built.log
    (folder / "in.txt").write_text(text)
    (folder / "run").mkdir()
    return run_executable(built.binary, stdin_path=str(folder / "in.txt"), workdir=str(folder / "run"),
                          limits=NativeLimits(use_bwrap=use_bwrap, time_limit_s=10.0, **limits))


@needs_gpp
@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_program_creating_too_many_files_fails_with_output_limit(tmp_path, use_bwrap):
    """12,000 files and directories: over the default cap (10,000); 2,000 are fine."""
    result = _run_many(tmp_path, use_bwrap, "F 12000\n")
    assert result.status == "output_limit", result
    assert "more than 10000 files" in result.message and "max_files" in result.message
    fine = _run_many(tmp_path, use_bwrap, "F 2000\n")
    assert fine.ok, fine
    made, fds = map(int, fine.stdout.split())
    assert made == 2000 and fds < 256  # RLIMIT_NOFILE: 256 descriptors at most


@needs_gpp
@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_program_leaving_more_bytes_than_scratch_mb_fails(tmp_path, use_bwrap):
    """8 files of 1 MiB with scratch_mb=4: under bwrap the tmpfs refuses the rest (ENOSPC, the program
    may go on); without it the files reach the disk and the run fails after it."""
    result = _run_many(tmp_path, use_bwrap, "B 8\n", scratch_mb=4)
    if use_bwrap:
        assert result.ok and int(result.stdout.split()[0]) <= 4, result
    else:
        assert result.status == "output_limit", result
        assert "more than 4 MiB" in result.message and "scratch_mb" in result.message


@needs_gpp
@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_judge_fails_only_the_case_with_too_many_files_and_removes_it(private_tmp, use_bwrap):
    cases = [Case("many", "F 12000\n"), Case("few", "F 10\n")]
    report = judge_program(MANY_FILES, cases, _FirstNumberRules, workers=1, stop_on_failure=False,
                           limits=NativeLimits(use_bwrap=use_bwrap, time_limit_s=10.0))
    assert report.compiled, report.compile_log
    assert [c.verdict for c in report.cases] == ["output_limit", "accepted"], report.cases
    assert "more than 10000 files" in report.cases[0].message, report.cases[0]
    assert report.cases[1].score == 10
    assert _leftovers(private_tmp) == [] and ahc_judge._live_roots == set()


def test_measure_tree_counts_everything_and_stops_past_the_cap(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    _make_chain(str(root), DEPTH)  # DEPTH directories and DEPTH one-byte files
    (root / "locked").mkdir()
    (root / "locked" / "hidden").write_bytes(b"x" * 10000)
    (root / "link").symlink_to(tmp_path)  # counted, never followed
    os.chmod(root / "locked", 0)
    try:
        entries, used = _process.measure_tree(str(root), 10 ** 6)
        assert entries == 2 * DEPTH + 3
        assert used >= 10000
        assert _process.measure_tree(str(root), 100)[0] == 101
        assert _process.measure_tree(str(tmp_path / "missing"), 10) == (0, 0)
    finally:
        remove_tree(str(root))


def test_max_files_is_validated():
    with pytest.raises(ValueError, match="max_files"):
        NativeLimits(max_files=0)
