"""Jobs sharing a device, measured as they would run (`workflow_src.gpu_check`): `jobs` spawned
processes on the device at once, each running the same family's training step, for a few
representative families, one after the other; each family's median step seconds among them."""

from __future__ import annotations

import multiprocessing
import queue
import statistics

import torch

from workflow_src.gpu_check.device import WARMUP, free, full_size_step, step_seconds
from workflow_src.gpu_check.families import Family
from workflow_src.model.timing import synchronize


def _worker(found: list[Family], precision: str, barrier, results) -> None:
    device = torch.device("cuda")
    for family in found:
        model, step = full_size_step(family, precision, device)
        for _ in range(WARMUP):
            step()
        synchronize(device)
        barrier.wait()  # every process warm: they run their timed steps together
        results.put((family.name, step_seconds(step, device, warmup=0)))
        barrier.wait()
        del model, step
        free(device)


def shared_seconds(found: list[Family], precision: str, jobs: int, timeout: float) -> dict[str, float]:
    """{family: the median over the `jobs` processes of their step seconds} of the families whose
    every process reported within `timeout` seconds (the rest are missing: not reached)."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(jobs, timeout=timeout), context.Queue()
    workers = [context.Process(target=_worker, args=(found, precision, barrier, results)) for _ in range(jobs)]
    for worker in workers:
        worker.start()
    collected: dict[str, list[float]] = {}
    try:
        for _ in range(jobs * len(found)):
            name, seconds = results.get(timeout=timeout)
            collected.setdefault(name, []).append(seconds)
    except queue.Empty:
        pass
    finally:
        for worker in workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()
    return {name: statistics.median(values) for name, values in collected.items() if len(values) == jobs}
