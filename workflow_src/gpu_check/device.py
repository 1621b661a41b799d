"""The GPU check's measurements on the device (`workflow_src.gpu_check`): what the device is, and
what one training step of a family costs there: peak memory, seconds, host syncs, and the share
of the step the GPU is busy (torch.profiler)."""

from __future__ import annotations

import os
import platform
import shutil
import warnings
from datetime import datetime, timezone
from pathlib import Path

import torch

from workflow_src.gpu_check.families import Family, batch, build, training_step
from workflow_src.model import compilation, precision as precisions
from workflow_src.model.timing import median_seconds, synchronize
from workflow_src.plan.benchmark import device_name

WARMUP, STEPS = 2, 3  # untimed, then timed steps of each speed measurement (the median is kept)
SYNC_STEPS = 2  # steps watched for host syncs (CUDA)
# What sync debug mode says at a sync (c10/cuda/CUDAFunctions.cpp, warn_or_error_on_sync). Not any
# "synchroniz...": setting the mode warns once per process that it "is a prototype feature", which
# the H200's check of 2026-11-27 counted as its first family's sync.
SYNC_WARNING = "called a synchronizing CUDA operation"
PROFILED_STEPS = 3  # steps of the profiler's busy share (CUDA)
HEADROOM = 0.1  # of the device's memory, left to the CUDA context, cuDNN's workspaces and fragmentation
GIB = 2**30


# -- the device -------------------------------------------------------------------------------------
def mps_state() -> dict:
    """Whether CUDA clients here go through NVIDIA MPS, and how that was seen: a client connects
    to MPS when the control daemon's pipe, `$CUDA_MPS_PIPE_DIRECTORY/control` (default
    /tmp/nvidia-mps/control), exists; the daemon's processes (`nvidia-cuda-mps-control`,
    `-server`, from /proc/*/comm) and the control program on PATH are listed beside it."""
    pipe = Path(os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")) / "control"
    processes = set()
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            name = comm.read_text().strip()
        except OSError:
            continue
        if name.startswith("nvidia-cuda-mps"):
            processes.add(name)
    on = pipe.exists()
    how = (
        f"pipe {pipe} {'present' if on else 'absent'} (CUDA_MPS_PIPE_DIRECTORY "
        f"{'set' if 'CUDA_MPS_PIPE_DIRECTORY' in os.environ else 'unset: the default'}); "
        f"processes: {', '.join(sorted(processes)) or 'no nvidia-cuda-mps-* process'}; "
        f"nvidia-cuda-mps-control {'on' if shutil.which('nvidia-cuda-mps-control') else 'not on'} PATH"
    )
    return {"on": on, "how": how}


def environment(device: torch.device) -> dict:
    cuda = device.type == "cuda"
    return {
        "device": str(device),
        "device_name": device_name(device),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "python": platform.python_version(),
        "mps": mps_state(),
        "memory_bytes": torch.cuda.get_device_properties(device).total_memory if cuda else None,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def free(device: torch.device) -> None:
    """The device's cached memory back, between models (without `plan.benchmark.release`'s gc.collect:
    the models here hold no reference cycles, and a collection over the workflow's modules
    costs about 0.4 s, a minute over the check)."""
    if device.type == "cuda":
        torch.cuda.empty_cache()


# -- one training step --------------------------------------------------------------------------------
def step_seconds(step, device: torch.device, warmup: int = WARMUP, steps: int = STEPS) -> float:
    """The median seconds of `step()` over `steps` calls after `warmup` calls, the device synchronised."""
    return median_seconds(step, device, steps, warmup)


def syncs_per_step(step, device: torch.device, steps: int = SYNC_STEPS) -> tuple[float, list[str]]:
    """(host syncs per training step, where each was called from: "file:line"), as CUDA's sync
    debug mode reports them (CUDA only)."""
    torch.cuda.synchronize(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(steps):
                step()
        finally:
            torch.cuda.set_sync_debug_mode(0)
    found = [w for w in caught if SYNC_WARNING in str(w.message)]
    return len(found) / steps, sorted({f"{w.filename}:{w.lineno}" for w in found})


def union_seconds(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of [start, end] intervals."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def busy_share(step, device: torch.device, steps: int = PROFILED_STEPS) -> float:
    """The share of `steps` training steps in which the GPU runs a kernel (torch.profiler): the
    union of the device events' intervals over the span of every event recorded (CUDA only)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    for _ in range(WARMUP):
        step()
    synchronize(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiled:
        for _ in range(steps):
            step()
        synchronize(device)
    events = [(e.time_range.start, e.time_range.end, e.device_type) for e in profiled.events()]
    span = max(end for _, end, _ in events) - min(start for start, _, _ in events)
    return union_seconds([(start, end) for start, end, kind in events if kind == DeviceType.CUDA]) / span


def full_size_step(family: Family, precision: str, device: torch.device):
    """(model, step()) of the family at its configured sizes and batch, built on the device, compiled
    as the config's train.compile says (in a fresh dynamo state), with its training step, in
    `precision` with the job's TF32 switches."""
    precisions.configure(precision)
    if family.spec.compile != "off":
        torch._dynamo.reset()  # each compiled family from a cold start, as its own job has
    with torch.device(device):
        model = build(family).to(device)
    compilation.apply(model, family.spec, device)
    step = training_step(family, model, precision, device)
    data = batch(family, family.batch_size, False, device)
    return model, lambda: step(data)


def timed_again(family: Family, precision: str, device: torch.device) -> float:
    """The median seconds of the family's step, built afresh (`full_size_step`), as `measure` times it."""
    free(device)
    model, step = full_size_step(family, precision, device)
    try:
        return step_seconds(step, device)
    finally:
        del model, step
        free(device)


def memory_problems(reserved: int, total: int, jobs_per_device: int, batch_size: int) -> list[tuple[str, str]]:
    """[(problem, setting that avoids it)] where `jobs_per_device` jobs of `reserved` bytes each
    leave less than HEADROOM of the device's `total`."""
    usable = (1 - HEADROOM) * total
    if jobs_per_device * reserved <= usable:
        return []
    fits = int(usable // reserved)
    return [
        (
            f"{jobs_per_device} jobs of {reserved / GIB:.1f} GiB each leave less than {HEADROOM:.0%} of the device's "
            f"{total / GIB:.1f} GiB",
            f"gpu.jobs_per_device: {fits}" if fits else f"train.batch_size below {batch_size}",
        )
    ]


def measure(family: Family, precision: str, device: torch.device, jobs_per_device: int) -> tuple[dict, list[tuple]]:
    """Peak memory (CUDA), seconds and host syncs (CUDA) of the family's training step alone, and
    [(problem, setting that avoids it)]: on CUDA, the memory its jobs would take (`memory_problems`)."""
    cuda = device.type == "cuda"
    free(device)
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
    try:
        model, step = full_size_step(family, precision, device)
        seconds = step_seconds(step, device)
        syncs, sync_sites = syncs_per_step(step, device) if cuda else ("not applicable (CPU)", [])
    except torch.cuda.OutOfMemoryError as error:
        free(device)
        return (
            {"memory": f"out of memory: {str(error).splitlines()[0]}"},
            [(f"out of memory at train.batch_size {family.batch_size}", f"train.batch_size below {family.batch_size}")],
        )
    entry = {
        "step_seconds": seconds,
        "step_seconds_rounds": [seconds],
        "precision": precision,
        "length": family.length,
        "target_tokens_per_step": family.tokens_per_step,
        "tokens_per_second": family.tokens_per_step / seconds,
        "syncs_per_step": syncs,
        "sync_sites": sync_sites,
        "memory": "not measured on the CPU",
    }
    problems = []
    if cuda:
        total, reserved = torch.cuda.get_device_properties(device).total_memory, torch.cuda.max_memory_reserved(device)
        entry["memory"] = {
            "peak_allocated_bytes": torch.cuda.max_memory_allocated(device) - before,
            "peak_reserved_bytes": reserved,
            "device_bytes": total,
            "jobs_per_device": jobs_per_device,
            "headroom_bytes": total - jobs_per_device * reserved,
        }
        problems = memory_problems(reserved, total, jobs_per_device, family.batch_size)
    del model, step
    free(device)
    return entry, problems
