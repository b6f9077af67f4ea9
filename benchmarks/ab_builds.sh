#!/usr/bin/env bash
# An A/B of two builds against the bare aiohttp loop (benchmarks/README.md, the peer rows):
# the kit's mock server (../shared/bench), N cases at concurrency CONC and LATENCY ms, ROUNDS
# alternating rounds of: the bare loop, build A, build B (each a source tree run through
# benchmarks/peer_bench.py with PYTHONPATH at its src/). Prints one "name wall=SECONDS" line each.
#
#   git worktree add --detach /tmp/base <rev>; git worktree add --detach /tmp/head HEAD
#   DATA=~/.cache/scoreboard-peers/results/<stamp>/data bash benchmarks/ab_builds.sh /tmp/base /tmp/head
#
# DATA must hold the kit's qa_N.jsonl (bash ../shared/bench/setup_peers.sh and one run_peers.sh
# write it). Needs the kit's venv-bench for the mock and the bare loop.
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?the first build (a source tree)}; B=${2:?the second build (a source tree)}
N=${N:-10000}; CONC=${CONC:-200}; LATENCY=${LATENCY:-50}; ROUNDS=${ROUNDS:-3}
PEERS_DIR=${PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/scoreboard-peers}
VB=$PEERS_DIR/venv-bench/bin/python
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
WORK=$(mktemp -d)
"$VB" ../shared/bench/mock_openai.py --port "$PORT" --latency-ms "$LATENCY" > "$WORK/mock.log" 2>&1 &
MOCK=$!
trap 'kill $MOCK 2>/dev/null; rm -rf "$WORK"' EXIT
sleep 2
export DATA N CONC URL=http://127.0.0.1:$PORT/v1 MOCK_API_KEY=x
for _ in $(seq "$ROUNDS"); do
  /usr/bin/time -f "bare wall=%e user=%U sys=%S" "$VB" ../shared/bench/baseline_driver.py --data "$DATA/qa_$N.jsonl" \
    --base-url "$URL" -c "$CONC" --client aiohttp > /dev/null
  for tree in "$A" "$B"; do
    rm -rf "$WORK/run"; mkdir -p "$WORK/run"
    RUNDIR=$WORK/run PYTHONPATH=$tree/src /usr/bin/time -f "$tree wall=%e user=%U sys=%S" .venv/bin/python benchmarks/peer_bench.py > /dev/null
  done
done
