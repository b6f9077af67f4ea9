"""Agent transcripts -> cases, per-case graders and the recorded runs they are scored on.

The transcript file (field names as the transcript tool wrote them)::

    {"prompt"?, "roomId"?, "agentId"?,
     "cases": [{"tag"? | "id"?, "requiredTools"?, "forbiddenTools"?, "expectedStatus"?,
                "maxLatencyMs"?, "expectedOutputContains"?, "forbiddenOutputContains"?,
                "maxCost"?, "maxTokens"?}],
     "runs":  [{"id", "tag"?, "status", "latency_ms", "estimated_cost"?, "input_tokens"?,
                "output_tokens"?, "tool_calls": [{"name", "args"?}], "output"}]}

`cases` is required (it may be empty: `score` then fails its all-cases-pass rule); `runs`
defaults to []. Unknown fields and wrong types are errors.

Matching a case to a run (first rule that finds one wins; recorded in the case's metadata
as `matched_by` tag | id | index, with `run_id`):

1. `tag`: the first run whose `tag` equals the case's tag. Several runs with that tag:
   the first one, and a warning names the others.
2. `id`: the first run whose `id` equals the case's id.
3. index: the run at the case's own position in `runs`, also when a tag or id was given
   and matched nothing (a warning says so).
4. nothing: the case stays in the run as an execution error ("no run matched").

Case ids are the tag, else the id, else `case-<n>` (1-based); a repeated one gets `-2`,
`-3`... (with a warning). A case without any expectation is an error, not a vacuous pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from ..errors import ConfigError
from ..graders.base import Grader
from ..graders.registry import build_grader
from ..hashing import sha256_bytes, sha256_json
from ..safefile import DEFAULT_MAX_FILE_BYTES, FileRefused, read_regular
from ..safeparse import Bounds, ParseError, parse_json
from ..validation import first_error
from .case import Case

# ---------------------------------------------------------------------------- schema


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


_Text = Annotated[str, Field(min_length=1)]
_Texts = Annotated[list[_Text] | None, BeforeValidator(_one_or_many)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TranscriptCase(_Strict):
    """One case: which run it reads and what that run must show."""

    tag: _Text | None = None
    id: _Text | None = None
    requiredTools: list[_Text] | None = None
    forbiddenTools: list[_Text] | None = None
    expectedStatus: _Text | None = None
    maxLatencyMs: float | None = Field(None, gt=0)
    expectedOutputContains: _Texts = None
    forbiddenOutputContains: _Texts = None
    maxCost: float | None = Field(None, ge=0)
    maxTokens: int | None = Field(None, ge=0)


class TranscriptToolCall(_Strict):
    name: _Text
    args: Any = None


class TranscriptRun(_Strict):
    """One recorded agent run."""

    id: _Text
    tag: _Text | None = None
    status: _Text
    latency_ms: float = Field(ge=0)
    estimated_cost: float | None = Field(None, ge=0)
    input_tokens: int | None = Field(None, ge=0)
    output_tokens: int | None = Field(None, ge=0)
    tool_calls: list[TranscriptToolCall]
    output: str | None


class TranscriptFile(_Strict):
    prompt: str | None = None
    roomId: str | None = None
    agentId: str | None = None
    cases: list[TranscriptCase]
    runs: list[TranscriptRun] = Field(default_factory=list)


# ---------------------------------------------------------------------------- in memory


@dataclass
class RunRecord:
    """A run to score, from a transcript file, a CLI export or a live endpoint. None = unknown."""

    id: str
    status: str | None
    output: str | None
    tool_calls: list[dict] = field(default_factory=list)
    tag: str | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    tool_calls_known: bool = True
    source: str | None = None
    format: str | None = None

    @classmethod
    def from_model(cls, run: TranscriptRun, source: str | None = None) -> RunRecord:
        return cls(id=run.id, tag=run.tag, status=run.status, output=run.output,
                   tool_calls=[{"name": c.name, **({"args": c.args} if c.args is not None else {})}
                               for c in run.tool_calls],
                   latency_ms=run.latency_ms, cost_usd=run.estimated_cost,
                   input_tokens=run.input_tokens, output_tokens=run.output_tokens, source=source)

    def as_attempt(self, case_id: str) -> dict:
        """The run as a recorded subject answers it for `case_id` (every run index): its output
        and its measurements exactly as recorded (what the source did not measure stays null)."""
        return {"case_id": case_id, "run": None, "error": None,
                "output": {"text": self.output, "json": None, "tool_calls": [dict(c) for c in self.tool_calls],
                           "status": self.status},
                "measurements": {"latency_ms": self.latency_ms, "input_tokens": self.input_tokens,
                                 "output_tokens": self.output_tokens, "cost_usd": self.cost_usd,
                                 "requests": None}}

    def summary(self) -> dict:
        """The figures a replay diff compares."""
        return {"id": self.id, "status": self.status, "latency_ms": self.latency_ms,
                "estimated_cost": self.cost_usd, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "tools": [c.get("name") for c in self.tool_calls]}


@dataclass
class Transcript:
    """Cases with their graders, the run each case reads, and how they were matched."""

    name: str
    source: str
    cases: list[Case]
    graders: dict[str, list[Grader]]
    runs: list[RunRecord]
    assigned: dict[str, RunRecord | None]
    errors: dict[str, str]
    matches: list[dict]
    warnings: list[str]
    sources: list[dict]
    prompt: str | None = None
    room_id: str | None = None
    agent_id: str | None = None
    case_models: list[TranscriptCase] = field(default_factory=list)

    def recorded(self) -> list[dict]:
        """What the recorded subject answers for each case: its matched run, or the reason none
        matched (an execution error naming it)."""
        out = []
        for case in self.cases:
            run = self.assigned.get(case.id)
            error = self.errors.get(case.id)
            if error is not None or run is None:
                out.append({"case_id": case.id, "run": None, "output": None, "measurements": {},
                            "error": error or f"no run for case {case.id!r}", "error_kind": "missing-output"})
            else:
                out.append(run.as_attempt(case.id))
        return out

    def run_info(self) -> dict:
        """What the report's `run` block records about where the cases came from."""
        matched = {m["run_id"] for m in self.matches if m.get("run_id")}
        return {"transcript": {
            "path": self.source, "sources": self.sources, "cases": len(self.cases), "runs": len(self.runs),
            "matches": self.matches, "warnings": self.warnings,
            "unmatched_runs": [r.id for r in self.runs if r.id not in matched]}}


# ---------------------------------------------------------------------------- reading


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validation_error(exc: ValidationError, data: Any, shown: str) -> ConfigError:
    """One line naming the file, the case (index and id) or run, and the field."""
    loc = tuple(exc.errors()[0].get("loc", ()))
    _, msg = first_error(exc)
    case_id = None
    if len(loc) >= 2 and loc[0] in ("cases", "runs") and isinstance(loc[1], int):
        try:
            item = data[loc[0]][loc[1]]
        except (KeyError, IndexError, TypeError):
            item = None
        label = None
        if isinstance(item, dict):
            for key in (("tag", "id") if loc[0] == "cases" else ("id", "tag")):
                if isinstance(item.get(key), str) and item[key]:
                    label = item[key]
                    break
        if loc[0] == "cases":
            case_id = label if label is not None else f"case-{loc[1] + 1}"
        elif label is not None:
            msg = f"run {label!r}: {msg}"
    return ConfigError(msg, file=shown, case_id=case_id, field=_where(loc) or None)


def read_json_file(path: Path, what: str = "transcript") -> tuple[Any, bytes]:
    """(parsed JSON, raw bytes); one-line ConfigError for a missing or unparseable file."""
    shown = str(path)
    try:
        raw = read_regular(path, limit=DEFAULT_MAX_FILE_BYTES, limit_name="limits.max_file_bytes")
    except FileRefused as exc:
        raise ConfigError(f"{what} file {exc.reason}", file=shown) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{what} is not valid UTF-8", file=shown) from None
    try:
        return parse_json(text, Bounds()), raw
    except ParseError as exc:
        raise ConfigError(exc.message, file=shown, line=exc.line, field=exc.field) from None


def looks_like_transcript(path: Path) -> bool:
    """True when the file is a JSON object with `cases` or `runs` (the transcript shape)."""
    try:
        raw = read_regular(path, limit=DEFAULT_MAX_FILE_BYTES, limit_name="limits.max_file_bytes")
        data = parse_json(raw.decode("utf-8-sig"), Bounds())
    except (FileRefused, ParseError, ValueError):
        return False
    return isinstance(data, dict) and ("cases" in data or "runs" in data)


def parse_transcript(data: Any, shown: str) -> TranscriptFile:
    """Validate a parsed transcript document."""
    if not isinstance(data, dict):
        raise ConfigError("a transcript is a JSON object {cases: [...], runs: [...]}", file=shown)
    try:
        return TranscriptFile.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, data, shown) from None


def parse_cases_document(data: Any, shown: str) -> list[TranscriptCase]:
    """A small cases file for CLI exports: {"cases": [...]} or a bare list of cases."""
    if isinstance(data, list):
        data = {"cases": data}
    if not isinstance(data, dict) or set(data) - {"cases"} or "cases" not in data:
        extra = sorted(set(data) - {"cases"}) if isinstance(data, dict) else []
        if extra:
            raise ConfigError("unknown field", file=shown, field=extra[0])
        raise ConfigError("a cases file is {\"cases\": [...]} or a list of cases", file=shown)
    try:
        return TranscriptFile.model_validate({"cases": data["cases"]}).cases
    except ValidationError as exc:
        raise validation_error(exc, data, shown) from None


# ---------------------------------------------------------------------------- cases


def grader_specs(case: TranscriptCase) -> list[tuple[str, Any]]:
    """(transcript field, grader spec) for every expectation the case sets."""
    specs: list[tuple[str, Any]] = []
    required, forbidden = case.requiredTools or [], case.forbiddenTools or []
    if required or forbidden:
        spec: dict = {}
        if required:
            spec["required"] = required
        if forbidden:
            spec["forbidden"] = forbidden
        specs.append(("requiredTools" if required else "forbiddenTools", {"tool-calls": spec}))
    if case.expectedStatus is not None:
        specs.append(("expectedStatus", {"status": case.expectedStatus}))
    if case.maxLatencyMs is not None:
        specs.append(("maxLatencyMs", {"max-latency-ms": case.maxLatencyMs}))
    if case.expectedOutputContains:
        specs.append(("expectedOutputContains", {"contains": case.expectedOutputContains}))
    if case.forbiddenOutputContains:
        specs.append(("forbiddenOutputContains", {"not-contains": case.forbiddenOutputContains}))
    if case.maxCost is not None:
        specs.append(("maxCost", {"max-cost": {"max": case.maxCost}}))
    if case.maxTokens is not None:
        specs.append(("maxTokens", {"max-tokens": {"max": case.maxTokens}}))
    return specs


def build_case_graders(case: TranscriptCase, case_id: str, index: int, shown: str) -> list[Grader]:
    """Graders from the case's fields; a bad combination is a one-line ConfigError."""
    specs = grader_specs(case)
    if not specs:
        raise ConfigError("the case sets no expectation (requiredTools, forbiddenTools, expectedStatus, "
                          "maxLatencyMs, expectedOutputContains, forbiddenOutputContains, maxCost, maxTokens)",
                          file=shown, case_id=case_id, field=f"cases[{index}]")
    graders = []
    for name, spec in specs:
        try:
            graders.append(build_grader(spec))
        except ConfigError as exc:
            raise ConfigError(exc.detail, file=shown, case_id=case_id, field=f"cases[{index}].{name}") from None
    return graders


def case_ids(cases: list[TranscriptCase]) -> tuple[list[str], list[str]]:
    """Unique case ids (tag, id or case-<n>) and a warning per renamed duplicate."""
    taken: set[str] = set()
    ids, warnings = [], []
    for index, case in enumerate(cases):
        base = case.tag or case.id or f"case-{index + 1}"
        name, n = base, 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        if name != base:
            warnings.append(f"cases[{index}]: case id {base!r} is used by an earlier case; "
                            f"reported as {name!r}")
        taken.add(name)
        ids.append(name)
    return ids, warnings


def match_run(case: TranscriptCase, index: int, runs: list[RunRecord]) -> tuple[RunRecord | None, str | None,
                                                                                str | None]:
    """(run, matched_by, note): tag, then id, then the same index; see the module docstring."""
    for key, attr in (("tag", "tag"), ("id", "id")):
        wanted = getattr(case, key)
        if wanted is None:
            continue
        hits = [r for r in runs if getattr(r, attr) == wanted]
        if hits:
            note = None
            if len(hits) > 1:
                note = (f"{key} {wanted!r} matches {len(hits)} runs ({', '.join(r.id for r in hits)}); "
                        f"used the first, {hits[0].id!r}")
            return hits[0], key, note
    asked = [f"{k} {getattr(case, k)!r}" for k in ("tag", "id") if getattr(case, k) is not None]
    if index < len(runs):
        note = None
        if asked:
            note = (f"{' / '.join(asked)} matched no run; used runs[{index}] ({runs[index].id!r}) "
                    f"by position")
        return runs[index], "index", note
    why = (" and ".join(asked) + " matched no run" if asked else "the case has no tag or id") + \
        f", and there is no run at index {index} ({len(runs)} runs)"
    return None, None, f"no run matched: {why}"


def assemble(case_models: list[TranscriptCase], runs: list[RunRecord], *, name: str, source: str,
             shown: str, case_input: Any = None, sources: list[dict] | None = None,
             check_exports: bool = False, live: bool = False) -> Transcript:
    """Cases + graders + case -> run assignments (`score`); with `live`, every case reads the
    one live run made later (`replay`), so nothing is matched here."""
    ids, warnings = case_ids(case_models)
    cases: list[Case] = []
    graders: dict[str, list[Grader]] = {}
    assigned: dict[str, RunRecord | None] = {}
    errors: dict[str, str] = {}
    matches: list[dict] = []
    for index, (model, cid) in enumerate(zip(case_models, ids)):
        graders[cid] = build_case_graders(model, cid, index, shown)
        if live:
            run, how, note = None, "live", None
        else:
            run, how, note = match_run(model, index, runs)
        if check_exports and run is not None:
            _check_measurable(model, run, cid)
        metadata: dict = {"index": index, "matched_by": how, "run_id": run.id if run else None}
        for key in ("tag", "id"):
            if getattr(model, key) is not None:
                metadata[key] = getattr(model, key)
        if run is None and not live:
            errors[cid] = note or "no run matched"
            metadata["error"] = errors[cid]
        elif note:
            metadata["match_warning"] = note
            warnings.append(f"case {cid!r}: {note}")
        assigned[cid] = run
        case = Case(id=cid, input=case_input, tags=[model.tag] if model.tag else [], metadata=metadata,
                    source=shown)
        case.input_hash = sha256_json(case.input)
        case.graders = [g.spec for g in graders[cid]]
        cases.append(case)
        matches.append({"case_id": cid, "index": index, "matched_by": how, "run_id": run.id if run else None})
    return Transcript(name=name, source=source, cases=cases, graders=graders, runs=runs, assigned=assigned,
                      errors=errors, matches=matches, warnings=warnings, sources=sources or [],
                      case_models=case_models)


def _check_measurable(case: TranscriptCase, run: RunRecord, case_id: str) -> None:
    """Expectations a CLI export cannot support fail before anything runs, never pass silently."""
    if (case.requiredTools or case.forbiddenTools) and not run.tool_calls_known:
        raise ConfigError(f"{run.format} exports record no tool calls, so requiredTools/forbiddenTools "
                          f"cannot be checked (capture with --output-format stream-json --verbose)",
                          file=run.source, case_id=case_id, field="requiredTools")
    # An export without a duration leaves latency unknown, so the bound could only ever be
    # "not assessed": say so before anything runs instead.
    if case.maxLatencyMs is not None and run.latency_ms is None:
        raise ConfigError(f"{run.format} exports carry no duration, so maxLatencyMs cannot be checked",
                          file=run.source, case_id=case_id, field="maxLatencyMs")


def safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return cleaned or "transcript"


def load_transcript(path: str | Path) -> Transcript:
    """Read, validate and match a transcript file (ConfigError before anything runs)."""
    path = Path(path)
    shown = str(path)
    data, raw = read_json_file(path)
    doc = parse_transcript(data, shown)
    runs = [RunRecord.from_model(r, shown) for r in doc.runs]
    t = assemble(doc.cases, runs, name=safe_name(path.stem), source=shown, shown=shown,
                 case_input=doc.prompt, sources=[{"path": shown, "sha256": sha256_bytes(raw),
                                                  "format": "transcript"}])
    t.prompt, t.room_id, t.agent_id = doc.prompt, doc.roomId, doc.agentId
    return t


def load_replay_cases(path: str | Path) -> Transcript:
    """A transcript's cases for `replay`: every case is scored against the one live run;
    `runs[0]`, when present, is the baseline the live run is compared with."""
    path = Path(path)
    shown = str(path)
    data, raw = read_json_file(path)
    doc = parse_transcript(data, shown)
    runs = [RunRecord.from_model(r, shown) for r in doc.runs]
    t = assemble(doc.cases, runs, name=safe_name(path.stem), source=shown, shown=shown,
                 case_input=doc.prompt, live=True,
                 sources=[{"path": shown, "sha256": sha256_bytes(raw), "format": "transcript"}])
    t.prompt, t.room_id, t.agent_id = doc.prompt, doc.roomId, doc.agentId
    return t


def load_exports(paths: list[str | Path], fmt: str = "auto", *, cases_file: str | Path | None = None,
                 expectations: dict | None = None, name: str | None = None) -> Transcript:
    """Agent CLI exports (one run per file) scored against a cases file or flag expectations."""
    from ..agents.exports import read_export, read_export_bytes

    runs: list[RunRecord] = []
    sources: list[dict] = []
    taken: set[str] = set()
    for p in paths:
        p = Path(p)
        rid, n = p.stem, 2
        while rid in taken:
            rid, n = f"{p.stem}-{n}", n + 1
        taken.add(rid)
        exported = read_export(p, fmt, run_id=rid)
        runs.append(RunRecord(id=rid, tag=rid, status=exported.status, output=exported.output,
                              tool_calls=exported.tool_calls, latency_ms=exported.latency_ms,
                              cost_usd=exported.cost_usd, input_tokens=exported.input_tokens,
                              output_tokens=exported.output_tokens, tool_calls_known=exported.tool_calls_known,
                              source=str(p), format=exported.format))
        sources.append({"path": str(p), "sha256": sha256_bytes(read_export_bytes(p)), "format": exported.format,
                        "status": exported.status, "error": exported.error, "num_turns": exported.num_turns,
                        "session_id": exported.session_id, "warnings": exported.warnings})
    if cases_file is not None and expectations:
        raise ConfigError("give expectation flags or --cases FILE, not both", field="cases")
    if cases_file is not None:
        cases_path = Path(cases_file)
        data, raw = read_json_file(cases_path, "cases")
        models = parse_cases_document(data, str(cases_path))
        sources.insert(0, {"path": str(cases_path), "sha256": sha256_bytes(raw), "format": "cases"})
        shown = str(cases_path)
    elif expectations:
        models = []
        for run in runs:
            try:
                models.append(TranscriptCase.model_validate({"id": run.id, **expectations}))
            except ValidationError as exc:
                loc, msg = first_error(exc)
                raise ConfigError(msg, field=loc) from None
        shown = "<flags>"
    else:
        raise ConfigError("agent exports need expectations: --expect-contains, --required-tool, "
                          "--expect-status, ... or --cases FILE", field="cases")
    default = Path(paths[0]).stem if len(paths) == 1 else "agent-exports"
    return assemble(models, runs, name=safe_name(name or default), source=str(paths[0]) if len(paths) == 1
                    else ", ".join(str(p) for p in paths), shown=shown, sources=sources, check_exports=True)


def transcript_suite(t: Transcript, subject: Any, *, variant: str, output_dir: str | None = None,
                     formats: list[str] | None = None, timeout_ms: int | None = None, name: str | None = None):
    """A Suite over the transcript's cases and one variant (the recorded runs or the live agent)."""
    from ..suite.config import SuiteConfig
    from ..suite.suite import Suite, Variant

    settings: dict = {"name": name or t.name}
    if output_dir:
        settings["output_dir"] = output_dir
    if formats:
        settings["formats"] = formats
    if timeout_ms:
        settings["timeout_ms"] = timeout_ms
    cfg = SuiteConfig.model_validate(settings)
    return Suite(safe_name(name or t.name), cfg, list(t.cases), [Variant(variant, subject)], t.graders,
                 Path.cwd(), t.source, list(t.cases))
