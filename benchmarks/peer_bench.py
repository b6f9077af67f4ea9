"""scoreboard as an extra harness of ../shared/bench (run_peers.sh).

run_peers.sh runs this with DATA, N, URL, CONC and RUNDIR in the environment. It runs the
kit's N arithmetic samples through scoreboard's `openai` subject against the kit's mock
server at concurrency CONC, with a `contains` grader, the attempt log and the JSON, Markdown
and HTML reports: everything a real run does. The last stdout line is
{"correct": C, "samples": S}, read from the written JSON report.

    bash ../shared/bench/setup_peers.sh
    HARNESSES="scoreboard baseline-aiohttp promptfoo inspect" CONFIGS="1000:50 1000:0" \\
      HARNESS_scoreboard='.venv/bin/python benchmarks/peer_bench.py' bash ../shared/bench/run_peers.sh

The concurrency-200 row of benchmarks/README.md (10,000 cases, 50 ms latency; the mock's
max in-flight column must read 200):

    HARNESSES="scoreboard baseline-aiohttp" CONFIGS="10000:50" CONC=200 \\
      HARNESS_scoreboard='.venv/bin/python benchmarks/peer_bench.py' bash ../shared/bench/run_peers.sh
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from bytecode import compiled


def main() -> int:
    parser = argparse.ArgumentParser(description="scoreboard harness for ../shared/bench/run_peers.sh")
    parser.add_argument("--formats", default="json,md,html", help="report formats (default json,md,html)")
    parser.add_argument("--store", help="the history store (default: the run's own, .scoreboard/ beside the "
                                        "reports; none: report files only)")
    args = parser.parse_args()
    compiled()  # as installed: bytecode compiled (bytecode.py)
    data, n = Path(os.environ["DATA"]), os.environ["N"]
    url, conc = os.environ["URL"], os.environ.get("CONC", "50")
    rundir = Path(os.environ.get("RUNDIR", "."))
    rundir.mkdir(parents=True, exist_ok=True)
    cases = rundir / f"cases_{n}.jsonl"
    # The kit's samples are {"id", "input", "target"}; the target must occur in the reply. (The
    # kit writes the other harnesses' inputs before timing; this conversion is timed, so it is
    # done with the JSON codec scoreboard itself uses.)
    from scoreboard.jsonio import dumps_line, loads

    with open(data / f"qa_{n}.jsonl", "rb") as src, open(cases, "wb") as dst:
        dst.writelines(dumps_line({"id": str(row["id"]), "input": row["input"], "expected": row["target"],
                                   "grader": "contains"})
                       for row in map(loads, filter(bytes.strip, src)))
    subject = json.dumps({"type": "openai", "base_url": url, "model": "mock-model", "api_key_env": "MOCK_API_KEY"})

    # what the `scoreboard` console script runs (main, then no collection at exit)
    from scoreboard.cli.main import console as cli_main

    out = rundir / "eval-results"
    code = cli_main(["run", "--cases", str(cases), "--subject", subject, "--concurrency", conc,
                     "--name", "peer-bench", "--output-dir", str(out), "--format", args.formats,
                     "--no-progress", *(["--store", args.store] if args.store else [])])
    if code not in (0, 3):
        print(json.dumps({"correct": 0, "samples": 0, "exit_code": code}))
        return code
    summary = report_summary(next((out / "peer-bench").glob("*.json")))
    (variant,) = summary["variants"].values()
    sys.stdout.flush()
    print(json.dumps({"correct": variant["passed"], "samples": variant["attempts"]}))
    return 0


def report_summary(path: Path) -> dict:
    """The report's summary, decoded from the end of the file (the summary follows the attempts),
    so counting does not parse every attempt again."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - (4 << 20)))
        tail = handle.read().decode("utf-8", errors="replace")
    at = tail.rfind('],"summary":')
    value, _ = json.JSONDecoder().raw_decode(tail, at + len('],"summary":'))
    return value


if __name__ == "__main__":
    raise SystemExit(main())
