"""``discoverygym report``: a self-contained HTML file for search, train and post-train run directories.

The must-show: a real 10,000-evaluation search run (SumDifference-v0, mutation policy, inline
evaluator, about 20 s), its report loaded by headless Chromium.

How the browser check works (no DevTools client is needed): the page itself records every uncaught
error, unhandled promise rejection and ``console.error`` call into ``<body data-errors>`` and
``<pre id="report-errors">``, and sets ``<body data-ready="dag=N;curves=M">`` once plotly has
drawn every plot. Chromium runs with ``--dump-dom`` (after ``--virtual-time-budget`` lets the
scripts finish), so the test reads both attributes and the drawn plot elements from the DOM; it
also scans Chromium's own console log (``--enable-logging=stderr --v=0``) for ``Uncaught``. A
second run takes the screenshot, saved as a test artefact under ``$DISCOVERYGYM_ARTEFACTS``
(default ``.artefacts/`` in the repository, git-ignored); ``docs/report_screenshot.png`` in the
README is a copy of it. Without a ``chromium`` binary the browser test is skipped with one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from discoverygym.cli import main

pytest.importorskip("plotly")

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BROWSER_FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--enable-unsafe-swiftshader", "--hide-scrollbars",
                 "--virtual-time-budget=20000"]


def _payload(html: str) -> dict:
    """The JSON data block of a report page."""
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.DOTALL)
    assert m, "no data block"
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def big_run(tmp_path_factory) -> Path:
    """A real 10,000-evaluation search run (C=8, L=50, K=25)."""
    run_dir = tmp_path_factory.mktemp("report") / "sd10k"
    assert main(["search", "SumDifference-v0", "-C", "8", "-L", "50", "-K", "25", "--executor", "inline",
                 "--run-dir", str(run_dir), "--log-every", "1000000"]) == 0
    return run_dir


@pytest.fixture(scope="module")
def big_report(big_run) -> Path:
    """``discoverygym report`` of :func:`big_run` (``RUN_DIR/report.html``)."""
    assert main(["report", str(big_run)]) == 0
    return big_run / "report.html"


def test_the_10k_report_is_one_self_contained_file(big_report, capsys):
    html = big_report.read_text()
    size = big_report.stat().st_size
    assert size < 20e6, f"report is {size / 1e6:.1f} MB"
    assert not re.search(r"<script[^>]+src=", html) and "<link" not in html  # nothing fetched
    assert "Plotly.newPlot" in html and len(html) > 3e6  # plotly.js inlined
    data = _payload(html)
    assert len(data["ids"]) == 10_001 and data["ids"][0] == "init"
    assert sum(p >= 0 for p in data["p"]) == 10_000  # every evaluated state has its parent in the DAG
    assert len(data["diffs"]) == 10_000 and all(d for d in data["diffs"].values())
    axes = {c["axis"] for c in data["curves"]}
    assert axes == {"evaluations", "wall"}
    names = {c["name"] for c in data["curves"] if c["axis"] == "wall"}
    assert names == {f"trajectory {i}" for i in range(8)}  # wall time per trajectory (TensorBoard)
    best = json.loads((big_report.parent / "best.json").read_text())
    assert data["best"] == best["id"]
    assert max(c["y"][-1] for c in data["curves"] if c["axis"] == "evaluations") == pytest.approx(best["score"])
    assert 'alt="best construction" src="data:image/png;base64,' in html  # the env's picture


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary here (apt-get install chromium)")
def test_chromium_draws_the_10k_report_without_console_errors(big_report, tmp_path):
    url = big_report.resolve().as_uri()
    proc = subprocess.run([CHROMIUM, *BROWSER_FLAGS, "--enable-logging=stderr", "--v=0", "--window-size=1400,1000",
                           "--dump-dom", url], capture_output=True, text=True, timeout=240, check=False)
    dom = proc.stdout
    body = re.search(r"<body[^>]*>", dom)
    assert body, proc.stderr[-2000:]
    assert 'data-ready="dag=10001;curves=' in body.group(0), body.group(0)
    assert 'data-errors="0"' in body.group(0), re.search(r'<pre id="report-errors"[^>]*>(.*?)</pre>', dom, re.DOTALL)
    assert int(re.search(r"curves=(\d+)", body.group(0)).group(1)) >= 9  # all + 8 trajectories, two plots
    assert "Uncaught" not in proc.stderr
    for div in ("dag", "curve-evals", "curve-wall"):  # plotly drew into each div
        m = re.search(rf'<div id="{div}"[^>]*class="[^"]*js-plotly-plot', dom)
        assert m, f"{div} not drawn"
    assert dom.count('class="gl-canvas') >= 1  # the DAG's WebGL layer
    artefacts = Path(os.environ.get("DISCOVERYGYM_ARTEFACTS", REPO / ".artefacts"))
    artefacts.mkdir(parents=True, exist_ok=True)
    shot = artefacts / "report_screenshot.png"
    proc = subprocess.run([CHROMIUM, *BROWSER_FLAGS, "--window-size=1400,1700", f"--screenshot={shot}", url],
                          capture_output=True, text=True, timeout=240, check=False)
    assert shot.exists() and shot.stat().st_size > 20_000, proc.stderr[-2000:]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    """A real 12-evaluation search run."""
    run_dir = tmp_path_factory.mktemp("report") / "sd"
    assert main(["search", "SumDifference-v0", "-C", "2", "-L", "3", "-K", "2", "--executor", "inline",
                 "--run-dir", str(run_dir)]) == 0
    return run_dir


def test_usage_totals_a_live_torn_line_and_watch(small_run, tmp_path, capsys):
    from discoverygym.report import watch

    (small_run / "usage.json").write_text(json.dumps({"totals": {"prompt_tokens": 1234, "cost_usd": 0.0425}}))
    with open(small_run / "archive.jsonl", "a") as fh:  # a run killed (or still writing) mid-line
        fh.write('{"kind": "eval", "traj": 0, "st')
    out = tmp_path / "r.html"
    writes = []
    assert watch(small_run, 1.0, out, rounds=2, on_write=writes.append) == out
    assert writes == [out, out]
    html = out.read_text()
    assert '<meta http-equiv="refresh" content="1">' in html
    assert "totals.prompt_tokens" in html and "1234" in html and "0.0425" in html
    assert len(_payload(html)["ids"]) == 13
    assert main(["report", str(small_run), "--watch", "0"]) == 2
    assert "--watch" in capsys.readouterr().err


@pytest.mark.parametrize("what", ["missing", "empty", "file"])
def test_not_a_run_directory_is_a_one_line_usage_error(what, tmp_path, capsys):
    path = tmp_path / "x"
    if what == "empty":
        path.mkdir()
    elif what == "file":
        path.write_text("hi")
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "run directory" in err and "Traceback" not in err


def test_a_train_run_directory_gives_a_report(tmp_path):
    run_dir = tmp_path / "train"
    assert main(["train", "ErdosMinOverlap-v0", "--steps", "3", "--groups", "2", "--group-size", "4",
                 "--run-dir", str(run_dir)]) == 0
    assert main(["report", str(run_dir)]) == 0
    html = (run_dir / "report.html").read_text()
    data = _payload(html)
    assert data["kind"] == "train" and len(data["ids"]) >= 9  # kept states and pruned lineage
    assert next(c for c in data["curves"] if c["axis"] == "evaluations")["x"] == [8, 16, 24]
    assert data["best"] is None or data["best"] in data["ids"]
    assert 'src="data:image/png;base64,' in html


def test_a_post_train_run_directory_gives_a_report(tmp_path):
    pytest.importorskip("trl")
    from discoverygym.agents.irft.backends import HFBackend
    from discoverygym.agents.irft.loop import IRFT, IRFTConfig
    from discoverygym.agents.policies.hf import HFPolicy
    from tests.llm_fixtures import tiny_model_dir

    model = tiny_model_dir(tmp_path / "model")
    cfg = IRFTConfig(problems=["ErdosMinOverlap-v0"], heldout=["FirstAutocorrelation-v0"], policy=f"hf:{model}",
                     rounds=1, trajectories=2, steps=2, candidates=2, top_percent=[50.0], eval_trajectories=1,
                     eval_steps=1, eval_candidates=2,
                     sft={"steps": 1, "batch_size": 2, "micro_batch_size": 2, "lr": 1e-3, "max_length": 4096,
                          "gradient_checkpointing": False})
    backend = HFBackend(HFPolicy(model, device="cpu", max_new_tokens=12, lora_rank=4))
    run_dir = tmp_path / "irft"
    IRFT(cfg, run_dir, executor="inline", backend=backend).run()
    assert main(["report", str(run_dir)]) == 0
    html = (run_dir / "report.html").read_text()
    data = _payload(html)
    assert data["kind"] == "post-train"
    groups = {i.partition(":")[0] for i in data["ids"]}
    assert {"r000/search/ErdosMinOverlap-v0", "r000/eval/FirstAutocorrelation-v0",
            "base/eval/FirstAutocorrelation-v0"} <= groups
    assert len(data["ids"]) == 2 * 2 * 2 + 1 + 2 * (2 + 1)  # search 8 + init, two held-out evals of 2 + init
    assert "rounds (rounds.jsonl)" in html


INJECTION = "<!--<script"  # issue 40 #5: the exact text that swallowed the page's script in Chromium


def test_candidate_text_cannot_break_out_of_the_data_block(tmp_path):
    """An error, a program and a stdout tail holding ``<!--<script`` (and ``</script>``, U+2028) stay data."""
    from discoverygym.report import plotly_js
    from discoverygym.report.collect import Node, RunData
    from discoverygym.report.html import render_html

    hostile = f"{INJECTION} </script><b>& \u2028\u2029"
    nodes = [Node("a", [], 1.0, 1.0, True, text="x = 1"),
             Node("b", ["a"], None, -1.0, False, error=hostile, tail=hostile, text=f"x = 2  # {hostile}")]
    page = render_html(RunData("search", tmp_path, "SumDifference-v0", {}, nodes=nodes), plotly_js())
    block = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.DOTALL).group(1)
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in block, raw  # main escaped only "</": "<!--<script" stayed literal
    data = json.loads(block)
    assert data["errs"] == [hostile] and data["tails"]["1"] == hostile and INJECTION in data["diffs"]["1"]
    if CHROMIUM is None:
        return
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    proc = subprocess.run([CHROMIUM, *BROWSER_FLAGS, "--dump-dom", path.as_uri()], capture_output=True, text=True,
                          timeout=240, check=False)
    body = re.search(r"<body[^>]*>", proc.stdout)
    assert body and 'data-ready="dag=2;' in body.group(0), (body and body.group(0), proc.stderr[-2000:])
    assert 'data-errors="0"' in body.group(0)


def test_an_llm_run_report_lists_every_response_text_escaped_with_its_outcome(tmp_path):
    """The samples table (issue 39): each ``samples.jsonl`` response with its outcome and error,
    texts escaped (a response is the model's, i.e. hostile) and cut; ``outcomes.json`` counts in the summary."""
    from discoverygym.outcomes import OutcomeLog
    from discoverygym.policy import Outcome, Sample
    from discoverygym.report.collect import MAX_SAMPLE_TEXT

    run_dir = tmp_path / "sd"
    assert main(["search", "SumDifference-v0", "-C", "1", "-L", "2", "-K", "2", "--executor", "inline",
                 "--run-dir", str(run_dir)]) == 0
    log = OutcomeLog(run_dir, min_interval_s=0.0)
    hostile = "```python\nx = '</td></table><script>alert(1)</script>'\n"
    log.record(Sample(text=hostile, finish_reason="length", parse_error="response ends inside an unclosed code block",
                      outcome=Outcome.TRUNCATED), None, step=1, group=0)
    log.record(Sample(text="no fence at all " * 1000, finish_reason="stop", parse_error="no code",
                      outcome=Outcome.NO_CODE), None, step=1, group=0)
    log.record(Sample(text="a\u2028b\u2029c\u0085d", finish_reason="stop", outcome=Outcome.NO_CODE), None, step=2)
    log.flush()
    with open(run_dir / "samples.jsonl", "a", encoding="utf-8") as fh:  # what a hostile or broken writer leaves
        fh.write("[" * 100_000 + "\n")  # nested too deeply for json
        fh.write('{"step": 3, "outcome": "no_code", "text": "lone \\ud800 surrogate"}\n')
    assert main(["report", str(run_dir)]) == 0
    html = (run_dir / "report.html").read_text()
    table = html[html.index("<h2>LLM samples (samples.jsonl)</h2>"):]
    table = table[:table.index("</table>") + len("</table>")]
    assert table.count("<tr>") == 5  # header + 4 responses: U+2028 does not end a line; the deep one is skipped
    assert "a\u2028b\u2029c\u0085d" in table and "lone ? surrogate" in table
    assert "<script>alert(1)" not in html and "&lt;/td&gt;&lt;/table&gt;&lt;script&gt;alert(1)" in table
    assert ">truncated<" in table and ">no_code<" in table and ">length<" in table
    assert "response ends inside an unclosed code block" in table
    assert f"({len('no fence at all ' * 1000) - MAX_SAMPLE_TEXT} more characters)" in table
    assert re.search(r"<td>outcomes</td><td>[^<]*no_code 2[^<]*truncated 1</td>", html)
    (run_dir / "outcomes.json").write_text('{"counts": {"valid": "3", "truncated": true, "neg": -3, "no_code": -1}}')
    assert main(["report", str(run_dir)]) == 0  # malformed counts: none of them is shown
    assert "<td>outcomes</td>" not in (run_dir / "report.html").read_text()
