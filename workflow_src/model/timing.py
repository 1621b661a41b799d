"""Wall-clock seconds of a step on a device: the one timer of the benchmarks, the GPU check and
the graph check."""

from __future__ import annotations

import statistics
import time

import torch


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_seconds(step, device: torch.device, steps: int, warmup: int = 0) -> float:
    """The median seconds of `step()` over `steps` calls after `warmup` untimed calls, the device
    synchronised before and after each."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        synchronize(device)
        started = time.perf_counter()
        step()
        synchronize(device)
        times.append(time.perf_counter() - started)
    return statistics.median(times)
