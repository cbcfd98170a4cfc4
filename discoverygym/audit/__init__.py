"""``discoverygym audit``: a bundled library of known exploits, run against one env's judging.

For users who add their own problems: a new ``Problem`` or ``ProgramTask`` should reject every
exploit that applies to it. One layer above ``envs`` (it builds envs and calls their public
``evaluate``), below ``cli``::

    from discoverygym.audit import audit, failed
    rows = audit("CirclePacking-26-v0")            # an id: built with quick options
    rows = audit(ProgramEnv(MyTask()))              # or any env instance
    assert not failed(rows)

Families: :mod:`~discoverygym.audit.construction` (arrays), :mod:`~discoverygym.audit.python_programs`
(Python programs), :mod:`~discoverygym.audit.kernels` (``custom_kernel`` programs),
:mod:`~discoverygym.audit.cpp` (C++ contest programs), :mod:`~discoverygym.audit.side_channels`
(state shared between sandboxed runs: the page cache, System V IPC), :mod:`~discoverygym.audit.logs`
(a forged run log, report injection), :mod:`~discoverygym.audit.certify` (``discoverygym certify`` is
total and agrees with the env) and :mod:`~discoverygym.audit.resume` (a resume trusts no file it
reads back); :mod:`~discoverygym.audit.runner` runs them.
"""

from discoverygym.audit.exploits import AuditContext, Exploit
from discoverygym.audit.library import library
from discoverygym.audit.runner import FAILING, AuditRow, audit, audit_env, failed, quick_options

__all__ = ["FAILING", "AuditContext", "AuditRow", "Exploit", "audit", "audit_env", "failed", "library",
           "quick_options"]
