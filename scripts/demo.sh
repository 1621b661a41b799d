#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the embedded demo end to end, then write its HTML report.
# Everything it makes goes under demo/ (config.demo.yaml's workdir), apart from the full run's results/.
set -euo pipefail
if [ $# -gt 0 ]; then
    echo "usage: $0   (no arguments: sets up .venv, runs the demo under demo/, writes demo/results/report.html)" >&2
    [[ $1 == -h || $1 == --help ]] && exit 0 || exit 2
fi
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source .venv/bin/activate
start=$(date +%s)
snakemake all --configfile config.demo.yaml --cores 2
snakemake --configfile config.demo.yaml --cores 2 --report results/report.html
echo "demo finished in $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s:"
echo "  demo/results/table1.md, demo/results/table1.csv, demo/results/report.html"
cat demo/results/table1.md
