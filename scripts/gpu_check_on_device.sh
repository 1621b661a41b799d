#!/usr/bin/env bash
# The first command on a new GPU machine (docs/cluster.md): plain Python, no Snakemake.
#
#   scripts/gpu_check_on_device.sh OUTDIR [PAIRS_DIR]
#
# 1. python3 -m workflow_src.gpu_check: every model family of the config on the GPU against a
#    CPU fp32 reference, dtypes, host syncs, train.compile's modes, step times alone and at 2 and
#    4 jobs per device -> OUTDIR/gpu_check.{md,json}.
# 2. Given PAIRS_DIR (src-train.txt, tgt-train.txt: e.g. the fixtures' 10,000 en-de pairs copied
#    into gpu_pairs/, which git ignores), a softmax CE and an NLLvMF model trained for
#    $SECONDS_PER_MODEL seconds each (default 120) at the config's sizes -> OUTDIR/pairs_training.{md,json}
#    (the NLLvMF target embeddings there are a stated stand-in: random unit vectors).
#
# Needs python3 with torch (CUDA), numpy; the config is $CONFIG (default config.yaml), which needs
# PyYAML: without it, use a JSON copy (`python -m workflow_src.gpu_check export-config config.yaml
# gpu_pairs/config.json` where PyYAML is; CONFIG=gpu_pairs/config.json). Exits 1 if a check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
    echo "usage: $0 OUTDIR [PAIRS_DIR]" >&2
    exit 2
fi
out=$1
pairs=${2:-}
python=${PYTHON:-python3}
config=${CONFIG:-config.yaml}
if [[ $config == *.yaml ]] && ! "$python" -c "import yaml" 2>/dev/null; then
    for candidate in "${config%.yaml}.json" "${pairs:-gpu_pairs}/config.json"; do
        if [ -f "$candidate" ]; then config=$candidate; break; fi
    done
fi
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$python" -m workflow_src.gpu_check --config "$config" --out "$out" ${GPU_CHECK_ARGS:-}
status=$?
if [ -n "$pairs" ]; then
    "$python" -m workflow_src.gpu_check.pairs --config "$config" --pairs "$pairs" --out "$out" \
        --seconds "${SECONDS_PER_MODEL:-120}" || status=1
fi
echo "results: $out/gpu_check.md${pairs:+ and $out/pairs_training.md}" >&2
exit $status
