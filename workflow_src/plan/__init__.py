"""The cost plan: what every table will cost on this device, before the run (and, after it, how
close the prediction came).

`python -m workflow_src.plan plan --config CONFIG.json --out-prefix results/plan [--threads N]`
    times a few training steps (forward, backward, optimiser; after warm-up), a validation
    forward and a greedy decode of one model of every family (one architecture, output layer,
    loss and vocabulary size at the configured sizes) on the training device, and multiplies:

        train      = step · ⌈pairs / batch⌉ · epochs                  (LM: segments = tokens / (batch · bptt))
        validation = epochs · (forward · ⌈dev / batch⌉ + greedy · ⌈dev / 64⌉)   (LM: forward per validation segment)
        decoding   = greedy · ⌈test / decode.batch_size⌉ · K        per decoded search (beam K; greedy: K = 1)

    Corpus sizes come from the prepared data's statistics when they exist (`tok/stats.<split>.json`,
    `results/data/<corpus>/stats.json`), else from the sizes the papers state
    (`workflow_src.data.statistics.STATED`), with `benchmarks.length` units per sentence; each job says
    which. Writes `<prefix>.csv` (device-hours per table, per paper and in total, wall hours for
    `--resources gpu=N`), `<prefix>.jobs.csv` (every job), `<prefix>.families.csv` (each family's
    step: seconds, target tokens per second, FLOPs, kernels) and `<prefix>.md` (with the assumptions).
    Beside the measured hours, an H100 estimate from a model fitted to what a GPU measured
    (`fit`: a GPU check's step times against the plan's counts of the same steps), eager and with
    each step, forward and decoding step replayed as a CUDA graph (`train.compile: graphs`):

        busy_H100  = FLOPs / (achieved · peak[precision]) + bytes / HBM + kernels' latency
        host_H100  = operators · host_operator + views · host_view     (graphs: a replay and a batch's copies)
        alone_H100 = max(host, busy) + syncs · (host_operator + kernel)
        wall on N H100s, J jobs each = max(Σ busy / N, LPT of the alone times on N · J slots)
                                       (+ the exclusive jobs, each holding a device)

    with the FLOPs, kernels, operators, views, host syncs and optimiser bytes of one step counted
    while it is timed (costmodel.py, fit.py).

Modules, imported one way (cost -> report -> tables -> fit, steps -> timing -> costmodel -> counting, jobs):
    jobs       the planned jobs, their corpus sizes and families
    counting   FLOPs, kernels, operators, views, syncs and optimiser bytes of one call, padding, extrapolation
    costmodel  a device's documented peaks, and seconds from counts: host and GPU, eager and as graphs
    fit        the cost model fitted to a GPU check's step times, eager and as graphs (docs/gpu_check/2026-11-27-h200/)
    timing     measuring on the device, a job's seconds, wall hours
    steps      the step, forward and decode of a family, timed or counted
    tables     CSV rows: jobs, summary, families;  report: the Markdown;  compare: plan vs actual
    cost       the plan and the command line (`python -m workflow_src.plan`)
    `--model-only` counts without timing, on the CPU: the H100 model of the full configuration in
    minutes (`snakemake results/plan_modelled.md`), with the floor (FLOPs at 40% of the peak plus
    the optimiser's memory traffic at HBM bandwidth) and the recommended `gpu.jobs_per_device` and
    `threads.train`, eager and as graphs.

`python -m workflow_src.plan count-measured --config config.yaml --measured CHECK/gpu_check.json --out COUNTS.json
 [--first GRAPHS/gpu_check.json] [--resume]`
    the plan's counts of the steps a GPU check timed (`fit.count_measured`), for the fit: each family
    at full size on the CPU (seconds to minutes each), written as it goes.

`python -m workflow_src.plan compare --jobs results/plan.jobs.csv --out-prefix results/plan_vs_actual`
    (.csv, .md, .html) beside each trained job's predicted seconds, the seconds its metrics.jsonl records
    (translation: train_seconds + validation_seconds per epoch; language models: seconds).
"""

from workflow_src.plan.compare import compare, within_factor
from workflow_src.plan.cost import plan
from workflow_src.plan.costmodel import H100, H200, CostModel, Device
from workflow_src.plan.counting import RECURRENT_KERNELS_PER_STEP, Counts, dropout_as_cuda
from workflow_src.plan.jobs import (
    Corpus,
    PlannedJob,
    family_label,
    lm_corpus,
    lm_family,
    metrics_file,
    nmt_family,
    parallel_corpus,
    planned_jobs,
)
from workflow_src.plan.steps import COUNTING_BATCH, count_nmt, time_lm, time_nmt
from workflow_src.plan.tables import family_rows, h100_days_by_jobs_per_device, summary_rows
from workflow_src.plan.timing import (
    Timing,
    job_seconds,
    measure,
    modelled_precision,
    modelled_wall_hours,
    wall_hours,
)

__all__ = [
    "compare",
    "within_factor",
    "plan",
    "H100",
    "H200",
    "CostModel",
    "Device",
    "RECURRENT_KERNELS_PER_STEP",
    "Counts",
    "dropout_as_cuda",
    "Corpus",
    "PlannedJob",
    "family_label",
    "lm_corpus",
    "lm_family",
    "metrics_file",
    "nmt_family",
    "parallel_corpus",
    "planned_jobs",
    "COUNTING_BATCH",
    "count_nmt",
    "time_lm",
    "time_nmt",
    "family_rows",
    "h100_days_by_jobs_per_device",
    "summary_rows",
    "Timing",
    "job_seconds",
    "measure",
    "modelled_precision",
    "modelled_wall_hours",
    "wall_hours",
]
