"""Train one model configuration, checkpointing every epoch and resuming after interruption.

`python -m workflow_src.train.train (--spec JSON | --spec-file FILE) --train-src ... --train-tgt ...
 --dev-src ... --dev-tgt ... --dev-src-words ... --dev-ref ... --src-vocab ... [--tgt-vocab ... | --tgt-table ...]
 --out-dir DIR`

The spec: `--spec`, the JSON document of a `workflow_src.specs.TrainSpec`, whose fields say what each
key means (`layout.train_spec` builds it from the config), or `--spec-file`, a file holding it (the
workflow's rules give the `spec.requested.json` a job of its own writes, `layout.requested_spec_path`).

In DIR: `spec.json` (that document, written as the run begins), `checkpoint.pt` (after every epoch:
weights, optimiser, history, best score),
`best.pt` (the best epoch so far by the spec's `selection` metric on the development set),
`metrics.jsonl` (one line per epoch: learning rate, losses, development BLEU, seconds, speed, trainable parameters,
training pairs kept and dropped by the length limit; for a softmax model the target-side bigram's
development loss, `bigram_dev_loss`, which the first epoch must beat or the log warns; the output
layer's diagnostics, `workflow_src.model.diagnostics`: the target table's crowding for a continuous
model, the development tokens a margin loss no longer corrects, the joint layer's saturation; `best`:
a new best development score; `early_stop`: `patience` epochs without one, so training stops;
`metrics.partial.jsonl` while training runs, replaced only when it ends) and, when training ends
(after `max_epochs` or `patience` epochs without improvement), `model.pt`, the best model (a hard
link to `best.pt`).
A rerun with the same spec resumes from `checkpoint.pt`; with another spec it starts over; where
it is unreadable, the log says so and a finished run is finished again from `metrics.jsonl` and
`best.pt`, anything else trains from scratch (`workflow_src.train.checkpoints`). Every
epoch's batch order and dropout masks are seeded from (seed, epoch), so a resumed run ends
exactly where an uninterrupted one would. Once training ends, `checkpoint.pt` keeps only the
history and a `finished` mark (no weights, no Adam state: twice the weights' size), so a rerun
writes `model.pt` again without training.

With the spec's `data.max_len_unit: piece`, training pairs with a side of more than
`data.max_len` units (pieces or words, as the model reads them) are dropped here.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from workflow_src.atomic import described, one_line_faults, read_lines
from workflow_src.data.preprocess import postprocess
from workflow_src.data.vocab import Vocab
from workflow_src.decode.decode import finish, translate
from workflow_src.model import compilation, diagnostics, precision as precisions
from workflow_src.model.gpu import job_device
from workflow_src.model.nmt_data import (
    batch_indices,
    encode_file,
    length_multiple,
    load_vocabularies,
    prefetched,
    save_model,
    training_batch,
    training_pairs_within,
)
from workflow_src.model.seq2seq import Seq2Seq, initialise
from workflow_src.score.score import bleu
from workflow_src.train import loop, static_step
from workflow_src.train.bigram import bigram_loss
from workflow_src.train.steps import training_step
from workflow_src.specs import SpecError, TrainSpec, add_spec_arguments, load, spec_argument, spec_hash  # noqa: F401 (spec_hash: tests read it here)
from workflow_src.train.loop import log


# metrics.jsonl fields that measure wall-clock time (all others repeat exactly under the same spec)
TIMING_FIELDS = frozenset(
    {"train_seconds", "train_seconds_total", "validation_seconds", "sentences_per_second", "target_tokens_per_second"}
)


def learning_rate(
    history: list[dict], lr: float, decay: float | None, start: int | None, on_rise: bool = True
) -> float:
    """The rate of the epoch after `history`, by OpenNMT-py's rule (Optim.update_learning_rate,
    the joint paper's released code): once the development perplexity has risen over the previous
    epoch's (unless not `on_rise`), or epoch `start` has ended, the rate is multiplied by `decay`
    after every epoch:

        lr_{e+1} = lr_e * decay   if  exists e' <= e: ppl_{e'} > ppl_{e'-1} (and on_rise)  or  e >= start
        lr_{e+1} = lr_e           otherwise, and always when decay is None
    """
    decaying = False
    for previous, record in zip([None, *history], history):
        decaying = (
            decaying
            or (start is not None and record["epoch"] >= start)
            or (on_rise and previous is not None and record["dev_loss"] > previous["dev_loss"])
        )
        if decaying and decay is not None:
            lr *= decay
    return lr


def evaluation_batches(src, tgt, src_vocab, tgt_vocab, batch_size, device, multiple: int = 1):
    """The development pairs in batches of about one length, in a fixed order, on `device`."""
    batches = batch_indices([len(s) for s in src], batch_size, None, [len(t) for t in tgt])
    return prefetched(
        (training_batch(src, tgt, idx, src_vocab, tgt_vocab, device, multiple) for idx in batches), device
    )


@torch.no_grad()
def mean_loss(
    model, src, tgt, src_vocab, tgt_vocab, batch_size, device, precision: str = "fp32", multiple: int = 1
) -> float:
    model.eval()
    total, tokens = torch.zeros((), dtype=torch.float64, device=device), 0
    for batch in evaluation_batches(src, tgt, src_vocab, tgt_vocab, batch_size, device, multiple):
        with precisions.autocast(precision, device):
            loss, _ = model.loss(batch.src, batch.lengths, batch.tgt_in, batch.tgt_out, tgt_vocab.pad, batch.positions)
        total, tokens = total + loss.double(), tokens + batch.tokens
    return total.item() / max(tokens, 1)


BIGRAM_SENTENCES = 200_000


def bigram_reference(spec: TrainSpec, train_tgt: list[list[int]], dev_tgt: list[list[int]], tgt_vocab) -> dict:
    """{"bigram_dev_loss": nats per development token} of the target-side bigram (`workflow_src.train.bigram`)
    for a softmax model, whose development loss is in the same unit; {} for a continuous one. The
    bigram counts about BIGRAM_SENTENCES training targets, evenly spaced over the corpora: seconds,
    where all of WMT would hold a GPU job for minutes. Fewer counts give a weaker bigram, a lower
    bar: a model still above it has learned nothing that counts."""
    if spec.output_layer != "softmax":
        return {}
    sample = train_tgt[:: max(1, len(train_tgt) // BIGRAM_SENTENCES)]
    return {"bigram_dev_loss": bigram_loss(sample, dev_tgt, len(tgt_vocab), frozenset({tgt_vocab.pad}))}


def layer_diagnostics(
    model, spec: TrainSpec, dev_src, dev_tgt, src_vocab, tgt_vocab, batch_size, device, precision, multiple
) -> dict:
    """The epoch's measures of the output layer (`workflow_src.model.diagnostics`): how many
    development tokens a margin loss no longer corrects; how saturated the joint layer's word side is."""
    if spec.loss == "margin":
        with precisions.autocast(precision, device):
            return diagnostics.margin_misses(
                model,
                evaluation_batches(dev_src, dev_tgt, src_vocab, tgt_vocab, batch_size, device, multiple),
                tgt_vocab.pad,
            )
    if spec.output_layer == "softmax":
        return diagnostics.joint_saturation(model.output)
    return {}


def development_bleu(
    model, spec: TrainSpec, src_vocab, tgt_vocab, dev_src, dev_src_words, dev_ref, tgt_lang, device
) -> float:
    model.eval()
    hypotheses = translate(model, spec, src_vocab, tgt_vocab, dev_src, device)
    tokenized = [
        finish(u, a, s.split(), w.split(), spec, {}) for (u, a), s, w in zip(hypotheses, dev_src, dev_src_words)
    ]
    return bleu(list(postprocess(tokenized, tgt_lang)), dev_ref)["score"]


@dataclass
class Corpora:
    """A job's vocabularies (`table`: the target embeddings, or None) and its training and
    development data, encoded; `pairs`: the training pairs kept and dropped by the length limit."""

    src_vocab: Vocab
    tgt_vocab: Vocab
    table: torch.Tensor | None
    train_src: list[list[int]]
    train_tgt: list[list[int]]
    pairs: dict
    dev_lines: list[str]
    dev_src: list[list[int]]
    dev_tgt: list[list[int]]
    dev_words: list[str]
    dev_ref: list[str]


@dataclass
class Steps:
    """The model and what steps it: the optimiser and, under train.compile graphs, the captured step."""

    model: Seq2Seq
    optimiser: torch.optim.Optimizer
    static: static_step.TranslationSteps | None
    multiple: int  # `nmt_data.length_multiple`


def load_corpora(job: loop.Job, args) -> Corpora:
    """The vocabularies and the encoded corpora of the command line, the too long pairs dropped."""
    spec = job.spec
    src_vocab, tgt_vocab, table = load_vocabularies(job.spec, args.src_vocab, args.tgt_vocab, args.tgt_table)
    train_src = encode_file(args.train_src, src_vocab, eos=False)
    train_tgt = encode_file(args.train_tgt, tgt_vocab, eos=True)
    if len(train_src) != len(train_tgt):
        raise ValueError(f"{args.train_src} has {len(train_src)} lines, {args.train_tgt} {len(train_tgt)}")
    kept = training_pairs_within(job.spec, train_src, train_tgt)
    pairs = {"train_pairs": len(kept), "train_pairs_too_long": len(train_src) - len(kept)}
    train_src, train_tgt = [train_src[i] for i in kept], [train_tgt[i] for i in kept]
    dev_lines = read_lines(args.dev_src)
    dev_src = [src_vocab.encode(line, eos=False) for line in dev_lines]
    dev_tgt = encode_file(args.dev_tgt, tgt_vocab, eos=True)
    dev_ref = read_lines(args.dev_ref)
    dev_words = read_lines(args.dev_src_words)
    log(
        f"vocabularies: source {len(src_vocab)}, target {len(tgt_vocab)}; {len(train_src)} training pairs "
        f"({pairs['train_pairs_too_long']} dropped: a side over {spec.data.max_len} units, "
        f"max_len_unit {spec.data.max_len_unit})"
    )
    return Corpora(
        src_vocab, tgt_vocab, table, train_src, train_tgt, pairs, dev_lines, dev_src, dev_tgt, dev_words, dev_ref
    )


def build_steps(job: loop.Job, data: Corpora) -> Steps:
    """The model, initialised from the spec's seed, on the device and compiled as the spec says,
    and its optimiser (Adam)."""
    spec, device, t = job.spec, job.device, job.spec.train
    torch.manual_seed(t.seed)
    model = Seq2Seq(spec, len(data.src_vocab), len(data.tgt_vocab), data.src_vocab.pad, data.table)
    initialise(model, t.init_scale)
    model.to(device)
    log(f"train.compile: {compilation.apply(model, spec, device)}")
    graphs = spec.compile == "graphs"  # the whole step captured: static batches, rate on the device
    trained = [p for p in model.parameters() if p.requires_grad]
    optimiser = static_step.adam(trained, t.lr, device) if graphs else torch.optim.Adam(trained, lr=t.lr, fused=True)
    static = (
        static_step.TranslationSteps(model, optimiser, spec, device, job.precision, data.src_vocab, data.tgt_vocab)
        if graphs
        else None
    )
    if static:
        static.check_sample(data.train_tgt)
    return Steps(model, optimiser, static, length_multiple(spec.compile))


def reference_fields(spec: TrainSpec, data: Corpora, model: Seq2Seq) -> dict:
    """The fields every epoch's record repeats: the bigram's development loss (softmax), the
    target table's crowding (continuous)."""
    reference = bigram_reference(spec, data.train_tgt, data.dev_tgt, data.tgt_vocab)
    if spec.output_layer == "continuous":
        reference |= diagnostics.table_crowding(model.output.table, model.output.banned)
    return reference


def train_one_epoch(job: loop.Job, data: Corpora, steps: Steps, epoch: int, lr: float) -> dict:
    """One pass over the training pairs at rate `lr`, in batches drawn from (seed, epoch): its
    summed loss, target tokens, sentences, seconds and batches."""
    t, device, static = job.spec.train, job.device, steps.static
    rng = random.Random(f"{t.seed}-{epoch}")
    steps.model.train()
    static_step.set_learning_rate(steps.optimiser, lr)
    batches = batch_indices([len(s) for s in data.train_src], t.batch_size, rng, [len(s) for s in data.train_tgt])
    started, tokens, sentences = time.perf_counter(), 0, 0
    total = torch.zeros((), dtype=torch.float64, device=device)  # read once, after the epoch
    built = (
        static.batch(data.train_src, data.train_tgt, idx)
        if static
        else training_batch(data.train_src, data.train_tgt, idx, data.src_vocab, data.tgt_vocab, device, steps.multiple)
        for idx in batches
    )
    for batch in tqdm(
        prefetched(built, device),
        total=len(batches),
        desc=f"epoch {epoch}",
        file=sys.stderr,
        mininterval=10,
        leave=False,
    ):
        loss, n = (
            static.step(batch)
            if static
            else training_step(
                steps.model, steps.optimiser, batch, data.tgt_vocab.pad, job.precision, t.clip, t.loss_normalisation
            )
        )
        total, tokens, sentences = total + loss.detach().double(), tokens + n, sentences + batch.sentences
    total = total.item()
    return {
        "loss": total,
        "tokens": tokens,
        "sentences": sentences,
        "seconds": time.perf_counter() - started,
        "batches": batches,
    }


def validate(job: loop.Job, data: Corpora, steps: Steps) -> dict:
    """The development loss, the output layer's diagnostics, the development BLEU, and the seconds
    they took."""
    spec, model, batch_size = job.spec, steps.model, job.spec.train.batch_size
    started = time.perf_counter()
    dev_loss = (
        steps.static.mean_loss(data.dev_src, data.dev_tgt)
        if steps.static
        else mean_loss(
            model,
            data.dev_src,
            data.dev_tgt,
            data.src_vocab,
            data.tgt_vocab,
            batch_size,
            job.device,
            job.precision,
            steps.multiple,
        )
    )
    layer = layer_diagnostics(
        model,
        spec,
        data.dev_src,
        data.dev_tgt,
        data.src_vocab,
        data.tgt_vocab,
        batch_size,
        job.device,
        job.precision,
        steps.multiple,
    )
    dev_bleu = development_bleu(
        model,
        job.spec,
        data.src_vocab,
        data.tgt_vocab,
        data.dev_lines,
        data.dev_words,
        data.dev_ref,
        spec.tgt_lang,
        job.device,
    )
    return {"dev_loss": dev_loss, "dev_bleu": dev_bleu, "layer": layer, "seconds": time.perf_counter() - started}


def epoch_record(
    epoch: int, lr: float, elapsed: float, trained: dict, validated: dict, data: Corpora, steps: Steps, reference: dict
) -> dict:
    """The epoch's line of `metrics.jsonl` (the module's docstring), but `best` and `early_stop`."""
    seconds, model = trained["seconds"], steps.model
    return {
        "epoch": epoch,
        "lr": lr,
        "train_loss": trained["loss"] / trained["tokens"],
        "dev_loss": validated["dev_loss"],
        "dev_bleu": validated["dev_bleu"],
        "train_seconds": round(seconds, 3),
        "train_seconds_total": round(elapsed, 3),
        "validation_seconds": round(validated["seconds"], 3),
        "sentences_per_second": round(trained["sentences"] / seconds, 1),
        "target_tokens_per_second": round(trained["tokens"] / seconds, 1),
        "parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "layer_parameters": model.layer_parameters(),
        **data.pairs,
        **reference,
        **validated["layer"],
        **(steps.static.padding(data.train_tgt, trained["batches"]) if steps.static else {}),
    }


def warn_if_unlearned(spec: TrainSpec, record: dict, reference: dict) -> None:
    """The log's warning when the first epoch's development loss is not below the bigram's."""
    if record["epoch"] == 1 and record["dev_loss"] >= reference.get("bigram_dev_loss", math.inf):
        log(
            f"WARNING: {spec.experiment} (seed {spec.train.seed}) has not learned from the source after its "
            f"first epoch: development perplexity {math.exp(record['dev_loss']):.1f} is not below the target-side "
            f"bigram's {math.exp(reference['bigram_dev_loss']):.1f} (workflow_src/train/bigram.py). At the papers' "
            f"sizes every model beats it after one epoch: check train.lr, train.init_scale and the data before "
            f"spending more GPU time (results/training_diagnostics.md lists every such model)."
        )


def selection_score(spec: TrainSpec, record: dict) -> float:
    """An epoch's score by the spec's `train.selection`: its development BLEU, or minus its loss."""
    return record["dev_bleu"] if spec.train.selection == "bleu" else -record["dev_loss"]


def select(job: loop.Job, run: loop.Run, record: dict, data: Corpora, model: Seq2Seq) -> None:
    """A new best score saves the epoch as `best.pt`; `patience` epochs without one stop training
    (the record's `best` and `early_stop`)."""
    score = selection_score(job.spec, record)
    improved = score > run.best
    if improved:
        run.best, run.stale = score, 0
        save_model(
            job.kept,
            model,
            job.spec,
            data.src_vocab,
            data.tgt_vocab,
            {"epoch": record["epoch"], "precision": job.precision},
        )
    else:
        run.stale += 1
    record["best"] = improved
    record["early_stop"] = run.stale >= job.spec.train.patience


def early_stopped(history: list[dict]) -> bool:
    """Whether the last epoch of `history` fired the early stop."""
    return history[-1]["early_stop"]


def train(spec: TrainSpec, args, device: torch.device) -> None:
    """Train to `max_epochs` or an early stop, from the checkpoint where there is one, and publish
    the best epoch as `model.pt`."""
    t = spec.train
    job = loop.begin(spec, args.out_dir, "best.pt", args.threads, device)
    data = load_corpora(job, args)
    steps = build_steps(job, data)
    reference = reference_fields(spec, data, steps.model)
    run = loop.resume(job, loop.Run(-math.inf, stale=0), t.max_epochs, early_stopped, steps.model, steps.optimiser)
    elapsed = run.history[-1]["train_seconds_total"] if run.history else 0.0
    for epoch in loop.epochs(run, t.max_epochs, t.seed, early_stopped):
        lr = learning_rate(run.history, t.lr, t.lr_decay, t.lr_decay_start, t.lr_decay_on_rise)
        trained = train_one_epoch(job, data, steps, epoch, lr)
        elapsed += trained["seconds"]
        record = epoch_record(epoch, lr, elapsed, trained, validate(job, data, steps), data, steps, reference)
        warn_if_unlearned(spec, record, reference)
        select(job, run, record, data, steps.model)
        run.history.append(record)
        loop.checkpoint(job, run, steps.model, steps.optimiser)
    loop.finish(job, run)
    best_epoch = max(run.history, key=lambda record: selection_score(spec, record))
    log(f"done: best epoch {best_epoch['epoch']} by development {t.selection} ({best_epoch['dev_bleu']} BLEU)")


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    add_spec_arguments(parser, TrainSpec)
    for name in ("train-src", "train-tgt", "dev-src", "dev-tgt", "dev-src-words", "dev-ref", "src-vocab"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    parser.add_argument("--tgt-vocab", type=Path, help="target word counts (softmax models)")
    parser.add_argument("--tgt-table", type=Path, help="target embedding table (continuous or tied models)")
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if (args.tgt_vocab is None) == (args.tgt_table is None):
        parser.error("give exactly one of --tgt-vocab and --tgt-table")
    try:
        spec = load(TrainSpec, *spec_argument(args))
    except SpecError as err:
        parser.exit(1, f"train: error: {err}\n")
    with job_device(spec.device, key="train.device") as device:
        train(spec, args, device)


if __name__ == "__main__":
    main()
