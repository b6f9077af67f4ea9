"""promptfoo's CSV test rows and its `__expected` string syntax (src/csv.ts: testCaseFromCsvRow,
assertionFromString)."""

from __future__ import annotations

import math
import re
from typing import Any

#: promptfoo's assertion types a `__expected` string may name (BaseAssertionTypes)
BASE_TYPES = (
    "answer-relevance", "bleu", "classifier", "contains", "contains-all", "contains-any", "contains-html",
    "contains-json", "contains-sql", "contains-xml", "context-faithfulness", "context-recall",
    "context-relevance", "cost", "equals", "factuality", "finish-reason", "g-eval", "gleu", "icontains",
    "icontains-all", "icontains-any", "is-html", "is-json", "is-refusal", "is-sql", "is-valid-function-call",
    "is-valid-openai-function-call", "is-valid-openai-tools-call", "is-xml", "javascript", "latency",
    "levenshtein", "llm-rubric", "meteor", "model-graded-closedqa", "model-graded-factuality", "moderation",
    "perplexity", "perplexity-score", "pi", "python", "regex", "rouge-n", "select-best", "similar",
    "starts-with", "webhook", "word-count",
)
_ASSERTION = re.compile(r"^(not-)?(" + "|".join(re.escape(t) for t in BASE_TYPES)
                        + r")(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$")
_ARRAY = {"contains-all", "contains-any", "icontains-all", "icontains-any"}
_RAW = {"contains-json", "is-json"}
_THRESHOLD = {"answer-relevance", "classifier", "context-faithfulness", "context-recall", "context-relevance",
              "cost", "latency", "levenshtein", "perplexity-score", "perplexity", "rouge-n", "similar",
              "starts-with"}
_JS_FILES = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts")


def assertion_from_string(expected: str) -> dict:
    """A `__expected` cell as an assertion, by promptfoo's rules: javascript:/fn:/eval:/file://x.js,
    grade:/llm-rubric:, python:/file://x.py, TYPE[(threshold)][:value], else equals."""
    for prefix in ("javascript:", "fn:", "eval:"):
        if expected.startswith(prefix):
            return {"type": "javascript", "value": expected[len(prefix):].strip()}
    if expected.startswith("file://") and expected[len("file://"):].split(":")[0].endswith(_JS_FILES):
        return {"type": "javascript", "value": expected.strip()}
    if expected.startswith("grade:"):
        return {"type": "llm-rubric", "value": expected[len("grade:"):]}
    if expected.startswith("llm-rubric:"):
        return {"type": "llm-rubric", "value": expected[len("llm-rubric:"):]}
    if expected.startswith("python:"):
        return {"type": "python", "value": expected[len("python:"):].strip()}
    if expected.startswith("file://") and (expected.endswith(".py") or ".py:" in expected):
        return {"type": "python", "value": expected.strip()}
    m = _ASSERTION.match(expected)
    if not m:
        return {"type": "equals", "value": expected}
    inverse, kind, threshold, value = m.groups()
    full = (inverse or "") + kind
    if kind in _ARRAY:
        return {"type": full, "value": [v.strip() for v in value.split(",")] if value else value}
    if kind in _RAW:
        return {"type": full, "value": value}
    out: dict[str, Any] = {"type": full, "value": value.strip() if value is not None else None}
    if kind in _THRESHOLD:
        t = float(threshold) if threshold else math.nan
        out["threshold"] = t if math.isfinite(t) else (0.8 if kind == "similar" else 0.75)
    return out


def csv_test(row: dict) -> dict:
    """One CSV row as a promptfoo test (testCaseFromCsvRow): __expected[N] are assertions,
    __description, __metric (on every assertion), __threshold, __metadata:KEY; other columns are vars."""
    test: dict[str, Any] = {"vars": {}, "assert": []}
    metadata: dict[str, Any] = {}
    metric = None
    for key, value in row.items():
        key = (key or "").strip()
        value = value if value is not None else ""
        if key.startswith("__expected"):
            if value.strip():
                test["assert"].append(assertion_from_string(value.strip()))
        elif key == "__description":
            test["description"] = value
        elif key == "__metric":
            metric = value
        elif key == "__threshold":
            try:
                test["threshold"] = float(value)
            except ValueError:
                test["threshold"] = value
        elif key.startswith("__metadata:"):
            name = key[len("__metadata:"):]
            if name.endswith("[]"):
                if value.strip():
                    metadata[name[:-2]] = [p.strip().replace("\\,", ",") for p in re.split(r"(?<!\\),", value)]
            elif value.strip():
                metadata[name] = value
        elif key in ("__prefix", "__suffix", "__providerOutput") or key.startswith("__config:"):
            test.setdefault("options", {})[key.lstrip("_")] = value
        else:
            test["vars"][key] = value
    if metric:
        for a in test["assert"]:
            a["metric"] = metric
    if metadata:
        test["metadata"] = metadata
    return test
