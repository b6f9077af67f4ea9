"""`recorded` subject: outputs that already exist, answered by case id (and run) without any
model call. The one recorded subject: outputs from a file (`recorded:out.jsonl`), a report
being rescored, imported comparisons, a transcript's runs. Measurements are the source's,
exactly: what the source did not measure stays unknown (the harness never times a lookup)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError, SubjectError, shorten
from ..safeparse import ParseError, parse_json
from .base import Subject, check_keys, require
from .values import Measurements, Output, Result, SubjectRequest

_RECORD_KEYS = {"case_id", "id", "run", "output", "text", "json", "tool_calls", "status",
                "latency_ms", "input_tokens", "output_tokens", "cost_usd", "requests", "error"}


class RecordedSubject(Subject):
    """File shapes: `{case_id: output}` (each value the output as produced); a JSON list or JSONL
    of records `{case_id, run?, output | text / json, tool_calls?, status?, latency_ms?, ...}`."""

    kind = "recorded"
    timed_by_harness = False

    def parse(self, spec: dict) -> dict:
        check_keys(spec, {"path", "records"}, self.kind)
        if "records" not in spec:
            require(spec, "path", self.kind)
        return {k: v for k, v in spec.items() if k not in ("type",)}

    @property
    def spec(self) -> dict:
        if getattr(self, "_saved", None) is not None:
            return {"type": self.kind, **self._saved}
        return {"type": self.kind, **{k: v for k, v in self.options.items() if k != "records"}}

    @classmethod
    def holding(cls, attempts: list[dict], spec: dict) -> "RecordedSubject":
        """A recorded subject over attempt-shaped records held in memory: {case_id, run (None:
        any run), output ({text, json, tool_calls, status} or null), error, measurements,
        subject_info}. `spec` is what the report records as this subject (where they came from)."""
        subject = cls.__new__(cls)
        subject.base_dir = Path.cwd()
        subject.options = {}
        subject._saved = dict(spec)
        subject._by_key = {}
        for a in attempts:
            out = a.get("output")
            output = Output.from_dict(out) if isinstance(out, dict) else None
            # An attempt that holds an output was answered: an error beside it is its grading's
            # (a grader raised, a judge failed), which the graders now decide again. Only an
            # attempt without an output failed to answer, and replays that failure.
            record = {"case_id": a["case_id"], "run": a.get("run"), "error": a.get("error") if output is None else None,
                      "_output": output,
                      "_measurements": dict(a.get("measurements") or {}),
                      "_info": a.get("subject_info"), "_kind": a.get("error_kind")}
            subject._by_key[(record["case_id"], record["run"])] = record
        return subject

    def check(self) -> None:
        if hasattr(self, "_by_key"):
            return
        records = self.options.get("records")
        if records is None:
            placed = _read_records(self.base_dir / self.options["path"], self.options["path"])
        else:
            placed = [(_normalise(r, "records", f"record #{i + 1}"), f"record #{i + 1}", None)
                      for i, r in enumerate(records)]
        self._by_key = _index(placed, self.options.get("path") or "records")

    async def run(self, request: SubjectRequest) -> Result:
        if not hasattr(self, "_by_key"):
            self.check()
        record = self._by_key.get((request.case_id, request.run)) or self._by_key.get((request.case_id, None))
        if record is None:
            raise SubjectError(f"no recorded output for case {request.case_id!r} run {request.run}",
                               kind="missing-output")
        measurements = _measurements(record)
        out = record["_output"]
        if record.get("error") or out is None:
            # A recorded error stays the same error, word for word, with what it measured.
            error = SubjectError(str(record.get("error") or "no output recorded"),
                                 kind=record.get("_kind") or "error")
            error.measurements = measurements
            raise error
        # A fresh Output each time: graders cache parsed JSON on it, and runs must not share one.
        return Result(Output(out.text, out.json, list(out.tool_calls), out.status), measurements,
                      record.get("_info"))


def _measurements(record: dict) -> Measurements:
    """The record's measurements exactly (unknown stays None)."""
    m = record.get("_measurements")
    if m is None:
        m = {k: record.get(k) for k in ("latency_ms", "input_tokens", "output_tokens", "cost_usd", "requests")}
    return Measurements(latency_ms=m.get("latency_ms"), input_tokens=m.get("input_tokens"),
                        output_tokens=m.get("output_tokens"), cost_usd=m.get("cost_usd"),
                        requests=m.get("requests"), cached=bool(m.get("cached")))


#: the keys of a report's attempt output: an `output` object with exactly these keys is read as
#: that envelope (outputs copied from a report keep working); any other object is a JSON output
ENVELOPE_KEYS = frozenset({"text", "json", "tool_calls", "status"})


def output_value(value: Any) -> Output:
    """An `output` as the system produced it: a string is its text, null is no text, any other
    JSON value is a JSON output (its text the compact JSON). Never unpacked as an envelope,
    except the exact shape of a report's attempt output, {text, json, tool_calls, status}."""
    if isinstance(value, str) or value is None:
        return Output(text=value)
    if isinstance(value, dict) and set(value) == ENVELOPE_KEYS and isinstance(value["text"], (str, type(None))) \
            and isinstance(value["tool_calls"], list) and isinstance(value["status"], (str, type(None))):
        return Output.from_dict(value)
    return Output(text=json.dumps(value, ensure_ascii=False), json=value)


def _normalise(raw: Any, shown: str, where: str, line: int | None = None) -> dict:
    """One record. The envelope is the record itself: `text` (the output text), `json` (a
    JSON output, exactly the value given), `tool_calls`, `status`; or `output`, the output value
    as the system produced it. `output` beside `text`/`json` is ambiguous and refused. `line`:
    the record's line in a JSONL file (then errors name it as FILE:LINE, else by `where`)."""
    def problem(message: str, **named: Any) -> ConfigError:
        if line is not None:
            return ConfigError(message, file=shown, line=line, **named)
        return ConfigError(f"{where}: {message}", file=shown, **named)

    if not isinstance(raw, dict):
        raise problem("a record must be an object")
    unknown = sorted(set(raw) - _RECORD_KEYS)
    if unknown:
        from ..validation import did_you_mean

        raise problem(f"unknown field{did_you_mean(unknown[0], _RECORD_KEYS)}", field=unknown[0])
    case_id = raw.get("case_id", raw.get("id"))
    if not isinstance(case_id, str) or not case_id:
        raise problem("needs a string 'case_id'", field="case_id")
    run = raw.get("run")
    if run is not None and (isinstance(run, bool) or not isinstance(run, int) or run < 0):
        raise problem("'run' must be a run index (0, 1, ...) or null (any run)", case_id=case_id, field="run")
    given = [k for k in ("text", "json") if k in raw]
    if "output" in raw and given:
        raise problem("give the output once: as 'output' (the value as produced), or as "
                      "'text' and/or 'json', not both", case_id=case_id, field=given[0])
    if not isinstance(raw.get("text"), (str, type(None))):
        raise problem("'text' must be a string (a JSON output goes in 'json')", case_id=case_id, field="text")
    if "output" in raw:
        output = output_value(raw["output"])
    elif "json" in raw:
        value = raw["json"]
        text = raw.get("text")
        output = Output(text=text if text is not None else json.dumps(value, ensure_ascii=False), json=value)
    else:
        output = Output(text=raw.get("text"))
    if raw.get("tool_calls"):
        if not isinstance(raw["tool_calls"], list):
            raise problem("'tool_calls' must be a list", case_id=case_id, field="tool_calls")
        output.tool_calls = list(raw["tool_calls"])
    if raw.get("status") is not None:
        output.status = raw["status"]
    return {**raw, "case_id": case_id, "_output": output}


#: (record, where it is named, its line in a JSONL file or None)
Placed = tuple[dict, str, "int | None"]


def _index(placed: list[Placed], shown: str) -> dict[tuple[str, int | None], dict]:
    """The records by (case id, run); a second record for the same case and run is an error
    naming both (which one to grade would be a guess)."""
    by_key: dict[tuple[str, int | None], dict] = {}
    first: dict[tuple[str, int | None], tuple[str, int | None]] = {}
    for record, where, line in placed:
        key = (record["case_id"], record.get("run"))
        if key in first:
            earlier_where, earlier_line = first[key]
            earlier = f"line {earlier_line}" if earlier_line is not None else earlier_where
            which = "" if key[1] is None else f" and run {key[1]}"
            message = f"a second record for this case{which} (first on {earlier})"
            field = "case_id" if key[1] is None else "run"
            if line is not None:
                raise ConfigError(message, file=shown, line=line, case_id=key[0], field=field)
            raise ConfigError(f"{where}: {message}", file=shown, case_id=key[0], field=field)
        first[key] = (where, line)
        by_key[key] = record
    return by_key


def _document_problem(exc: ParseError, doc: Any, shown: str) -> ConfigError:
    """A refusal inside a JSON document of records: the record (by position or key) and field."""
    path = exc.path
    if path and isinstance(doc, list) and isinstance(path[0], int):
        rest = ".".join(str(p) for p in path[1:]) or None
        item = doc[path[0]] if path[0] < len(doc) else None
        case_id = item.get("case_id", item.get("id")) if isinstance(item, dict) else None
        return ConfigError(f"record #{path[0] + 1}: {exc.message}", file=shown, line=exc.line,
                           case_id=case_id if isinstance(case_id, str) else None, field=rest)
    if path and isinstance(doc, dict) and isinstance(path[0], str):
        rest = ".".join(str(p) for p in path[1:])
        return ConfigError(exc.message, file=shown, line=exc.line, case_id=path[0],
                           field="output" + (f".{rest}" if rest else ""))
    return ConfigError(exc.message, file=shown, line=exc.line, field=exc.field)


def _looks_jsonl(text: str) -> bool:
    """Several lines, the first a whole JSON value on its own: JSONL (in a file not named .jsonl)."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 2:
        return False
    try:
        parse_json(lines[0], check=False)
    except ParseError:
        return False
    return True


def _read_records(path: Path, shown: str) -> list[Placed]:
    """The records of an outputs file, parsed under the bounds every user document gets
    (safeparse: nesting depth, number length, no NaN or Infinity, no key given twice)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError("recorded outputs file not found", file=shown, field="subject.path") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"recorded outputs file is not valid UTF-8 (byte {exc.start})", file=shown) from None
    except OSError as exc:
        raise ConfigError(f"cannot read recorded outputs: {exc.strerror or exc}", file=shown) from None
    doc = None
    # A .jsonl file is JSONL even when it holds a single record (which would parse as JSON).
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        try:
            doc = parse_json(text)
        except ParseError as exc:
            if exc.partial is not None or not _looks_jsonl(text):
                raise _document_problem(exc, exc.partial, shown) from None
            doc = None  # one JSON value per line: read as JSONL below
    if isinstance(doc, dict):
        return [(_normalise({"case_id": k, "output": v}, shown, f"key {shorten(k, 80)!r}"), f"key {shorten(k, 80)!r}",
                 None) for k, v in doc.items()]
    if isinstance(doc, list):
        return [(_normalise(r, shown, f"record #{i + 1}"), f"record #{i + 1}", None) for i, r in enumerate(doc)]
    records: list[Placed] = []
    # Split on newlines only: JSON strings may hold U+2028 and other characters splitlines() breaks on.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            raw = parse_json(line)
        except ParseError as exc:
            partial = exc.partial
            case_id = partial.get("case_id", partial.get("id")) if isinstance(partial, dict) else None
            raise ConfigError(exc.message, file=shown, line=number,
                              case_id=case_id if isinstance(case_id, str) else None, field=exc.field) from None
        records.append((_normalise(raw, shown, f"line {number}", number), f"line {number}", number))
    return records
