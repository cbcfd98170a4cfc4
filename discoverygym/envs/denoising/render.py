"""rgb_array picture of a denoising state: held-out vs denoised expression of a few genes."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

__all__ = ["scatter_panels"]


def scatter_panels(points: dict, size: int = 256) -> np.ndarray:
    """One scatter panel per gene, side by side: x = held-out, y = denoised log1p(counts per 10^4).

    Args:
        points: ``{"genes": [str], "test": [[float]], "denoised": [[float]]}`` (one list per gene,
            one value per drawn cell); an empty dict gives a blank picture.
        size: picture side in pixels.

    Returns:
        uint8 array of shape ``(size, size, 3)``; the grey diagonal is perfect agreement.
    """
    image = Image.new("RGB", (size, size), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    genes = list(points.get("genes") or [])
    if genes:
        width = size / len(genes)
        for k, name in enumerate(genes):
            xs = np.asarray(points["test"][k], dtype=np.float64)
            ys = np.asarray(points["denoised"][k], dtype=np.float64)
            top = max(float(np.nanmax(xs, initial=0.0)), float(np.nanmax(ys, initial=0.0)), 1e-9)
            left, pad = k * width, 4.0
            span = min(width, size) - 2 * pad
            base_y = (size + span) / 2
            draw.rectangle([left + pad, base_y - span, left + pad + span, base_y], outline=(120, 120, 120))
            draw.line([left + pad, base_y, left + pad + span, base_y - span], fill=(190, 190, 190))
            for x, y in zip(xs, ys, strict=True):
                if np.isfinite(x) and np.isfinite(y):
                    px, py = left + pad + x / top * span, base_y - y / top * span
                    draw.ellipse([px - 1, py - 1, px + 1, py + 1], fill=(31, 119, 180))
            draw.text((left + pad + 2, base_y - span + 2), str(name)[:12], fill=(0, 0, 0))
    return np.asarray(image, dtype=np.uint8)
