"""The OpenEvolve round trip: ``discoverygym export --to openevolve``, then OpenEvolve's own controller.

OpenEvolve (the PyPI package, pinned in the ``dev`` extra) runs a few iterations against a
loopback OpenAI-compatible chat server started here on 127.0.0.1, which answers OpenEvolve's
SEARCH/REPLACE requests with canned edits of the current program (valid, invalid, crashing). Every
program OpenEvolve records (in memory and in its checkpoint files) is then judged again by
discoverygym directly, and its recorded scores must equal discoverygym's verifier's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import gymnasium as gym
import pytest

from discoverygym.cli import main
from discoverygym.interop.openevolve import evaluate_program_file, export_openevolve, with_evolve_markers
from tests.openai_server import JSONHandler

ENV_ID = "ErdosMinOverlap-v0"
REPO = Path(__file__).resolve().parents[2]

#: the canned edits, in request order: replacement of the program's ``    n = ...`` line.
EDITS = [
    "    n = 100",  # valid, a different score
    "    n = 0",  # no pieces: an invalid construction
    "    raise RuntimeError('canned failure')\n    n = 200",  # the program crashes
    "    n = 400",  # valid
    "    n = 50",
]


# --------------------------------------------------------------------------- loopback chat server
class _Canned:
    """Answers chat completions: a SEARCH/REPLACE diff on the current program's ``n = ...`` line
    (or a full program when OpenEvolve asks for a rewrite)."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def reply(self, body: dict) -> str:
        """The assistant's text for one request body."""
        with self.lock:
            edit = EDITS[self.calls % len(EDITS)]
            self.calls += 1
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")
        current = re.search(r"# Current Program\n```python\n(.*?)\n```", prompt, re.DOTALL)
        program = current.group(1) if current else ""
        line = re.search(r"^    n = \d+.*$", program, re.MULTILINE)
        if "SEARCH" in prompt and line:
            return (f"Change the number of pieces.\n\n<<<<<<< SEARCH\n{line.group(0)}\n=======\n{edit}\n"
                    ">>>>>>> REPLACE\n")
        child = re.sub(r"^    n = \d+.*$", edit, program, count=1, flags=re.MULTILINE)
        return f"Rewritten:\n```python\n{child}\n```\n"


def _handler(canned: _Canned) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        """``POST /v1/chat/completions`` (and ``GET /v1/models``), OpenAI's response shape."""

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": "canned", "object": "model"}]})

        def do_POST(self) -> None:
            body = self._body()
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            text = canned.reply(body)
            self._send(200, {
                "id": f"chatcmpl-{canned.calls}", "object": "chat.completion", "created": 0,
                "model": body.get("model", "canned"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            })

    return Handler


@contextlib.contextmanager
def chat_server() -> Iterator[tuple[str, _Canned]]:
    """A canned OpenAI-compatible chat server on 127.0.0.1 (free port); yields ``(base_url, canned)``."""
    canned = _Canned()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(canned))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", canned
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- helpers
def _verified(code: str):
    """discoverygym's own judgement of ``code``, independent of the exported evaluator's cache."""
    env = gym.make(ENV_ID, action_mode="code")
    env.reset(seed=0)
    return env.unwrapped.evaluate(code, parent=env.unwrapped.state, seed=0)


def _assert_same_scores(metrics: dict, state) -> None:
    """OpenEvolve's recorded metrics equal discoverygym's verdict on the same program."""
    assert metrics["combined_score"] == state.reward
    assert metrics["valid"] == (1.0 if state.valid else 0.0)
    if state.valid:
        assert metrics["score"] == state.score
    else:
        assert "score" not in metrics and metrics["error"] == 0.0


# --------------------------------------------------------------------------- tests
def test_openevolve_round_trip_scores_are_discoverygyms(tmp_path, monkeypatch):
    """OpenEvolve's controller, 4 iterations on the exported files: every recorded score is ours."""
    try:
        from openevolve import OpenEvolve
        from openevolve.config import load_config
    except ImportError as exc:
        pytest.skip(f"openevolve is not installed: {exc}")
    monkeypatch.setenv("OPENAI_API_KEY", "loopback")
    monkeypatch.setenv("PYTHONPATH", f"{REPO}:{os.environ.get('PYTHONPATH', '')}")
    out = tmp_path / "export"
    with chat_server() as (url, canned):
        assert main(["export", ENV_ID, str(out), "--api-base", url, "--model", "canned", "--iterations", "4"]) == 0
        config = load_config(str(out / "config.yaml"))
        assert config.llm.models[0].api_base == url and config.evaluator.cascade_evaluation is False
        controller = OpenEvolve(str(out / "initial_program.py"), str(out / "evaluator.py"), config,
                                output_dir=str(tmp_path / "openevolve_output"))
        best = asyncio.run(controller.run(iterations=4))
    assert canned.calls >= 4
    programs = list(controller.database.programs.values())
    assert len(programs) >= 4  # the initial program and the children that were accepted
    verdicts = {p.id: _verified(p.code) for p in programs}
    for p in programs:
        _assert_same_scores(p.metrics, verdicts[p.id])
    assert any(not v.valid for v in verdicts.values()), "a failing child is recorded as a failure"
    assert len({v.score for v in verdicts.values() if v.valid}) >= 2, "valid children with other scores"
    assert best is not None and best.metrics["combined_score"] == max(v.reward for v in verdicts.values())
    # what OpenEvolve wrote to disk says the same
    saved = sorted((tmp_path / "openevolve_output" / "checkpoints").glob("checkpoint_*/programs/*.json"))
    assert saved
    for path in saved:
        record = json.loads(path.read_text())
        _assert_same_scores(record["metrics"], verdicts.get(record["id"]) or _verified(record["code"]))


def test_evaluator_failures_are_openevolve_failure_results(tmp_path):
    """Crash, invalid construction and unreadable file: failure results with error artifacts."""
    pytest.importorskip("openevolve", reason="openevolve is not installed")
    from openevolve.evaluation_result import EvaluationResult

    crash = tmp_path / "crash.py"
    crash.write_text("def construct(seed, budget_s, parent):\n    print('hello')\n    raise ValueError('nope')\n")
    invalid = tmp_path / "invalid.py"
    invalid.write_text("def construct():\n    return [2.0, -1.0]\n")
    for path, kind in [(crash, "program_failed"), (invalid, "invalid"), (tmp_path / "missing.py", "FileNotFoundError")]:
        result = evaluate_program_file(path, ENV_ID)
        assert isinstance(result, EvaluationResult)
        assert result.metrics["valid"] == 0.0 and result.metrics["error"] == 0.0
        assert result.metrics["combined_score"] == 0.0  # the env's failure reward
        assert result.artifacts["error_type"] == kind and result.artifacts["error_message"]
    assert "hello" in evaluate_program_file(crash, ENV_ID).artifacts.get("stdout", "")


@pytest.mark.parametrize("env_id", ["ErdosMinOverlap-v0", "Hadamard-29-v0", "SumDifference-v0"])
def test_exported_initial_program_is_valid(tmp_path, env_id):
    """The exported initial program (EVOLVE-BLOCK markers added) scores as a valid program."""
    paths = export_openevolve(env_id, tmp_path)
    source = paths["initial_program"].read_text()
    assert source.startswith("# EVOLVE-BLOCK-START\n") and source.rstrip().endswith("# EVOLVE-BLOCK-END")
    state = _judge_any(env_id, source)
    assert state.valid, state.error
    assert "evaluate_program_file" in paths["evaluator"].read_text()


def _judge_any(env_id: str, source: str):
    env = gym.make(env_id, action_mode="code")
    env.reset(seed=0)
    return env.unwrapped.evaluate(source, parent=env.unwrapped.state, seed=0)


def test_markers_are_added_once_and_in_the_language():
    """Markers wrap the program once; C++ gets ``//`` comments."""
    once = with_evolve_markers("x = 1\n")
    assert with_evolve_markers(once) == once
    assert with_evolve_markers("int main() {}\n", "cpp").startswith("// EVOLVE-BLOCK-START\n")


def test_export_cli_usage_errors(tmp_path, capsys):
    """Unknown env, files already there, bad options and ``--to shinka``: exit 2 with one line."""
    assert main(["export", "NoSuchEnv-v0", str(tmp_path / "a")]) == 2
    assert main(["export", ENV_ID, str(tmp_path / "b")]) == 0
    assert main(["export", ENV_ID, str(tmp_path / "b")]) == 2
    assert main(["export", ENV_ID, str(tmp_path / "b"), "--force", "--full-rewrite"]) == 0
    assert "diff_based_evolution: false" in (tmp_path / "b" / "config.yaml").read_text()
    assert main(["export", ENV_ID, str(tmp_path / "c"), "--task-options", "[1]"]) == 2
    assert main(["export", ENV_ID, str(tmp_path / "d"), "--to", "shinka"]) == 2
    err = capsys.readouterr().err
    assert "shinka" in err and "would overwrite" in err


@pytest.mark.parametrize("name", ['X}"\nmax_iterations: 999999\n#', "1ABC", "A-B", "", "A B", "${OPENAI_API_KEY}"])
def test_api_key_env_must_be_a_variable_name(tmp_path, capsys, name):
    """Issue 40 #8: ``--api-key-env`` was pasted unquoted into config.yaml (YAML injection by the argument)."""
    out = tmp_path / "x"
    assert main(["export", ENV_ID, str(out), "--api-key-env", name]) == 2
    err = capsys.readouterr().err
    assert "--api-key-env must be an environment variable name" in err and len(err.strip().splitlines()) == 1
    assert not (out / "config.yaml").exists()
    with pytest.raises(ValueError, match="variable name"):
        export_openevolve(ENV_ID, out, api_key_env=name)
    assert not out.exists()  # refused before anything is written


def test_a_valid_api_key_env_is_read_back_by_yaml(tmp_path):
    yaml = pytest.importorskip("yaml")
    paths = export_openevolve(ENV_ID, tmp_path, api_key_env="_MY_KEY_2")
    config = yaml.safe_load(paths["config"].read_text())
    assert config["llm"]["api_key"] == "${_MY_KEY_2}" and config["max_iterations"] == 100


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_export_initial_must_be_a_regular_file(tmp_path, capsys):
    """Issue 40 #7: CLI input files are regular files of bounded size (``--initial /dev/zero`` read without bound)."""
    assert main(["export", ENV_ID, str(tmp_path / "x"), "--initial", "/dev/zero"]) == 2
    assert "--initial: /dev/zero is a device" in capsys.readouterr().err
