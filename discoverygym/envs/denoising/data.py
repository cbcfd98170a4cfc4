"""Count matrices for the denoising task, as AnnData with integer UMI counts in ``X`` (CSR).

Datasets (``load_counts(name)``):

* ``celltypist-pbmc`` (default, offline): 559 real 10x PBMCs x 32,786 genes of raw UMI counts, the
  sample file ``celltypist/data/samples/sample_cell_by_gene.csv`` shipped in the ``celltypist``
  wheel. Found with ``importlib.util.find_spec`` (celltypist itself is never imported) or read
  from the wheel file given by ``celltypist_wheel=`` / ``$DISCOVERYGYM_CELLTYPIST_WHEEL``. The CSV
  stores counts with float noise (``3.00000000000001``); they are rounded to integers.
* ``pbmc68k-reduced`` (offline): scanpy's bundled ``pbmc68k_reduced`` (700 cells x 765 genes);
  counts reconstructed as ``round(expm1(raw.X) * n_counts / 1e4)`` (scanpy stored log1p of
  counts per 10,000).
* ``pbmc``, ``pancreas``, ``tabula-lung``: OpenProblems v1's denoising sets (10x 1k PBMCs; the
  inDrop1 batch of the scIB pancreas data; Tabula Muris Senis lung, droplet). ``pbmc`` and
  ``pancreas`` are downloaded once from OpenProblems' figshare files into the cache directory;
  ``tabula-lung`` (a cellxgene download in OpenProblems) must be placed there by hand. Offline,
  a ``FileNotFoundError`` names the missing file and the directory to put it in.

Every dataset then gets OpenProblems v1's ``filter_genes_cells``: genes seen in no cell and cells
with fewer than 2 counts are removed. Parsed files are cached as ``.h5ad`` in the cache directory
(``cache_dir=``, else ``$DISCOVERYGYM_CACHE/denoising``, else ``~/.cache/discoverygym/denoising``).
"""

from __future__ import annotations

import io
import os
import tempfile
import urllib.request
import zipfile
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["DATASETS", "cache_directory", "load_counts", "source_paths"]

_CELLTYPIST_CSV = "celltypist/data/samples/sample_cell_by_gene.csv"
#: OpenProblems v1 figshare files (``openproblems/data/tenx.py``, ``pancreas.py``).
_URLS = {
    "pbmc": "https://ndownloader.figshare.com/files/36088667",
    "pancreas": "https://ndownloader.figshare.com/files/36086813",
}
#: dataset name -> one-line description (what ``discoverygym`` shows and errors quote).
DATASETS = {
    "celltypist-pbmc": "559 10x PBMCs, raw UMI counts (celltypist sample file; offline)",
    "pbmc68k-reduced": "700 PBMCs x 765 genes, counts reconstructed from scanpy's pbmc68k_reduced (offline)",
    "pbmc": "OpenProblems v1: 1k PBMCs, 10x v3 (download)",
    "pancreas": "OpenProblems v1: human pancreas, inDrop1 batch (download)",
    "tabula-lung": "OpenProblems v1: Tabula Muris Senis lung, droplet (file placed by hand)",
}


def cache_directory(cache_dir: str | os.PathLike | None = None) -> Path:
    """The directory holding downloaded and parsed datasets (not created here)."""
    if cache_dir is not None:
        return Path(cache_dir)
    root = os.environ.get("DISCOVERYGYM_CACHE")
    return Path(root) / "denoising" if root else Path.home() / ".cache" / "discoverygym" / "denoising"


def load_counts(name: str = "celltypist-pbmc", cache_dir: str | os.PathLike | None = None,
                celltypist_wheel: str | os.PathLike | None = None, download: bool = True) -> Any:
    """Load one dataset as AnnData with integer counts (CSR, float64 holding whole numbers) in ``X``.

    Args:
        name: a key of :data:`DATASETS`.
        cache_dir: where parsed/downloaded files live (see :func:`cache_directory`).
        celltypist_wheel: path of a celltypist wheel to read the sample CSV from when celltypist
            is not installed.
        download: allow downloading OpenProblems files that are not cached.

    Returns:
        ``anndata.AnnData`` (cells x genes) after OpenProblems' cell/gene filter.

    Raises:
        ValueError: unknown dataset name.
        FileNotFoundError: the data are not available offline (the message says which file is
            missing and where to put it).
    """
    if name not in DATASETS:
        raise ValueError(f"unknown denoising dataset {name!r}; known: {', '.join(DATASETS)}")
    import anndata as ad

    cache = cache_directory(cache_dir)
    parsed = cache / f"{name}.counts.h5ad"
    if parsed.is_file():
        return ad.read_h5ad(parsed)
    if name == "celltypist-pbmc":
        adata = _celltypist(celltypist_wheel)
    elif name == "pbmc68k-reduced":
        adata = _pbmc68k()
    else:
        adata = _openproblems(name, cache, download)
    _filter_genes_cells(adata)
    _atomic_write_h5ad(adata, parsed)
    return adata


def source_paths(name: str, cache_dir: str | os.PathLike | None = None,
                 celltypist_wheel: str | os.PathLike | None = None) -> list[str]:
    """Files holding the full counts of a dataset (from which ``test = full - train`` follows).

    A candidate program that can read any of these can reconstruct the held-out molecules; a
    sandbox that can hide paths should hide them (see the env's ``hidden_paths``).

    Returns:
        Existing absolute paths: the parsed cache file, the downloaded file, and the packaged
        source (celltypist sample CSV or the celltypist wheel given by ``celltypist_wheel`` /
        ``$DISCOVERYGYM_CELLTYPIST_WHEEL``, scanpy's bundled pbmc68k_reduced file). Copies
        elsewhere on disk (a pip cache, another virtual environment) are not known here: only
        bubblewrap, which shows the program a minimal file system, keeps those out of reach.
    """
    cache = cache_directory(cache_dir)
    paths = [cache / f"{name}.counts.h5ad", cache / f"{name}.h5ad"]
    if name == "celltypist-pbmc":
        spec = find_spec("celltypist")
        for base in (spec.submodule_search_locations or []) if spec else []:
            paths.append(Path(base).parent / _CELLTYPIST_CSV)
        for wheel in (celltypist_wheel, os.environ.get("DISCOVERYGYM_CELLTYPIST_WHEEL")):
            if wheel:  # the wheel holds the same CSV
                paths.append(Path(wheel))
    elif name == "pbmc68k-reduced":
        spec = find_spec("scanpy")
        for base in (spec.submodule_search_locations or []) if spec else []:
            paths.append(Path(base) / "datasets" / "10x_pbmc68k_reduced.h5ad")
    return [str(p.resolve()) for p in paths if p.is_file()]


def _filter_genes_cells(adata) -> None:
    """OpenProblems v1 ``filter_genes_cells``: drop genes in no cell, cells with < 2 counts (in place)."""
    import scanpy as sc

    sc.pp.filter_genes(adata, min_cells=1)
    sc.pp.filter_cells(adata, min_counts=2)


def _as_counts(x) -> sp.csr_matrix:
    """CSR float64 of whole numbers (rounding float noise) from any matrix."""
    m = sp.csr_matrix(x, dtype=np.float64)
    m.data = np.rint(m.data)
    m.eliminate_zeros()
    return m


def _celltypist_csv(wheel: str | os.PathLike | None) -> bytes | str:
    """Path of the installed sample CSV, or its bytes read from a wheel."""
    spec = find_spec("celltypist")  # locates the package without importing it
    if spec is not None and spec.submodule_search_locations:
        for base in spec.submodule_search_locations:
            path = Path(base).parent / _CELLTYPIST_CSV
            if path.is_file():
                return str(path)
    wheel = wheel or os.environ.get("DISCOVERYGYM_CELLTYPIST_WHEEL")
    if wheel and Path(wheel).is_file():
        with zipfile.ZipFile(wheel) as zf:
            return zf.read(_CELLTYPIST_CSV)
    raise FileNotFoundError(
        f"celltypist-pbmc needs {_CELLTYPIST_CSV} from the celltypist wheel: `pip install celltypist` "
        "(or `pip install --no-deps celltypist`), or pass celltypist_wheel=PATH / set "
        "DISCOVERYGYM_CELLTYPIST_WHEEL to a downloaded celltypist-*.whl")


def _celltypist(wheel) -> Any:
    import anndata as ad
    import pandas as pd

    source = _celltypist_csv(wheel)
    frame = pd.read_csv(io.BytesIO(source) if isinstance(source, bytes) else source, index_col=0)
    adata = ad.AnnData(_as_counts(frame.to_numpy(dtype=np.float64)))
    adata.obs_names = frame.index.astype(str)
    adata.var_names = frame.columns.astype(str)
    adata.var_names_make_unique()
    return adata


def _pbmc68k() -> Any:
    import anndata as ad
    import scanpy as sc

    full = sc.datasets.pbmc68k_reduced()
    raw = full.raw.X
    raw = raw.toarray() if sp.issparse(raw) else np.asarray(raw)
    counts = np.expm1(raw.astype(np.float64)) * full.obs["n_counts"].to_numpy(np.float64)[:, None] / 1e4
    adata = ad.AnnData(_as_counts(counts))
    adata.obs_names = full.obs_names
    adata.var_names = full.raw.var_names
    adata.obs["bulk_labels"] = full.obs["bulk_labels"].to_numpy()
    return adata


def _openproblems(name: str, cache: Path, download: bool) -> Any:
    import anndata as ad

    path = cache / f"{name}.h5ad"
    if not path.is_file():
        url = _URLS.get(name)
        if url is None or not download:
            how = f"download {url} and save it as" if url else "place the h5ad file (raw counts) at"
            raise FileNotFoundError(f"dataset {name!r} is not cached: {how} {path} "
                                    f"(or pass cache_dir= / set DISCOVERYGYM_CACHE)")
        try:
            _download(url, path)
        except OSError as exc:
            raise FileNotFoundError(f"dataset {name!r} is not cached and downloading {url} failed ({exc}); "
                                    f"save that file as {path} by hand") from None
    adata = ad.read_h5ad(path)
    if name == "pancreas":  # OpenProblems v1 keeps the inDrop1 batch and its raw counts layer
        adata = adata[adata.obs["tech"].isin(["inDrop1"])].copy()
        adata.X = adata.layers["counts"]
    elif name == "tabula-lung" and adata.raw is not None:
        adata = ad.AnnData(adata.raw.X, obs=adata.obs, var=adata.raw.var)
    adata.X = _as_counts(adata.X)
    return adata


def _download(url: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(url, timeout=60) as response:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
        with os.fdopen(fd, "wb") as fh:
            while chunk := response.read(1 << 20):
                fh.write(chunk)
    os.replace(tmp, path)


def _atomic_write_h5ad(adata, path: Path) -> None:
    """Write the parsed dataset to the cache (best effort: an unwritable cache is not an error)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".h5ad.part")
        os.close(fd)
        adata.write_h5ad(tmp)
        os.replace(tmp, path)
    except OSError:
        pass
