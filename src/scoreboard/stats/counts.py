"""Per-case counters in a few bytes per case: hits and tries in flat arrays indexed by the
plan's case order, read as a mapping {case_id: (hits, tries)} over the cases tried at least
once (in plan order; case ids outside the plan last, in the order first seen)."""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import Iterator


class CaseIndex:
    """The plan's case ids and their positions, shared by every counter of a summary."""

    __slots__ = ("ids", "pos")

    def __init__(self, ids: list[str]):
        self.ids = ids
        self.pos = {cid: i for i, cid in enumerate(ids)}


class CaseCounts(Mapping):
    """case_id -> (hits, tries), for cases with tries > 0."""

    __slots__ = ("index", "hits", "tries", "extra")

    def __init__(self, index: CaseIndex):
        self.index = index
        n = len(index.ids)
        self.hits = array("q", bytes(8 * n))
        self.tries = array("q", bytes(8 * n))
        self.extra: dict[str, list[int]] = {}

    def add(self, case_id: str, hit: bool) -> None:
        i = self.index.pos.get(case_id)
        if i is None:
            slot = self.extra.setdefault(case_id, [0, 0])
            slot[0] += hit
            slot[1] += 1
            return
        self.hits[i] += hit
        self.tries[i] += 1

    def __getitem__(self, case_id: str) -> tuple[int, int]:
        i = self.index.pos.get(case_id)
        if i is None:
            hits, tries = self.extra[case_id]
            return hits, tries
        if not self.tries[i]:
            raise KeyError(case_id)
        return self.hits[i], self.tries[i]

    def __contains__(self, case_id: object) -> bool:
        i = self.index.pos.get(case_id)  # type: ignore[arg-type]
        return case_id in self.extra if i is None else self.tries[i] > 0

    def __iter__(self) -> Iterator[str]:
        ids, tries = self.index.ids, self.tries
        for i in range(len(ids)):
            if tries[i]:
                yield ids[i]
        yield from self.extra

    def __len__(self) -> int:
        return sum(1 for t in self.tries if t) + len(self.extra)

    def totals(self) -> tuple[int, int]:
        """(sum of hits, sum of tries) over every case."""
        return (sum(self.hits) + sum(h for h, _ in self.extra.values()),
                sum(self.tries) + sum(t for _, t in self.extra.values()))


def unit_of_cases(plan_cases) -> dict[str, tuple[str, str]]:
    """case id -> its unit of evidence, for the turns of a conversation: ("conversation", id).
    A conversation's turns share its trajectory (each answers the replies before it), so their
    outcomes are correlated: together they are one unit, as the repeats of a case are. Cases
    outside any conversation are absent (each its own unit)."""
    return {c["id"]: ("conversation", str(c["conversation"])) for c in plan_cases if c.get("conversation")}


def by_unit(per_case: Mapping, units: dict | None) -> Mapping:
    """Per-case (a, b) pairs ((passes, tries), (sum, count)) summed over each unit: a
    conversation's turns become one entry; a case outside any conversation stays as it is."""
    if not units:
        return per_case
    out: dict = {}
    for cid, (a, b) in per_case.items():
        slot = out.setdefault(units.get(cid, cid), [0, 0])
        slot[0] += a
        slot[1] += b
    return {key: (a, b) for key, (a, b) in out.items()}
