"""Static (AST) checks of a kernel program against known reward hacks, run before any process.

Kernel programs run in an ordinary Python process with torch and Triton (see
:mod:`discoverygym.sandbox.kernels` for why not in the project sandbox), so these checks
and the runner's dynamic checks are what stand between a program and a fake speed-up. Patterns
refused, each with the reason reported to the agent (sources: GPU MODE submission rules and the
reward hacks reported by TTT-Discover and SimpleTES):

* **Calling the reference or the harness**: importing anything but the allowed modules
  (:data:`ALLOWED_MODULES`: torch, triton, numpy, math and a few pure standard-library helpers),
  or naming ``ref_kernel`` / ``generate_input`` / ``check_implementation`` / ``discoverygym``.
* **Patching timers or torch functions**: assigning to or deleting *any* attribute (``torch.matmul
  = ...``, ``T = torch.Tensor; T.__le__ = ...``, ``type(x).add = ...``,
  ``torch.backends.cuda.matmul.allow_tf32 = True``) or assigning into an attribute's item
  (``torch.x.table[k] = ...``); the one exception is ``self.<name> = ...`` inside a method whose
  first parameter is ``self``. Also ``setattr`` / ``delattr``, CUDA events and streams (work on a
  side stream escapes the default-stream events).
* **Returning cached tensors across calls**: ``global`` / ``nonlocal`` state and memoising
  decorators (``functools.cache`` / ``lru_cache``). A cache hidden elsewhere (a mutable default
  argument) is caught dynamically: outputs are re-checked on fresh inputs after timing.
* **Lazy tensor subclasses**: subclassing ``torch.Tensor``, ``__torch_function__`` /
  ``__torch_dispatch__``, ``as_subclass`` / ``_make_subclass``; outputs must also be plain tensors.
* **Fallbacks**: any ``try`` statement (a failing fast path silently falling back to PyTorch).
* **Escaping the checks**: the builtins ``eval``/``exec``/``compile``/``__import__``/``open``/
  ``getattr``/``globals``/``vars``; getattr-likes that look attributes up by a (string-built)
  name or evaluate strings (``operator.attrgetter`` / ``methodcaller``, ``inspect.getattr_static``,
  ``typing.get_type_hints``, ``functools.update_wrapper`` / ``wraps``); every dunder attribute or
  name except ``__init__``/``__name__``/``__qualname__``/``__doc__``/``__version__``/
  ``__post_init__`` (``__globals__``, ``__builtins__``, ``__dict__``, ``__class__``,
  ``__subclasses__``, ``__mro__``, operator slots such as ``__le__``...), string constants and
  ``match`` class patterns naming them; and modules that torch re-exports as attributes
  (``torch.sys``, ``torch.os``, ``torch.inspect``, ``numpy.ctypeslib``...).

* **Compiler internals and smuggled source**: ``torch._inductor`` (its code cache loader runs the
  source it is handed), ``torch._dynamo``, ``torch._C``, ``torch._library``/``_ops``, Triton's
  ``runtime.build`` (compiles and loads a C module), ``compiler``, ``backends`` and ``tools``;
  a PEP 263 coding declaration other than UTF-8 (a UTF-7 cookie once hid code in a comment: the
  runner compiles exactly the checked text as UTF-8).

* **File I/O, operator registration, compiled extensions**: NumPy file I/O (``tofile``,
  ``fromfile``, ``loadtxt``, ``savetxt``, ``genfromtxt``, ``save``/``load``/``savez``, ``memmap``,
  ``DataSource``, ``np.lib.format``), ``open`` as a name or attribute, ``torch.save``/``load``,
  ``torch.library``, ``torch.ops``, ``torch.utils.cpp_extension``/``load_inline``,
  ``torch.package``, ``torch.hub``, ``torch.utils.swap_tensors``, ``Tensor.set_``; 3-argument
  ``type(...)``; ``str.format`` on computed strings or with fields reaching attributes/items
  (``'{0.x}'``, ``'{0[k]}'``) and ``format_map``.

These are deliberately strict and syntactic: they can be evaded by a determined program; they are
not a security boundary (the runner's audit hook is a second layer, see
:mod:`discoverygym.sandbox.kernels`). Correctness does not rest on them: the verdict is computed in a separate
verifier process that never imports the candidate (see :mod:`discoverygym.sandbox.kernels`),
so patching the comparison inside the candidate's process achieves nothing. They mainly protect
the timing, which must run in the candidate's process.
"""

from __future__ import annotations

import ast
import re

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
    "__class__",
    "__mro__",
    "__bases__",
    "__base__",
    "__reduce__",
    "__reduce_ex__",
    "__import__",
    "__getattr__",
    "__init_subclass__",
    "__set_name__",
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
#: getattr-likes: they look attributes up by a (possibly string-built) name, and helpers that
#: evaluate strings or copy one object's namespace onto another.
_GETATTR_LIKES = {
    "attrgetter",
    "methodcaller",
    "getattr_static",
    "update_wrapper",
    "wraps",
    "get_type_hints",
    "ForwardRef",
    "_eval_type",
    "evaluate_forward_ref",
    "get_annotations",
    "ctypeslib",
    "load_library",
}
#: dunder attributes that ordinary kernel code uses; every other ``x.__name__``-style attribute
#: is refused (they reach interpreter internals or patch operators, e.g. ``T.__le__ = ...``).
_DUNDER_OK = {"__init__", "__name__", "__qualname__", "__doc__", "__version__", "__post_init__"}
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
#: file I/O, operator registration, compiled extensions and tensor-storage swaps, refused as
#: attributes or imported names anywhere (``np.tofile``, ``torch.library``, ``torch.ops``...).
_IO_ESCAPES = {
    "tofile",
    "fromfile",
    "loadtxt",
    "savetxt",
    "genfromtxt",
    "fromregex",
    "memmap",
    "DataSource",
    "npyio",
    "open",
    "library",
    "ops",
    "cpp_extension",
    "load_inline",
    "swap_tensors",
    "set_",
    "package",
    "format_map",
    "f2py",
    "extbuild",
    "hub",
    "classes",
    "serialization",
}
#: compiler internals that load and run the source or native code they are handed (Inductor's
#: code cache loader, Triton's compile-a-C-module helper, the C extension and dynamo entry points),
#: refused as attributes, imported names and module path components.
_COMPILER_INTERNALS = {"_inductor", "_dynamo", "_C", "_library", "_ops", "_export", "_functorch",
                       "codecache", "async_compile", "cpp_builder", "_utils_internal"}
#: Triton modules refused by dotted prefix (``triton.runtime.build``, ``triton.compiler``...).
_TRITON_INTERNALS = ("triton.runtime.build", "triton.runtime.cache", "triton.compiler", "triton.backends",
                     "triton.tools", "triton._C")
#: PEP 263 coding declaration.
_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
#: refused as attributes of numpy / torch (``np.save``, ``torch.load``; ``tl.load`` stays allowed).
_MODULE_IO = {"save", "load", "savez", "savez_compressed", "format"}


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


def _self_attributes(tree: ast.AST) -> tuple[set[int], set[int]]:
    """ids of the ``self.<name>`` attribute nodes that may be assigned (stores) or assigned into.

    Only inside a function defined directly in a class body whose first parameter is ``self`` and
    which never rebinds ``self``; only ``self.<plain name>`` (not ``self.a.b``, not dunders).
    """
    stores: set[int] = set()
    reads: set[int] = set()
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = fn.args.posonlyargs + fn.args.args
            if not args or args[0].arg != "self":
                continue
            nodes = list(ast.walk(fn))
            rebinds = any(
                isinstance(n, ast.Name) and n.id == "self" and not isinstance(n.ctx, ast.Load) for n in nodes
            ) or any(isinstance(n, ast.arg) and n.arg == "self" and n is not args[0] for n in nodes)
            if rebinds:
                continue
            for n in nodes:
                if (
                    isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name)
                    and n.value.id == "self"
                    and not (n.attr.startswith("__") and n.attr.endswith("__"))
                ):
                    (stores if not isinstance(n.ctx, ast.Load) else reads).add(id(n))
    return stores, reads


def violations(source: str, entry: str = "custom_kernel") -> list[str]:
    """All rule violations of a kernel program, as messages (empty list: the program passes).

    Args:
        source: Python source text.
        entry: function the program must define at top level.

    Returns:
        Messages with line numbers, e.g. ``"line 12: try/except is not allowed (...)"``.
    """
    for lineno, line in enumerate(source.splitlines()[:2], 1):
        m = _COOKIE.match(line)
        if m and m.group(1).lower().replace("_", "-") not in ("utf-8", "utf8"):
            return [(f"line {lineno}: the source encoding declaration {m.group(1)!r} is not allowed "
                     "(programs are UTF-8: what is checked must be what runs)")]
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
    io_roots = {"numpy", "np", "torch"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("numpy", "torch"):
                    io_roots.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("numpy", "torch"):
            for alias in node.names:
                if alias.name in _MODULE_IO:
                    add(node, f"import of `{alias.name}` from `{node.module}` is not allowed (file I/O)")
                elif alias.name == "lib":
                    io_roots.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        paths = []
        if isinstance(node, ast.Import):
            paths = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            paths = [f"{node.module or ''}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            paths = [_dotted(node)]
        for path in paths:
            parts = path.split(".")
            if any(p in _COMPILER_INTERNALS for p in parts) or any(
                path == t or path.startswith(t + ".") for t in _TRITON_INTERNALS
            ):
                add(node, f"`{path}` is not allowed: compiler internals can load and run arbitrary code")
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
                if (
                    alias.name in _MODULE_ESCAPES
                    or alias.name in _GETATTR_LIKES
                    or alias.name in _IO_ESCAPES
                    or alias.name == "*"
                ):
                    add(node, f"import of `{alias.name}` from `{node.module}` is not allowed")
                if alias.name in _MEMO:
                    add(
                        node,
                        f"`{alias.name}` is not allowed: outputs must be computed on every call, not cached",
                    )
    self_attrs, self_reads = _self_attributes(tree)
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
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if id(node) not in self_attrs:
                add(
                    node,
                    f"assigning to `{_dotted(node)}` patches a library or a shared object: not allowed "
                    "(only `self.<name> = ...` inside a method may assign attributes)",
                )
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            inner = node.value
            while isinstance(inner, ast.Subscript):
                inner = inner.value
            if isinstance(inner, ast.Attribute) and id(inner) not in self_reads:
                add(
                    node,
                    f"assigning into `{_dotted(inner)}[...]` patches a library or a shared object: not allowed",
                )
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
            if len(node.args) + len(node.keywords) != 1:
                add(node, "`type(name, bases, namespace)` is not allowed (it creates classes unchecked)")
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
        ):
            recv = node.func.value
            if not (isinstance(recv, ast.Constant) and isinstance(recv.value, str)):
                add(
                    node, "`.format` on a computed string is not allowed (format fields can reach attributes)"
                )
            else:
                import string

                try:
                    fields = [f for _, f, _, _ in string.Formatter().parse(recv.value) if f]
                except ValueError:
                    fields = ["["]
                if any("." in f or "[" in f for f in fields):
                    add(
                        node, "format fields reaching attributes or items (`{0.x}`, `{0[k]}`) are not allowed"
                    )
        elif isinstance(node, ast.MatchClass):
            for attr in node.kwd_attrs:
                if attr.startswith("__") or attr in _ATTR_ESCAPES:
                    add(
                        node,
                        f"match pattern on attribute `{attr}` is not allowed (it reaches interpreter internals)",
                    )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            hit = next((a for a in sorted(_ATTR_ESCAPES) if a.startswith("__") and a in node.value), None)
            if hit:
                add(node, f"a string naming `{hit}` is not allowed (it can reach around the checks)")
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
        if isinstance(node, ast.Attribute) and name in _IO_ESCAPES:
            add(
                node,
                f"`{_dotted(node)}` is not allowed in kernel programs (file I/O, operator registration, "
                "compiled extensions or storage swaps reach around the checks)",
            )
        elif (
            isinstance(node, ast.Attribute)
            and name in _MODULE_IO
            and (_root(node.value) in io_roots or _dotted(node.value).split(".")[-1] == "lib")
            and not (name == "format" and not isinstance(node.value, (ast.Name, ast.Attribute)))
        ):
            add(node, f"`{_dotted(node)}` is not allowed in kernel programs (file I/O)")
        elif name in _REFERENCE_NAMES:
            add(node, f"`{name}` belongs to the reference/harness: calling the reference is not allowed")
        elif (
            name in _ATTR_ESCAPES
            or name in _GETATTR_LIKES
            or (isinstance(node, ast.Name) and name in _BUILTIN_ESCAPES)
            or (isinstance(node, ast.Attribute) and name in _MODULE_ESCAPES)
        ):
            add(node, f"`{name}` is not allowed in kernel programs (it can reach around the checks)")
        elif (
            isinstance(node, (ast.Attribute, ast.Name))
            and name.startswith("__")
            and name.endswith("__")
            and len(name) > 4
            and name not in _DUNDER_OK
        ):
            add(
                node,
                f"`{name}` is not allowed in kernel programs: dunder attributes reach interpreter "
                "internals or patch operators",
            )
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
