#!/usr/bin/env bash
# The first command on a new GPU machine (docs/cluster.md): plain Python, no Snakemake.
#
#   scripts/gpu_check_on_device.sh OUTDIR [PAIRS_DIR]
#
# In $GPU_CHECK_SECONDS (default 300: five minutes, so that a GPU lent for a quarter of an hour
# fits its start-up, this and a rerun):
# 1. python3 -m workflow_src.gpu_check --deadline: every family of the config's run at its sizes
#    on the GPU (memory, step time, host syncs, against the CPU fp32 reference), decoding, jobs
#    sharing the device, the configured train.compile, then each family's step timed again (the
#    faster kept) -> OUTDIR/gpu_check.{md,json}, rewritten after each item; what the deadline
#    leaves out is named there.
# 2. Given PAIRS_DIR (src-train.txt, tgt-train.txt: e.g. the fixtures' 10,000 en-de pairs copied
#    into gpu_pairs/, which git ignores), a softmax CE and an NLLvMF model trained for
#    $SECONDS_PER_MODEL seconds each (default 30) at the config's sizes -> OUTDIR/pairs_training.{md,json}
#    (the NLLvMF target embeddings there are a stated stand-in: random unit vectors). The check's
#    deadline leaves their time and PAIRS_SECONDS_EXTRA (default 20: imports, vocabularies) for them.
#
# Needs python3 with torch (CUDA), numpy; the config is $CONFIG (default config.yaml), which needs
# PyYAML: without it, use a JSON copy (`python -m workflow_src.gpu_check export-config config.yaml
# gpu_pairs/config.json` where PyYAML is; CONFIG=gpu_pairs/config.json). Exits 1 if a check failed
# or was not reached.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 1 || $# -gt 2 || ${1:-} == -* ]]; then
    echo "usage: $0 OUTDIR [PAIRS_DIR]   (settings: the comment at the top of this script)" >&2
    [[ ${1:-} == -h || ${1:-} == --help ]] && exit 0 || exit 2
fi
out=$1
pairs=${2:-}
python=${PYTHON:-python3}
config=${CONFIG:-config.yaml}
seconds=${GPU_CHECK_SECONDS:-300}
per_model=${SECONDS_PER_MODEL:-30}
deadline=$seconds
if [ -n "$pairs" ]; then
    deadline=$(( seconds - 2 * per_model - ${PAIRS_SECONDS_EXTRA:-20} ))
fi
if [[ $config == *.yaml ]] && ! "$python" -c "import yaml" 2>/dev/null; then
    for candidate in "${config%.yaml}.json" "${pairs:-gpu_pairs}/config.json"; do
        if [ -f "$candidate" ]; then config=$candidate; break; fi
    done
fi
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$python" -m workflow_src.gpu_check --config "$config" --out "$out" --deadline "$deadline" ${GPU_CHECK_ARGS:-}
status=$?
if [ -n "$pairs" ]; then
    "$python" -m workflow_src.gpu_check.pairs --config "$config" --pairs "$pairs" --out "$out" \
        --seconds "$per_model" || status=1
fi
echo "results: $out/gpu_check.md${pairs:+ and $out/pairs_training.md}" >&2
exit $status
