"""The two sandboxed calls of a scaling-law evaluation: fit on labelled points, then predict unlabelled ones.

The parent appends :data:`WRAPPER` to the candidate program and runs it in four separate
sandboxed processes (:func:`~discoverygym.sandbox.python.run_program`), two of each kind, in the
order fit(fit), predict(fit, validation), fit(train), predict(train, test): the validation
predictions are final before the one process given the validation labels starts.

1. ``FIT_ENTRY(groups)``: ``groups`` is a list of ``{"X": (n, F) rows, "y": (n,) or (n, d)}``, the
   labelled points of ONE split (``fit`` or ``train``); the wrapper calls the program's
   ``fit(X, y)`` per group and returns each result as a float64 array (numpy's conversion; the
   parent checks the count against the cap and finiteness). One process per fitted split, so a
   fit on ``train`` (which holds the validation labels) can never leak into the parameters that
   score ``validation``.
2. ``PREDICT_ENTRY(jobs)``: ``jobs`` is a list of ``{"X": rows, "params": list}``, no labels at all;
   the wrapper calls ``scaling_law(X, params)`` per job and returns the predictions. One process
   predicts fit and validation points with the fit-split parameters, another train and test
   points with the train-split parameters, so no state inside a process can pair validation
   points with parameters derived from their labels.

The wrapper runs inside the sandbox, so its answers are exactly as untrusted as the program: the
parent validates everything (:mod:`discoverygym.rewards.scaling_laws`).
"""

from __future__ import annotations

__all__ = ["FIT_ENTRY", "PREDICT_ENTRY", "WRAPPER"]

FIT_ENTRY = "_discoverygym_sld_fit"
PREDICT_ENTRY = "_discoverygym_sld_predict"

WRAPPER = '''

def _discoverygym_sld_function(name):
    _fn = globals().get(name)
    if not callable(_fn):
        raise NameError(f"the program must define a function {name}(...)")
    return _fn


def _discoverygym_sld_fit(groups):
    """Added by discoverygym: call fit(X, y) on each group's labelled points."""
    import numpy as _np

    _fit = _discoverygym_sld_function("fit")
    _out = []
    for _g in groups:
        _X = _np.asarray(_g["X"], dtype=_np.float64)
        _y = _np.asarray(_g["y"], dtype=_np.float64)
        _out.append(_np.asarray(_fit(_X, _y), dtype=_np.float64))
    return _out


def _discoverygym_sld_predict(jobs):
    """Added by discoverygym: call scaling_law(X, params) on unlabelled points."""
    import numpy as _np

    _law = _discoverygym_sld_function("scaling_law")
    _out = []
    for _j in jobs:
        _X = _np.asarray(_j["X"], dtype=_np.float64)
        _p = _np.asarray(_j["params"], dtype=_np.float64)
        _out.append(_np.asarray(_law(_X, _p), dtype=_np.float64))
    return _out
'''
