"""A training run's saved state, read back when the run starts again, and its history, kept safe.

A run resumes from `checkpoint.pt` when that is readable and holds the same spec. Where it cannot
be read (truncated, garbage), the log says so and the run goes on from the last good state there
is: a finished run that `metrics.jsonl` and the kept model (`best.pt`, `kept.pt`: readable, the
same spec) record is finished again without training; anything else trains from scratch, and the
log says why. A finished run whose kept model is missing or unreadable trains again too.

`metrics.jsonl`, the history every table and note reads, is replaced only once training has ended
(`save_history`); while a run trains, its history so far is in `metrics.partial.jsonl`
(`save_progress`). So neither a failed rerun nor a killed one leaves it shorter than the finished
run's, and Snakemake, which deletes a job's outputs before running it and after it fails, keeps it
(`update()` in rules/train.smk and rules/lm.smk: updated in place, restored if the job fails).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from workflow_src.atomic import FileFault, atomic_output, load_saved, read_metrics, write_lines
from workflow_src.specs import LMSpec, TrainSpec, spec_hash

CHECKPOINT = "checkpoint.pt"
HISTORY = "metrics.jsonl"
PROGRESS = "metrics.partial.jsonl"
CHECKPOINT_KEYS = ("spec_hash", "epoch", "history")


def save_progress(out_dir: Path, history: list[dict]) -> None:
    """The history so far, after an epoch, beside the finished run's `metrics.jsonl`."""
    write_lines(out_dir / PROGRESS, (json.dumps(record) for record in history))


def save_history(out_dir: Path, history: list[dict]) -> None:
    """The whole history of a run whose training has ended, as `metrics.jsonl`."""
    write_lines(out_dir / HISTORY, (json.dumps(record) for record in history))
    (out_dir / PROGRESS).unlink(missing_ok=True)


def resume_point(
    out_dir: Path,
    kept: Path,
    spec: TrainSpec | LMSpec,
    finished: Callable[[list[dict]], bool],
    device,
    log: Callable[[str], None],
) -> dict | None:
    """The saved state to go on from: `checkpoint.pt`'s dict (`finished` set once training ended:
    then no weights), or one rebuilt from a finished run's `metrics.jsonl` and `kept` model when the
    checkpoint is unreadable; None to train from scratch. `finished(history)`: whether a history
    is a whole run's (its stopping rule fired). Each decision but a plain resume is logged."""
    checkpoint = out_dir / CHECKPOINT
    if not checkpoint.exists() and not (out_dir / HISTORY).exists():
        return None  # a new run
    try:
        saved = load_saved(
            checkpoint,
            f"a training checkpoint ({', '.join(CHECKPOINT_KEYS)}), written after every epoch",
            CHECKPOINT_KEYS,
            device,
        )
    except FileFault as fault:
        return finished_run(out_dir, kept, spec, finished, str(fault), log)
    if saved["spec_hash"] != spec_hash(spec):
        log(f"{checkpoint} belongs to another spec; starting over")
        return None
    if saved.get("finished"):
        if not kept.exists():
            log(f"{checkpoint}: finished, but {kept} is gone; starting over")
            return None
        try:
            load_saved(kept, "the kept epoch's model", ("spec", "state_dict"))
        except FileFault as fault:
            log(f"{checkpoint}: finished, but {fault}; starting over")
            return None
    return saved


def finished_run(
    out_dir: Path,
    kept: Path,
    spec: TrainSpec | LMSpec,
    finished: Callable[[list[dict]], bool],
    fault: str,
    log: Callable[[str], None],
) -> dict | None:
    """The finished state that `metrics.jsonl` and the `kept` model record, written as the
    checkpoint (its history and a `finished` mark); None (train from scratch) where they do not
    make one: either unreadable, another spec's model, a history whose stopping rule had not fired."""
    try:
        history = read_metrics(out_dir / HISTORY)
        model = load_saved(kept, "the kept epoch's model", ("spec", "state_dict"))
    except FileFault as missing:
        log(f"{fault}; training from scratch: no finished run to go on from ({missing})")
        return None
    if spec_hash(model["spec"]) != spec_hash(spec) or not history or not finished(history):
        why = "another spec's model" if spec_hash(model["spec"]) != spec_hash(spec) else "an unfinished run's history"
        log(f"{fault}; training from scratch: {kept.name} and {HISTORY} hold {why}")
        return None
    saved = {"spec_hash": spec_hash(spec), "epoch": history[-1]["epoch"], "history": history, "finished": True}
    with atomic_output(out_dir / CHECKPOINT) as tmp:
        import torch

        torch.save(saved, tmp)
    log(
        f"{fault}; {HISTORY} and {kept.name} hold this spec's finished run (epoch {history[-1]['epoch']}): "
        f"rewrote {CHECKPOINT} from them, not training again"
    )
    return saved
