#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the embedded demo end to end, then write its HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source .venv/bin/activate
start=$(date +%s)
snakemake --configfile config.demo.yaml --cores 2 all
snakemake --configfile config.demo.yaml --cores 2 --report results/report.html
echo "demo finished in $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s:"
echo "  results/table1.md, results/table1.csv, results/report.html"
cat results/table1.md
