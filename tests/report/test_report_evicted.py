"""Issue 41 follow-up: a train run's report draws the states its archive evicted with their own marker
and legend entry, apart from valid (kept) states and from invalid / unscored ones."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

pytest.importorskip("plotly")
pytest.importorskip("torch", reason="the trainer needs torch")

from discoverygym.report import build_report
from discoverygym.report.collect import EVICTED, collect

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def train_report(tmp_path_factory):
    """A one-step train run (4 children of one initial state; the archive keeps 2 children per parent,
    TTT-Discover App. A.2, so 2 are evicted) and its report."""
    from discoverygym.agents.trainer import TrainConfig, Trainer

    run = tmp_path_factory.mktemp("evicted") / "train"
    config = TrainConfig(env_id="ErdosMinOverlap-v0", policy="gaussian", steps=1, groups=1, group_size=4,
                         eval_workers=1, image_every=0)
    Trainer(config, run).run()
    return run, build_report(run)


def _payload(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.DOTALL)
    assert m, "no data block"
    return json.loads(m.group(1))


def test_the_report_data_marks_evicted_states(train_report):
    run, path = train_report
    data = _payload(path.read_text())
    evicted = {n.id for n in collect(run).nodes if n.tail == EVICTED or (n.error or "").startswith(EVICTED)}
    assert evicted, "the run evicted no state (the test needs the archive's per-parent cap to act)"
    assert {i for i, e in zip(data["ids"], data["ev"]) if e} == evicted  # before: no "ev" column (KeyError)
    assert any(v and e for v, e in zip(data["v"], data["ev"]))  # a valid evicted state: not drawn as plain valid


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary here (apt-get install chromium)")
def test_chromium_draws_an_evicted_legend_entry(train_report, tmp_path):
    _, path = train_report
    out = subprocess.run(
        [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--enable-unsafe-swiftshader",
         "--virtual-time-budget=20000", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri()],
        check=False, capture_output=True, text=True, timeout=120)
    dom = out.stdout
    assert 'data-ready="dag=' in dom and 'data-errors="0"' in dom
    legend = re.findall(r'class="legendtext"[^>]*>([^<]*)<', dom)
    assert "evicted (valid, judged score)" in legend and "valid" in legend  # its own entry beside "valid"
