#!/usr/bin/env bash
# Set up scoreboard with everything its tests need, then run the whole test suite.
# The tests run in parallel, one test file per worker at a time (pytest-xdist, --dist loadfile:
# a file's tests keep their order and their module fixtures), one worker per CPU up to 4.
# SCOREBOARD_TEST_WORKERS=1 runs them in one process; extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
workers=${SCOREBOARD_TEST_WORKERS:-$(.venv/bin/python -c "import os; print(min(4, len(os.sched_getaffinity(0))))")}
parallel=()
if [ "$workers" -gt 1 ]; then
  parallel=(-n "$workers" --dist loadfile)
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider ${parallel[@]+"${parallel[@]}"} "$@"
