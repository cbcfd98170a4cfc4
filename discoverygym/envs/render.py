"""Pictures of constructions for ``render_mode="rgb_array"`` (Pillow; uint8 RGB arrays)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

_BG, _FG, _AXIS = (255, 255, 255), (31, 119, 180), (120, 120, 120)


def _canvas(size: int) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", (size, size), _BG)
    return image, ImageDraw.Draw(image)


def step_function(heights: np.ndarray, size: int = 256) -> np.ndarray:
    """Bar picture of a step function.

    Args:
        heights: (n,) float64 heights (may be negative).
        size: image side in pixels.

    Returns:
        uint8 array (size, size, 3).
    """
    image, draw = _canvas(size)
    h = np.asarray(heights, dtype=np.float64).ravel()
    lo, hi = min(0.0, float(h.min())), max(0.0, float(h.max()))
    span = hi - lo if hi > lo else 1.0
    margin = 8
    to_y = lambda v: size - margin - (v - lo) / span * (size - 2 * margin)
    xs = np.linspace(margin, size - margin, len(h) + 1)
    # downsample to at most one bar per pixel column: take the max |h| in each column
    cols = np.clip(((xs[:-1] - margin) // 1).astype(int), 0, size)
    for col in np.unique(cols):
        seg = h[cols == col]
        top = seg[np.argmax(np.abs(seg))]
        draw.line([(margin + col, to_y(0.0)), (margin + col, to_y(top))], fill=_FG)
    draw.line([(margin, to_y(0.0)), (size - margin, to_y(0.0))], fill=_AXIS)
    return np.asarray(image, dtype=np.uint8)


def circles(xyr: np.ndarray, size: int = 256) -> np.ndarray:
    """Picture of circles [x, y, r] in the unit square (y axis up).

    Args:
        xyr: (n, 3) float64 rows [x, y, r].
        size: image side in pixels.

    Returns:
        uint8 array (size, size, 3).
    """
    image, draw = _canvas(size)
    scale = size - 1
    draw.rectangle([0, 0, scale, scale], outline=_AXIS)
    for x, y, r in np.asarray(xyr, dtype=np.float64).reshape(-1, 3):
        box = [(x - r) * scale, (1 - y - r) * scale, (x + r) * scale, (1 - y + r) * scale]
        if np.all(np.isfinite(box)) and box[2] >= box[0] and box[3] >= box[1]:
            draw.ellipse(box, outline=_FG)
    return np.asarray(image, dtype=np.uint8)


def sign_matrix(matrix: np.ndarray, size: int = 256) -> np.ndarray:
    """Picture of a ±1 matrix: +1 dark, -1 light.

    Args:
        matrix: (m, m) float64 array.
        size: image side in pixels.

    Returns:
        uint8 array (size, size, 3).
    """
    m = np.asarray(matrix, dtype=np.float64)
    cells = np.where(m > 0, 40, 220).astype(np.uint8)
    image = Image.fromarray(cells, mode="L").resize((size, size), Image.NEAREST).convert("RGB")
    return np.asarray(image, dtype=np.uint8)


def integer_set(values: np.ndarray, size: int = 256) -> np.ndarray:
    """Picture of a finite integer set as ticks on a line (min to max).

    Args:
        values: (n,) float64 integers.
        size: image side in pixels.

    Returns:
        uint8 array (size, size, 3).
    """
    image, draw = _canvas(size)
    v = np.unique(np.asarray(values, dtype=np.float64).ravel())
    lo, hi = float(v.min()), float(v.max())
    span = hi - lo if hi > lo else 1.0
    mid = size // 2
    draw.line([(4, mid), (size - 4, mid)], fill=_AXIS)
    for x in 4 + (v - lo) / span * (size - 8):
        draw.line([(x, mid - 20), (x, mid + 20)], fill=_FG)
    return np.asarray(image, dtype=np.uint8)


def bars(values, size: int = 256) -> np.ndarray:
    """Bar chart of non-negative numbers (per-case scores, per-case runtimes), tallest = full height.

    Args:
        values: sequence of finite floats (others are drawn as zero-height bars); may be empty.
        size: picture side in pixels.

    Returns:
        uint8 array of shape (size, size, 3).
    """
    image, draw = _canvas(size)
    vals = np.array([v if isinstance(v, (int, float)) and np.isfinite(v) and v > 0 else 0.0
                     for v in list(values)[:size]], dtype=np.float64)
    if vals.size and vals.max() > 0:
        width = size / vals.size
        for i, v in enumerate(vals / vals.max()):
            top = size - 1 - v * (size - 2)
            draw.rectangle([i * width, top, max(i * width, (i + 1) * width - 1), size - 1], fill=(70, 110, 200))
    return np.asarray(image, dtype=np.uint8)
