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
from workflow_src.model.timing import synchronize
from workflow_src.train import graph_check

BUCKETS = (1.0, 1.5, 0.5)  # training batches' lengths, in the family's length
AGREEMENT = 1e-3  # the compiled loss's relative difference from the eager one, at most
AVOID = "train.compile: off"
GRAPH_STEPS = 50  # training steps of graphs against eager (issue 35: "agreement over 50 steps")


def modes(setting: str, which: str, device: torch.device) -> list[str]:
    """The modes to check: `configured` the configured one (none for `off`); `graphs` that and
    `graphs`; `all` every mode; each only where the device can run it."""
    chosen = {"configured": [setting], "graphs": [setting, "graphs"], "all": list(compilation.MODES)}[which]
    return [m for m in dict.fromkeys(chosen) if m != "off" and (m != "graphs" or device.type == "cuda")]


def targets(found: list[Family], mode: str = "fuse") -> list[Family]:
    """`fuse`: one family per architecture whose training compiles anything (a language model
    without dropout runs torch's nn.LSTM, which is not compiled), its smallest vocabulary.
    `graphs`: one per architecture, output layer and vocabulary sampling (the whole step is
    captured, the sampled vocabulary drawn on the device), its smallest vocabulary."""

    def key(family: Family):
        if mode != "graphs":
            return family.architecture
        return (
            family.architecture,
            family.output_layer,
            family.kind == "nmt" and family.spec.sample_share is not None,
        )

    chosen: dict = {}
    for family in found:
        if mode == "graphs" or family.kind == "nmt" or family.spec.dropout > 0:
            best = chosen.get(key(family))
            if best is None or (family.tgt_vocab, family.src_vocab) < (best.tgt_vocab, best.src_vocab):
                chosen[key(family)] = family
    return list(chosen.values())


def subject(family: Family, mode: str) -> str:
    """What a compile item checks, as its console line and the report name it."""
    if mode != "graphs":
        return f"train.compile {mode} of {family.architecture}"
    return f"train.compile graphs of {family.architecture}, {family.output_layer}" + (
        " sampled" if family.kind == "nmt" and family.spec.sample_share is not None else ""
    )


def graphs_against_eager(family: Family, device: torch.device) -> tuple[dict, list[tuple[str, str]]]:
    """`graphs` as training runs it: the whole step captured per length bucket
    (`train.static_step`) against the eager step, over graph_check.check's steps (agreement in fp32
    without dropout, then both timed in train.precision)."""
    sizes = (
        {"vocabulary": family.tgt_vocab}
        if family.kind == "lm"
        else {"src": family.src_vocab, "tgt": family.tgt_vocab, "dim": family.dim}
    )
    started = time.perf_counter()
    try:
        result = graph_check.check(family.kind, family.spec, sizes, device, steps=GRAPH_STEPS)
    except Exception as error:  # a step that cannot be captured is this check's finding
        return {"seconds": time.perf_counter() - started}, [(f"graphs against eager: {one_line(error)}", AVOID)]
    phase = {
        "seconds": time.perf_counter() - started,
        "loss_relative": result["loss_max_relative"],
        "update_cosine_min": result["update_cosine_min"],
        "agreement": result["agreement"],
        "eager_repeat_loss_relative": result["eager_repeat_loss_max_relative"],
        "eager_repeat_update_cosine_min": result["eager_repeat_update_cosine_min"],
        **{k: result[k] for k in ("fp64_loss_max_relative", "fp64_update_cosine_min") if k in result},
        "step_seconds": result["graphs_step_seconds"],
        "eager_step_seconds": result["eager_step_seconds"],
        "step_seconds_rounds": result["graphs_step_seconds_rounds"],
        "eager_step_seconds_rounds": result["eager_step_seconds_rounds"],
        "speedup": result["speedup"],
    }
    fp64 = (
        f"; in fp64: losses within {result['fp64_loss_max_relative']:.2e} (at most "
        f"{graph_check.FP64_LOSS_RELATIVE:g}), "
        f"updates' cosine at least {result['fp64_update_cosine_min']:.7f} (at least {graph_check.FP64_UPDATE_COSINE:g})"
        if "fp64_loss_max_relative" in result
        else ""
    )
    problems = (
        []
        if result["passed"]
        else [
            (
                f"graphs against eager over {result['steps']} steps: losses within {result['loss_max_relative']:.2e} "
                f"(at most {graph_check.LOSS_RELATIVE:g}), updates' cosine at least {result['update_cosine_min']:.5f} "
                f"(at least {graph_check.UPDATE_COSINE:g}){fp64}",
                AVOID,
            )
        ]
    )
    return phase, problems


def shapes(family: Family, device: torch.device) -> tuple[list[dict], list[dict]]:
    """(training batches, evaluation batches) at the shapes a training job gives the step."""
    rows = family.batch_size
    if family.kind == "lm":
        short = dataclasses.replace(family, length=max(1, family.length // 2))
        return (
            [batch(family, rows, False, device), batch(short, rows, False, device)],
            [batch(family, family.spec.eval_batch_size, False, device)],
        )
    multiple = length_multiple(family.spec.compile)
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
    if mode == "graphs":
        measured, problems = graphs_against_eager(family, device)
        measured["verdict"] = verdict(problems)
        free(device)
        return (
            {
                "family": family.name,
                "architecture": family.architecture,
                "mode": mode,
                "phases": {"graphs against eager": measured},
            },
            problems,
        )
    target = dataclasses.replace(family, spec=dataclasses.replace(family.spec, **{compilation.KEY: mode}))
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
