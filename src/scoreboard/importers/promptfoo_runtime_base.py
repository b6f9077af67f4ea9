"""What every ported promptfoo handler shares (promptfoo_assert_runtime.py and
promptfoo_runtime_json.py): JavaScript's whitespace, trim and split, UTF-16 lengths, promptfoo's
coerceString, and its GradingResult."""

from __future__ import annotations

import json
import re
from typing import Any

JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_SPLIT = re.compile(f"[{JS_SPACE}]+")


def _result(passed: bool, score: float, reason: str) -> dict:
    return {"pass": bool(passed), "score": float(score), "reason": reason}


def _verdict(passed: bool, failure: str) -> dict:
    return _result(passed, 1.0 if passed else 0.0, "Assertion passed" if passed else failure)


def js_trim(text: str) -> str:
    return text.strip(JS_SPACE.replace("\u2000-\u200a", "".join(map(chr, range(0x2000, 0x200B)))))


def js_split_words(text: str) -> list[str]:
    """text.split(/\\s+/) as JavaScript does it (an empty text is [''])."""
    return _JS_SPLIT.split(text)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def text_of(output: Any) -> str:
    """promptfoo's coerceString: text as is, anything else as JSON."""
    if output is None:
        return ""
    return output if isinstance(output, str) else json.dumps(output, separators=(",", ":"), ensure_ascii=False)


def fail(reason: str) -> dict:
    """An assertion promptfoo stops with an error (a failed row): it fails every time."""
    return _result(False, 0.0, reason)
