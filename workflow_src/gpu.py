"""One GPU per job on a multi-GPU machine: a lock-based slot allocator.

Snakemake counts `--resources gpu=N` but does not say which device a job should use. A GPU job
(training, decoding, benchmarks) therefore takes the first free slot among the machine's
devices by locking `<lock dir>/gpu<i>.lock` (flock: the lock goes with the process, however it
ends) and sets `CUDA_VISIBLE_DEVICES=i` before CUDA starts, so torch sees exactly that device.
When `CUDA_VISIBLE_DEVICES` is already set (Slurm sets it for its GPU jobs, a user may set it),
that choice is kept; with no GPU the job runs on the CPU and says so.

`REPRO_GPUS` overrides the number of devices (tests simulate machines with it) and
`REPRO_GPU_LOCK_DIR` the lock directory (default: one per machine, under the temp directory).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator


def device_count() -> int:
    if "REPRO_GPUS" in os.environ:
        return int(os.environ["REPRO_GPUS"])
    import torch

    return torch.cuda.device_count()


def lock_dir() -> Path:
    return Path(os.environ.get("REPRO_GPU_LOCK_DIR", Path(tempfile.gettempdir()) / "softmax-bottleneck-gpu-slots"))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def gpu_slot(poll_seconds: float = 2.0) -> Iterator[int | None]:
    """Hold a free GPU for the block and point CUDA_VISIBLE_DEVICES at it; yield its index, or
    None when the job runs where another authority chose (CUDA_VISIBLE_DEVICES set) or on the CPU."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        log(f"GPU: CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']} was set for this job; keeping it")
        yield None
        return
    count = device_count()
    if count == 0:
        log("GPU: none on this machine; running on the CPU")
        yield None
        return
    directory = lock_dir()
    directory.mkdir(parents=True, exist_ok=True)
    waited = False
    while True:
        for index in range(count):
            handle = open(directory / f"gpu{index}.lock", "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            os.environ["CUDA_VISIBLE_DEVICES"] = str(index)
            log(f"GPU: slot {index} of {count} (CUDA_VISIBLE_DEVICES={index})")
            try:
                yield index
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        if not waited:
            log(f"GPU: all {count} slots busy; waiting for one")
            waited = True
        time.sleep(poll_seconds)


def pick_device(name: str):
    """`auto` is the first visible GPU when torch sees one, else the CPU; anything else is taken as is."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@contextlib.contextmanager
def job_device(setting: str):
    """The device of a job configured with `setting` (auto, cpu, cuda, cuda:N). For auto and cuda
    the job first takes a free GPU slot (see the module docstring); cuda:N is taken as given."""
    if setting not in ("auto", "cuda"):
        device = pick_device(setting)
        log(f"device: {device} (configured)")
        yield device
        return
    with gpu_slot():
        device = pick_device(setting)
        log(f"device: {device}")
        yield device


def main() -> None:
    """`python -m workflow_src.gpu`: print the slot a job would get (a check for a machine)."""
    with gpu_slot() as slot:
        print(slot)


if __name__ == "__main__":
    main()
