"""A scripted vision judge on 127.0.0.1 for the offline example: an OpenAI-compatible Chat
Completions endpoint that scores the screenshots it is sent from measured pixel properties
(no model, no key, no network). It cannot read: a page whose words are shuffled looks the same
to it, which is what the instrument check's `shuffled` control would reveal.

    python pixel_judge.py --port 8791      # serves until stopped (SIGTERM / Ctrl-C)

Measures of a screenshot, each 0-3: spread (rows holding anything off the background colour),
colour (strongly saturated pixels), ink (dark pixels). A pointwise prompt's dimensions get
them by name order; a pairwise prompt's winner has the larger sum.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import re

import numpy as np
from aiohttp import web
from PIL import Image


def measures(png: bytes) -> list[int]:
    with Image.open(io.BytesIO(png)) as image:
        rgb = np.asarray(image.convert("RGB"), dtype=np.uint8)
    flat = (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
    rows = float((flat != most_common(flat.ravel())).any(axis=1).mean())
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]  # (per channel: a reduction over an axis of 3 is slow)
    spread = np.maximum(np.maximum(r, g), b) - np.minimum(np.minimum(r, g), b)  # (uint8: max >= min)
    saturated = float((spread > 80).mean())
    dark = float((r.astype(np.uint16) + g + b < 3 * 90).mean())  # mean of R, G, B under 90

    def bucket(x, edges):
        return sum(x >= e for e in edges)

    return [bucket(rows, (0.05, 0.3, 0.6)), bucket(saturated, (0.01, 0.08, 0.15)), bucket(dark, (0.002, 0.02, 0.05))]


def most_common(flat) -> int:
    """The background colour: the most common value (the smallest of those tied). A colour held
    by more than half the pixels is the only most common one: a sample's, counted over all of
    them, settles most screenshots without sorting every pixel."""
    values, counts = np.unique(flat[::97], return_counts=True)
    if values.size and 2 * int(np.count_nonzero(flat == values[counts.argmax()])) > flat.size:
        return int(values[counts.argmax()])
    values, counts = np.unique(flat, return_counts=True)
    return int(values[counts.argmax()])


def quality(pngs: list[bytes]) -> list[int]:
    if not pngs:
        return [0, 0, 0]
    return [min(col) for col in zip(*(measures(p) for p in pngs))]


def answer(body: dict) -> str:
    text, images = "", []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            text += content
            continue
        for part in content or []:
            if part.get("type") == "text":
                text += part.get("text", "")
            elif part.get("type") == "image_url":
                url = part["image_url"]["url"]
                images.append(base64.b64decode(url.split(",", 1)[1]))
    pair = re.search(r"the first (\d+) show ANSWER A, the next (\d+) show ANSWER B", text)
    if pair:
        na = int(pair.group(1))
        qa, qb = sum(quality(images[:na])), sum(quality(images[na:]))
        return json.dumps({"winner": "A" if qa > qb else "B" if qb > qa else "tie", "explanation": "pixels"})
    q = quality(images)
    dims = re.search(r"^DIMENSIONS: (.+)$", text, re.MULTILINE)
    if dims:
        names = [d.strip() for d in dims.group(1).split(",")]
        ranked = sorted(names)
        return json.dumps({"scores": {d: q[ranked.index(d) % 3] for d in names},
                           "explanation": f"measured {q} from {len(images)} screenshot(s)"})
    if '"verdict"' in text:
        return json.dumps({"verdict": sum(q) >= 6, "explanation": "pixels"})
    return json.dumps({"score": 1 + round(4 * sum(q) / 9), "explanation": "pixels"})


async def chat(request: web.Request) -> web.Response:
    body = await request.json()
    content = answer(body)
    return web.json_response({"id": "pixel-judge", "object": "chat.completion", "model": "pixel-judge",
                              "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": content}}],
                              "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8791)
    args = parser.parse_args()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    web.run_app(app, host="127.0.0.1", port=args.port, print=lambda *_: print(f"PORT {args.port}", flush=True))


if __name__ == "__main__":
    main()
