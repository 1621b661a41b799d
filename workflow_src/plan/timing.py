"""Seconds: a step measured on the training device, the modelled H100 seconds of its counts
(`costmodel.CostModel`, eager or as CUDA graphs), a job's seconds from its family's step, and
wall hours of many jobs on a few GPUs. A part is launch-bound when the host is slower than the
GPU, else device-bound.
"""

from __future__ import annotations

import dataclasses
import heapq
import statistics
import time

from workflow_src import layout, lm_specs, registry
from workflow_src.plan.costmodel import CostModel, as_graphs
from workflow_src.plan.counting import Counts, count
from workflow_src.plan.jobs import Corpus, PlannedJob

GPU_COUNTS = (1, 2, 4, 8)
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
    with the counts of each (for the modelled seconds). Replayed as graphs, FLOPs and kernels
    grow by `width_ratio` (the bucket-padded width over the counted one) and a decode is
    `decode_steps` replays, one per target position."""

    step: float | None  # None: counted only (--model-only)
    forward: float | None
    decode: float | None
    counts: dict  # "step" | "forward" | "decode" -> Counts
    width_ratio: float = 1.0
    decode_steps: int = 1

    def counted(self, part: str, mode: str = "eager") -> Counts:
        if mode == "eager":
            return self.counts[part]
        return as_graphs(self.counts[part], self.width_ratio, keep_syncs=part == "decode")

    def replays(self, part: str, mode: str) -> int | None:
        return None if mode == "eager" else (self.decode_steps if part == "decode" else 1)

    def flop_seconds(self, part: str, precision: str, model: CostModel, mode: str = "eager") -> float:
        return model.flop_seconds(self.counted(part, mode), precision)

    def memory_seconds(self, part: str, model: CostModel, mode: str = "eager") -> float:
        return model.memory_seconds(self.counted(part, mode))

    def latency_seconds(self, part: str, model: CostModel, mode: str = "eager") -> float:
        return model.latency_seconds(self.counted(part, mode))

    def recurrent_seconds(self, part: str, model: CostModel, mode: str = "eager") -> float:
        return model.recurrent_seconds(self.counted(part, mode))

    def host_seconds(self, part: str, model: CostModel, mode: str = "eager") -> float:
        return model.host(self.counted(part, mode), self.replays(part, mode))

    def modelled_device(self, part: str, precision: str, model: CostModel, mode: str = "eager") -> float:
        """The GPU's busy seconds."""
        return model.busy(self.counted(part, mode), precision)

    def modelled(self, part: str, precision: str, model: CostModel, mode: str = "eager") -> float:
        """A job's seconds alone on the modelled device."""
        return model.alone(self.counted(part, mode), precision, self.replays(part, mode))

    def launch_bound(self, part: str, precision: str, model: CostModel, mode: str = "eager") -> bool:
        return self.host_seconds(part, model, mode) > self.modelled_device(part, precision, model, mode)

    def floor(self, part: str, precision: str, model: CostModel) -> float:
        """FLOPs at FLOOR_FRACTION of the peak plus the memory traffic at HBM bandwidth."""
        return model.floor(self.counts[part], precision)


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
    from workflow_src.model.timing import synchronize

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
        spec = lm_specs.lm_spec(config, job.dataset, job.experiment, job.seed)
        model = registry.language_model(job.experiment)
        tokens = config["lm"]["train_words"][model.size] if model.sliced else corpus.train
        epochs = spec.max_epochs * spec.sessions
        segments = tokens / (spec.batch_size * spec.bptt)
        held_out = lambda n: n / (spec.eval_batch_size * spec.bptt)  # noqa: E731
        return {
            "epochs": epochs,
            "steps_per_epoch": math.ceil(segments),
            "train": seconds("step") * math.ceil(segments) * epochs,
            "validation": seconds("forward") * held_out(corpus.dev) * epochs,
            "decoding": seconds("forward") * (held_out(corpus.dev) + held_out(corpus.test)),
        }  # the final scores
    t = config["train"]
    batch = layout.batch_size(t, layout.training_group(registry.experiment(job.experiment)))
    steps = math.ceil(corpus.train / batch)
    epochs = layout.schedule(t, job.experiment)["max_epochs"]  # train.overrides included
    validation = seconds("forward") * math.ceil(corpus.dev / batch) + seconds("decode") * math.ceil(
        corpus.dev / DEV_DECODE_BATCH
    )
    decoding = sum(
        seconds("decode") * beam_width(s) * math.ceil(corpus.test / config["decode"]["batch_size"])
        for s in sorted(job.searches)
    )
    return {
        "epochs": epochs,
        "steps_per_epoch": steps,
        "train": seconds("step") * steps * epochs,
        "validation": validation * epochs,
        "decoding": decoding,
    }


# -- many jobs on a few GPUs -------------------------------------------------------------------------------
def sharing_slowdown(gpu_check: dict | None, per_device: int) -> float | None:
    """How much longer a job takes when `per_device` jobs share its device, as the GPU check measured
    it (`results/gpu_check.json`, `jobs_per_device`): the median over the families of

        step seconds with `per_device` processes on the device / step seconds alone

    alone: timed beside the shared run (the entry's `alone_seconds`), or, in a report without it,
    the family's `step_seconds`. 1 for one job per device; None where the check did not measure
    that many (off CUDA, or another count)."""
    if per_device == 1:
        return 1.0
    shared = (gpu_check or {}).get("jobs_per_device")
    if not isinstance(shared, dict) or str(per_device) not in shared:
        return None
    alone = gpu_check["step_seconds"]
    ratios = sorted(
        entry["step_seconds"] / base
        for name, entry in shared[str(per_device)].items()
        if (base := entry.get("alone_seconds", alone.get(name)))
    )
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


def modelled_wall_hours(
    alone: list[float], busy: list[float], gpus: int, per_device: int, exclusive: list[bool] | None = None
) -> float:
    """Modelled wall hours of jobs on `gpus` devices, `per_device` at a time, but the `exclusive`
    ones (trainings whose time an artefact reports), which hold a whole device:

        held   = Σ alone of the exclusive jobs
        shared = max(Σ busy / gpus, LPT makespan of the other jobs' alone hours on gpus · per_device slots)
        wall   = max(held / gpus + shared, the longest exclusive job)

    jobs run at their own (host-bound) speed until the devices' busy time is the bound (the busy
    times of jobs sharing a device add up: their kernels are not assumed to overlap)."""
    exclusive = exclusive or [False] * len(alone)
    held = [a for a, e in zip(alone, exclusive) if e]
    shared_alone = [a for a, e in zip(alone, exclusive) if not e]
    shared_busy = [b for b, e in zip(busy, exclusive) if not e]
    shared = max(sum(shared_busy) / gpus, wall_hours(shared_alone, gpus * per_device)) if shared_alone else 0.0
    return max(sum(held) / gpus + shared, max(held, default=0.0))
