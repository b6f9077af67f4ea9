"""Screenshots stored by content hash in the run folder: `<run>/screenshots/<sha256>.png`,
written once (owner-only), read back only when the bytes still match their name."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..record.files import make_private_dirs, write_new

SUBDIR = "screenshots"
#: the largest screenshot read back (a 4096x4096 page at scale 4 stays far below)
MAX_SHOT_BYTES = 64 * 1024 * 1024


class ShotStore:
    """Where one run keeps its screenshots. `prefix` is the folder as seen from the report's
    own folder (the run folder's name), so a record's `path` opens from beside the report."""

    def __init__(self, folder: Path, prefix: str):
        self.folder, self.prefix = Path(folder), prefix.rstrip("/")

    def put(self, png: bytes) -> tuple[str, str]:
        """Store the bytes; (sha256, path relative to the report's folder)."""
        digest = hashlib.sha256(png).hexdigest()
        target = self.folder / f"{digest}.png"
        if not target.exists():
            make_private_dirs(self.folder)
            try:
                write_new(target, png)
            except Exception:
                if not target.exists():  # another page wrote the same bytes first: that is fine
                    raise
        return digest, f"{self.prefix}/{digest}.png"

    def get(self, digest: str) -> bytes:
        """The screenshot's bytes; ValueError when missing or changed since it was stored."""
        return read_shot(self.folder / f"{digest}.png", digest)


def read_shot(path: Path, digest: str) -> bytes:
    """Bytes of a stored screenshot whose SHA-256 must equal `digest` (ValueError otherwise)."""
    from ..safefile import FileRefused, read_regular

    try:
        data = read_regular(path, limit=MAX_SHOT_BYTES, limit_name="screenshot size")
    except FileRefused as exc:
        raise ValueError(f"screenshot {path.name}: {exc.reason}") from None
    except OSError as exc:
        raise ValueError(f"screenshot {path.name} cannot be read: {exc.strerror or exc}") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError(f"screenshot {path.name} changed since the run (its hash no longer matches)")
    return data


def shot_path(base: Path, relative: str) -> Path | None:
    """A recorded screenshot path resolved under the report's folder; None when it would leave it."""
    if not isinstance(relative, str) or not relative or os.path.isabs(relative) or "\x00" in relative:
        return None
    parts = Path(relative).parts
    if ".." in parts or len(parts) != 3 or parts[1] != SUBDIR:
        return None
    return Path(base) / relative
