"""Why pairwise comparisons went unjudged, in words every rendering shows beside their pair.

The summary counts a pair's comparisons the judge could not decide ("1 comparison not assessed");
the reason (a refusal in the judge's words, a timeout, an unusable answer, no majority) is each
judgment's `failure` in the report's `pairwise.judgments`. The terminal, the Markdown and the HTML
say it from there, the first few per pair, so a refusal reads differently from a timeout.
"""

from __future__ import annotations

#: the most unjudged comparisons a pair lists (the rest are counted)
SHOWN = 3
#: the most characters of one reason
REASON_CHARS = 300


def pairwise_failures(pairwise) -> dict[tuple[str, str], list[str]]:
    """(a, b) -> lines such as `c2 run 0: judge refused: ...`, for the report's `pairwise` block
    (a dict, or the report model's), in the order the comparisons were asked."""
    if pairwise is None:
        return {}
    block = pairwise if isinstance(pairwise, dict) else pairwise.model_dump()
    found: dict[tuple[str, str], list[str]] = {}
    for j in block.get("judgments") or ():
        if not isinstance(j, dict) or j.get("verdict") is not None or not j.get("failure"):
            continue
        reason = " ".join(str(j["failure"]).split())
        if len(reason) > REASON_CHARS:
            reason = reason[:REASON_CHARS] + " [...]"
        found.setdefault((str(j.get("a")), str(j.get("b"))), []).append(
            f"{j.get('case_id')} run {j.get('run')}: {reason}")
    out = {}
    for pair, lines in found.items():
        more = len(lines) - SHOWN
        out[pair] = lines[:SHOWN] + ([f"and {more} more (listed in the JSON report's pairwise.judgments)"]
                                     if more > 0 else [])
    return out
