"""``discoverygym report``: one self-contained HTML file for a search, train or post-train run directory.

Layer 5 (with agents, below the CLI): reads run directories through
:func:`discoverygym.io.run_kind`, :class:`discoverygym.search.runlog.RunLog` and
:func:`discoverygym.tensorboard.read_scalars`, asks the env for its picture of the best
construction, and writes HTML that opens from disk with no server and no network (plotly.js is
inlined). :mod:`~discoverygym.report.collect` reads, :mod:`~discoverygym.report.html` draws.

Example::

    discoverygym report runs/cp26                 # writes runs/cp26/report.html
    discoverygym report runs/cp26 --watch 30      # rewrite every 30 s while the run goes on
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from discoverygym.io import atomic_write_text
from discoverygym.report.collect import Node, RunData, collect
from discoverygym.report.html import picture_png, render_html

__all__ = ["Node", "RunData", "build_report", "collect", "plotly_js", "watch"]

_PLOTLY_JS: str | None = None


def plotly_js() -> str:
    """plotly.js's source from the installed ``plotly`` package (read once per process).

    Raises:
        ImportError: ``plotly`` is not installed (``pip install plotly``).
    """
    global _PLOTLY_JS
    if _PLOTLY_JS is None:
        try:
            from plotly.offline import get_plotlyjs
        except ImportError:
            raise ImportError("discoverygym report needs plotly (pip install plotly)") from None
        _PLOTLY_JS = get_plotlyjs()
    return _PLOTLY_JS


def build_report(run_dir: str | os.PathLike, out: str | os.PathLike | None = None,
                 refresh_s: float | None = None) -> Path:
    """Write the report of ``run_dir`` (default ``RUN_DIR/report.html``, written atomically); returns its path.

    Args:
        run_dir: a search, train or post-train run directory (finished or running).
        out: the HTML file to write.
        refresh_s: add a meta refresh of that many seconds (a page left open follows a live run).

    Raises:
        ValueError: ``run_dir`` holds no such run.
        ImportError: plotly is not installed.
    """
    data = collect(run_dir)
    js = plotly_js()
    env_kwargs = data.config.get("env_kwargs") if isinstance(data.config.get("env_kwargs"), dict) else None
    picture = picture_png(data.env_id, data.best, env_kwargs)
    if data.best is not None and picture is None:
        data.notes.append(f"no picture of the best state: {data.env_id} could not draw it here")
    path = Path(out) if out is not None else Path(run_dir) / "report.html"
    if path.is_dir():  # -o DIR: the report goes inside it
        path = path / "report.html"
    page = render_html(data, js, picture, refresh_s=refresh_s)
    # a lone surrogate (a "\ud800" escape in a logged response) cannot be written as UTF-8: replaced by "?"
    page = page.encode("utf-8", errors="replace").decode("utf-8")
    atomic_write_text(path, page, fsync=False)
    return path


def watch(run_dir: str | os.PathLike, every_s: float, out: str | os.PathLike | None = None,
          rounds: int | None = None, on_write: Callable[[Path], None] | None = None) -> Path:
    """Rewrite the report every ``every_s`` seconds (with a meta refresh of the same period).

    Runs until interrupted (Ctrl-C), or ``rounds`` writes when given (tests). ``on_write(path)``
    is called after each write. Returns the report's path.
    """
    done = 0
    while True:
        path = build_report(run_dir, out, refresh_s=every_s)
        done += 1
        if on_write is not None:
            on_write(path)
        if rounds is not None and done >= rounds:
            return path
        time.sleep(every_s)
