"""ScalingLaw's four processes share no copy of the data, and each result is bounded (issue 52, #10, #15).

Issue 52 measured a page-cache timing channel in the sandbox (a cached page read in 1-4 µs against
60-84 µs uncached). No data file may then be shared between the processes: each process is given
its own copy of only the rows it may see (its own ``kwargs.json`` in its own private directory), and
the parent bounds each answer's size before parsing it. The timing probe itself is in the audit's
cross-process family (``page-cache-timing``).
"""

from __future__ import annotations

import discoverygym.sandbox.python as sandbox
from discoverygym.envs.scaling_laws import make_scaling_law
from discoverygym.envs.scaling_laws.transport import FIT_ENTRY


def test_each_process_gets_only_its_rows_and_a_bounded_answer(monkeypatch):
    task = make_scaling_law("vocab", allow_unconfined=True)
    data = task.data()
    rows = {name: {tuple(r) for g in getattr(data, name) for r in g.X.tolist()}
            for name in ("fit", "validation", "train", "test")}
    allowed = [rows["fit"], rows["fit"] | rows["validation"], rows["train"], rows["train"] | rows["test"]]
    calls = []

    def fake_run(source, entry, kwargs, limits):
        if entry == FIT_ENTRY:
            seen = {tuple(r) for g in kwargs["groups"] for r in g["X"]}
            value = [[0.0, 1.0] for _ in kwargs["groups"]]
        else:
            assert all(set(job) == {"X", "params"} for job in kwargs["jobs"])  # no labels
            seen = {tuple(r) for j in kwargs["jobs"] for r in j["X"]}
            value = [[1.0] * len(j["X"]) for j in kwargs["jobs"]]
        calls.append((seen, limits))
        return sandbox.SandboxResult(ok=True, value=value, error=None, stdout="", stderr="", elapsed_s=0.0,
                                     returncode=0, timed_out=False, backend="fake")

    monkeypatch.setattr(sandbox, "run_program", fake_run)
    task._evaluate("def fit(X, y): pass\ndef scaling_law(X, p): pass\n")
    assert len(calls) == 4
    for (seen, limits), may_see in zip(calls, allowed):
        assert seen and seen <= may_see
        assert limits.result_values is not None and limits.result_bytes < 64_000_000  # bounded before parsing
    assert calls[1][1].result_values >= 2 * len(allowed[1])  # an honest answer (a number per point) fits
