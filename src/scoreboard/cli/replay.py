"""`scoreboard replay`: run a transcript's prompt once against the live agent endpoint, score
every case against that one run, and compare it with the transcript's first run.

    scoreboard replay transcript.json --worker http://127.0.0.1:8787 --token "$TOKEN" \\
        --room lobby --agent assistant --prompt "search then answer"

POSTs {"stream": false, "prompt", "roomId", "agentId"} to WORKER + --path-template with
`Authorization: Bearer TOKEN` and waits for the completed run ({"run": {...}} or the run
object itself). Prompt, room and agent come from the flags, else the transcript (prompt,
roomId, agentId), else SCOREBOARD_PROMPT / SCOREBOARD_ROOM_ID / SCOREBOARD_AGENT_ID; worker
and token from the flags, else SCOREBOARD_WORKER_URL / SCOREBOARD_TOKEN. The token is never
written to a report or an error message (prefer the environment variable: flags show in `ps`).

The comparison with runs[0] is numeric and by tool name, not a judge: tools added and
removed, estimated cost, input/output tokens and latency deltas. It is printed and stored in
the report's run block under "replay". This spends a model turn on the agent's side.

Exit codes: 0 every case passed; 1 invalid input or missing settings (nothing sent);
2 the invoke failed (HTTP error, 401, timeout, malformed payload), report written with
every attempt marked error; 3 a case failed or was not assessed, or there are no cases.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable

NAME = "replay"
HELP = "run a transcript's prompt against the live agent once, score every case, diff vs runs[0]"
DESCRIPTION = __doc__

ENV = {"worker": "SCOREBOARD_WORKER_URL", "token": "SCOREBOARD_TOKEN", "room": "SCOREBOARD_ROOM_ID",
       "agent": "SCOREBOARD_AGENT_ID", "prompt": "SCOREBOARD_PROMPT"}
DEFAULT_PATH = "/agents/{agent}/invoke"
DEFAULT_TIMEOUT_MS = 120_000


from ..redact import REDACTED, scrub  # noqa: E402  (light: no third-party imports)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    from .common import duration
    from .score import add_report_arguments

    p.add_argument("transcript", metavar="TRANSCRIPT", help="transcript JSON file (its cases; runs[0] is the baseline)")
    p.add_argument("--worker", metavar="URL", help=f"agent server base URL (or {ENV['worker']})")
    p.add_argument("--token", metavar="TOKEN", help=f"bearer token (or {ENV['token']}, preferred)")
    p.add_argument("--room", metavar="ROOM", help=f"room id (or the file's roomId, or {ENV['room']})")
    p.add_argument("--agent", metavar="AGENT", help=f"agent id (or the file's agentId, or {ENV['agent']})")
    p.add_argument("--prompt", metavar="TEXT", help=f"prompt to send (or the file's prompt, or {ENV['prompt']})")
    p.add_argument("--path-template", default=DEFAULT_PATH, metavar="PATH",
                   help="request path; {agent} and {room} are filled in (default %(default)s)")
    p.add_argument("--timeout", type=duration("ms"), default=DEFAULT_TIMEOUT_MS, metavar="MS",
                   help="how long to wait for the completed run: milliseconds, or with a unit (90s, 2m) "
                        "(default %(default)s ms)")
    add_report_arguments(p)


def resolve_settings(args: argparse.Namespace, transcript, environ: dict | None = None) -> dict:
    """Flags > transcript file > environment; ConfigError naming what is missing."""
    from ..errors import ConfigError

    env = os.environ if environ is None else environ
    from_file = {"prompt": transcript.prompt, "room": transcript.room_id, "agent": transcript.agent_id}
    out: dict[str, Any] = {}
    for key in ("worker", "token", "room", "agent", "prompt"):
        value = getattr(args, key, None)
        if value in (None, ""):
            value = from_file.get(key)
        if value in (None, ""):
            value = env.get(ENV[key]) or None
        out[key] = value
    for key in ("worker", "token", "agent", "prompt"):
        if not out[key]:
            where = f"--{key}" + (f", the file's {'agentId' if key == 'agent' else key}" if key in from_file else "") + \
                f" or {ENV[key]}"
            raise ConfigError(f"replay needs the {key}: give {where}", field=key)
    worker = out["worker"].rstrip("/")
    if not worker.startswith(("http://", "https://")):
        raise ConfigError(f"the worker URL must start with http:// or https://, got {worker!r}", field="worker")
    if args.timeout <= 0:
        raise ConfigError("--timeout must be a positive number of milliseconds", field="timeout")
    from urllib.parse import quote

    try:
        path = args.path_template.format(agent=quote(out["agent"], safe=""), room=quote(out["room"] or "", safe=""))
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"--path-template may use {{agent}} and {{room}} only: {exc}", field="path_template") from None
    if not path.startswith("/"):
        path = "/" + path
    out["worker"], out["url"], out["timeout_ms"] = worker, worker + path, args.timeout
    return out


def redact_argv(argv: list[str], token: str | None) -> list[str]:
    """argv with the token's value replaced (as `--token X`, `--token=X` or anywhere else)."""
    out, hide_next = [], False
    for item in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
        elif item == "--token":
            out.append(item)
            hide_next = True
        elif item.startswith("--token="):
            out.append("--token=" + REDACTED)
        else:
            out.append(scrub(item, token))
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def diff_runs(base, live) -> dict:
    """Numeric and tool-name comparison of the live run with the baseline (not a judge)."""
    def delta(a, b):
        if not _number(a) or not _number(b):
            return None
        d = b - a
        return round(d, 10) if isinstance(d, float) else d

    base_tools = [c.get("name") for c in base.tool_calls]
    live_tools = [c.get("name") for c in live.tool_calls]
    out = {"baseline_run": base.id, "live_run": live.id,
           "tools_added": sorted({t for t in live_tools if t} - set(base_tools)),
           "tools_removed": sorted({t for t in base_tools if t} - set(live_tools)),
           "tool_calls": {"baseline": len(base_tools), "live": len(live_tools),
                          "delta": len(live_tools) - len(base_tools)},
           "status": {"baseline": base.status, "live": live.status, "changed": base.status != live.status}}
    for key, attr in (("estimated_cost", "cost_usd"), ("input_tokens", "input_tokens"),
                      ("output_tokens", "output_tokens"), ("latency_ms", "latency_ms")):
        a, b = getattr(base, attr), getattr(live, attr)
        out[key] = {"baseline": a, "live": b, "delta": delta(a, b)}
    return out


def diff_lines(diff: dict) -> list[str]:
    """The diff as terminal lines."""
    def fmt(entry: dict, money: bool = False) -> str:
        def show(v):
            if v is None:
                return "unknown"
            return f"${v:.6g}" if money else f"{v:g}"
        d = entry["delta"]
        sign = "" if d is None else ("+" if d > 0 else "")
        shown = "n/a" if d is None else (f"{sign}${d:.6g}" if money else f"{sign}{d:g}")
        return f"{show(entry['baseline'])} -> {show(entry['live'])} ({shown})"

    lines = [f"replay vs {diff['baseline_run']} (live run {diff['live_run']}):",
             f"  status: {diff['status']['baseline']} -> {diff['status']['live']}",
             f"  tools added: {', '.join(diff['tools_added']) or 'none'}; "
             f"removed: {', '.join(diff['tools_removed']) or 'none'} "
             f"({diff['tool_calls']['baseline']} -> {diff['tool_calls']['live']} calls)",
             f"  estimated cost: {fmt(diff['estimated_cost'], money=True)}",
             f"  input tokens: {fmt(diff['input_tokens'])}",
             f"  output tokens: {fmt(diff['output_tokens'])}",
             f"  latency ms: {fmt(diff['latency_ms'])}"]
    return lines


def parse_run_payload(text: str, url: str = "the agent"):
    """The live run from a response body (see scoreboard.subjects.live_agent)."""
    from ..subjects.live_agent import parse_run_payload as parse

    return parse(text, url)


def replay_block(settings: dict, baseline) -> tuple[dict, Callable]:
    """The report's run["replay"] block and the pipeline's finalize hook that fills it in from
    the live attempt's record (every case shares the one live run)."""
    block: dict = {"worker": settings["worker"], "url": settings["url"], "agent": settings["agent"],
                   "room": settings["room"], "prompt": settings["prompt"], "timeout_ms": settings["timeout_ms"],
                   "baseline_run": baseline.summary() if baseline else None, "live_run": None, "diff": None,
                   "error": None}

    def finalize(lookup) -> dict:
        from ..cases.transcript_model import RunRecord

        first = next((a for a in (lookup(cid, "live", 0) for cid in settings["case_ids"]) if a), None)
        if first is None:
            return {"replay": block}
        info = first.get("subject_info") or {}
        m = first.get("measurements") or {}
        block["wall_ms"] = info.get("wall_ms", m.get("latency_ms"))
        if first.get("output") is None:
            block["error"] = first.get("error")
            return {"replay": block}
        out = first["output"]
        live = RunRecord(id=str(info.get("live_run_id")), status=out.get("status"), output=out.get("text"),
                         tool_calls=list(out.get("tool_calls") or []), latency_ms=m.get("latency_ms"),
                         cost_usd=m.get("cost_usd"), input_tokens=m.get("input_tokens"),
                         output_tokens=m.get("output_tokens"), format="live")
        block["live_run"] = live.summary()
        if baseline is not None:
            block["diff"] = diff_runs(baseline, live)
        return {"replay": block}

    return block, finalize


def main(args: argparse.Namespace) -> int:
    from ..cases.transcript import load_replay_cases, transcript_suite
    from ..engine.pipeline import RunOptions, run
    from ..hashing import sha256_json
    from ..subjects.live_agent import LiveAgentSubject
    from .score import case_rows, finish, output_of, report_formats

    formats = report_formats(args.format)  # bad flags before any file is read
    transcript = load_replay_cases(args.transcript)
    settings = resolve_settings(args, transcript)
    for case in transcript.cases:  # the prompt actually sent is every case's input
        case.input = settings["prompt"]
        case.input_hash = sha256_json(case.input)
    baseline = transcript.runs[0] if transcript.runs else None
    subject = LiveAgentSubject(settings)
    # The runner's own deadline sits past ours so that a timeout reads as the invoke's timeout.
    suite = transcript_suite(transcript, subject, variant="live", output_dir=args.output_dir, formats=formats,
                             timeout_ms=settings["timeout_ms"] + 5_000, name=args.name)
    from ..record.terminal import printable

    for warning in transcript.warnings:
        print(printable(f"scoreboard: warning: {warning}"), file=sys.stderr)
    block, finalize = replay_block({**settings, "case_ids": [c.id for c in suite.cases]}, baseline)
    outcome = run(suite, RunOptions(argv=redact_argv(args.command_line, settings["token"]), formats=tuple(formats),
                                    progress=False, require_all_pass=True, extra_run=transcript.run_info(),
                                    finalize=finalize, output_json=output_of(args)))
    live_id = block["live_run"]["id"] if block.get("live_run") else "-"
    rows = case_rows(outcome.report, transcript.matches, run_label=f"{live_id} (live)")
    lines: list[str] = []
    if block.get("diff"):
        lines += diff_lines(block["diff"])
    elif block.get("live_run") and baseline is None:
        lines.append("replay: the transcript has no runs[0] to compare with")
    code = finish(outcome, rows, ("case", "run", "status", "reasons"), as_json=args.json, extra_lines=lines)
    if block.get("error"):
        print(f"scoreboard: error: replay: {block['error']}", file=sys.stderr)
    return code
