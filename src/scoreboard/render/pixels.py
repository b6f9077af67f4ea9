"""Pixel measurements of a screenshot (Pillow + numpy): is it blank, how much of it is ink."""

from __future__ import annotations

import io

#: a page is blank when fewer than this many of its pixels visibly differ from its most common
#: colour (a share of the shot misread a page showing "Sign up" or "OK" as blank: those words
#: are 300 to 600 pixels of a 1024 x 768 viewport, under 0.1% of it)
BLANK_PIXELS = 64
#: how far (in any of R, G, B, 0-255) a pixel must be from that colour to be visible: text one
#: level off the background is not content a visitor can see
VISIBLE_STEP = 16


def _pixels(png: bytes):
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - the render extra installs it
        from ..errors import ConfigError

        raise ConfigError("measuring screenshots needs Pillow: pip install 'scoreboard[render]'",
                          field="render") from None
    import numpy as np

    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8)


def dominant_share(png: bytes) -> float:
    """The share of pixels that have the most common colour (1.0: one flat colour)."""
    import numpy as np

    rgb = _pixels(png)
    flat = (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
    _, counts = np.unique(flat, return_counts=True)
    return float(counts.max() / flat.size) if flat.size else 1.0


def is_blank(png: bytes) -> bool:
    """A screenshot with (almost) nothing on it: fewer than BLANK_PIXELS pixels visibly differ
    (by more than VISIBLE_STEP in a channel) from its most common colour."""
    import numpy as np

    rgb = _pixels(png)
    if not rgb.size:
        return True
    flat = (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
    top = most_common(flat.ravel())
    visible = np.zeros(rgb.shape[:2], dtype=bool)
    for channel, ground in enumerate(((top >> 16) & 255, (top >> 8) & 255, top & 255)):
        # |value - ground| > VISIBLE_STEP, compared in uint8 (no widened copy of the shot)
        values = rgb[..., channel]
        if ground + VISIBLE_STEP < 255:
            visible |= values > ground + VISIBLE_STEP
        if ground - VISIBLE_STEP > 0:
            visible |= values < ground - VISIBLE_STEP
    return int(np.count_nonzero(visible)) < BLANK_PIXELS


def most_common(flat) -> int:
    """The most common value of `flat` (the smallest of those tied), as np.unique would give it.
    A colour held by more than half the pixels is the only most common one: a sample's most
    common value, counted over all pixels, settles most screenshots without sorting them all."""
    import numpy as np

    sample = np.unique(flat[::97], return_counts=True)
    candidate = sample[0][sample[1].argmax()] if sample[0].size else None
    if candidate is not None and 2 * int(np.count_nonzero(flat == candidate)) > flat.size:
        return int(candidate)
    values, counts = np.unique(flat, return_counts=True)
    return int(values[counts.argmax()])


#: a thumbnail is at most this many times as tall as it is wide: of a longer (full-page) shot it
#: shows the top (a 16384 px page made a 240 x 3840 strip of 2 MB)
THUMB_ASPECT = 2


def thumbnail(png: bytes, width: int = 240) -> bytes:
    """A small PNG of the screenshot (for the HTML report): its top, for a long one."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        if image.height > THUMB_ASPECT * image.width:
            image = image.crop((0, 0, image.width, THUMB_ASPECT * image.width))
        image = image.convert("RGB")
        height = max(1, round(image.height * width / max(1, image.width)))
        small = image.resize((width, height), Image.LANCZOS)
        out = io.BytesIO()
        small.save(out, format="PNG", optimize=True)
        return out.getvalue()
