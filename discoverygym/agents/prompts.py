"""Prompts for ``action_mode="code"`` LLM policies, and the parser that reads a program back.

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

The parser (:func:`parse_response`) takes the *last* complete fenced code block tagged with the
problem's language (else the last untagged block) of a response, after removing reasoning first
(fences inside reasoning are never read): gpt-oss style channels
(``<|channel|>analysis<|message|>…`` / ``<|channel|>final<|message|>…``), a leading
``<think>…</think>``, text up to ``</think>`` when no ``<think>`` precedes it (templates that open
``<think>`` in the prompt), and later ``<think>…</think>`` outside code. Lines end at LF, CRLF
or CR only (U+2028, form feed etc. inside a string stay). Fences are read line by
line (CommonMark-like): a fence opens on a line starting (after indentation) with 3+ backticks or
3+ tildes and closes on a line holding only the same character, at least as many; attributes after
the tag (```` ```python title="a.py" ````) are ignored, tags lose case and version suffix
(``c++17``, ``python3.11``) and aliases count (``py``, ``cc``, ``cxx``, ...), and an indented
fence's indentation is removed. A fence ending a prose line (``Here it is: ```python``) opens a
block only when no line-start block exists, but a response left open under that reading is
truncated. A response that has no block, only blocks in another language, ends inside its
reasoning or inside an unclosed block raises :class:`ResponseError` with the reason and its
:class:`~discoverygym.policy.Outcome` (``TRUNCATED`` for the last two, else ``NO_CODE``); it never
crashes on odd input, and parsing is linear in the response length.

The "stop thinking, answer now" forcing (TTT-Discover App. A, two-phase sampling with a thinking
budget) is :func:`needs_forcing` + :data:`FORCE_ANSWER`: after ``thinking_budget`` tokens a
sequence that is still reasoning gets :data:`FORCE_ANSWER` appended (not trained on) and continues.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from discoverygym.policy import Outcome
from discoverygym.types import Direction, State

__all__ = [
    "FORCE_ANSWER",
    "THINK_END",
    "ResponseError",
    "answer_complete",
    "build_messages",
    "build_prompt",
    "code_blocks",
    "failed_program",
    "needs_forcing",
    "parse_response",
    "salvage_program",
    "strip_reasoning",
]

#: marker closing the reasoning section of "thinking" models (Qwen3, DeepSeek-R1 style).
THINK_END = "</think>"
#: text appended to a sequence that used up its thinking budget (phase 2 of two-phase sampling).
FORCE_ANSWER = (
    "\n\nI am out of thinking time, so I will stop reasoning here and write the final program now."
    f"\n{THINK_END}\n\n"
)
#: characters of stdout/stderr shown in a prompt (the tail is kept).
STDOUT_TAIL = 2000
#: characters of an inspiration's program shown in a prompt (longer programs are cut in the middle).
PROGRAM_LIMIT = 20_000

_FINAL = re.compile(r"<\|channel\|>\s*final\s*(?:<\|constrain\|>[^<]*)?<\|message\|>", re.DOTALL)
_CHANNEL_TOKENS = re.compile(r"<\|(?:end|return|call|start)\|>")


class ResponseError(ValueError):
    """A response from which no program can be read (the message says why; shown in logs).

    Attributes:
        outcome: the sample's category: :attr:`~discoverygym.policy.Outcome.TRUNCATED` when the
            response stopped inside its reasoning or inside an unclosed code block (the token budget
            ran out), else :attr:`~discoverygym.policy.Outcome.NO_CODE` (no block, an empty block,
            only blocks in another language, not text).
    """

    def __init__(self, message: str, outcome: Outcome = Outcome.NO_CODE) -> None:
        super().__init__(message)
        self.outcome = outcome


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


#: characters allowed in a fence's language tag (``python``, ``c++17``, ``python3.11``).
_TAG_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+#.-")
#: language tags accepted for a problem's language (after :func:`_norm_tag` removed a version suffix).
LANGUAGE_TAGS: dict[str, frozenset[str]] = {
    "python": frozenset({"python", "py", "ipython"}),
    "cpp": frozenset({"cpp", "c++", "cxx", "cc", "hpp", "hxx", "h++", "gnu++", "g++", "cplusplus"}),
}
#: how many ``</think>`` candidates / later reasoning blocks are tried (keeps parsing linear).
_MAX_TRIES = 8


def _norm_tag(tag: str) -> str:
    """A fence tag without case and version suffix: ``C++17``→``c++``, ``python3.11``→``python``."""
    tag = tag.lower()
    return tag.rstrip("0123456789._-") or tag


def _tags(language: str) -> frozenset[str]:
    language = _norm_tag(language)
    for tags in LANGUAGE_TAGS.values():
        if language in tags:
            return tags
    return frozenset({language})


def _opener(line: str) -> tuple[str, int, str, int] | None:
    """``(char, run, tag, indentation)`` when ``line`` opens a fence (it starts with 3+ ` or ~)."""
    body = line.lstrip(" \t")
    if len(body) < 3 or body[0] not in "`~":
        return None
    char = body[0]
    info = body.lstrip(char)
    run = len(body) - len(info)
    if run < 3 or (char == "`" and "`" in info):  # CommonMark: a backtick fence's info has no backticks
        return None
    info = info.strip(" \t")
    end = 0
    while end < len(info) and info[end] in _TAG_CHARS:
        end += 1
    return char, run, info[:end].lower(), len(line) - len(body)


def _inline_opener(line: str) -> tuple[str, int, str, int] | None:
    """A fence ending a prose line (``Here it is: ```python``): 3+ backticks and a tag, at the line end."""
    line = line.rstrip(" \t")
    start = len(line)
    while start > 0 and line[start - 1] in _TAG_CHARS:
        start -= 1
    if start == len(line) or not line[start].isalpha():
        return None
    run_start = start
    while run_start > 0 and line[run_start - 1] == "`":
        run_start -= 1
    if start - run_start < 3 or not line[:run_start].strip(" \t"):
        return None
    return "`", start - run_start, line[start:].lower(), 0


def _closes(line: str, fence: tuple[str, int, str, int]) -> bool:
    stripped = line.strip(" \t")
    return len(stripped) >= fence[1] and not stripped.lstrip(fence[0])


def _scan(text: str, inline: bool = False) -> tuple[list[tuple[str, str]], bool, list[tuple[int, str]]]:
    """Split ``text`` (LF line ends only) into fenced blocks, CommonMark-like, in one pass.

    A fence opens on a line whose content (after indentation) starts with 3+ backticks or 3+
    tildes, followed by an optional language tag and attributes (a backtick fence's attributes hold
    no backticks). With ``inline``, 3+ backticks and a tag ending a prose line open one too. A
    fence closes on a line holding only the same character, at least as many as opened it; other
    lines (backticks inside code included) are code. The opening line's indentation is removed
    from the block's lines.

    Returns:
        ``(blocks, unclosed, outside)``: closed blocks as ``(tag, code)`` in order; whether the
        text ends inside an open block; ``(offset, line)`` of the lines outside every block.
    """
    blocks: list[tuple[str, str]] = []
    outside: list[tuple[int, str]] = []
    fence: tuple[str, int, str, int] | None = None  # (char, run, tag, indentation) of the open block
    body: list[str] = []
    offset = 0
    for line in text.split("\n"):
        pos, offset = offset, offset + len(line) + 1
        if fence is not None:
            if _closes(line, fence):
                blocks.append((fence[2], "\n".join(body)))
                fence, body = None, []
                continue
            cut = 0
            while cut < fence[3] and cut < len(line) and line[cut] in " \t":
                cut += 1
            body.append(line[cut:])
            continue
        outside.append((pos, line))
        fence = _opener(line) or (_inline_opener(line) if inline else None)
        body = []
    return blocks, fence is not None, outside


def _read(text: str) -> tuple[list[tuple[str, str]], bool]:
    """The blocks of an answer and whether it ends inside one (truncated).

    Blocks are those opened at the start of a line; only when there is none does a fence ending a
    prose line (``Here it is: ```python``) open one. Truncation is judged on the reading that
    honours such prose fences, so ``... then ```python`` + unfinished code is refused, while a
    sentence like ``wrap code in ```python`` followed by ```` ``` ```` does not hide the real block.
    """
    blocks, _, _ = _scan(text)
    inline_blocks, unclosed, _ = _scan(text, inline=True)
    return blocks or inline_blocks, unclosed


def _sane(answer: str) -> bool:
    """Whether ``answer`` reads as a finished answer: closed blocks, none holding a ```` ```tag ```` line."""
    blocks, unclosed = _read(answer)
    if unclosed or not blocks:
        return False
    for _, code in blocks:
        for line in code.split("\n"):
            found = _opener(line)
            if found and found[0] == "`" and found[2]:
                return False
    return True


def _strip_reasoning(text: str) -> str:
    """The answer part of a response (reasoning removed), read before any fence.

    Reasoning is a gpt-oss analysis channel, or text ending at a ``</think>``: after a leading
    ``<think>``, or from the start when ``</think>`` comes with no ``<think>`` before it (chat
    templates that open ``<think>`` in the prompt, R1 style). Fences inside reasoning are not read
    (an abandoned draft fence cannot swallow ``</think>``). Which ``</think>`` ends it: the first
    one, unless the answer after it does not read as finished (then the last that does, e.g.
    reasoning that quoted ``</think>``); a ``</think>`` inside the answer's code is code. Later
    ``<think>…</think>`` outside code is removed too; a ``<think>`` outside code with no
    ``</think>`` after it is unfinished reasoning only when the answer has no complete block.

    Raises:
        ResponseError: the response ended while still reasoning.
    """
    finals = list(_FINAL.finditer(text))
    if finals:
        text = text[finals[-1].end():]
    elif "<|channel|>" in text:
        raise ResponseError("response ended in the analysis channel (no final channel): truncated reasoning",
                            Outcome.TRUNCATED)
    text = _CHANNEL_TOKENS.sub("", text)
    head = text.lstrip()
    first = text.find(THINK_END)
    if head.startswith("<think>") or (first >= 0 and "<think>" not in text[:first]):
        if head.startswith("<think>"):
            text = head
            first = text.find(THINK_END)
        if first < 0:
            raise ResponseError("response ended inside <think> (reasoning not finished): truncated", Outcome.TRUNCATED)
        ends = [first]
        while len(ends) < 4 * _MAX_TRIES:
            nxt = text.find(THINK_END, ends[-1] + 1)
            if nxt < 0:
                break
            ends.append(nxt)
        if len(ends) == 4 * _MAX_TRIES:  # many: take the last ones from the end
            last = text.rfind(THINK_END)
            ends.append(last)
        cut = first
        if not _sane(text[first + len(THINK_END):]):
            for end in sorted(set(ends[1:]), reverse=True)[:_MAX_TRIES]:
                if _sane(text[end + len(THINK_END):]):
                    cut = end
                    break
        text = text[cut + len(THINK_END):]
    for _ in range(_MAX_TRIES):  # later reasoning blocks, outside code
        _, _, outside = _scan(text)
        ends = [(pos, line) for pos, line in outside if THINK_END in line]
        if not ends:
            break
        pos, line = ends[-1]
        text = text[pos + line.rfind(THINK_END) + len(THINK_END):]
    _, _, outside = _scan(text)
    if any("<think>" in line for _, line in outside) and not _read(text)[0]:
        raise ResponseError("response ended inside <think> (reasoning not finished): truncated", Outcome.TRUNCATED)
    return text


def parse_response(text: str, language: str | None = None, *, entry: str | None = None, ended: bool = False) -> str:
    """The program in an LLM response: the last complete fenced block in the problem's language.

    Args:
        text: the raw completion (may contain reasoning, channels, prose, several blocks).
        language: the problem's language (``"python"``/``"cpp"``). The last block tagged with it
            (``python``/``py``/``python3.11``; ``cpp``/``c++17``/``cc``/``cxx``) wins; else the last
            untagged block. Blocks tagged with another language are refused. ``None``: the last block, whatever its tag.
        entry: the function the program must define. Given (and the language is Python), a
            response whose last block was left open, or that has no fence at all, still yields a
            program when it holds a complete ``def entry`` (:func:`salvage_program`): the code up to
            the last top-level statement that follows the function (the cut one is dropped); with
            no such program, a left-open block after a complete one falls back to that one.
        ended: the response ended by itself (end-of-sequence or a stop), not at the token budget:
            then code without a fence may also be taken whole.

    Returns:
        The code inside the chosen block (fences and the fence's indentation removed), with
        trailing spaces stripped and one final newline.

    Raises:
        ResponseError: not a string, no complete block, a block left open at the end (truncated
            response), an empty block, only blocks in another language, or unfinished reasoning.
    """
    if not isinstance(text, str):
        raise ResponseError(f"response must be text, got {type(text).__name__}")
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # only these end lines (not U+2028, \f, ...)
    answer = _strip_reasoning(text)
    blocks, unclosed = _read(answer)
    if (unclosed or not blocks) and entry and _norm_tag(language or "python") in LANGUAGE_TAGS["python"]:
        found = salvage_program(answer, entry, ended=ended and not unclosed)
        if found is not None:
            return found
        if unclosed and blocks:  # a complete block before the cut one
            unclosed = False
    if unclosed:
        raise ResponseError("response ends inside an unclosed code block (truncated)", Outcome.TRUNCATED)
    if not blocks:
        want = f" ```{language}" if language else ""
        raise ResponseError(f"response contains no fenced code block{want}")
    if language:
        tags = _tags(language)
        chosen = [code for tag, code in blocks if _norm_tag(tag) in tags] or [code for tag, code in blocks if not tag]
        if not chosen:
            others = sorted({tag for tag, _ in blocks})
            raise ResponseError(
                f"the code block is tagged ```{others[-1] if len(others) == 1 else ', ```'.join(others)}, "
                f"but this problem takes {language} programs (```{language} ... ```)")
        code = chosen[-1]
    else:
        code = blocks[-1][1]
    code = code.rstrip()
    if not code.strip():
        raise ResponseError("the last code block is empty")
    return code + "\n"


#: most cut points :func:`salvage_program` tries (keeps it linear in practice).
_SALVAGE_TRIES = 32


def _defines(code: str, entry: str) -> bool:
    """Whether ``code`` compiles and defines ``entry`` at top level."""
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry
               for node in tree.body)


def salvage_program(answer: str, entry: str, *, ended: bool = False) -> str | None:
    """A complete Python program in an answer whose code block was left open or never fenced, else ``None``.

    The code is the text of the block left open at the end (after its opening fence), or, with no
    fence at all, the text from the first line that starts (in column 0) with ``def``, ``import``,
    ``from``, ``class`` or ``@``. A program is accepted when it compiles and defines ``entry`` at
    top level, cut before a later top-level line (so the function was finished: the model had
    moved on, e.g. to ``if __name__ == ...`` or prose that the token budget cut), trying the last
    :data:`_SALVAGE_TRIES` top-level lines after ``def entry``; with ``ended`` (the response was
    not cut), the whole code counts too. Indentation and prose inside the function are not repaired.

    Args:
        answer: the response with reasoning removed, LF line ends.
        entry: the function the program must define.
        ended: the response ended by itself (not at the token budget).
    """
    blocks, unclosed, outside = _scan(answer)
    if unclosed:
        opener = outside[-1][0] + len(outside[-1][1]) + 1  # the open block's first line
        lines = answer[opener:].split("\n")
        indent = _opener(outside[-1][1])
        cut = indent[3] if indent else 0
        lines = [line[cut:] if line[:cut].strip(" \t") == "" else line for line in lines]
    elif not blocks:
        lines = answer.split("\n")
        first = next((i for i, line in enumerate(lines)
                      if line.startswith(("def ", "import ", "from ", "class ", "@", "async def "))), None)
        if first is None:
            return None
        lines = lines[first:]
    else:
        return None
    if ended and _defines("\n".join(lines), entry):
        return "\n".join(lines).rstrip() + "\n"
    starts = [i for i, line in enumerate(lines) if line[:1] not in ("", " ", "\t", "#", ")", "]", "}")]
    tried = 0
    for i in reversed(starts):
        if tried >= _SALVAGE_TRIES:
            break
        code = "\n".join(lines[:i]).rstrip()
        if not code:
            break
        tried += 1
        if _defines(code, entry):
            return code + "\n"
    return None


def answer_complete(text: str, language: str | None = None) -> bool:
    """Whether a response being generated can stop here: its last line closes a code block and the
    response now reads as a finished answer (:func:`parse_response` finds its program).

    Used as a stop condition while sampling (the rules ask for one block and nothing after it, so
    what a model writes after the block is never run); reasoning still open never stops.
    """
    body = str(text).replace("\r\n", "\n").replace("\r", "\n").rstrip()
    last = body.rsplit("\n", 1)[-1].strip(" \t")
    if len(last) < 3 or last.strip(last[0]) or last[0] not in "`~":
        return False
    try:
        parse_response(body, language)
    except ResponseError:
        return False
    return True


def strip_reasoning(text: str) -> str:
    """The answer part of a response: line ends normalised to LF, reasoning removed (module docstring).

    Raises:
        ResponseError: the response ended while still reasoning.
    """
    return _strip_reasoning(str(text).replace("\r\n", "\n").replace("\r", "\n"))


def code_blocks(text: str, language: str | None = None) -> list[str]:
    """Every complete fenced block of a response's answer, in order: those tagged ``language`` (or, if
    none is, the untagged ones); with ``language=None`` all of them. Reasoning is removed first.

    Raises:
        ResponseError: the response ended while still reasoning.
    """
    blocks, _ = _read(strip_reasoning(text))
    if not language:
        return [code for _, code in blocks]
    tags = _tags(language)
    return [code for tag, code in blocks if _norm_tag(tag) in tags] or [code for tag, code in blocks if not tag]


def failed_program(reason: str, language: str = "python") -> str:
    """A program text that records why parsing failed (it fails the contract when evaluated).

    Used as the action of a sample whose response could not be parsed, so that every sample goes
    through the same evaluation path and gets the env's failure reward. The envs recognise it
    (:func:`~discoverygym.outcomes.unread_reason`) and judge it as ``"no code in the response: <reason>"``
    without running it.
    """
    from discoverygym.outcomes import UNREAD_PREFIX

    comment = "//" if language == "cpp" else "#"
    flat = " ".join(str(reason).split())[:500]
    return f"{comment} {UNREAD_PREFIX}{flat}\n"


def needs_forcing(text: str, ended: bool) -> bool:
    """Whether a phase-1 sequence must get :data:`FORCE_ANSWER` (still reasoning, not ended).

    Args:
        text: the decoded phase-1 completion.
        ended: the sequence emitted its end-of-sequence token.
    """
    if ended:
        return False
    return not (THINK_END in text or _FINAL.search(text))
