#!/usr/bin/env bash
# Set up scoreboard with everything its tests need, then run the whole test suite.
# The tests run in parallel, one test file per worker at a time (pytest-xdist, --dist loadfile:
# a file's tests keep their order and their module fixtures), one worker per CPU plus one, up
# to 4: a test waiting on a server, a browser or a subprocess leaves its CPU idle (at one per
# CPU, 10-40% of CPU time went unused on a 2-CPU machine).
# SCOREBOARD_TEST_WORKERS=1 runs them in one process; extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
workers=${SCOREBOARD_TEST_WORKERS:-$(.venv/bin/python -c "import os; print(min(4, len(os.sched_getaffinity(0)) + 1))")}
parallel=()
if [ "$workers" -gt 1 ]; then
  parallel=(-n "$workers" --dist loadfile)
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider ${parallel[@]+"${parallel[@]}"} "$@"
