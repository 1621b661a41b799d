"""GPU slots for jobs on a multi-GPU machine: a lock-based allocator, N slots per device.

Snakemake counts `--resources gpu=N` but does not say which device a job should use. A GPU job
(training, decoding, benchmarks) therefore takes free slots of one of the machine's devices by
locking `<lock dir>/gpu<i>.slot<k>.lock` (flock: the lock goes with the process, however it ends)
and sets `CUDA_VISIBLE_DEVICES=i` before CUDA starts, so torch sees exactly that device. Each
device has `jobs_per_device` slots (config `gpu.jobs_per_device`, default 1: one job per GPU):
small jobs use a fraction of a large GPU, so several can share it (NVIDIA MPS lets their kernels
run side by side, docs/cluster.md). A job whose timings are reported (`timed`) takes every slot
of one device, so it has that device to itself. When `CUDA_VISIBLE_DEVICES` is already set
(Slurm sets it for its GPU jobs, a user may set it), that choice is kept; with no GPU the job runs
on the CPU and says so.

No silent CPU: a job that holds GPU slots (`REPRO_GPU_SLOTS` > 0: its rule asked Snakemake for a
`gpu`, which it does unless the config sets `device: cpu`) and is configured `auto` or `cuda`
stops at once, in one line, when torch sees no GPU (a CPU-only torch, a driver mismatch), instead
of training on the CPU for weeks. `REPRO_GPUS=0` declares the machine GPU-less (tests that hold
slots for CPU work): there `auto` runs on the CPU as before.

The environment carries the settings to the jobs: `REPRO_GPU_JOBS_PER_DEVICE` (the workflow
exports the config's), `REPRO_GPU_SLOTS` (slots this job takes: what its rule asked Snakemake
for, 1 unless set), `REPRO_GPUS` overrides the number of devices (tests simulate machines with
it) and `REPRO_GPU_LOCK_DIR` the lock directory (default: one per machine, under the temp
directory).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Iterator


def device_count() -> int:
    """The machine's GPUs, counted without starting CUDA in this process: CUDA reads
    CUDA_VISIBLE_DEVICES once, when it starts, so a job that started it before `gpu_slot` set the
    variable would run on device 0 whatever slot it took. torch.cuda.device_count() starts it
    where NVML is missing; NVML counts here, or else a child process."""
    if "REPRO_GPUS" in os.environ:
        return int(os.environ["REPRO_GPUS"])
    import torch

    if not torch.backends.cuda.is_built():
        return 0
    counted = torch.cuda._device_count_nvml()  # -1 where NVML cannot be loaded
    if counted >= 0:
        return counted
    child = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(child.stdout.split()[-1])


def _count_setting(name: str, default: int, least: int) -> int:
    value = os.environ.get(name, str(default))
    if not value.isdigit() or int(value) < least:
        raise ValueError(f"environment {name}={value!r}: expected a whole number of at least {least}")
    return int(value)


def jobs_per_device() -> int:
    """Slots per device (config gpu.jobs_per_device, exported as REPRO_GPU_JOBS_PER_DEVICE)."""
    return _count_setting("REPRO_GPU_JOBS_PER_DEVICE", 1, least=1)


def slots_wanted() -> int:
    """Slots this job takes: REPRO_GPU_SLOTS (its rule's gpu resource; 0, a rule configured for
    the CPU, counts as 1), at most a device's."""
    return min(max(_count_setting("REPRO_GPU_SLOTS", 1, least=0), 1), jobs_per_device())


def lock_dir() -> Path:
    return Path(os.environ.get("REPRO_GPU_LOCK_DIR", Path(tempfile.gettempdir()) / "softmax-bottleneck-gpu-slots"))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _take_slots(directory: Path, device: int, per_device: int, wanted: int) -> list[IO]:
    """`wanted` free slots of `device`, locked, or none (every lock taken on the way released)."""
    held = []
    for slot in range(per_device):
        handle = open(directory / f"gpu{device}.slot{slot}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        held.append(handle)
        if len(held) == wanted:
            return held
    _release(held)
    return []


def _release(handles: list[IO]) -> None:
    for handle in handles:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


@contextlib.contextmanager
def gpu_slot(poll_seconds: float = 2.0) -> Iterator[int | None]:
    """Hold free slots of one GPU for the block (`slots_wanted` of its `jobs_per_device`) and
    point CUDA_VISIBLE_DEVICES at it; yield its index, or None when the job runs where another
    authority chose (CUDA_VISIBLE_DEVICES set) or on the CPU."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        log(f"GPU: CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']} was set for this job; keeping it")
        yield None
        return
    count = device_count()
    if count == 0:
        log("GPU: none on this machine; running on the CPU")
        yield None
        return
    per_device, wanted = jobs_per_device(), slots_wanted()
    directory = lock_dir()
    directory.mkdir(parents=True, exist_ok=True)
    waited = False
    while True:
        for index in range(count):
            held = _take_slots(directory, index, per_device, wanted)
            if not held:
                continue
            os.environ["CUDA_VISIBLE_DEVICES"] = str(index)
            whole = " (the whole device)" if wanted == per_device > 1 else ""
            log(
                f"GPU: {wanted} of the {per_device} slots of device {index} of {count}{whole} "
                f"(CUDA_VISIBLE_DEVICES={index})"
            )
            try:
                yield index
            finally:
                _release(held)
            return
        if not waited:
            log(
                f"GPU: all {count * per_device} slots busy; waiting"
                if wanted == 1
                else f"GPU: no device of {count} has {wanted} free slots; waiting"
            )
            waited = True
        time.sleep(poll_seconds)


def pick_device(name: str):
    """`auto` is the first visible GPU when torch sees one, else the CPU; anything else is taken as is."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


class NoGPU(SystemExit):
    """A job holding GPU slots found no GPU: one line on stderr, exit status 1, no traceback."""


def slots_held() -> int:
    """The GPU slots Snakemake counted for this job (REPRO_GPU_SLOTS, set by the GPU rules);
    0 where it is unset (a command typed by hand holds none)."""
    return _count_setting("REPRO_GPU_SLOTS", 0, least=0)


def what_torch_sees() -> str:
    """What torch reports about CUDA, in one line."""
    import torch

    try:
        counted = device_count()
    except Exception as err:  # noqa: BLE001 - the count is reported, not relied on
        counted = f"not counted ({type(err).__name__}: {err})"
    return (
        f"torch {torch.__version__}, torch.version.cuda {torch.version.cuda}, "
        f"torch.cuda.is_available() {torch.cuda.is_available()}, devices counted {counted}, "
        f"CUDA_VISIBLE_DEVICES {os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}"
    )


def refuse_cpu(setting: str, key: str | None) -> None:
    """Stop a job configured `setting` (auto or cuda) that holds GPU slots where torch sees no
    GPU (see the module docstring)."""
    import torch

    held = slots_held()
    if held == 0 or torch.cuda.is_available():
        return
    if os.environ.get("REPRO_GPUS") == "0":
        log("GPU: REPRO_GPUS=0 declares this machine GPU-less; its GPU slots run on the CPU")
        return
    slots = f"{held} GPU slot{'s' if held > 1 else ''}"
    named, advice = (
        (f"{key}: {setting}", f"set {key}: cpu")
        if key
        else (f"device {setting}", "set the config's device (train.device, benchmarks.device) to cpu")
    )
    raise NoGPU(
        f"{named}, but this job holds {slots} and torch sees no GPU ({what_torch_sees()}); "
        f"not running on the CPU: fix the CUDA install, or {advice}"
    )


@contextlib.contextmanager
def job_device(setting: str, key: str | None = None):
    """The device of a job configured with `setting` (auto, cpu, cuda, cuda:N; `key` names the
    setting in errors). For auto and cuda the job first takes a free GPU slot (see the module
    docstring) and refuses the CPU when it holds slots; cuda:N is taken as given."""
    if setting not in ("auto", "cuda"):
        device = pick_device(setting)
        log(f"device: {device} (configured)")
        yield device
        return
    with gpu_slot():
        refuse_cpu(setting, key)
        device = pick_device(setting)
        log(f"device: {device}")
        yield device


def main() -> None:
    """`python -m workflow_src.model.gpu`: print the slot a job would get (a check for a machine)."""
    with gpu_slot() as slot:
        print(slot)


if __name__ == "__main__":
    main()
