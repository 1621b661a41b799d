#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite, the demo DAG end to end included, on two
# workers: the demo's tests on one (its Snakemake run takes the 2 cores it is given), the other
# modules spread over both. Extra arguments go to pytest: `-m unit` is the fast tier (no Snakemake,
# no demo), `-m workflow` the dry runs, small DAGs and Slurm, `-m e2e` the demo (tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source .venv/bin/activate
python -m pytest -v --durations=15 -n "${TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder tests "$@"
