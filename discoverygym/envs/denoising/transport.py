"""Moving count matrices in and out of the sandbox as base64 inside its JSON channel.

:func:`~discoverygym.sandbox.python.run_program` exchanges JSON only; a 559 x 9,810 float
matrix as a JSON list of numbers is ~100 MB and slow to parse. Instead the parent sends the train
counts as CSR arrays (base64 of little-endian bytes) and appends :data:`WRAPPER` to the candidate
program: it rebuilds the dense ``X_train``, calls the program's ``denoise`` and returns the
output as ``{"shape": [...], "dtype": "<f8", "b64": ...}``. The wrapper runs inside the
sandboxed process, so its answer is exactly as untrusted as the program: the parent checks
everything in :func:`decode_matrix`.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import numpy as np
import scipy.sparse as sp

from discoverygym.errors import InvalidSolution

__all__ = ["ENTRY", "WRAPPER", "decode_matrix", "encode_counts", "result_bytes"]

#: name of the wrapper's entry function (what ``run_program`` calls).
ENTRY = "_discoverygym_denoise_entry"

WRAPPER = '''

def _discoverygym_denoise_entry(X_csr, seed=0, budget_s=None):
    """Added by discoverygym: rebuild X_train, call denoise, return the output as base64 float64."""
    import base64 as _b64
    import inspect as _inspect
    import numpy as _np

    _shape = tuple(int(v) for v in X_csr["shape"])
    _data = _np.frombuffer(_b64.b64decode(X_csr["data"]), dtype="<f8")
    _indices = _np.frombuffer(_b64.b64decode(X_csr["indices"]), dtype="<i4")
    _indptr = _np.frombuffer(_b64.b64decode(X_csr["indptr"]), dtype="<i8")
    _X = _np.zeros(_shape, dtype=_np.float64)
    _X[_np.repeat(_np.arange(_shape[0]), _np.diff(_indptr)), _indices] = _data
    _fn = globals().get("denoise")
    if not callable(_fn):
        raise NameError("the program must define a function denoise(X_train, **kwargs)")
    _params = _inspect.signature(_fn).parameters
    _any = any(p.kind is p.VAR_KEYWORD for p in _params.values())
    _kw = {k: v for k, v in (("seed", seed), ("budget_s", budget_s)) if _any or k in _params}
    _out = _np.asarray(_fn(_X, **_kw))
    if _out.dtype.kind not in "iuf":
        return {"shape": list(_out.shape), "dtype": str(_out.dtype), "b64": ""}
    _out = _np.ascontiguousarray(_out, dtype="<f8")
    return {"shape": list(_out.shape), "dtype": "<f8", "b64": _b64.b64encode(_out.tobytes()).decode("ascii")}
'''


def _b64(arr: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(arr, dtype=dtype).tobytes()).decode("ascii")


def encode_counts(x: np.ndarray) -> dict:
    """JSON-ready CSR encoding of a ``(cells, genes)`` float64 matrix (the wrapper's ``X_csr``)."""
    m = sp.csr_matrix(x)
    return {"shape": list(m.shape), "data": _b64(m.data, "<f8"), "indices": _b64(m.indices, "<i4"),
            "indptr": _b64(m.indptr, "<i8")}


def result_bytes(shape: tuple[int, int]) -> int:
    """A ``SandboxLimits.result_bytes`` that fits a float64 matrix of ``shape`` in base64, plus 1 MiB."""
    raw = int(shape[0]) * int(shape[1]) * 8
    return 4 * ((raw + 2) // 3) + (1 << 20)


def decode_matrix(value: Any, shape: tuple[int, int]) -> np.ndarray:
    """Turn the wrapper's (untrusted) answer into a float64 matrix of ``shape``.

    Raises:
        InvalidSolution: not the wrapper's record, wrong shape (named as the program returned it),
            a non-numeric dtype, or bytes that do not decode to ``shape``.
    """
    if not isinstance(value, dict) or not {"shape", "dtype", "b64"} <= set(value):
        raise InvalidSolution("the program's result was not produced by denoise() through the sandbox wrapper")
    got = value["shape"]
    if not isinstance(got, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in got):
        raise InvalidSolution(f"malformed result shape {got!r}")
    if value["dtype"] != "<f8":
        raise InvalidSolution(f"denoise returned an array of dtype {value['dtype']}; real numbers are required")
    if tuple(got) != tuple(shape):
        raise InvalidSolution(f"denoised output has shape {tuple(got)}; expected {tuple(shape)} (cells, genes) "
                              "like X_train")
    if not isinstance(value["b64"], str):
        raise InvalidSolution("malformed result payload")
    try:
        raw = base64.b64decode(value["b64"], validate=True)
    except (binascii.Error, ValueError):
        raise InvalidSolution("result payload is not valid base64") from None
    if len(raw) != shape[0] * shape[1] * 8:
        raise InvalidSolution(f"result payload has {len(raw)} bytes; {shape[0] * shape[1] * 8} expected")
    return np.frombuffer(raw, dtype="<f8").reshape(shape).astype(np.float64)
