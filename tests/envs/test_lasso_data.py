"""LassoPath-v0's shipped real design matrices: the SimpleTES files, byte for byte, with their shapes."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from discoverygym.envs.lasso import REAL_DATASETS, _real_data

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "lasso"
SHAPES = {"breast_cancer": (580, 10), "diabetes": (652, 8), "dna": (1700, 180), "leukemia": (38, 7129)}


@pytest.mark.parametrize("name", REAL_DATASETS)
def test_real_data_shapes(name):
    X, y = _real_data(name)
    assert X.shape == SHAPES[name] and y.shape == (SHAPES[name][0],)
    assert X.flags.c_contiguous and X.dtype == y.dtype == "float64"


@pytest.mark.parametrize("name", REAL_DATASETS)
def test_real_data_match_the_reference_copy(name):
    ref = SHARED / f"real_{name}.npz"
    if not ref.is_file():
        pytest.skip(f"reference data {ref} not present")
    shipped = (resources.files("discoverygym") / "data" / "lasso" / f"real_{name}.npz").read_bytes()
    assert shipped == ref.read_bytes()


def test_provenance_is_shipped():
    text = (resources.files("discoverygym") / "data" / "lasso" / "PROVENANCE.txt").read_text()
    assert "SimpleTES" in text and "LIBSVM" in text
