"""A rendered output as graders see it (GradeContext.render): the attempt's render record and
its screenshots, read back from the run's store (and checked against their hashes)."""

from __future__ import annotations

from typing import Any


class RenderedPage:
    """`record` is the attempt's render record; `store` (None in verify) holds the shots."""

    def __init__(self, record: dict | None, store: Any = None):
        self.record = record or {}
        self.store = store

    @property
    def ok(self) -> bool:
        """Rendered: shots taken, no render error, no crash."""
        r = self.record
        return bool(r.get("shots")) and not r.get("error") and not r.get("crashed")

    def shots(self, which: str | bool = "last") -> list[dict]:
        """The shots a judge is shown: the last viewport shot, or every shot ("all")."""
        shots = list(self.record.get("shots") or [])
        if which == "all":
            return shots
        viewport = [s for s in shots if not s.get("full_page")]
        return viewport[-1:] if viewport else shots[-1:]

    def images(self, which: str | bool = "last") -> list[bytes]:
        """PNG bytes of those shots; ValueError when there is no store or a shot changed."""
        if self.store is None:
            raise ValueError("screenshots are not available here")
        return [self.store.get(s["sha256"]) for s in self.shots(which)]
