#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite, the demo DAG end to end included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source .venv/bin/activate
python -m pytest -v --durations=15 tests "$@"
