"""What comes back from the Python sandbox: data only, checked, with clear errors for everything else.

Each behaviour test runs on both backends (see ``support.py``).
"""

from __future__ import annotations

import math

import pytest

from tests.sandbox.support import (
    assert_failed,
)


def test_fake_score_on_stdout_is_just_output(run):
    source = "def construct():\n    print('score: 999')\n    print('x' * 500)\n    return [0.5]\n"
    result = run(source, output_bytes=100)
    assert result.ok and result.value == [0.5]
    assert result.stdout.startswith("score: 999\n")
    assert result.stdout.endswith("\n[output truncated after 100 bytes]")
    assert len(result.stdout) == 100 + len("\n[output truncated after 100 bytes]")
    assert not hasattr(result, "score")


def test_nan_and_inf_come_back_as_floats(run):
    source = """
        import numpy as np
        def construct():
            return [float('nan'), float('inf'), -np.inf, np.array([np.nan, 1.0])]
    """
    value = run(source).value
    assert math.isnan(value[0]) and value[1] == math.inf and value[2] == -math.inf
    assert math.isnan(value[3][0]) and value[3][1] == 1.0


def test_wrong_shapes_come_back_as_data(run):
    source = """
        def construct():
            return {"ragged": [[1, 2], [3]], "scalar": 3.0, "nested": [[[]]], "none": None}
    """
    assert run(source).value == {"ragged": [[1, 2], [3]], "scalar": 3.0, "nested": [[[]]], "none": None}
    assert run("def construct():\n    return 2.5\n").value == 2.5


def test_lying_subclasses_give_their_true_values(run):
    source = """
        import numpy as np
        class Liar(np.ndarray):
            def tolist(self): return [999.0]
            def __array__(self, *a, **k): return np.full(3, 999.0)
            def __float__(self): return 999.0
            def __iter__(self): return iter([999.0])
            def __len__(self): return 1
            def __getitem__(self, i): return 999.0
            def view(self, *a, **k): return np.full(3, 999.0)
            def astype(self, *a, **k): return np.full(3, 999.0)
            @property
            def dtype(self): return np.dtype(object)
        class F(float):
            def __float__(self): return 999.0
            def __repr__(self): return "999.0"
        class L(list):
            def __iter__(self): return iter([999.0])
            def __len__(self): return 1
        class D(dict):
            def items(self): return [("a", 999.0)]
        def construct():
            return [np.array([1.0, 2.0, 3.0]).view(Liar), F(0.25), L([1, 2]), D(b=4)]
    """
    assert run(source).value == [[1.0, 2.0, 3.0], 0.25, [1, 2], {"b": 4}]


@pytest.mark.parametrize("value, reason", [
    ("1j", "type complex"),
    ("object()", "type object"),
    ("{1: 2}", "dict keys must be str"),
    ("np.array(['a'])", "dtype <U1"),
    ("[np.array([1j])]", "dtype complex128"),
    ("l", "nested"),
])
def test_unsupported_return_values(run, value, reason):
    source = f"import numpy as np\nl = []\nl.append(l)\ndef construct():\n    return {value}\n"
    assert_failed(run(source), "returned value is not JSON-serialisable numeric data", reason)


@pytest.mark.parametrize("expr", ["[0.123456789] * 100_000", "[1.23456789012345] * 1000",
                                  "'x' * 20_000", "np.zeros(100_000)"])
def test_huge_result_is_rejected(run, expr):
    result = run(f"import numpy as np\ndef construct():\n    return {expr}\n", result_bytes=10_000)
    assert_failed(result, "result larger than 10000 bytes")


def test_raising_names_exception_and_message(run):
    source = "def helper():\n    raise ValueError('bad value 42')\ndef construct():\n    helper()\n"
    result = run(source)
    assert_failed(result, "program raised ValueError: bad value 42", 'File "program.py", line 2')
    assert "_runner.py" not in result.error


def test_raising_at_import_time(run):
    assert_failed(run("import not_a_module_xyz\n"), "program raised ModuleNotFoundError")


def test_recursion_error(run):
    assert_failed(run("def construct():\n    return construct()\n"), "program raised RecursionError")


@pytest.mark.parametrize("code, exit_code", [
    ("import os\n    os._exit(3)", 3),
    ("import sys\n    sys.exit(0)", 0),
    ("import sys\n    sys.exit('bye')", 1),
    ("raise SystemExit", 0),
])
def test_exiting_before_returning(run, code, exit_code):
    result = run(f"def construct():\n    {code}\n")
    assert_failed(result, f"program exited with code {exit_code} before returning a value")


@pytest.mark.parametrize("source, error", [
    ("x = 1\n", "entry function 'construct' not defined"),
    ("construct = 5\n", "entry function 'construct' not callable (it is a int)"),
])
def test_missing_entry_function(run, source, error):
    assert_failed(run(source), error)


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"ok": true}', '{"ok": false, "error": 3}'])
def test_forged_malformed_result_is_a_protocol_error(run, text):
    source = f"import os\ndef construct():\n    open('result.json', 'w').write({text!r})\n    os._exit(0)\n"
    assert_failed(run(source), "sandbox protocol error")


def test_result_values_are_capped_on_the_raw_bytes_before_parsing(run, monkeypatch):
    """Issue 14, item 5: millions of tiny rows fit ``result_bytes`` but cost the parent a parse of
    millions of lists; ``result_values`` refuses them from a byte count, never calling json.loads."""
    from discoverygym.sandbox import python as sandbox

    parsed = []
    real_loads = sandbox.json.loads
    monkeypatch.setattr(sandbox.json, "loads", lambda text, *a, **k: (
        parsed.append(len(text)), real_loads(text, *a, **k))[1])
    result = run("def construct():\n    return [[0]] * 5000\n", result_values=1000)
    assert_failed(result, "more than 1000 values", "refused before parsing")
    assert all(size < 1000 for size in parsed), parsed  # only the status line was parsed
    fits = run("def construct():\n    return [[0]] * 400\n", result_values=1000)
    assert fits.ok and len(fits.value) == 400
    with pytest.raises(ValueError, match="result_values"):
        sandbox.SandboxLimits(result_values=0)
