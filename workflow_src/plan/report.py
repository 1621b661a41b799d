"""The plan's Markdown (`<prefix>.md`): the H100 model's totals, floor and recommended jobs per
device, hours per table, the families, and how all of it is computed."""

from __future__ import annotations

from workflow_src.plan.counting import CLIPPING_ACCESSES, OPTIMISER_ACCESSES, RECURRENT_KERNELS_PER_STEP
from workflow_src.plan.steps import COUNTING_BATCH
from workflow_src.plan.tables import (SUMMARY_COLUMNS, cell, family_rows, h100_days_by_jobs_per_device,
                                      modelled_hours, recommended_jobs_per_device, seconds_cell, to_markdown)
from workflow_src.plan.timing import (ACHIEVED_FRACTION, DEV_DECODE_BATCH, FLOOR_FRACTION, H100_HBM_BYTES_PER_SECOND,
                                      H100_PEAK_FLOPS, HOST_SECONDS, KERNEL_SECONDS, LENGTH_SPREAD, STEPS, WARMUP,
                                      modelled_precision, wall_hours)

GOAL_DAYS = 5  # issue 21: `all` within 5 H100-days


def goal_sentence(rows: list[dict], families: list[dict], per_device: int, days: float) -> str:
    """Whether `all` fits GOAL_DAYS H100-days at `per_device`, and if not, what bounds it."""
    if days <= GOAL_DAYS:
        return f"At {per_device} job(s) per device the modelled {days:.3g} days are within the {GOAL_DAYS}-day goal."
    _, alone, busy = modelled_hours(rows)
    if sum(busy) >= wall_hours(alone, per_device):
        top = max(families, key=lambda f: f["h100_flop_hours"] + f["h100_memory_hours"] + f["h100_latency_hours"])
        family_busy = top["h100_flop_hours"] + top["h100_memory_hours"] + top["h100_latency_hours"]
        return (f"At {per_device} job(s) per device the modelled {days:.3g} days are above the {GOAL_DAYS}-day goal: "
                f"the GPU's busy time bounds them ({sum(busy):.4g} hours), of which the family `{top['family']}` "
                f"({top['jobs']} jobs) is the largest share, {family_busy:.4g} hours: {top['h100_flop_hours']:.4g} of "
                f"FLOPs, {top['h100_memory_hours']:.4g} of optimiser and clipping traffic, "
                f"{top['h100_latency_hours']:.4g} of kernel latency.")
    longest = max(rows, key=lambda r: r.get("h100_modelled_hours", 0.0))
    return (f"At {per_device} job(s) per device the modelled {days:.3g} days are above the {GOAL_DAYS}-day goal: "
            f"the jobs' own (host-bound) times bound them; the longest, {longest['dataset']} {longest['pair']} "
            f"{longest['experiment']}, takes {longest['h100_modelled_hours']:.4g} hours alone.")


def sharing_sentence(per_device: int, slowdown: float | None) -> str:
    """How the wall hours account for jobs sharing a device."""
    if per_device == 1:
        return "one job per device."
    if slowdown is None:
        return (f"the {per_device} jobs sharing a device assumed to run at their own speed: an optimistic bound "
                f"(results/gpu_check.json has no measurement of {per_device} processes on this device; it measures "
                "2 and 4 on CUDA).")
    return (f"each job {slowdown:.3g} times as long as alone: the median slowdown the GPU check measured with "
            f"{per_device} processes on the device (results/gpu_check.json).")


def markdown(config: dict, device_name: str, summary: list[dict], rows: list[dict], families: dict,
             timings_by_family: dict, model_only: bool = False, slowdown: float | None = None) -> str:
    precision = modelled_precision(config)
    total = next(row for row in summary if row["level"] == "total")
    per_device = config.get("gpu", {}).get("jobs_per_device", 1)
    by_jobs_per_device = h100_days_by_jobs_per_device(rows)
    recommended = recommended_jobs_per_device(by_jobs_per_device)
    family_table = family_rows(config, timings_by_family, rows)
    sized, _, _ = modelled_hours(rows)
    exaflop = sum(row["flops"] for row in sized) / 1e18
    terabytes = sum(row["bytes"] for row in sized) / 1e12
    measured = ("Counted, **not timed** (`--model-only`): the FLOPs, kernels, syncs and optimiser traffic of every "
                f"family on {device_name}" if model_only else
                f"Measured on **{device_name}** (config `train.device`: {config['train']['device']}): "
                f"{total['device_hours']:.4g} device-hours on this device")
    columns = [c for c in SUMMARY_COLUMNS if not (model_only and (c == "device_hours" or c.startswith("wall_")))]
    lines = [
        "# Cost plan", "",
        f"{measured}; {total['jobs']} training jobs ({total['jobs_without_size']} without a size).", "",
        f"**H100, modelled, not measured** ({precision}; config `train.precision`: "
        f"{config['train'].get('precision', 'unset')}): {exaflop:.3g} EFLOP and {terabytes:.3g} TB of optimiser and "
        f"clipping memory traffic; {total['h100_modelled_hours'] / 24:.3g} days one job at a time; "
        f"{total['h100_wall_hours_gpu1'] / 24:.3g} days on one H100 at {per_device} job(s) per device "
        f"(config `gpu.jobs_per_device`); the device busy {total['h100_busy_hours'] / 24:.3g} days of it. "
        f"**Floor: {total['h100_floor_hours'] / 24:.3g} days** (the FLOPs at {FLOOR_FRACTION:.0%} of the peak plus the "
        "optimiser and clipping traffic at HBM bandwidth; no launches, no host).", "",
        "| gpu.jobs_per_device | " + " | ".join(str(n) for n in by_jobs_per_device) + " |",
        "|---|" + "---|" * len(by_jobs_per_device),
        "| days for every job on one H100 (modelled) | " + " | ".join(f"{d:.3g}" for d in by_jobs_per_device.values()) + " |",
        "",
        f"**Recommended: `gpu.jobs_per_device: {recommended}`** ({by_jobs_per_device[recommended]:.3g} days, modelled; "
        "the fewest jobs per device within 2% of the best). "
        + goal_sentence(rows, family_table, recommended, by_jobs_per_device[recommended]) + " MPS: the model adds up the "
        "busy times of jobs sharing a GPU (their kernels never overlap in it), so what it credits to sharing is only "
        "one job's host time filled with another's kernels. NVIDIA MPS (one context for all the jobs) gives that; "
        "plain time-slicing between processes is not modelled and may give less. Run several jobs per device under "
        "MPS (docs/cluster.md).", "",
        "## Predicted hours per table, per paper and in total", "",
        *to_markdown(columns, summary), "",
        "A job shared by several tables or figures counts in each one's row, once in its paper's and the total. "
        + ("" if model_only else
           f"wall_hours_gpuN: `--resources gpu=N` with {per_device} job(s) per device (config `gpu.jobs_per_device`), "
           "a job and its decodes one after the other, dependencies ignored, "
           + sharing_sentence(per_device, slowdown) + " ")
        + "h100_modelled_hours: each job alone on an H100, one after another; h100_busy_hours: the GPU's busy time "
        "in them; h100_floor_hours: the floor; h100_wall_hours_gpuN: N H100s at the configured jobs per device. "
        "Per job: plan.jobs.csv.", "",
        "## Families", "",
        "Per step: GFLOP, kernels, optimiser and clipping traffic (MB), host syncs, the H100's modelled seconds "
        "(alone, GPU busy, host issuing) and which bounds it. Over the family's jobs (training, validation, decoding): "
        "modelled hours alone, of which launch-bound (the host slower than the GPU) and device-bound, the busy hours "
        "split into FLOPs, memory traffic and kernel latency, and the floor.", "",
        "| family | step s (measured) | step GFLOP | step kernels | step MB | step syncs | H100 step s (alone, busy, "
        "host) | bound | H100 tokens/s | jobs | hours | launch-bound h | device-bound h | FLOP h | memory h "
        "| latency h | floor h |",
        "|---|" + "---|" * 16,
    ]
    for row in family_table:
        lines.append(
            f"| {row['family']} | {seconds_cell(row['step_seconds'])} | {row['step_gflop']:.2f} | {row['step_kernels']} "
            f"| {row['step_optimiser_mb']:.0f} | {row['step_syncs']} | {row['h100_step_seconds_modelled']:.4f}, "
            f"{row['h100_step_busy_seconds_modelled']:.4f}, {row['h100_step_host_seconds_modelled']:.4f} | "
            f"{row['h100_step_bound']} | {row['h100_tokens_per_second_modelled']:.4g} | {row['jobs']} | "
            + " | ".join(cell(float(row[name])) for name in ("h100_hours", "h100_launch_bound_hours",
                                                              "h100_device_bound_hours", "h100_flop_hours",
                                                              "h100_memory_hours", "h100_latency_hours",
                                                              "h100_floor_hours")) + " |")
    sources = sorted({row["corpus_source"] for row in rows if "corpus_source" in row})
    counted_as = (f"counted at batches of {COUNTING_BATCH} and {2 * COUNTING_BATCH} sentences at the mean target "
                  "length and the FLOPs extrapolated to `train.batch_size`, affine in the batch: per-sentence work "
                  "times the batch, per-batch work (the joint paper's g_out(E) over the vocabulary or its sample, "
                  "the `output` form's) once (language models: at their own batch)" if model_only else
                  f"timed after {WARMUP} warm-up steps, the mean of {STEPS} steps at "
                  f"{', '.join(f'{f:g}' for f in LENGTH_SPREAD)} × the corpus's mean target length (both sides: "
                  "bucketed batches change shape from step to step), then counted once more at the mean length")
    lines += ["", "## How it is computed", "",
              "- Steps: untrained models of each family at the configured sizes, random batches of "
              f"`train.batch_size` sentences, {counted_as}; a step is forward, backward, gradient clipping and "
              "the optimiser. Batches are padded as `nmt_data.length_multiple` pads them on the device modelled "
              "(the mean padded width: length + (granule − 1) / 2), the loss over the real tokens only.",
              "- Training: step × ⌈training pairs / batch⌉ × `train.max_epochs` (or the experiment's `train.overrides`; "
              "an upper bound: patience may stop earlier); language models: step × ⌈tokens / (batch × bptt)⌉ × their "
              "fixed schedule's epochs.",
              f"- Validation, each epoch: the development set's loss (a forward per batch) and its greedy BLEU "
              f"(batches of {DEV_DECODE_BATCH}, decoding as many steps as the mean target length). The joint layer's "
              "g_out(E) over all of V is computed once per pass (it is cached while no parameter changes), not per batch.",
              "- Decoding (an estimate): a greedy decode of each test batch of `decode.batch_size`, "
              "K times that for beam K; decoding runs the mean target length, as trained models stop at </s>.",
              "- Not planned: data preparation, embeddings, alignment, benchmarks and rendering (CPU jobs or minutes).",
              "- Corpus sizes used: " + "; ".join(sources) + ".",
              "- **H100, modelled, not measured.** Per step, the GPU is busy "
              f"FLOPs / ({ACHIEVED_FRACTION} × peak) + bytes / {H100_HBM_BYTES_PER_SECOND / 1e12:g} TB/s + kernels × "
              f"{KERNEL_SECONDS * 1e6:g} µs, the peak at {precision} {H100_PEAK_FLOPS[precision] / 1e12:g} TFLOP/s "
              f"(H100 SXM, dense), and the host issues the kernels at {HOST_SECONDS * 1e6:g} µs each; a job alone takes "
              "the larger of the two (the host queues kernels ahead) plus, at each host sync, a drained and refilled "
              f"queue ({(HOST_SECONDS + KERNEL_SECONDS) * 1e6:g} µs). Jobs sharing a device run at their own speed "
              "until the GPU's busy time is the bound: max(Σ busy / GPUs, the longest-first schedule of the jobs' "
              "alone times on GPUs × jobs per device slots).",
              f"- Bytes: the optimiser's and gradient clipping's memory traffic, numel × itemsize per parameter times "
              f"{OPTIMISER_ACCESSES['Adam']} accesses for Adam (param, grad, exp_avg, exp_avg_sq read; three written), "
              f"{OPTIMISER_ACCESSES['SGD']} for SGD, plus {CLIPPING_ACCESSES} for clipping (the norm reads the "
              "gradients, the scaling reads and writes them). Activations' traffic is in the FLOP and kernel terms.",
              "- Kernels: one per tensor operator (views excluded); a fused "
              f"LSTM layer (oneDNN on the CPU, cuDNN on CUDA) counts {RECURRENT_KERNELS_PER_STEP['forward']} per time "
              f"step forward and {RECURRENT_KERNELS_PER_STEP['backward']} backward, and its FLOPs are added "
              "(FlopCounterMode counts neither). Translation steps are counted on the decoder's CUDA path (two "
              "products and one fused cell operator per layer and step, `workflow_src/model/lstm_cell.py`) and, off "
              "CUDA, dropout as CUDA's one kernel each way and the joint layer's sampled vocabulary as CUDA draws it; "
              "the language models' hand-unrolled cells are elementwise operators on every device.",
              "- Host syncs: operators whose result the host waits for on CUDA (a value read, nonzero, a boolean "
              "index, unique). A language model's counted step is train_lm's epoch over one segment, so its two "
              "per-epoch reads count in every step.",
              f"- Assumptions, not measurements: the achieved fraction ({ACHIEVED_FRACTION}), "
              f"{HOST_SECONDS * 1e6:g} µs per operator on the host, {KERNEL_SECONDS * 1e6:g} µs per kernel on the GPU, "
              "the fused LSTM's kernels per step, and the sharing of a device. A plan run on a GPU measures its own "
              "step times (device_hours), and those are the ones to trust.",
              f"- `train.compile` is {config['train'].get('compile', 'off')!r}: "
              + ("the kernels are counted as eager PyTorch runs them (the counting runs the step eagerly), so "
                 "the model ignores what compiling fuses; the measured step times include it."
                 if config["train"].get("compile", "off") != "off" else "eager PyTorch, as counted."), ""]
    return "\n".join(lines) + "\n"
