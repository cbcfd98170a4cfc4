"""Edit formats of LLM code proposals: a whole program (``full``) or SEARCH/REPLACE blocks (``diff``).

``diff`` is the format of Aider ("SEARCH/REPLACE blocks", aider.chat/docs/more/edit-formats.html)
and OpenEvolve (``openevolve/utils/code_utils.py``: ``parse_evolve_blocks``/``apply_diff``)::

    <<<<<<< SEARCH
        x = 1
    =======
        x = 2
    >>>>>>> REPLACE

A response may hold several blocks (fenced or not, with prose around them); they are applied in
order, each to the result of the previous ones. Marker lines are 5 to 9 ``<``/``=``/``>`` (Aider's
tolerance), optionally indented.

**Matching** (line based, whole lines; first match wins, as in Aider and OpenEvolve), tried in order:

1. exact: the SEARCH lines equal consecutive lines of the program;
2. ignoring trailing whitespace of every line;
3. ignoring an indentation shift: every non-blank SEARCH line equals a program line up to one
   common indentation offset (e.g. the model dropped the 4 spaces of a method body); the
   REPLACE lines are re-indented by the same offset;

and, when none of these matches, the same three with the blank lines at both ends of the SEARCH
text left out.

**EVOLVE markers**: when the parent program holds ``EVOLVE-BLOCK-START`` / ``EVOLVE-BLOCK-END``
lines (OpenEvolve's convention, usually ``# EVOLVE-BLOCK-START``), a block may only change lines
strictly between a START and the next END. A block whose SEARCH text matches only outside the
markers fails with a message saying so; a REPLACE text may not add or remove markers. (Markers are
read from the parent: diff edits cannot remove them, so a parent that descends from an initial
program with markers keeps them; a full-program fallback is not restricted.)

**Fallback**: a response with no usable blocks but a complete program — a fenced block in the
problem's language that parses (Python: ``ast.parse``) and defines the entry (a top-level
``def``/``class``/assignment of that name; C++: the name followed by ``(``) — is taken as a full
program, as in ``full`` mode.

:func:`apply_edit` never raises on odd responses: it returns an :class:`EditResult` that says how
the program was obtained or why none was (``parse_error``: no block and no program, or malformed
blocks; ``apply_error``: blocks that could not be applied). :func:`~discoverygym.policy.edit_stats`
(re-exported here; it lives on the ground floor so that search uses it too) turns a step's samples
into the logged rates ``edit/parse_fail_rate``, ``edit/apply_fail_rate`` and ``edit/fallback_rate``.

Pure functions on strings; imports only the standard library, :mod:`discoverygym.agents.responses`
and :mod:`discoverygym.policy`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from discoverygym.agents.responses import ResponseError, code_blocks
from discoverygym.policy import Outcome, edit_stats

__all__ = [
    "DIFF_PREFIX",
    "EDIT_FORMATS",
    "EVOLVE_END",
    "EVOLVE_START",
    "DiffApplyError",
    "DiffParseError",
    "EditError",
    "EditResult",
    "answer_prefix",
    "apply_blocks",
    "apply_edit",
    "check_edit_format",
    "diff_answer_complete",
    "edit_stats",
    "evolve_regions",
    "full_program",
    "parse_blocks",
]

#: the accepted values of ``--edit-format`` / the policies' ``edit_format`` argument.
EDIT_FORMATS = ("full", "diff")
#: OpenEvolve's markers of the editable part of a program.
EVOLVE_START = "EVOLVE-BLOCK-START"
EVOLVE_END = "EVOLVE-BLOCK-END"

_SEARCH = re.compile(r"^[ \t]*<{5,9}[ \t]*SEARCH[ \t]*$")
_DIVIDER = re.compile(r"^[ \t]*={5,9}[ \t]*$")
_REPLACE = re.compile(r"^[ \t]*>{5,9}[ \t]*REPLACE[ \t]*$")

#: the first line of a ``diff`` answer, given to a local model as its answer prefix (:func:`answer_prefix`).
DIFF_PREFIX = "<<<<<<< SEARCH\n"


class EditError(ValueError):
    """An edit that cannot be used (the message says why; it is shown in logs and sample records)."""


class DiffParseError(EditError):
    """Malformed SEARCH/REPLACE blocks: a SEARCH without its ``=======`` or ``>>>>>>> REPLACE`` line."""


class DiffApplyError(EditError):
    """A SEARCH/REPLACE block that cannot be applied to the parent program.

    Raised when its SEARCH text is empty or found nowhere (not even up to whitespace), when it is
    found only outside the EVOLVE markers, or when its REPLACE text adds or removes a marker.
    """


def check_edit_format(edit_format: Any) -> str:
    """``edit_format`` if it is one of :data:`EDIT_FORMATS` (``"full"``, ``"diff"``).

    Raises:
        ValueError: any other value (the message lists the accepted ones).
    """
    if edit_format not in EDIT_FORMATS:
        raise ValueError(f"edit_format must be one of {', '.join(EDIT_FORMATS)}; got {edit_format!r}")
    return str(edit_format)


@dataclass(frozen=True)
class EditResult:
    """What :func:`apply_edit` made of one response.

    Attributes:
        program: the program to evaluate (one final newline), or ``None`` when none could be made.
        mode: ``"diff"`` (blocks applied), ``"fallback"`` (the response held a full program),
            or ``"failed"``.
        blocks: SEARCH/REPLACE blocks found in the response (0 when malformed).
        parse_error: why neither blocks nor a full program could be read (else ``None``).
        apply_error: why the blocks could not be applied, when no full program replaced them.
        note: a remark on a success, e.g. why blocks were given up for the fallback program.
        outcome: ``None`` on success; on failure :attr:`~discoverygym.policy.Outcome.TRUNCATED`
            (the response stopped inside its reasoning) or :attr:`~discoverygym.policy.Outcome.NO_CODE`.
    """

    program: str | None
    mode: str
    blocks: int = 0
    parse_error: str | None = None
    apply_error: str | None = None
    note: str | None = None
    outcome: Outcome | None = None

    @property
    def error(self) -> str | None:
        """The failure reason (``parse_error`` or ``apply_error``), ``None`` on success."""
        return self.parse_error or self.apply_error


# ---------------------------------------------------------------------------------------------- sampling
def answer_prefix(language: str, edit_format: str = "full", *, has_program: bool = True,
                  reasoning: bool = False) -> str:
    """The text a local model's answer is made to start with (``answer_prefix="auto"``; issue 49).

    A small model asked for code often writes prose instead; starting its answer with the format's
    first line makes it write the format. ``full``, or ``diff`` for a parent without a program (whose
    prompt asks for a whole program, :func:`~discoverygym.agents.prompts.build_prompt`): the opening
    fence ```` ```{language} ```` and a newline. ``diff`` with a parent program: :data:`DIFF_PREFIX`,
    the SEARCH line of the first block. ``""`` when the model reasons first (``reasoning``: a
    thinking budget, or a chat template with a reasoning section), since its answer does not start
    at once.

    Args:
        language: the problem's language (``"python"``, ``"cpp"``).
        edit_format: ``"full"`` or ``"diff"``.
        has_program: the parent has a program (``diff`` prompts ask for blocks only then).
        reasoning: the model reasons before it answers.

    Raises:
        ValueError: an unknown ``edit_format``.
    """
    if reasoning:
        return ""
    if check_edit_format(edit_format) == "diff" and has_program:
        return DIFF_PREFIX
    return f"```{language}\n"


def diff_answer_complete(text: str, language: str | None = None) -> bool:
    """Whether a ``diff`` answer being generated can stop here (the stop rule of ``diff`` sampling).

    True when the text's last line closes a SEARCH/REPLACE block (a ``>>>>>>> REPLACE`` line) and
    every block so far is well formed, or when it reads as a finished full-program answer
    (:func:`~discoverygym.agents.responses.answer_complete`: the fallback). So a local model's answer
    ends after its first complete block, before it can open another one that the token budget cuts
    (an unclosed block makes the whole answer unreadable). Reasoning still open never stops.
    """
    from discoverygym.agents.responses import ResponseError, answer_complete, strip_reasoning

    body = str(text).replace("\r\n", "\n").replace("\r", "\n").rstrip()
    last = body.rsplit("\n", 1)[-1]
    if _REPLACE.match(last):
        try:
            return bool(parse_blocks(strip_reasoning(body)))
        except (DiffParseError, ResponseError):
            return False
    return answer_complete(body, language)


# ---------------------------------------------------------------------------------------------- parsing
def parse_blocks(text: str) -> list[tuple[str, str]]:
    """The SEARCH/REPLACE blocks of ``text``, in order, as ``(search, replace)`` strings.

    Lines between ``<<<<<<< SEARCH`` and ``=======`` are the SEARCH text, lines between it and
    ``>>>>>>> REPLACE`` the REPLACE text (each joined with ``\\n``, no final newline). Anything
    outside blocks (prose, fences, file names) is ignored, so fenced and bare blocks both work.
    Line ends are LF, CRLF or CR.

    Returns:
        The blocks; ``[]`` when ``text`` holds none.

    Raises:
        DiffParseError: a block is not closed (``=======`` or ``>>>>>>> REPLACE`` missing, e.g. a
            truncated response), or a ``>>>>>>> REPLACE`` line comes before its ``=======``.
    """
    lines = str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[tuple[str, str]] = []
    state, search, replace, opened = "out", [], [], 0
    for number, line in enumerate(lines, 1):
        if state == "out":
            if _SEARCH.match(line):
                state, search, replace, opened = "search", [], [], number
        elif state == "search":
            if _DIVIDER.match(line):
                state = "replace"
            elif _REPLACE.match(line) or _SEARCH.match(line):
                raise DiffParseError(f"the SEARCH block opened at line {opened} has no ======= line "
                                     f"before line {number}")
            else:
                search.append(line)
        else:  # replace
            if _REPLACE.match(line):
                blocks.append(("\n".join(search), "\n".join(replace)))
                state = "out"
            elif _SEARCH.match(line):
                raise DiffParseError(f"the SEARCH/REPLACE block opened at line {opened} has no "
                                     f">>>>>>> REPLACE line before the next SEARCH (line {number})")
            else:
                replace.append(line)
    if state != "out":
        missing = "=======" if state == "search" else ">>>>>>> REPLACE"
        raise DiffParseError(f"the SEARCH/REPLACE block opened at line {opened} is not closed "
                             f"(no {missing} line; truncated response?)")
    return blocks


# ---------------------------------------------------------------------------------------------- regions
def evolve_regions(program: str) -> list[tuple[int, int]] | None:
    """The editable line ranges of ``program``: ``[(first, stop), ...]`` (0-based, ``stop`` exclusive).

    Each range holds the lines strictly between an ``EVOLVE-BLOCK-START`` line and the next
    ``EVOLVE-BLOCK-END`` line (markers may sit in comments: ``# EVOLVE-BLOCK-START``).

    Returns:
        The ranges, or ``None`` when the program has no marker (everything is editable).

    Raises:
        DiffApplyError: unbalanced markers (an END without START, a START inside a block, or a
            START never closed).
    """
    lines = program.split("\n")
    regions, start = [], None
    for i, line in enumerate(lines):
        if EVOLVE_START in line:
            if start is not None:
                raise DiffApplyError(f"the parent program has {EVOLVE_START} at line {i + 1} inside an open block")
            start = i
        elif EVOLVE_END in line:
            if start is None:
                raise DiffApplyError(f"the parent program has {EVOLVE_END} at line {i + 1} without {EVOLVE_START}")
            regions.append((start + 1, i))
            start = None
    if start is not None:
        raise DiffApplyError(f"the parent program's {EVOLVE_START} at line {start + 1} is never closed")
    return regions if regions or any(EVOLVE_END in line for line in lines) else None


# ---------------------------------------------------------------------------------------------- matching
def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _shift(found: Sequence[str], search: Sequence[str]) -> tuple[int, str] | None:
    """``(sign, offset)`` when ``found`` equals ``search`` up to one indentation offset, else None.

    ``sign`` +1: the program is indented by ``offset`` more than the SEARCH text; -1: less; 0: same.
    Blank lines match blank lines whatever their whitespace.
    """
    common: tuple[int, str] | None = None
    for have, want in zip(found, search):
        if not have.strip() and not want.strip():
            continue
        if have.strip() != want.strip():
            return None
        hi, wi = _indent(have), _indent(want)
        if hi == wi:
            this = (0, "")
        elif hi.endswith(wi):
            this = (1, hi[: len(hi) - len(wi)])
        elif wi.endswith(hi):
            this = (-1, wi[: len(wi) - len(hi)])
        else:
            return None
        if common is None:
            common = this
        elif this != common:
            return None
    return common or (0, "")


def _reindent(lines: Sequence[str], sign: int, offset: str) -> list[str]:
    if not offset:
        return list(lines)
    if sign > 0:
        return [offset + line if line.strip() else line for line in lines]
    out = []
    for line in lines:
        if line.startswith(offset):
            out.append(line[len(offset):])
        else:  # less indented than the offset: drop what indentation there is
            cut = 0
            while cut < len(offset) and cut < len(line) and line[cut] in " \t":
                cut += 1
            out.append(line[cut:])
    return out


def _stages(program: list[str], search: list[str]) -> Iterable[tuple[int, int, str]]:
    """Every match of ``search`` in ``program`` as ``(first line, sign, offset)``, best stage first."""
    n = len(search)
    spans = range(len(program) - n + 1)
    for i in spans:
        if program[i:i + n] == search:
            yield i, 0, ""
    stripped = [s.rstrip() for s in search]
    for i in spans:
        if [p.rstrip() for p in program[i:i + n]] == stripped:
            yield i, 0, ""
    for i in spans:
        shift = _shift(program[i:i + n], search)
        if shift is not None:
            yield i, shift[0], shift[1]


def _trim(lines: list[str]) -> tuple[int, int]:
    first, stop = 0, len(lines)
    while first < stop and not lines[first].strip():
        first += 1
    while stop > first and not lines[stop - 1].strip():
        stop -= 1
    return first, stop


def _apply_one(program: list[str], search_text: str, replace_text: str, regions: list[tuple[int, int]] | None,
               index: int) -> list[str]:
    search = search_text.split("\n")
    replace = replace_text.split("\n") if replace_text != "" else []
    label = f"SEARCH/REPLACE block {index}"
    if not search_text.strip():
        raise DiffApplyError(f"{label}: the SEARCH text is empty (it must quote lines of the current program)")
    if regions is not None and (EVOLVE_START in replace_text or EVOLVE_END in replace_text
                                or EVOLVE_START in search_text or EVOLVE_END in search_text):
        raise DiffApplyError(f"{label} touches an {EVOLVE_START}/{EVOLVE_END} marker line; only the code "
                             "between the markers may change")
    first, stop = _trim(search)
    candidates = [(search, replace)]
    if (first, stop) != (0, len(search)):
        r_first, r_stop = _trim(replace)
        candidates.append((search[first:stop], replace[r_first:r_stop]))
    outside = False
    for want, new in candidates:
        for i, sign, offset in _stages(program, want):
            if regions is not None and not any(a <= i and i + len(want) <= b for a, b in regions):
                outside = True
                continue
            return program[:i] + _reindent(new, sign, offset) + program[i + len(want):]
    if outside:
        raise DiffApplyError(f"{label}: the SEARCH text is found only outside the {EVOLVE_START}/{EVOLVE_END} "
                             "markers; only the code between them may change")
    head = next((line.strip() for line in search if line.strip()), "")[:80]
    raise DiffApplyError(f"{label}: the SEARCH text does not match the current program (not even up to "
                         f"whitespace); it starts with {head!r}")


def apply_blocks(program: str, blocks: Sequence[tuple[str, str]], *, markers: bool = True) -> str:
    """``program`` with every ``(search, replace)`` block applied in order (see the module docstring).

    Args:
        program: the parent program (LF, CRLF or CR line ends; the result uses LF).
        blocks: from :func:`parse_blocks`.
        markers: honour ``EVOLVE-BLOCK-START/END`` lines of ``program`` (when it has them).

    Returns:
        The edited program (it ends with a newline when ``program`` did).

    Raises:
        DiffApplyError: a block's SEARCH text is empty, matches nowhere, matches only outside the
            EVOLVE markers, or its REPLACE text adds/removes a marker; unbalanced markers.
    """
    text = str(program).replace("\r\n", "\n").replace("\r", "\n")
    final_newline = text.endswith("\n")
    lines = (text[:-1] if final_newline else text).split("\n")
    for index, (search, replace) in enumerate(blocks, 1):
        regions = evolve_regions("\n".join(lines)) if markers else None
        lines = _apply_one(lines, search, replace, regions, index)
    return "\n".join(lines) + ("\n" if final_newline else "")


# ---------------------------------------------------------------------------------------------- fallback
def _defines(code: str, language: str, entry: str | None) -> bool:
    if language in ("python", "py"):
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        if not entry:
            return True
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == entry:
                return True
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
            if any(isinstance(t, ast.Name) and t.id == entry for t in targets):
                return True
        return False
    return not entry or re.search(rf"\b{re.escape(entry)}\s*\(", code) is not None


def full_program(text: str, language: str = "python", entry: str | None = None) -> str | None:
    """The last fenced block of ``text`` in ``language`` that is a complete program, else ``None``.

    Complete: no SEARCH/REPLACE marker line, and (Python) it parses and defines ``entry`` at top
    level, or (other languages) ``entry(`` occurs in it. Reasoning is removed first, as
    :func:`~discoverygym.agents.responses.parse_response` does; unreadable responses give ``None``.
    """
    try:
        blocks = code_blocks(text, language)
    except ResponseError:
        return None
    for code in reversed(blocks):
        if any(_SEARCH.match(line) or _REPLACE.match(line) for line in code.split("\n")):
            continue
        code = code.rstrip()
        if code.strip() and _defines(code, language, entry):
            return code + "\n"
    return None


def apply_edit(text: Any, parent: str, *, language: str = "python", entry: str | None = None,
               markers: bool = True) -> EditResult:
    """Turn a ``diff``-format response into the program to evaluate (see the module docstring).

    Order: SEARCH/REPLACE blocks applied to ``parent``; if there are none, they are malformed or
    they do not apply, a complete program in the response (:func:`full_program`); else a failure.

    Args:
        text: the raw response (reasoning is removed first, as for ``full`` responses).
        parent: the parent program the blocks edit.
        language: the problem's language (``"python"``, ``"cpp"``), for the fallback block.
        entry: the entry the fallback program must define (``problem.entry``; ``None``: any).
        markers: honour ``EVOLVE-BLOCK-START/END`` markers of ``parent``.

    Returns:
        An :class:`EditResult`; never raises on odd responses.
    """
    from discoverygym.agents.responses import strip_reasoning

    if not isinstance(text, str):
        return EditResult(None, "failed", parse_error=f"response must be text, got {type(text).__name__}",
                          outcome=Outcome.NO_CODE)
    try:
        answer = strip_reasoning(text)
    except ResponseError as exc:
        return EditResult(None, "failed", parse_error=str(exc), outcome=exc.outcome)
    parse_error = apply_error = None
    blocks: list[tuple[str, str]] = []
    try:
        blocks = parse_blocks(answer)
    except DiffParseError as exc:
        parse_error = f"malformed SEARCH/REPLACE block: {exc}"
    if blocks:
        try:
            program = apply_blocks(parent, blocks, markers=markers)
        except DiffApplyError as exc:
            apply_error = str(exc)
        else:
            if not program.endswith("\n"):
                program += "\n"
            return EditResult(program, "diff", blocks=len(blocks))
    full = full_program(answer, language, entry)
    if full is not None:
        return EditResult(full, "fallback", blocks=len(blocks), note=apply_error or parse_error)
    if apply_error is not None:
        return EditResult(None, "failed", blocks=len(blocks), apply_error=apply_error, outcome=Outcome.NO_CODE)
    if parse_error is None:
        what = f" defining `{entry}`" if entry else ""
        parse_error = (f"response contains no SEARCH/REPLACE block (<<<<<<< SEARCH / ======= / >>>>>>> REPLACE) "
                       f"and no complete ```{language} program{what}")
    return EditResult(None, "failed", parse_error=parse_error, outcome=Outcome.NO_CODE)

