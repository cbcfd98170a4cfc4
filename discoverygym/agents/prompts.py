"""Prompts for ``action_mode="code"`` LLM policies (the parser that reads a program back:
:mod:`discoverygym.agents.responses`).

One prompt builder serves every env: it only reads the attributes that construction problems
(:class:`~discoverygym.envs.problem.Problem`) and program tasks
(:class:`~discoverygym.envs.program.ProgramTask`) share: ``title``, ``prompt()`` (statement and
program contract in our own words), ``direction``, ``sota``, ``entry`` and ``language``. A prompt holds, in order:

1. the problem statement and the verifier contract (``problem.prompt()``);
2. the start state: its score, the published record and the gap to it, and its program (or, for
   a construction with no program yet, a note that the program receives it as ``parent``);
3. further inspirations (search with several states per prompt), each with score and program;
4. the tail of the start state's stdout/stderr (``State.metadata["stdout"|"stderr"]``);
5. the rules of the answer: one fenced code block in the problem's language, last block counts.
   With ``edit_format="diff"`` (and a parent that has a program) the rules ask instead for
   SEARCH/REPLACE blocks against the current program (:data:`DIFF_RULES`, the Aider/OpenEvolve
   format; read back by :mod:`discoverygym.agents.policies.edits`).

The response parser and the thinking-budget forcing are :mod:`discoverygym.agents.responses`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from discoverygym.types import Direction, State

__all__ = [
    "DIFF_RULES",
    "PROGRAM_LIMIT",
    "STDOUT_TAIL",
    "build_messages",
    "build_prompt",
]

#: characters of stdout/stderr shown in a prompt (the tail is kept).
STDOUT_TAIL = 2000
#: characters of an inspiration's program shown in a prompt (longer programs are cut in the middle).
PROGRAM_LIMIT = 20_000


def _language(problem: Any) -> str:
    return problem.language


def _fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "not scored"
    return f"{value:.12g}"


def _gap(problem: Any, score: float | None) -> str:
    """Distance from ``score`` to the published record, signed so that the text says who is ahead."""
    record = (getattr(problem, "sota", None) or {}).get("value")
    if score is None or record is None or not math.isfinite(float(record)):
        return "unknown"
    diff = float(score) - float(record)
    ahead = Direction(problem.direction).better(float(score), float(record))
    if diff == 0:
        return "0 (equal to the record)"
    return f"{abs(diff):.6g} ({'better' if ahead else 'worse'} than the record)"


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n... [{len(text) - limit} characters omitted] ...\n" + text[-half:]


def _state_block(problem: Any, state: State, label: str) -> str:
    lang = _language(problem)
    lines = [f"## {label}", f"Score: {_fmt(state.score)}"]
    if not state.valid and state.error:
        lines.append(f"(this state is not valid: {state.error})")
    if state.code:
        lines.append(f"Program:\n```{lang}\n{_clip(state.code.rstrip(), PROGRAM_LIMIT)}\n```")
    elif state.solution is not None:
        lines.append(
            "There is no program for this state yet: it is a construction. Your program receives it "
            f"as the `parent` argument of `{getattr(problem, 'entry', 'construct')}` and may improve it."
        )
        example = _example_program(problem)
        if example:
            lines.append("A simple valid program for this problem (it builds its own construction; edit it or "
                         f"start from `parent`):\n```{lang}\n{_clip(example.rstrip(), PROGRAM_LIMIT)}\n```")
    return "\n".join(lines)


def _example_program(problem: Any) -> str | None:
    """The problem's bundled example program (``problem.example``), or ``None``: shown when the start
    state has no program, so that a model edits a program that runs instead of writing one blind."""
    from discoverygym.envs.problem import example_file

    try:
        path = example_file(problem)
        return path.read_text(encoding="utf-8") if path is not None and path.is_file() else None
    except (OSError, TypeError, ValueError, UnicodeDecodeError):
        return None


def _output_tail(state: State) -> str:
    parts = []
    for key in ("stdout", "stderr"):
        text = state.metadata.get(key) if isinstance(state.metadata, dict) else None
        if isinstance(text, str) and text.strip():
            parts.append(f"{key} (last {STDOUT_TAIL} characters):\n```\n{text[-STDOUT_TAIL:]}\n```")
    return "\n".join(parts)


#: the answer rules of ``edit_format="diff"`` (the SEARCH/REPLACE format of Aider and OpenEvolve).
DIFF_RULES = (
    "- Answer with one or more SEARCH/REPLACE blocks that edit the current program:\n"
    "  <<<<<<< SEARCH\n"
    "  (lines copied exactly from the current program)\n"
    "  =======\n"
    "  (the lines that replace them)\n"
    "  >>>>>>> REPLACE\n"
    "  Each SEARCH section must quote whole consecutive lines of the current program, with their "
    "indentation, enough of them to be unique; the first match is replaced. Blocks are applied in "
    "order. Keep blocks small; do not repeat unchanged code.\n"
    "- To rewrite everything instead, answer with the complete new program in one fenced block: "
    "```{lang} ... ```.\n"
)


def build_prompt(problem: Any, parent: State, inspirations: Sequence[State] = (), edit_format: str = "full") -> str:
    """The user message for one code-mode proposal.

    Args:
        problem: a ``Problem`` or ``ProgramTask`` (attributes listed in the module docstring).
        parent: the start state to improve (its score, program and output tail are shown).
        inspirations: more states to show (the parent, if repeated here, is skipped).
        edit_format: ``"full"`` (answer with the whole program) or ``"diff"`` (answer with
            SEARCH/REPLACE blocks against the current program, the Aider/OpenEvolve format:
            :data:`DIFF_RULES`; a parent without a program gets the ``full`` rules).

    Returns:
        Markdown text (statement, contract, states, record and gap, output tail, answer rules).
    """
    lang = _language(problem)
    better = Direction(problem.direction).comparative
    sota = getattr(problem, "sota", None) or {}
    parts = [problem.prompt().rstrip(), _state_block(problem, parent, "Current state (improve this one)")]
    parts.append(
        f"Published record: {sota.get('value')} ({sota.get('source', 'unknown source')}); "
        f"{better} is better. Gap from the current state to the record: {_gap(problem, parent.score)}."
    )
    others = [s for s in inspirations if s is not parent and (s.id is None or s.id != parent.id)]
    for i, state in enumerate(others, 1):
        parts.append(_state_block(problem, state, f"Other attempt {i}"))
    tail = _output_tail(parent)
    if tail:
        parts.append("Output of the current program:\n" + tail)
    if edit_format == "diff" and parent.code:
        answer = DIFF_RULES.format(lang=lang)
        if "EVOLVE-BLOCK-START" in parent.code:
            answer += ("- Only the code between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END markers may change; "
                       "blocks that match outside them are rejected.\n")
    else:
        answer = (f"- Answer with the complete new program in one fenced block: ```{lang} ... ```, and write "
                  "nothing after the block. Only the last fenced block of your answer is run; everything else is "
                  "ignored.\n")
    parts.append(
        "## Rules\n" + answer +
        f"- The program must follow the contract above (entry `{getattr(problem, 'entry', 'main')}`).\n"
        "- The score is measured by the verifier; scores printed or claimed by the program are ignored.\n"
        f"- Aim for a {better} score than the current state."
    )
    return "\n\n".join(parts) + "\n"


def build_messages(problem: Any, parent: State, inspirations: Sequence[State] = (),
                   system: str | None = None, edit_format: str = "full") -> list[dict[str, str]]:
    """Chat messages (``[{"role", "content"}]``) wrapping :func:`build_prompt` (+ optional system text)."""
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": build_prompt(problem, parent, inspirations, edit_format)})
    return messages
