"""The parts of a training job that the translation and language-model trainers share:

    begin        the job's folder and its spec.json, threads and precision, and its first log line
    resume       the state to go on from (`checkpoints.resume_point`): weights, history, best score
    epochs       the epochs still to train, each one's torch seed drawn from (seed, epoch)
    checkpoint   the epoch's record in the log, `checkpoint.pt` (atomically), the history so far
    finish       `metrics.jsonl`, `model.pt` (the kept epoch), the checkpoint without weights

Each trainer brings its own epoch (training, validation, its record) and its stopping rule.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import torch

from workflow_src.atomic import atomic_output, write_text
from workflow_src.model import precision as precisions
from workflow_src.specs import LMSpec, TrainSpec, document, spec_hash
from workflow_src.train import checkpoints

SPEC_FILE = "spec.json"  # the run's spec document, written as it begins
Stop = Callable[[list[dict]], bool]  # whether a (non-empty) history's stopping rule has fired


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Job:
    """One training job: its spec and the spec's JSON document (`specs.document`: spec.json and
    the checkpoint's hash), folder, kept-model file (`best.pt`, `kept.pt`), device, the precision
    it runs in and the one its spec asks for."""

    spec: TrainSpec | LMSpec
    document: dict
    out_dir: Path
    kept: Path
    device: torch.device
    precision: str
    requested: str

    @property
    def checkpoint(self) -> Path:
        return self.out_dir / checkpoints.CHECKPOINT


@dataclass
class Run:
    """A run's state between epochs, as `checkpoint.pt` keeps it."""

    best: float  # the best validation score so far (each trainer's own sense of best)
    stale: int | None = None  # epochs since the best (early stopping); None: not kept
    history: list[dict] = field(default_factory=list)
    start_epoch: int = 1
    finished: bool = False  # training had ended: only the outputs are left to write
    saved: dict | None = None  # the last checkpoint written or read


def begin(spec: TrainSpec | LMSpec, out_dir: Path, kept_name: str, threads: int, device: torch.device) -> Job:
    """Make `out_dir` and write the spec's document there (`spec.json`: which spec, and which
    spec_version, the folder's run is of), set the threads and the precision (the spec's, resolved
    on `device`: `workflow_src.model.precision`) and log the job's first line."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fields = document(spec)
    write_text(out_dir / SPEC_FILE, json.dumps(fields, indent=2) + "\n")
    torch.set_num_threads(threads)
    precision = precisions.resolve(spec.precision, device)
    precisions.configure(precision)
    log(f"experiment {spec.experiment} (spec {spec_hash(fields)}) on {device} in {precision}, {threads} threads")
    return Job(spec, fields, out_dir, out_dir / kept_name, device, precision, spec.precision)


def ended(history: list[dict], last_epoch: int, stop: Stop) -> bool:
    """Whether `history` is a whole run's: its stopping rule fired, or it reached `last_epoch`."""
    return bool(history) and bool(stop(history) or history[-1]["epoch"] >= last_epoch)


def resume(job: Job, run: Run, last_epoch: int, stop: Stop, model, optimiser=None) -> Run:
    """The run to go on from: `run` (a new one) where there is nothing to resume, else the saved
    one, its weights (and `optimiser`'s state) loaded unless training had finished."""
    saved = checkpoints.resume_point(
        job.out_dir, job.kept, job.spec, lambda done: ended(done, last_epoch, stop), job.device, log
    )
    if saved is None:
        return run
    precisions.pin(saved, job.precision, job.checkpoint, job.requested, job.device, log)
    stale = None if run.stale is None else saved.get("stale", run.stale)
    run = Run(
        saved.get("best", run.best), stale, saved["history"], saved["epoch"] + 1, saved.get("finished", False), saved
    )
    if run.finished:
        log(f"{job.checkpoint}: training finished after epoch {saved['epoch']}; not training again")
    else:
        model.load_state_dict(saved["model"])
        if optimiser is not None:
            optimiser.load_state_dict(saved["optimiser"])
        log(f"resuming after epoch {saved['epoch']} from {job.checkpoint}")
    return run


def epochs(run: Run, last_epoch: int, seed: int, stop: Stop) -> Iterator[int]:
    """The epochs still to train, up to `last_epoch` and until `stop`; each starts from the torch
    seed (seed, epoch), so that a resumed run draws the masks an uninterrupted one would."""
    for epoch in range(run.start_epoch, last_epoch + 1):
        if run.finished or (run.history and stop(run.history)):
            return
        torch.manual_seed(seed * 100003 + epoch)
        yield epoch


def checkpoint(job: Job, run: Run, model, optimiser=None) -> None:
    """The last epoch's record in the log; `checkpoint.pt` (weights, `optimiser`'s state where it
    keeps one, history, best score) written atomically; the history so far (`metrics.partial.jsonl`)."""
    log(json.dumps(run.history[-1]))
    run.saved = {
        "spec_hash": spec_hash(job.document),
        "epoch": run.history[-1]["epoch"],
        "model": model.state_dict(),
        **({} if optimiser is None else {"optimiser": optimiser.state_dict()}),
        "history": run.history,
        "best": run.best,
        **({} if run.stale is None else {"stale": run.stale}),
        "precision": job.precision,
    }
    with atomic_output(job.checkpoint) as tmp:
        torch.save(run.saved, tmp)
    checkpoints.save_progress(job.out_dir, run.history)


def finish(job: Job, run: Run) -> None:
    """A run whose training has ended: `metrics.jsonl`, `model.pt` (the kept epoch), and the
    checkpoint without weights or optimiser state."""
    checkpoints.save_history(job.out_dir, run.history)
    publish(job.kept, job.out_dir / "model.pt")
    if not run.finished:
        mark_finished(job.checkpoint, run.saved)


def publish(kept: Path, model: Path) -> None:
    """`model` becomes the kept epoch's file, atomically: a hard link (one copy of the weights on
    disk), or a copy where the file system has no links."""
    with atomic_output(model) as tmp:
        tmp.unlink()
        try:
            os.link(kept, tmp)
        except OSError:
            shutil.copyfile(kept, tmp)


def mark_finished(checkpoint: Path, saved: dict) -> None:
    """Replace a finished run's checkpoint by its record without weights or optimiser state."""
    with atomic_output(checkpoint) as tmp:
        torch.save(
            {key: value for key, value in saved.items() if key not in ("model", "optimiser")} | {"finished": True}, tmp
        )
