"""Sanity check for the invoice demo (stdlib only): run both extractors on every case.

Mirrors the graders in suite.yaml: `json-fields` (exact equality of document_type, currency,
vat_rate, total, line_items) and `fields` (vendor, casefolded with whitespace collapsed;
date, exact). Prints, per variant, how many documents match on every graded field and the
accuracy of each field, then lists the mismatches.

    python examples/invoices/check_demo.py [-v]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import extractors  # noqa: E402

EXACT_FIELDS = ["document_type", "currency", "vat_rate", "total", "line_items"]
FIELDS = ["vendor", "date"]


def canon(value) -> str:
    """Strict comparison form: 19 and 19.0 differ, as a strict JSON equality would say."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def norm_text(value):
    return " ".join(value.casefold().split()) if isinstance(value, str) else value


def field_ok(name: str, got: dict, expected: dict) -> bool:
    if name not in got:
        return False
    if name == "vendor":
        return norm_text(got[name]) == norm_text(expected[name])
    return canon(got[name]) == canon(expected[name])


def load_cases() -> list[dict]:
    cases = []
    with open(HERE / "cases.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                case = json.loads(line)
                ref = case["input"]
                if isinstance(ref, str) and ref.startswith("@"):
                    case["text"] = (HERE / ref[1:]).read_text(encoding="utf-8")
                else:
                    case["text"] = ref
                cases.append(case)
    return cases


def main() -> int:
    verbose = "-v" in sys.argv[1:]
    cases = load_cases()
    graded = EXACT_FIELDS + FIELDS
    for variant in ("basic", "careful"):
        fn = getattr(extractors, variant)
        per_field = dict.fromkeys(graded, 0)
        per_category: dict[str, list[int]] = {}
        full = 0
        misses: list[str] = []
        for case in cases:
            out = fn(case["text"], skill=None, run=0)
            again = fn(case["text"], skill=None, run=1)
            assert canon(out) == canon(again), f"{variant} is not deterministic on {case['id']}"
            wrong = [f for f in graded if not field_ok(f, out, case["expected"])]
            for f in graded:
                per_field[f] += f not in wrong
            stats = per_category.setdefault(case.get("category", "?"), [0, 0])
            stats[1] += 1
            if not wrong:
                full += 1
                stats[0] += 1
            else:
                misses.append(f"  {case['id']} ({case.get('category')}): " + ", ".join(wrong))
                if verbose:
                    for f in wrong:
                        misses.append(f"      {f}: got {canon(out.get(f))}")
                        misses.append(f"      {f}: exp {canon(case['expected'][f])}")
        n = len(cases)
        print(f"{variant}: {full}/{n} documents fully correct ({100 * full / n:.0f}%)")
        print("  per field: " + ", ".join(f"{f} {per_field[f]}/{n}" for f in graded))
        print("  per category: " + ", ".join(f"{c} {a}/{b}" for c, (a, b) in per_category.items()))
        print("\n".join(misses) if misses else "  no mismatches")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
