#!/usr/bin/env bash
# Set up scoreboard and run the offline demo: basic vs careful invoice extractor, 30 synthetic
# documents, 3 runs. No key, no network. Reports land in eval-results/invoices/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/scoreboard run examples/invoices/suite.yaml "$@"
