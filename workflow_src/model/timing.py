"""Wall-clock seconds of a step on a device: the one timer of the benchmarks, the GPU check and
the graph check."""

from __future__ import annotations

import statistics
import time

import torch

# A host-bound step's time varies between moments of one run, not only between its steps: on the H200
# on 2026-11-27, with the CPU otherwise idle, the graph check timed NMT 1x512's eager step at 22.9 ms
# untied and 40.4 ms tied (medians of 20 steps), whose counts differ by 0.2% and whose replayed
# graphs took 9.0 ms each. So a step is timed in ROUNDS medians, apart in time, and the fastest is
# kept: interference only adds time.
ROUNDS = 2


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
