"""No ``"discoverygym.x.y:attr"`` string points to a module on a higher floor than the module holding it.

Such a string is an import that happens later (an entry point, a plug-in registry), which neither
:mod:`tests.test_import_layers` nor a drawing of the imports sees; a registry written on a floor
must only name what that floor may import. Floors are those of :mod:`tests.test_import_layers`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.test_import_layers import PACKAGE, _layer

#: a whole string of the form "discoverygym.a.b:attr".
ENTRY_POINT = re.compile(r"^(discoverygym(?:\.\w+)+):(\w+(?:\.\w+)*)$")


def _entry_points(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every ``"discoverygym.x.y:attr"`` string constant (or f-string part) in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = ENTRY_POINT.match(node.value.strip())
            if match:
                found.append((node.lineno, match.group(1)))
    return found


def _module(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _upward(package: Path) -> list[str]:
    out = []
    for path in sorted(package.rglob("*.py")):
        module = _module(path, package)
        for line, target in _entry_points(path):
            here, there = _layer(module), _layer(target)
            if here is not None and there is not None and there > here:
                out.append(f"{path.relative_to(package.parent)}:{line}: {target} (floor {there} > {here})")
    return out


def test_no_entry_point_string_points_up_a_floor():
    assert _upward(PACKAGE) == []


@pytest.mark.parametrize("source, upward", [
    ('X = "discoverygym.agents.policies.hf:HFPolicy"\n', True),
    ('X = "discoverygym.types:State"\n', False),
    ('X = "see discoverygym.agents.policies.hf:HFPolicy for details"\n', False),
])
def test_the_finder_sees_an_entry_point_string(tmp_path, source, upward):
    package = tmp_path / "discoverygym"
    package.mkdir()
    (package / "policy.py").write_text(source)
    (package / "types.py").write_text("")
    assert bool(_upward(package)) == upward
