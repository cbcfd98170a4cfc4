"""``limit_native_threads`` reaches the BLAS libraries loaded after it (scipy's own OpenBLAS).

Measured on the 2-core dev machine: without this, scipy's OpenBLAS (loaded by the first
``import scipy.optimize``, after the threadpoolctl limit) kept a busy thread per core, and two
single-threaded SLSQP workers ran no faster than one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("threadpoolctl")
pytest.importorskip("scipy")

PROBE = """
import json, os
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.pop(var, None)
import numpy  # loads numpy's BLAS before the limit
from discoverygym.io import limit_native_threads
limit_native_threads(1)
import scipy.optimize, scipy.linalg  # loads scipy's own BLAS after it
from threadpoolctl import threadpool_info
print(json.dumps([[d["filepath"], d["num_threads"]] for d in threadpool_info() if d["user_api"] == "blas"]))
"""


def test_blas_loaded_after_the_limit_is_single_threaded_too():
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True,
                         timeout=120).stdout
    libs = json.loads(out.strip().splitlines()[-1])
    assert libs, "no BLAS library found"
    assert all(n == 1 for _, n in libs), libs
