"""Seconds: a step measured on the training device, the H100 model of its counts, a job's seconds
from its family's step, and wall hours of many jobs on a few GPUs.

The H100 model (modelled, never measured), per step, forward or decode:

    flop    = FLOPs / (ACHIEVED_FRACTION · peak[precision])
    memory  = bytes / HBM bandwidth                 (the optimiser's and clipping's traffic)
    busy    = flop + memory + kernels · KERNEL_SECONDS              (the GPU)
    host    = kernels · HOST_SECONDS                                (eager PyTorch issuing them)
    alone   = max(host, busy) + syncs · (HOST_SECONDS + KERNEL_SECONDS)
              (the host queues kernels ahead, but not past a sync: the queue drains and refills)
    floor   = FLOPs / (FLOOR_FRACTION · peak) + bytes / HBM bandwidth   (no launches, no host)

A part is launch-bound when host > busy, else device-bound.
"""

from __future__ import annotations

import dataclasses
import heapq
import statistics
import time

from workflow_src import layout, lm_specs, registry
from workflow_src.plan.counting import Counts, count
from workflow_src.plan.jobs import Corpus, PlannedJob

GPU_COUNTS = (1, 2, 4, 8)
H100_PEAK_FLOPS = {"fp32": 67e12, "tf32": 495e12, "bf16": 989e12}  # SXM, dense (NVIDIA's datasheet)
H100_HBM_BYTES_PER_SECOND = 3.35e12  # SXM, HBM3 (NVIDIA's datasheet)
ACHIEVED_FRACTION = 0.3  # of the peak, for matrix products of batch 64 x 1024 (an assumption)
FLOOR_FRACTION = 0.4  # the floor's share of the peak (issue 21's definition of the floor)
HOST_SECONDS = 8e-6  # per tensor operator, on the host: eager PyTorch's dispatch and launch (an assumption)
KERNEL_SECONDS = 2.5e-6  # per kernel, on the GPU: a small kernel's launch latency and run (an assumption)
JOBS_PER_DEVICE_CHOICES = (1, 2, 3, 4, 6, 8)  # the modelled H100 table of gpu.jobs_per_device
# Batches are bucketed by length, so their shapes vary from step to step: each part is timed once at
# each of these multiples of the mean length (the mean of their times: the cost at the mean length,
# with the cost of changing shapes), after WARMUP calls; then counted once more at the mean length.
LENGTH_SPREAD = (1.0, 1.25, 1.5, 0.5, 0.75)
WARMUP, STEPS = 5, 5
DEV_DECODE_BATCH = 64  # train.development_bleu translates with translate()'s default batch
PARTS = ("step", "forward", "decode")


@dataclasses.dataclass(frozen=True)
class Timing:
    """Seconds of one training step, one validation forward and one greedy decode of a batch,
    with the counts of each (for the modelled H100 time)."""

    step: float | None  # None: counted only (--model-only)
    forward: float | None
    decode: float | None
    counts: dict  # "step" | "forward" | "decode" -> Counts

    def flop_seconds(self, part: str, precision: str, fraction: float = ACHIEVED_FRACTION) -> float:
        return self.counts[part].flops / (fraction * H100_PEAK_FLOPS[precision])

    def memory_seconds(self, part: str) -> float:
        return self.counts[part].bytes / H100_HBM_BYTES_PER_SECOND

    def latency_seconds(self, part: str) -> float:
        return self.counts[part].kernels * KERNEL_SECONDS

    def host_seconds(self, part: str) -> float:
        return self.counts[part].kernels * HOST_SECONDS

    def modelled_device(self, part: str, precision: str) -> float:
        """The H100's busy seconds: FLOPs / (fraction · peak) + bytes / bandwidth + kernels · KERNEL_SECONDS."""
        return self.flop_seconds(part, precision) + self.memory_seconds(part) + self.latency_seconds(part)

    def modelled(self, part: str, precision: str) -> float:
        """A job's seconds alone on an H100: max(host, device), the host queueing kernels ahead,
        plus a drained and refilled queue at each sync."""
        return (max(self.host_seconds(part), self.modelled_device(part, precision))
                + self.counts[part].syncs * (HOST_SECONDS + KERNEL_SECONDS))

    def launch_bound(self, part: str, precision: str) -> bool:
        return self.host_seconds(part) > self.modelled_device(part, precision)

    def floor(self, part: str, precision: str) -> float:
        """FLOPs at FLOOR_FRACTION of the peak plus the memory traffic at HBM bandwidth."""
        return self.flop_seconds(part, precision, FLOOR_FRACTION) + self.memory_seconds(part)


def modelled_precision(config: dict) -> str:
    """The precision a CUDA job of this config runs in (`precision.resolve`: `auto` is bf16),
    which the H100 model assumes (the plan's markdown says which it took)."""
    import torch

    from workflow_src.model import precision as precision_setting

    return precision_setting.resolve(config["train"].get("precision", "auto"), torch.device("cuda"))


# -- measuring on the device -------------------------------------------------------------------------
def measure(function, warmup: int, steps: int, device=None) -> tuple[float | None, Counts]:
    """Mean seconds of `function()` over `steps` calls after `warmup` calls (None: no call timed),
    and the counts of one more call (`counting.count`; off CUDA, counted as CUDA runs it)."""
    from workflow_src.plan.benchmark import synchronize

    for _ in range(warmup):
        function()
    times = []
    for _ in range(steps):
        if device is not None:
            synchronize(device)
        started = time.perf_counter()
        function()
        if device is not None:
            synchronize(device)
        times.append(time.perf_counter() - started)
    counts = count(function, as_cuda=device is None or device.type != "cuda")
    return (statistics.mean(times) if times else None), counts


def timings(functions: dict, repeats: dict, device, step_bytes: float = 0.0) -> Timing:
    """Each part of `functions` measured with its (warmup, steps) of `repeats`; the step's counts
    with the optimiser's and clipping's `step_bytes`."""
    parts = {name: measure(functions[name], *repeats[name], device) for name in PARTS}
    counts = {name: counted for name, (_, counted) in parts.items()}
    counts["step"] = dataclasses.replace(counts["step"], bytes=step_bytes)
    return Timing(*(parts[name][0] for name in PARTS), counts=counts)


# -- a job's seconds -----------------------------------------------------------------------------------
def beam_width(search: str) -> int:
    return 1 if search == "greedy" else int(search.removeprefix("beam"))


def job_seconds(config: dict, job: PlannedJob, corpus: Corpus, timing: Timing, part=None) -> dict[str, float]:
    """Predicted seconds of a job's training, validation and decoding from its family's timings;
    `part(name)` gives the seconds of "step", "forward" or "decode" (default: the measured ones)."""
    import math

    seconds = part or (lambda name: getattr(timing, name))
    if job.kind == "lm":
        spec = lm_specs.resolve_lm_spec(config, job.dataset, job.experiment, job.seed)
        model = registry.language_model(job.experiment)
        tokens = config["lm"]["train_words"][model.size] if model.sliced else corpus.train
        epochs = spec["max_epochs"] * spec.get("sessions", 1)
        segments = tokens / (spec["batch_size"] * spec["bptt"])
        held_out = lambda n: n / (10 * spec["bptt"])  # noqa: E731  (train_lm's eval_batch_size 10)
        return {"epochs": epochs, "steps_per_epoch": math.ceil(segments),
                "train": seconds("step") * math.ceil(segments) * epochs,
                "validation": seconds("forward") * held_out(corpus.dev) * epochs,
                "decoding": seconds("forward") * (held_out(corpus.dev) + held_out(corpus.test))}  # the final scores
    t = config["train"]
    steps = math.ceil(corpus.train / t["batch_size"])
    epochs = layout.schedule(t, job.experiment)["max_epochs"]  # train.overrides included
    validation = (seconds("forward") * math.ceil(corpus.dev / t["batch_size"])
                  + seconds("decode") * math.ceil(corpus.dev / DEV_DECODE_BATCH))
    decoding = sum(seconds("decode") * beam_width(s) * math.ceil(corpus.test / config["decode"]["batch_size"])
                   for s in sorted(job.searches))
    return {"epochs": epochs, "steps_per_epoch": steps, "train": seconds("step") * steps * epochs,
            "validation": validation * epochs, "decoding": decoding}


# -- many jobs on a few GPUs -------------------------------------------------------------------------------
def sharing_slowdown(gpu_check: dict | None, per_device: int) -> float | None:
    """How much longer a job takes when `per_device` jobs share its device, as the GPU check measured
    it (`results/gpu_check.json`, `jobs_per_device`): the median over the families of

        step seconds with `per_device` processes on the device / step seconds alone

    1 for one job per device; None where the check did not measure that many (off CUDA, or another count)."""
    if per_device == 1:
        return 1.0
    shared = (gpu_check or {}).get("jobs_per_device")
    if not isinstance(shared, dict) or str(per_device) not in shared:
        return None
    alone = gpu_check["step_seconds"]
    ratios = sorted(entry["step_seconds"] / alone[name] for name, entry in shared[str(per_device)].items() if name in alone)
    if not ratios:
        return None
    middle = len(ratios) // 2
    return ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2


def wall_hours(durations: list[float], slots: int) -> float:
    """The makespan of `durations` on `slots` parallel slots, longest first onto the least loaded
    (LPT list scheduling; dependencies between jobs ignored)."""
    loads = [0.0] * slots
    for duration in sorted(durations, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + duration)
    return max(loads)


def modelled_wall_hours(alone: list[float], busy: list[float], gpus: int, per_device: int) -> float:
    """Modelled H100 wall hours of jobs sharing `gpus` devices, `per_device` at a time:

        max(Σ busy / gpus, LPT makespan of the jobs' alone hours on gpus · per_device slots)

    jobs run at their own (host-bound) speed until the devices' busy time is the bound (the busy
    times of jobs sharing a device add up: their kernels are not assumed to overlap)."""
    return max(sum(busy) / gpus, wall_hours(alone, gpus * per_device))
