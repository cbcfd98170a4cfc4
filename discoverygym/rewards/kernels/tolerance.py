"""Elementwise tolerance check of a kernel's output against the reference (GPU MODE rule).

An output passes when it is a plain ``torch.Tensor`` (not a subclass: a lazy subclass could
compute on comparison), has the reference's shape, a floating dtype, and for every element either
``|out − ref| ≤ atol + rtol·|ref|`` (both finite) or the same non-finite value at the same position
(NaN where the reference has NaN, +inf/−inf where it has the same infinity). Comparison is done in
float32 (float64 when either side is float64) on the output's device, without copying to the host.
"""

from __future__ import annotations

import torch

__all__ = ["compare"]


def compare(out: object, ref: torch.Tensor, rtol: float, atol: float, name: str = "output") -> dict:
    """Compare a candidate output with the reference.

    Args:
        out: what the kernel returned (any object; checked here).
        ref: reference tensor.
        rtol, atol: relative and absolute tolerance.
        name: label used in messages (``"output"``, ``"kv_cache"``).

    Returns:
        ``{"ok": bool, "message": str | None, "max_abs_err": float | None, "n_bad": int}``; the
        message names the first offending index and both values, e.g.
        ``"output[0, 3, 1, 7] = nan but the reference is 0.41 (12 of 4096 elements differ)"``.
    """
    fail = lambda msg, err=None, bad=0: {"ok": False, "message": msg, "max_abs_err": err, "n_bad": bad}
    if type(out) is not torch.Tensor:
        kind = "a torch.Tensor subclass" if isinstance(out, torch.Tensor) else type(out).__name__
        return fail(f"{name} must be a plain torch.Tensor, got {kind}")
    if tuple(out.shape) != tuple(ref.shape):
        return fail(f"{name} has shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
    if not out.is_floating_point():
        return fail(f"{name} has dtype {out.dtype}, a floating dtype is expected")
    if out.device != ref.device:
        return fail(f"{name} is on {out.device}, expected {ref.device}")
    dtype = torch.float64 if torch.float64 in (out.dtype, ref.dtype) else torch.float32
    o, r = out.detach().to(dtype), ref.detach().to(dtype)
    both_finite = torch.isfinite(o) & torch.isfinite(r)
    diff = torch.where(both_finite, (o - r).abs(), torch.zeros((), dtype=dtype, device=o.device))
    close = diff <= atol + rtol * r.abs()
    same_nonfinite = (~torch.isfinite(r)) & ((torch.isnan(o) & torch.isnan(r)) | (o == r))
    good = (both_finite & close) | same_nonfinite
    n_bad = int((~good).sum())
    max_err = float(diff.max()) if diff.numel() else 0.0
    if n_bad == 0:
        return {"ok": True, "message": None, "max_abs_err": max_err, "n_bad": 0}
    flat = int(torch.nonzero(~good.reshape(-1))[0, 0])
    idx = [int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(ref.shape))]
    got, want = float(o.reshape(-1)[flat]), float(r.reshape(-1)[flat])
    if not (torch.isfinite(o.reshape(-1)[flat]) and torch.isfinite(r.reshape(-1)[flat])):
        why = "non-finite values must sit at the same positions as in the reference"
    else:
        why = f"|diff| {abs(got - want):.3g} > {atol:g} + {rtol:g}·|ref|"
    msg = (
        f"{name}{idx} = {got:.6g} but the reference is {want:.6g} ({why}; "
        f"{n_bad} of {ref.numel()} elements differ)"
    )
    return fail(msg, max_err, n_bad)
