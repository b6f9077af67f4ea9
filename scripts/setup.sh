#!/usr/bin/env bash
# Set up scoreboard in ./.venv. With --test, also what the tests need: the test extras,
# Debian's chromium (browser tests), strace (loopback-only checks), postgresql (the history
# store's tests start a throwaway server with its initdb/pg_ctl), bubblewrap (the agent-task
# sandbox; as root also docker.io, for the Docker-sandbox tests), nodejs (the javascript grader) and the Claude Code and
# Codex CLIs from npm (agent-CLI subject tests), node-sql-parser (the sql grader) and natural (the meteor grader)
# under ./.agent-clis.
set -euo pipefail
cd "$(dirname "$0")/.."
want_test=0
[ "${1:-}" = "--test" ] && want_test=1

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
if [ "$want_test" = 1 ]; then
  # The offline embedding model's tests pull in PyTorch: take the CPU build (a file on this kind of
  # machine; several GB less than the CUDA build a bare 'torch' requirement would fetch).
  if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    .venv/bin/python -m pip install -q 'torch==2.13.0' >/dev/null 2>&1 || true
  fi
  .venv/bin/python -m pip install -q -e '.[test]'
else
  .venv/bin/python -m pip install -q -e .
fi
# The package's bytecode, as a non-editable install compiles it: a shell with
# PYTHONDONTWRITEBYTECODE set would otherwise compile every module at every start (0.15 s).
.venv/bin/python -m compileall -q src/scoreboard >/dev/null

warm_pid=""
if [ "$want_test" = 1 ]; then
  # pytest rewrites each test module's asserts before compiling it: 27 s of CPU for every xdist
  # worker that finds no cached rewrite (PYTHONDONTWRITEBYTECODE keeps pytest from caching it).
  # One collection with writing on, in the background while the system and npm packages install,
  # leaves the rewritten modules cached for the workers (they read a cache even with it set).
  env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest --collect-only -q -p no:cacheprovider \
    >/dev/null 2>&1 &
  warm_pid=$!
  need=()
  [ -x /usr/bin/chromium ] || need+=(chromium)
  command -v strace >/dev/null 2>&1 || need+=(strace)
  # history store (issue 18): the PostgreSQL tests need initdb and pg_ctl
  if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    need+=(postgresql)
  fi
  command -v node >/dev/null 2>&1 || need+=(nodejs)  # the javascript grader (promptfoo's assertions)
  command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)  # agent tasks: the sandbox around the agent
  # the Docker-sandbox tests start a throwaway dockerd, which needs root
  if [ "$(id -u)" -eq 0 ] && ! command -v dockerd >/dev/null 2>&1; then need+=(docker.io); fi
  if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
    if [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ]; then
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
    else
      echo "setup: cannot install ${need[*]} (not root, no sudo); the tests that need them will be skipped" >&2
    fi
  fi
  if command -v npm >/dev/null 2>&1; then
    # what is missing, installed by one npm command (each npm install re-resolves the whole folder)
    npm_need=()
    [ -x .agent-clis/node_modules/.bin/claude ] || npm_need+=(@anthropic-ai/claude-code)
    [ -x .agent-clis/node_modules/.bin/codex ] || npm_need+=(@openai/codex)
    # the sql grader's tests (promptfoo's is-sql/contains-sql parse with node-sql-parser)
    [ -f .agent-clis/node_modules/node-sql-parser/package.json ] || npm_need+=(node-sql-parser)
    # the meteor grader's tests (promptfoo's meteor: natural's Porter stemmer and WordNet)
    [ -f .agent-clis/node_modules/natural/package.json ] || npm_need+=(natural@^8.1.1)
    if [ ${#npm_need[@]} -gt 0 ]; then
      mkdir -p .agent-clis
      npm install --prefix .agent-clis --no-fund --no-audit --loglevel=error "${npm_need[@]}" >/dev/null
    fi
  else
    echo "setup: npm not found; the agent-CLI tests will be skipped" >&2
  fi
fi
# the rewritten test modules cached (a failed collection is the test run's to report)
[ -z "$warm_pid" ] || wait "$warm_pid" || true
