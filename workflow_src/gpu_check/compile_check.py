"""train.compile checked as training uses it (`workflow_src.gpu_check`): for each architecture, in
a fresh dynamo state (`torch._dynamo.reset()`, as a training job starts cold), one model compiled
as `compilation.apply` compiles a job's model, then

    training     its training step (`families.training_step`) at the shapes an epoch gives it:
                 train.batch_size rows at bucket lengths padded to `nmt_data.length_multiple`, and
                 an epoch's last, shorter batch (language models: a full and a short segment);
    evaluation   in the same dynamo state, as the job goes on after its epoch: the validation loss
                 and greedy decoding (`families.evaluation`);
    agreement    after another reset, the compiled training forward's loss against the eager one
                 from the same weights and batch (translation: dropout off; language models: the
                 same masks, drawn outside the compiled segment).

Each phase says how many graphs dynamo compiled and its seconds; a failure gives torch's reason.
The training step comes from one place, `families.training_step`: a step compiled or captured
whole replaces it there, and this check follows.
"""

from __future__ import annotations

import copy
import dataclasses
import time

import torch

from workflow_src.gpu_check.device import free, step_seconds
from workflow_src.gpu_check.families import Family, batch, build, compared, evaluation, forward_loss, training_step
from workflow_src.gpu_check.measures import SharedDraws, relative
from workflow_src.gpu_check.report import one_line, verdict
from workflow_src.model import compilation
from workflow_src.model.nmt_data import length_multiple
from workflow_src.plan.benchmark import synchronize

BUCKETS = (1.0, 1.5, 0.5)  # training batches' lengths, in the family's length
AGREEMENT = 1e-3  # the compiled loss's relative difference from the eager one, at most
AVOID = "train.compile: off"


def modes(setting: str, every: bool, device: torch.device) -> list[str]:
    """The configured mode (none for `off`), or with `every` each mode the device can run."""
    chosen = [m for m in compilation.MODES if m != "off"] if every else ([setting] if setting != "off" else [])
    return [m for m in chosen if m != "graphs" or device.type == "cuda"]


def targets(found: list[Family]) -> list[Family]:
    """One family per architecture whose training compiles anything (a language model without
    dropout runs torch's nn.LSTM, which is not compiled): its smallest vocabulary."""
    chosen: dict[str, Family] = {}
    for family in found:
        if family.kind == "nmt" or family.spec["dropout"] > 0:
            best = chosen.get(family.architecture)
            if best is None or (family.tgt_vocab, family.src_vocab) < (best.tgt_vocab, best.src_vocab):
                chosen[family.architecture] = family
    return list(chosen.values())


def shapes(family: Family, device: torch.device) -> tuple[list[dict], list[dict]]:
    """(training batches, evaluation batches) at the shapes a training job gives the step."""
    rows = family.batch_size
    if family.kind == "lm":
        short = dataclasses.replace(family, length=max(1, family.length // 2))
        return ([batch(family, rows, False, device), batch(short, rows, False, device)],
                [batch(family, family.spec.get("eval_batch_size", 10), False, device)])
    multiple = length_multiple(family.spec)
    lengths = sorted({-(-max(1, round(family.length * f)) // multiple) * multiple for f in BUCKETS})
    sized = [batch(dataclasses.replace(family, length=n), rows, False, device) for n in lengths]
    return sized + [batch(family, max(1, rows // 3), False, device)], [batch(family, rows, False, device)]


def graphs() -> int:
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


def phase(run, device: torch.device) -> tuple[dict, list]:
    before, started = graphs(), time.perf_counter()
    try:
        measured = run() or {}
        synchronize(device)
    except Exception as error:  # a compile error is this check's finding
        return {"graphs": graphs() - before, "seconds": time.perf_counter() - started}, [one_line(error)]
    return {"graphs": graphs() - before, "seconds": time.perf_counter() - started, **measured}, []


def check(family: Family, mode: str, precision: str, device: torch.device) -> tuple[dict, list[tuple[str, str]]]:
    """The phases' measures and [(problem, setting that avoids it)] of `family`'s architecture in `mode`."""
    target = dataclasses.replace(family, spec={**family.spec, compilation.KEY: mode})
    training_batches, evaluation_batches = shapes(target, device)
    torch._dynamo.reset()
    with torch.device(device):
        model = build(target).to(device)
    compilation.apply(model, target.spec, device)
    step, evaluate = training_step(target, model, precision, device), evaluation(target, model, precision, device)

    def train() -> dict:
        for b in training_batches:
            step(b)
        return {"step_seconds": step_seconds(lambda: step(training_batches[0]), device, 0)}

    def agree() -> dict:
        eager = compared(target).to(device)
        fused = copy.deepcopy(eager)
        compilation.apply(fused, target.spec, device)
        draws, losses = SharedDraws(), []
        for model, replay in ((eager, False), (fused, True)):
            with draws.active(model, replay):
                loss, n = forward_loss(target, model, training_batches[0], precision, device)
            losses.append(float(loss.detach()) / n)
        difference = relative(losses[1], losses[0])
        if not difference <= AGREEMENT:
            raise ValueError(f"compiled loss differs from eager by {difference:.2e} (relative; > {AGREEMENT:g})")
        return {"loss_relative": difference}

    def validate() -> None:
        for b in evaluation_batches:
            evaluate(b)

    entry = {"family": family.name, "architecture": family.architecture, "mode": mode, "phases": {}}
    problems = []
    for name, run in (("training", train), ("evaluation", validate), ("agreement", agree)):
        if name == "agreement":
            torch._dynamo.reset()  # its own compilation, apart from the job's
        measured, failed = phase(run, device)
        found = [(f"{name}: {detail}", AVOID) for detail in failed]
        entry["phases"][name] = {**measured, "verdict": verdict(found)}
        problems += found
    free(device)
    return entry, problems
