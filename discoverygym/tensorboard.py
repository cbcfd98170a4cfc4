"""One TensorBoard schema for every run kind (train, search, post-train), and the writer that keeps it.

Ground floor (imports nothing from the package): :mod:`discoverygym.agents.trainer`,
:mod:`discoverygym.search.evolution` and :mod:`discoverygym.agents.irft.loop` all log through
:class:`RunWriter`, so the same quantity has the same tag in every run directory and runs of
different kinds overlay in one chart (``tensorboard --logdir runs``).

Tags (the constants below):

* ``score/best`` — the problem's own number (C5, Σr, ...) of the best valid state so far;
  ``score/record`` — the published record, written at every logged step (a constant line);
* ``reward/*`` — rewards (``reward/best``, and for trainers ``reward/max|mean|min`` of the step);
* ``beta`` — a histogram of the entropic objective's per-group β, plus its mean ``beta/mean``;
* ``eval/*`` — held-out evaluations (post-train) and the share of valid candidates;
* ``perf/*`` — throughput and timings; ``cost/*`` — what the run has spent (``cost/evaluations``).

The horizontal axis is each run's own step (a training step; for search, the evaluations done;
for post-train, the round); ``cost/evaluations`` gives the evaluations at every step of every kind.
Post-train over several problems appends the env id (``score/best/<env_id>``).

Precision: TensorBoard's default loader (the Rust data server that ``pip install tensorboard``
brings) keeps scalars as float32 (7 digits) and drops float64 scalar tensors altogether, so scalars
are written as float32 ``simple_value`` by default; ``score/gap`` (best − record, the sign convention
of :class:`~discoverygym.types.Direction`) keeps the digits that matter near a record. ``RunWriter(...,
double_precision=True)`` writes float64 tensor summaries instead (what ``torch.utils.tensorboard``'s
``double_precision=True`` writes), which ``tensorboard --load_fast=false`` shows exactly and the
default loader does not show. ``metrics.jsonl`` and ``best.json`` keep every value in float64.
:func:`read_scalars` reads both forms back.
"""

from __future__ import annotations

import itertools
import math
import os
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from discoverygym.types import Direction

__all__ = [
    "BETA",
    "BETA_MEAN",
    "COST_EVALUATIONS",
    "COST_TOKENS",
    "COST_USD",
    "EVAL",
    "IMAGE",
    "LLM_ONLY_TAGS",
    "PERF",
    "REWARD",
    "REWARD_BEST",
    "SCORE_BEST",
    "SCORE_GAP",
    "SCORE_RECORD",
    "VALID_FRACTION",
    "RunWriter",
    "for_policy",
    "read_scalars",
    "read_tags",
    "titled",
]

#: tags that mean something only for an LLM policy's run (what became of each response, edit-format
#: failures, generation speed): left out of a numeric run's event files (issue 50)
LLM_ONLY_TAGS = ("outcome/", "edit/", "perf/tokens_per_s")


def for_policy(values: Mapping[str, Any], llm: bool) -> dict[str, Any]:
    """``values`` without the :data:`LLM_ONLY_TAGS` when the run's policy is not an LLM (``llm=False``).

    Args:
        values: ``{tag: value}`` about to be written.
        llm: whether the run's policy generates text (an LLM spec; ``--action-mode code``).

    Returns:
        A new dict; ``values`` itself is not changed (``metrics.jsonl`` keeps every key).
    """
    if llm:
        return dict(values)
    return {t: v for t, v in values.items() if not t.startswith(LLM_ONLY_TAGS)}


SCORE_BEST = "score/best"
SCORE_RECORD = "score/record"
#: best - record whatever the direction (:meth:`Direction.gap <discoverygym.types.Direction.gap>`), as the
#: console's "gap to record" and ``train --json``'s ``gap_to_record``: positive beats a maximised record
SCORE_GAP = "score/gap"
REWARD = "reward/"
REWARD_BEST = "reward/best"
BETA = "beta"
BETA_MEAN = "beta/mean"
EVAL = "eval/"
PERF = "perf/"
COST = "cost/"
COST_EVALUATIONS = "cost/evaluations"
COST_USD = "cost/usd"  # chat backends: run total in USD
COST_TOKENS = "cost/tokens"  # chat backends: run total of prompt + completion tokens
VALID_FRACTION = "valid_fraction"
#: the image of the best state so far (its score is drawn into the picture and in the description)
IMAGE = "best_construction"


def titled(picture: np.ndarray, title: str) -> np.ndarray:
    """``picture`` (uint8 HWC) with a white strip on top carrying ``title`` in black (PIL's font)."""
    from PIL import Image, ImageDraw

    img = Image.fromarray(np.ascontiguousarray(picture, dtype=np.uint8))
    strip = 16
    out = Image.new("RGB", (img.width, img.height + strip), "white")
    out.paste(img.convert("RGB"), (0, strip))
    ImageDraw.Draw(out).text((3, 2), title, fill="black")
    return np.asarray(out, dtype=np.uint8)


_WRITER_COUNT = itertools.count()


class RunWriter:
    """A tensorboardX ``SummaryWriter`` that writes the schema of this module.

    Args:
        log_dir: the run directory (event files go straight into it).
        record: the published record of the problem, written as ``score/record`` (and the gap to it
            as ``score/gap``) next to every ``score/best`` (``None``: neither).
        direction: ``"max"`` or ``"min"`` (a :class:`~discoverygym.types.Direction`); ``score/gap`` is
            ``best − record`` whatever it is (the gap convention of ``Direction``, as the console and
            ``summary.json``): positive beats a maximised record, negative a minimised one.
        double_precision: write float64 tensor summaries (see the module docstring: the default
            loader of TensorBoard does not show them) instead of float32 scalars.
        **writer_kwargs: passed to ``tensorboardX.SummaryWriter`` (``purge_step``, ``filename_suffix``,
            ``flush_secs``).

    Raises:
        ImportError: tensorboardX is not installed.
    """

    def __init__(self, log_dir: str | os.PathLike, record: float | None = None, direction: str = "max",
                 double_precision: bool = False, **writer_kwargs: Any) -> None:
        from tensorboardX import SummaryWriter

        self.record = record
        self.direction = Direction(direction)
        self.double_precision = double_precision
        # tensorboardX names the event file by the second and the host only: a second writer opened on
        # the same run directory within that second (a crash, then an immediate resume) would truncate
        # the first writer's file. The process id and a per-process count keep every file apart.
        writer_kwargs.setdefault("filename_suffix", f".{os.getpid()}.{next(_WRITER_COUNT)}")
        self._writer = SummaryWriter(logdir=str(log_dir), **writer_kwargs)
        if writer_kwargs.get("purge_step") is None:
            # a session start of its own, so that a resumed writer's start (``purge_step``) reads as a
            # *restart*: TensorBoard then drops what a killed run wrote after its checkpoint (float64
            # scalars are tensors, which TensorBoard purges only on a restart, not on out-of-order steps)
            from tensorboardX.proto.event_pb2 import Event, SessionLog

            self._writer._get_file_writer().add_event(Event(step=0, session_log=SessionLog(status=SessionLog.START)))

    def scalar(self, tag: str, value: Any, step: int, walltime: float | None = None) -> None:
        """Write ``value`` as a scalar at ``step`` (float32, or float64 with ``double_precision``);
        ``None``, non-numbers and non-finite values are skipped (a NaN line hides the rest of a chart)."""
        if value is None or isinstance(value, (str, bytes)):
            return
        try:
            v = float(value)
        except (TypeError, ValueError):
            return
        if not math.isfinite(v):
            return
        if not self.double_precision:
            self._writer.add_scalar(tag, v, step, walltime)
            return
        from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboardX.proto.tensor_pb2 import TensorProto
        from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto
        from tensorboardX.proto.types_pb2 import DT_DOUBLE

        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
        tensor = TensorProto(dtype=DT_DOUBLE, double_val=[v], tensor_shape=TensorShapeProto())
        summary = Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=meta)])
        self._writer._get_file_writer().add_summary(summary, step, walltime)

    def scalars(self, values: Mapping[str, Any], step: int) -> None:
        """:meth:`scalar` for every ``{tag: value}``; with ``score/best`` among them (or a tag under
        it) and a record, also ``score/record`` and ``score/gap`` (same suffix)."""
        for tag, value in values.items():
            self.scalar(tag, value, step)
            if self.record is not None and (tag == SCORE_BEST or tag.startswith(SCORE_BEST + "/")):
                suffix = tag[len(SCORE_BEST):]
                self.scalar(SCORE_RECORD + suffix, self.record, step)
                if isinstance(value, (int, float)):
                    self.scalar(SCORE_GAP + suffix, self.direction.gap(value, self.record), step)

    def histogram(self, tag: str, values: Iterable[float], step: int) -> None:
        """A histogram of the finite ``values`` at ``step`` (nothing when none is finite)."""
        arr = np.asarray([float(v) for v in values if v is not None], dtype=np.float64)
        arr = arr[np.isfinite(arr)]
        if arr.size:
            self._writer.add_histogram(tag, arr, step)

    def image(self, picture: np.ndarray, step: int, score: float | None, tag: str = IMAGE) -> None:
        """The best state's picture (uint8 HWC) titled with its score (drawn into the image and
        written as the image's description)."""
        title = f"step {step}: score {score:.10g}" if score is not None else f"step {step}: no valid state"
        if self.record is not None:
            title += f" (record {self.record:.10g})"
        self._writer.add_image(tag, titled(picture, title), step, dataformats="HWC")

    def flush(self) -> None:
        """Write pending events to disk."""
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self._writer.close()


def _events(run_dir: Path) -> Iterable[Any]:
    """Every event of the ``events.out.tfevents.*`` files in ``run_dir`` (TFRecord framing), in
    file-name order. Each file is opened once and checked on the descriptor (a regular file within
    :data:`~discoverygym.io.MAX_RUN_FILE_BYTES`, :func:`~discoverygym.io.read_input_bytes`); one that
    is not (a FIFO or a device planted as an event file) is skipped."""
    from tensorboardX.proto import event_pb2

    from discoverygym.io import MAX_RUN_FILE_BYTES, read_input_bytes

    for path in sorted(Path(run_dir).glob("events.out.tfevents.*")):
        try:
            data, pos = read_input_bytes(path, MAX_RUN_FILE_BYTES), 0
        except ValueError:
            continue
        while pos + 12 <= len(data):
            (length,) = struct.unpack("<Q", data[pos: pos + 8])
            yield event_pb2.Event.FromString(data[pos + 12: pos + 12 + length])
            pos += 16 + length


def read_tags(run_dir: str | os.PathLike) -> dict[str, str]:
    """``{tag: kind}`` of every summary in ``run_dir``'s event files (kind: ``scalar``, ``histogram``,
    ``image``, ``tensor``)."""
    kinds = {}
    for event in _events(Path(run_dir)):
        for v in event.summary.value:
            if v.HasField("image"):
                kinds[v.tag] = "image"
            elif v.HasField("histo"):
                kinds[v.tag] = "histogram"
            elif v.HasField("simple_value") or (v.HasField("tensor") and v.metadata.plugin_data.plugin_name == "scalars"):
                kinds[v.tag] = "scalar"
            else:
                kinds[v.tag] = "tensor"
    return kinds


def read_scalars(run_dir: str | os.PathLike) -> dict[str, list[tuple[int, float, float]]]:
    """``{tag: [(step, value, wall_time), ...]}`` of every scalar in ``run_dir``'s event files, float64
    tensor summaries and float32 ``simple_value`` alike (no purge handling: a resumed run's rewritten
    steps appear twice; use TensorBoard's ``EventAccumulator`` for that)."""
    out: dict[str, list[tuple[int, float, float]]] = {}
    for event in _events(Path(run_dir)):
        for v in event.summary.value:
            if v.HasField("tensor") and v.metadata.plugin_data.plugin_name == "scalars":
                t = v.tensor
                value = t.double_val[0] if t.double_val else (t.float_val[0] if t.float_val else None)
                if value is None and t.tensor_content:
                    value = float(np.frombuffer(t.tensor_content, dtype=np.float64 if t.dtype == 2 else np.float32)[0])
            elif v.HasField("simple_value"):
                value = v.simple_value
            else:
                continue
            if value is not None:
                out.setdefault(v.tag, []).append((int(event.step), float(value), float(event.wall_time)))
    return out
