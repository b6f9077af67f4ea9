"""Where each planned attempt's record lives in the attempt log: a few bytes per attempt.

The engine keeps no attempt in memory once it is logged. The index maps each planned attempt
(case, variant, run; its position is the report's order) to its status and to the offset and
length of its line in the log, so a record can be read back (a conversation's earlier reply,
pairwise judging, the report) whatever executor produced it.
"""

from __future__ import annotations

import os
from array import array
from typing import Iterator

#: status -> one byte; 0 = nothing recorded for this attempt in this run
CODES = {"passed": 1, "failed": 2, "error": 3, "unassessed": 4, "not-run": 5, "interrupted": 6, "not-graded": 7,
         "waiting": 8}
NAMES = {code: name for name, code in CODES.items()}
#: attempt statuses that count as finished: a resumed run never repeats them
DONE_STATUSES = ("passed", "failed", "error", "unassessed", "not-graded")
_DONE = frozenset(CODES[s] for s in DONE_STATUSES)


class AttemptIndex:
    """Statuses and log positions of every planned attempt, in report order."""

    def __init__(self, case_ids: list[str], variants: list[str], runs: int):
        self.case_ids, self.variants, self.runs = case_ids, variants, runs
        self.case_pos = {cid: i for i, cid in enumerate(case_ids)}
        self.var_pos = {name: i for i, name in enumerate(variants)}
        self.size = len(case_ids) * len(variants) * runs
        self.status = bytearray(self.size)
        #: 1 = settled before this run dispatched anything (carried as-is, or absent): never run
        self.frozen = bytearray(self.size)
        #: 1 = no attempt exists and none is planned (an import that did not supply it)
        self.absent = bytearray(self.size)
        self.offset = array("q", bytes(8 * self.size))
        self.length = array("q", bytes(8 * self.size))
        self._fd = -1

    def pos(self, case_id: str, variant: str, run: int) -> int | None:
        """The attempt's position in report order, or None when it is not planned."""
        ci, vi = self.case_pos.get(case_id), self.var_pos.get(variant)
        if ci is None or vi is None or not isinstance(run, int) or not 0 <= run < self.runs:
            return None
        return (ci * len(self.variants) + vi) * self.runs + run

    def key(self, pos: int) -> tuple[str, str, int]:
        """(case_id, variant, run) of a position."""
        rest, run = divmod(pos, self.runs)
        ci, vi = divmod(rest, len(self.variants))
        return self.case_ids[ci], self.variants[vi], run

    def put(self, pos: int, status: str, offset: int, length: int) -> None:
        """Record that the attempt at `pos` is on the log line at (offset, length)."""
        self.status[pos] = CODES.get(status, CODES["error"])
        self.offset[pos] = offset
        self.length[pos] = length

    def freeze(self, pos: int, *, absent: bool = False) -> None:
        """Mark an attempt as settled before the run: carried as it is, or absent altogether."""
        self.frozen[pos] = 1
        if absent:
            self.absent[pos] = 1

    def finished(self, pos: int) -> bool:
        """True when the attempt must not be dispatched (done, or settled before the run)."""
        return self.status[pos] in _DONE or bool(self.frozen[pos])

    def recorded(self, pos: int) -> bool:
        return self.status[pos] != 0

    def status_of(self, pos: int) -> str | None:
        return NAMES.get(self.status[pos])

    def open(self, log_path: str | os.PathLike) -> None:
        """Open the log for reading records back."""
        self.close()
        self._fd = os.open(log_path, os.O_RDONLY)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def line(self, pos: int) -> bytes | None:
        """The raw log line (newline stripped) of a recorded attempt, or None."""
        if not self.status[pos]:
            return None
        data = os.pread(self._fd, self.length[pos], self.offset[pos])
        return data[:-1] if data.endswith(b"\n") else data

    def read(self, pos: int) -> dict | None:
        """The record of a recorded attempt, read back from the log."""
        from ..jsonio import loads

        data = self.line(pos)
        return None if data is None else loads(data)

    def positions(self) -> Iterator[int]:
        """Every position in report order, absent attempts left out."""
        absent = self.absent
        return (pos for pos in range(self.size) if not absent[pos])

    def count(self, *statuses: str) -> int:
        codes = {CODES[s] for s in statuses}
        return sum(1 for code in self.status if code in codes)
