"""The GPU check's work on the CPU (`workflow_src.gpu_check`), run beside the device's in worker
processes: each family's fp32 reference, the decoding reference, and the plan's modelled step.

A reference's gradients (hundreds of MB at the configured sizes) travel through a file in the
check's scratch folder, not through the worker's pipe; its random draws and words are small.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import multiprocessing
import os
import signal
from pathlib import Path

import torch

from workflow_src.gpu_check.families import Family, batch, compared, searched_words
from workflow_src.gpu_check.measures import SharedDraws, run_once
from workflow_src.model import precision as precisions

CPU = torch.device("cpu")
CHECK_BATCH = 8  # sentences (language models: columns) of the fixed correctness and decoding batches


def reference(family: Family, full: bool, scratch: Path | None) -> dict:
    """The CPU fp32 loss (and, `full`, words and the gradients' file) of the family's comparison
    model on its fixed batch, with the random draws it made."""
    precisions.configure("fp32")
    model = compared(family)
    draws = SharedDraws()
    result = run_once(family, model, batch(family, CHECK_BATCH, True, CPU), "fp32", CPU, draws, replay=False, full=full)
    out = {"loss": result["loss"], "draws": draws.recorded, "words": result["words"]}
    if full:
        path = Path(scratch) / f"{os.getpid()}-{abs(hash(family.name))}.pt"
        torch.save(result["gradients"], path)
        out["gradients"] = str(path)
    return out


def decoding_reference(family: Family, check_every: int) -> dict:
    """Greedy and beam-search words of the family's model on the fixed batch, on the CPU in fp32."""
    model = compared(family)
    fixed = batch(family, CHECK_BATCH, True, CPU)
    return {beam: searched_words(model, fixed, beam, family.length, check_every) for beam in sorted({1, family.beam})}


@functools.cache
def fitted_on_h100():
    """The plan's model fitted to the stored reports, on the H100 (seconds to fit: once a worker)."""
    from workflow_src.plan import fit
    from workflow_src.plan.costmodel import H100

    return fit.load()[2].on(H100)


def modelled_step(config: dict, family: Family) -> dict:
    """The plan's modelled H100 seconds of one training step of the family (`plan.steps`, counted on
    the CPU as CUDA runs it, in the precision a CUDA job takes), as the plan's families table has them."""
    from workflow_src.plan import steps
    from workflow_src.plan.timing import modelled_precision

    precision = modelled_precision(config)
    as_on_cuda = {**config, "train": {**config["train"], "precision": precision}}
    if family.kind == "lm":
        timing = steps.time_lm(as_on_cuda, family.job, family.key, CPU, model_only=True)
    else:
        timing = steps.count_nmt(as_on_cuda, family.job, family.key, CPU)
    model = fitted_on_h100()
    return {
        "precision": precision,
        "alone_seconds": timing.modelled("step", precision, model),
        "busy_seconds": timing.modelled_device("step", precision, model),
        "host_seconds": timing.host_seconds("step", model),
        "bound": "launch" if timing.launch_bound("step", precision, model) else "device",
    }


# -- where they run -------------------------------------------------------------------------------
def _worker_start(threads: int) -> None:
    torch.set_num_threads(threads)


class InProcess:
    """The executor of a check without workers (the CPU is the device): each task runs when its
    result is first asked for, in this process."""

    class Task:
        def __init__(self, function, args):
            self.function, self.args, self.finished = function, args, False

        def done(self) -> bool:
            return self.finished

        def result(self, timeout: float | None = None):
            if not self.finished:
                try:
                    self.value, self.error = self.function(*self.args), None
                except Exception as error:  # raised where the result is read, as a future does
                    self.value, self.error = None, error
                self.finished = True
            if self.error is not None:
                raise self.error
            return self.value

    def submit(self, function, *args):
        return self.Task(function, args)

    def paused(self):
        return contextlib.nullcontext()

    def stop(self) -> None:
        pass


class Workers:
    """`count` spawned CPU processes of `threads` torch threads each; stopped at once by `stop`."""

    def __init__(self, count: int, threads: int):
        self.pool = concurrent.futures.ProcessPoolExecutor(
            count, multiprocessing.get_context("spawn"), initializer=_worker_start, initargs=(threads,)
        )

    def submit(self, function, *args):
        return self.pool.submit(function, *args)

    def processes(self) -> list:
        return [process for process in (self.pool._processes or {}).values() if process.is_alive()]

    @contextlib.contextmanager
    def paused(self):
        """The workers stopped (SIGSTOP) while the device is timed, then continued (SIGCONT): an eager
        step is the host's Python, and 12 busy workers slow it (the H200's check of 2026-11-27, timed
        beside them, measured the same family's eager step up to 1.8 times apart)."""
        processes = self.processes()
        for process in processes:
            send(process.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for process in processes:
                send(process.pid, signal.SIGCONT)

    def stop(self) -> None:
        """End the workers now, whatever they are computing (the check's deadline does not wait);
        a paused one is continued, so that it receives the end."""
        processes = self.processes()
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
            send(process.pid, signal.SIGCONT)


def send(pid: int, signal_number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal_number)


def executor(workers: int, threads: int):
    return Workers(workers, threads) if workers > 0 else InProcess()
