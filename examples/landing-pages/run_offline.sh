#!/usr/bin/env bash
# The landing-pages example end to end, offline: the scripted pixel judge on 127.0.0.1:8791,
# the judge's instrument check, the screen and held-out stages and their aggregate (the screen's
# pick, confirmed or not on the held-out cases), then the run with dQ as its gate.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
PY="${PYTHON:-$root/.venv/bin/python}"
cd "$here"
"$PY" pixel_judge.py --port "${JUDGE_PORT:-8791}" >/dev/null 2>&1 &
judge=$!
trap 'kill $judge 2>/dev/null || true' EXIT
for _ in $(seq 50); do "$PY" -c "import socket; socket.create_connection(('127.0.0.1', ${JUDGE_PORT:-8791}), 1)" 2>/dev/null && break; sleep 0.2; done
sb() { "$PY" -m scoreboard "$@"; }
sb run suite.yaml --stage check --no-progress
stages="eval-results/landing-pages/stages-$(date -u +%Y%m%dT%H%M%SZ)"
sb run suite.yaml --stage screen --no-progress --output "$stages/screen.json"
sb run suite.yaml --stage heldout --no-progress --output "$stages/heldout.json"
sb aggregate "$stages/screen.json" "$stages/heldout.json" --output "$stages/aggregate.json"
sb run suite.yaml --min-dq 1.0 --no-progress
