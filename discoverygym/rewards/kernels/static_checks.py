"""Static (AST) checks of a kernel program against known reward hacks, run before any process.

Kernel programs run in an ordinary Python process with torch and Triton (see
:mod:`discoverygym.rewards.kernels.runner` for why not in the project sandbox), so these checks
and the runner's dynamic checks are what stand between a program and a fake speed-up. Patterns
refused, each with the reason reported to the agent (sources: GPU MODE submission rules and the
reward hacks reported by TTT-Discover and SimpleTES):

* **Calling the reference or the harness**: importing anything but the allowed modules
  (:data:`ALLOWED_MODULES`: torch, triton, numpy, math and a few pure standard-library helpers),
  or naming ``ref_kernel`` / ``generate_input`` / ``check_implementation`` / ``discoverygym``.
* **Patching timers or torch functions**: assigning to or deleting an attribute of an imported
  module (``torch.matmul = ...``, ``torch.backends.cuda.matmul.allow_tf32 = True``), ``setattr``
  / ``delattr``, CUDA events and streams (work on a side stream escapes the default-stream events).
* **Returning cached tensors across calls**: ``global`` / ``nonlocal`` state and memoising
  decorators (``functools.cache`` / ``lru_cache``). A cache hidden elsewhere (a mutable default
  argument) is caught dynamically: outputs are re-checked on fresh inputs after timing.
* **Lazy tensor subclasses**: subclassing ``torch.Tensor``, ``__torch_function__`` /
  ``__torch_dispatch__``, ``as_subclass`` / ``_make_subclass``; outputs must also be plain tensors.
* **Fallbacks**: any ``try`` statement (a failing fast path silently falling back to PyTorch).
* **Escaping the checks**: the builtins ``eval``/``exec``/``compile``/``__import__``/``open``/
  ``getattr``/``globals``/``vars``, dunder attributes that reach interpreter internals
  (``__globals__``, ``__code__``, ``__subclasses__``, ``__builtins__``), and modules that torch
  re-exports as attributes (``torch.sys``, ``torch.os``, ``torch.inspect``...).

These are deliberately strict and syntactic: they can be evaded by a determined program (e.g.
through a C extension compiled with ``torch.utils.cpp_extension``), which the dynamic checks in
the runner partly cover; they are not a security boundary.
"""

from __future__ import annotations

import ast

from discoverygym.errors import InvalidSolution

__all__ = ["ALLOWED_MODULES", "check_program", "violations"]

#: top-level modules a kernel program may import.
ALLOWED_MODULES = frozenset(
    {
        "torch",
        "triton",
        "numpy",
        "math",
        "typing",
        "functools",
        "itertools",
        "dataclasses",
        "collections",
        "operator",
        "enum",
        "abc",
        "__future__",
    }
)
_REFERENCE_NAMES = {"ref_kernel", "generate_input", "check_implementation", "discoverygym"}
#: builtins that reach around the checks (refused as bare names; ``torch.compile`` stays allowed).
_BUILTIN_ESCAPES = {
    "eval",
    "exec",
    "compile",
    "__import__",
    "open",
    "globals",
    "locals",
    "vars",
    "breakpoint",
    "setattr",
    "delattr",
    "getattr",
}
#: attributes / names refused anywhere: interpreter internals.
_ATTR_ESCAPES = {
    "__setattr__",
    "__delattr__",
    "__getattribute__",
    "__builtins__",
    "__globals__",
    "__code__",
    "__subclasses__",
    "__closure__",
    "__dict__",
    "__loader__",
    "__spec__",
    "__self__",
    "__func__",
    "_getframe",
    "f_globals",
    "f_back",
    "f_locals",
    "gi_frame",
    "cr_frame",
}
#: modules that torch/triton re-export as attributes (``torch.sys``, ``torch.os``...); refused as
#: attributes and as ``from torch import sys`` (they would undo the import allow-list).
_MODULE_ESCAPES = {
    "sys",
    "os",
    "gc",
    "inspect",
    "importlib",
    "builtins",
    "subprocess",
    "ctypes",
    "threading",
    "multiprocessing",
    "signal",
    "socket",
    "shutil",
    "pathlib",
}
_TIMING = {
    "Event",
    "elapsed_time",
    "Stream",
    "stream",
    "set_stream",
    "ExternalStream",
    "current_stream",
    "default_stream",
    "perf_counter",
    "Timer",
}
_SUBCLASS = {
    "__torch_function__",
    "__torch_dispatch__",
    "as_subclass",
    "_make_subclass",
    "_make_wrapper_subclass",
}
_MEMO = {"cache", "lru_cache", "cached_property"}


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def violations(source: str, entry: str = "custom_kernel") -> list[str]:
    """All rule violations of a kernel program, as messages (empty list: the program passes).

    Args:
        source: Python source text.
        entry: function the program must define at top level.

    Returns:
        Messages with line numbers, e.g. ``"line 12: try/except is not allowed (...)"``.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [f"syntax error at line {exc.lineno}: {exc.msg}"]
    found: list[str] = []
    add = lambda node, msg: found.append(f"line {getattr(node, 'lineno', '?')}: {msg}")
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if entry not in defined:
        found.append(f"the program must define a top-level function `{entry}(data)`")
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                modules.add(alias.asname or top)
                if top not in ALLOWED_MODULES:
                    add(
                        node,
                        f"import of `{alias.name}` is not allowed (allowed: {', '.join(sorted(ALLOWED_MODULES))})",
                    )
        elif isinstance(node, ast.ImportFrom):
            top = (node.module or "").split(".")[0]
            if node.level or top not in ALLOWED_MODULES:
                add(
                    node,
                    f"import from `{'.' * node.level}{node.module or ''}` is not allowed "
                    f"(allowed: {', '.join(sorted(ALLOWED_MODULES))})",
                )
            for alias in node.names:
                modules.add(alias.asname or alias.name)
                if alias.name in _MODULE_ESCAPES or alias.name == "*":
                    add(node, f"import of `{alias.name}` from `{node.module}` is not allowed")
                if alias.name in _MEMO:
                    add(
                        node,
                        f"`{alias.name}` is not allowed: outputs must be computed on every call, not cached",
                    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            add(
                node,
                "try/except is not allowed: a kernel must not fall back to another implementation on error",
            )
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            add(
                node,
                f"`{type(node).__name__.lower()}` state is not allowed: results must not be cached across calls",
            )
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute) and _root(sub) in modules:
                        add(node, f"assigning to `{_dotted(sub)}` patches a library: not allowed")
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                if _dotted(base).endswith("Tensor"):
                    add(
                        node,
                        f"class `{node.name}` subclasses a tensor type: outputs must be plain torch.Tensors",
                    )
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if _dotted(target).split(".")[-1] in _MEMO:
                    add(
                        dec,
                        f"memoising decorator on `{node.name}` is not allowed: outputs must not be cached",
                    )
        name = (
            node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        )
        if name is None and isinstance(node, ast.FunctionDef):
            name = node.name
        if name is None:
            continue
        if name in _REFERENCE_NAMES:
            add(node, f"`{name}` belongs to the reference/harness: calling the reference is not allowed")
        elif (
            name in _ATTR_ESCAPES
            or (isinstance(node, ast.Name) and name in _BUILTIN_ESCAPES)
            or (isinstance(node, ast.Attribute) and name in _MODULE_ESCAPES)
        ):
            add(node, f"`{name}` is not allowed in kernel programs (it can reach around the checks)")
        elif name in _SUBCLASS:
            add(node, f"`{name}` is not allowed: lazy or custom tensor subclasses can fake results")
        elif isinstance(node, ast.Attribute) and name in _TIMING:
            add(node, f"`{_dotted(node)}` is not allowed: the harness owns timing, events and streams")
    return sorted(
        set(found),
        key=lambda m: (
            int(m.split(":")[0][5:]) if m.startswith("line ") and m.split(":")[0][5:].isdigit() else 0,
            m,
        ),
    )


def check_program(source: str, entry: str = "custom_kernel") -> None:
    """Raise when :func:`violations` finds anything.

    Raises:
        InvalidSolution: message ``"static check failed: <first violation>"`` (+ count of others);
            ``metrics["static_violations"]`` lists all of them.
    """
    found = violations(source, entry)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise InvalidSolution(f"static check failed: {found[0]}{more}", metrics={"static_violations": found})
