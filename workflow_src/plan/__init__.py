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
    Beside the measured hours, an H100 estimate from a model, never measured:

        busy_H100  = FLOPs / (ACHIEVED_FRACTION · peak[precision]) + bytes / HBM + kernels · KERNEL_SECONDS
        alone_H100 = max(kernels · HOST_SECONDS, busy_H100) + syncs · (HOST_SECONDS + KERNEL_SECONDS)
        wall on N H100s, J jobs each = max(Σ busy / N, LPT of the alone times on N · J slots)

    with the FLOPs, kernels, host syncs and optimiser bytes of one step counted while it is timed.

Modules, imported one way (cost -> report -> tables -> steps -> timing -> counting, jobs):
    jobs      the planned jobs, their corpus sizes and families
    counting  FLOPs, kernels, syncs and optimiser bytes of one call, padding, extrapolation
    timing    measuring on the device, the H100 model, a job's seconds, wall hours
    steps     the step, forward and decode of a family, timed or counted
    tables    CSV rows: jobs, summary, families;  report: the Markdown;  compare: plan vs actual
    cost      the plan and the command line (`python -m workflow_src.plan`)
    `--model-only` counts without timing, on the CPU: the H100 model of the full configuration in
    minutes (`snakemake results/plan_modelled.md`), with the floor (FLOPs at 40% of the peak plus
    the optimiser's memory traffic at HBM bandwidth) and a recommended `gpu.jobs_per_device`.

`python -m workflow_src.plan compare --jobs results/plan.jobs.csv --out-prefix results/plan_vs_actual` (.csv, .md, .html)
    beside each trained job's predicted seconds, the seconds its metrics.jsonl records
    (translation: train_seconds + validation_seconds per epoch; language models: seconds).
"""


from workflow_src.plan.compare import compare, within_factor  # noqa: F401
from workflow_src.plan.cost import plan  # noqa: F401
from workflow_src.plan.counting import RECURRENT_KERNELS_PER_STEP, Counts, dropout_as_cuda  # noqa: F401
from workflow_src.plan.jobs import (Corpus, PlannedJob, family_label, lm_corpus, lm_family, metrics_file, nmt_family,
                                    parallel_corpus, planned_jobs)
from workflow_src.plan.steps import COUNTING_BATCH, count_nmt, time_lm, time_nmt  # noqa: F401
from workflow_src.plan.tables import family_rows, h100_days_by_jobs_per_device, summary_rows  # noqa: F401
from workflow_src.plan.timing import (ACHIEVED_FRACTION, H100_HBM_BYTES_PER_SECOND, H100_PEAK_FLOPS, HOST_SECONDS,
                                      KERNEL_SECONDS, Timing, job_seconds, measure, modelled_precision,
                                      modelled_wall_hours, wall_hours)
