"""Reading a program back from an LLM response: the parser, its salvage, and the thinking-budget forcing.

The prompt that asks for the program is :mod:`discoverygym.agents.prompts`.

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

import re

from discoverygym.policy import Outcome

__all__ = [
    "FORCE_ANSWER",
    "LANGUAGE_TAGS",
    "THINK_END",
    "ResponseError",
    "answer_complete",
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
