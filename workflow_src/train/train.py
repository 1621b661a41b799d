"""Train one model configuration, checkpointing every epoch and resuming after interruption.

`python -m workflow_src.train.train --spec JSON --train-src ... --train-tgt ... --dev-src ...
 --dev-tgt ... --dev-src-words ... --dev-ref ... --src-vocab ... [--tgt-vocab ... | --tgt-table ...]
 --out-dir DIR`

In DIR: `checkpoint.pt` (after every epoch: weights, optimiser, history, best score),
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
import json
import math
import os
import random
import shutil
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from workflow_src.atomic import atomic_output, one_line_faults, read_lines
from workflow_src.data.preprocess import postprocess
from workflow_src.decode.decode import finish, translate
from workflow_src.model import compilation, diagnostics, precision as precisions
from workflow_src.model.gpu import job_device
from workflow_src.model.nmt_data import (batch_indices, encode_file, length_multiple, load_vocabularies, prefetched,
                                         save_model, training_batch, training_pairs_within)
from workflow_src.model.seq2seq import Seq2Seq, initialise
from workflow_src.score.score import bleu
from workflow_src.train import checkpoints, static_step
from workflow_src.train.bigram import bigram_loss
from workflow_src.train.steps import training_step
from workflow_src.train.checkpoints import spec_hash


# metrics.jsonl fields that measure wall-clock time (all others repeat exactly under the same spec)
TIMING_FIELDS = frozenset({"train_seconds", "train_seconds_total", "validation_seconds", "sentences_per_second",
                           "target_tokens_per_second"})


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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
        torch.save({key: value for key, value in saved.items() if key not in ("model", "optimiser")}
                   | {"finished": True}, tmp)


def learning_rate(history: list[dict], lr: float, decay: float | None, start: int | None,
                  on_rise: bool = True) -> float:
    """The rate of the epoch after `history`, by OpenNMT-py's rule (Optim.update_learning_rate,
    the joint paper's released code): once the development perplexity has risen over the previous
    epoch's (unless not `on_rise`), or epoch `start` has ended, the rate is multiplied by `decay`
    after every epoch:

        lr_{e+1} = lr_e * decay   if  exists e' <= e: ppl_{e'} > ppl_{e'-1} (and on_rise)  or  e >= start
        lr_{e+1} = lr_e           otherwise, and always when decay is None
    """
    decaying = False
    for previous, record in zip([None, *history], history):
        decaying = decaying or (start is not None and record["epoch"] >= start) or (
            on_rise and previous is not None and record["dev_loss"] > previous["dev_loss"])
        if decaying and decay is not None:
            lr *= decay
    return lr


def evaluation_batches(src, tgt, src_vocab, tgt_vocab, batch_size, device, multiple: int = 1):
    """The development pairs in batches of about one length, in a fixed order, on `device`."""
    batches = batch_indices([len(s) for s in src], batch_size, None, [len(t) for t in tgt])
    return prefetched((training_batch(src, tgt, idx, src_vocab, tgt_vocab, device, multiple) for idx in batches), device)


@torch.no_grad()
def mean_loss(model, src, tgt, src_vocab, tgt_vocab, batch_size, device, precision: str = "fp32", multiple: int = 1) -> float:
    model.eval()
    total, tokens = torch.zeros((), dtype=torch.float64, device=device), 0
    for batch in evaluation_batches(src, tgt, src_vocab, tgt_vocab, batch_size, device, multiple):
        with precisions.autocast(precision, device):
            loss, _ = model.loss(batch.src, batch.lengths, batch.tgt_in, batch.tgt_out, tgt_vocab.pad, batch.positions)
        total, tokens = total + loss.double(), tokens + batch.tokens
    return total.item() / max(tokens, 1)


BIGRAM_SENTENCES = 200_000


def bigram_reference(spec: dict, train_tgt: list[list[int]], dev_tgt: list[list[int]], tgt_vocab) -> dict:
    """{"bigram_dev_loss": nats per development token} of the target-side bigram (`workflow_src.train.bigram`)
    for a softmax model, whose development loss is in the same unit; {} for a continuous one. The
    bigram counts about BIGRAM_SENTENCES training targets, evenly spaced over the corpora: seconds,
    where all of WMT would hold a GPU job for minutes. Fewer counts give a weaker bigram, a lower
    bar: a model still above it has learned nothing that counts."""
    if spec["output_layer"] != "softmax":
        return {}
    sample = train_tgt[::max(1, len(train_tgt) // BIGRAM_SENTENCES)]
    return {"bigram_dev_loss": bigram_loss(sample, dev_tgt, len(tgt_vocab), frozenset({tgt_vocab.pad}))}


def layer_diagnostics(model, spec, dev_src, dev_tgt, src_vocab, tgt_vocab, batch_size, device, precision, multiple) -> dict:
    """The epoch's measures of the output layer (`workflow_src.model.diagnostics`): how many
    development tokens a margin loss no longer corrects; how saturated the joint layer's word side is."""
    if spec["loss"] == "margin":
        with precisions.autocast(precision, device):
            return diagnostics.margin_misses(
                model, evaluation_batches(dev_src, dev_tgt, src_vocab, tgt_vocab, batch_size, device, multiple), tgt_vocab.pad)
    if spec["output_layer"] == "softmax":
        return diagnostics.joint_saturation(model.output)
    return {}


def development_bleu(model, spec, src_vocab, tgt_vocab, dev_src, dev_src_words, dev_ref, tgt_lang, device) -> float:
    model.eval()
    hypotheses = translate(model, spec, src_vocab, tgt_vocab, dev_src, device)
    tokenized = [finish(u, a, s.split(), w.split(), spec, {}) for (u, a), s, w in zip(hypotheses, dev_src, dev_src_words)]
    return bleu(list(postprocess(tokenized, tgt_lang)), dev_ref)["score"]


def train(spec: dict, args, device: torch.device) -> None:
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    checkpoint_path, best_path = out_dir / "checkpoint.pt", out_dir / "best.pt"
    t = spec["train"]
    seed = t["seed"]
    torch.set_num_threads(args.threads)
    precision = precisions.resolve(spec.get("precision", "auto"), device)
    precisions.configure(precision)
    log(f"experiment {spec['experiment']} (spec {spec_hash(spec)}) on {device} in {precision}, {args.threads} threads")

    src_vocab, tgt_vocab, table = load_vocabularies(spec, args.src_vocab, args.tgt_vocab, args.tgt_table)
    train_src = encode_file(args.train_src, src_vocab, eos=False)
    train_tgt = encode_file(args.train_tgt, tgt_vocab, eos=True)
    if len(train_src) != len(train_tgt):
        raise ValueError(f"{args.train_src} has {len(train_src)} lines, {args.train_tgt} {len(train_tgt)}")
    kept = training_pairs_within(spec, train_src, train_tgt)
    pairs = {"train_pairs": len(kept), "train_pairs_too_long": len(train_src) - len(kept)}
    train_src, train_tgt = [train_src[i] for i in kept], [train_tgt[i] for i in kept]
    dev_src_lines = read_lines(args.dev_src)
    dev_src = [src_vocab.encode(line, eos=False) for line in dev_src_lines]
    dev_tgt = encode_file(args.dev_tgt, tgt_vocab, eos=True)
    dev_ref = read_lines(args.dev_ref)
    dev_src_words = read_lines(args.dev_src_words)
    log(f"vocabularies: source {len(src_vocab)}, target {len(tgt_vocab)}; {len(train_src)} training pairs "
        f"({pairs['train_pairs_too_long']} dropped: a side over {spec['data']['max_len']} units, "
        f"max_len_unit {spec['data']['max_len_unit']})")
    reference = bigram_reference(spec, train_tgt, dev_tgt, tgt_vocab)

    torch.manual_seed(seed)
    model = Seq2Seq(spec, len(src_vocab), len(tgt_vocab), src_vocab.pad, table)
    initialise(model, t["init_scale"])
    model.to(device)
    if spec["output_layer"] == "continuous":
        reference |= diagnostics.table_crowding(model.output.table, model.output.banned)
    log(f"train.compile: {compilation.apply(model, spec, device)}")
    multiple = length_multiple(spec)
    graphs = spec.get(compilation.KEY) == "graphs"  # the whole step captured: static batches, rate on the device
    trained = [p for p in model.parameters() if p.requires_grad]
    optimiser = static_step.adam(trained, t["lr"], device) if graphs else torch.optim.Adam(trained, lr=t["lr"], fused=True)
    static = static_step.TranslationSteps(model, optimiser, spec, device, precision, src_vocab, tgt_vocab) if graphs else None
    if static:
        static.check_sample(train_tgt)
    history, best, stale, start_epoch, finished = [], -math.inf, 0, 1, False
    saved = checkpoints.resume_point(out_dir, best_path, spec, lambda done: bool(done) and (
        done[-1]["early_stop"] or done[-1]["epoch"] >= t["max_epochs"]), device, log)
    if saved is not None:
        precisions.pin(saved, precision, checkpoint_path, spec.get("precision", "auto"), device, log)
        history, best, stale = saved["history"], saved.get("best", best), saved.get("stale", stale)
        start_epoch, finished = saved["epoch"] + 1, saved.get("finished", False)
        if finished:
            log(f"{checkpoint_path}: training finished after epoch {saved['epoch']}; not training again")
        else:
            model.load_state_dict(saved["model"])
            optimiser.load_state_dict(saved["optimiser"])
            log(f"resuming after epoch {saved['epoch']} from {checkpoint_path}")

    selection = t["selection"]
    elapsed = history[-1]["train_seconds_total"] if history else 0.0
    for epoch in range(start_epoch, t["max_epochs"] + 1):
        if finished or stale >= t["patience"]:
            break
        rng = random.Random(f"{seed}-{epoch}")
        torch.manual_seed(seed * 100003 + epoch)
        model.train()
        lr = learning_rate(history, t["lr"], t.get("lr_decay"), t.get("lr_decay_start"), t.get("lr_decay_on_rise", True))
        static_step.set_learning_rate(optimiser, lr)
        batches = batch_indices([len(s) for s in train_src], t["batch_size"], rng, [len(s) for s in train_tgt])
        started, tokens, sentences = time.perf_counter(), 0, 0
        total = torch.zeros((), dtype=torch.float64, device=device)  # read once, after the epoch
        built = (static.batch(train_src, train_tgt, idx) if static else
                 training_batch(train_src, train_tgt, idx, src_vocab, tgt_vocab, device, multiple) for idx in batches)
        for batch in tqdm(prefetched(built, device), total=len(batches), desc=f"epoch {epoch}", file=sys.stderr,
                          mininterval=10, leave=False):
            loss, n = (static.step(batch) if static else
                       training_step(model, optimiser, batch, tgt_vocab.pad, precision, t["clip"], t.get("loss_normalisation", "token")))
            total, tokens, sentences = total + loss.detach().double(), tokens + n, sentences + batch.sentences
        total = total.item()
        train_seconds = time.perf_counter() - started
        elapsed += train_seconds
        validation_started = time.perf_counter()
        dev_loss = (static.mean_loss(dev_src, dev_tgt) if static else
                    mean_loss(model, dev_src, dev_tgt, src_vocab, tgt_vocab, t["batch_size"], device, precision, multiple))
        layer = layer_diagnostics(model, spec, dev_src, dev_tgt, src_vocab, tgt_vocab, t["batch_size"], device, precision, multiple)
        dev_bleu = development_bleu(model, spec, src_vocab, tgt_vocab, dev_src_lines, dev_src_words, dev_ref, spec["tgt_lang"], device)
        record = {
            "epoch": epoch, "lr": lr, "train_loss": total / tokens, "dev_loss": dev_loss, "dev_bleu": dev_bleu,
            "train_seconds": round(train_seconds, 3), "train_seconds_total": round(elapsed, 3),
            "validation_seconds": round(time.perf_counter() - validation_started, 3),
            "sentences_per_second": round(sentences / train_seconds, 1),
            "target_tokens_per_second": round(tokens / train_seconds, 1),
            "parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "layer_parameters": model.layer_parameters(),
            **pairs,
            **reference,
            **layer,
            **(static.padding(train_tgt, batches) if static else {}),
        }
        if epoch == 1 and dev_loss >= reference.get("bigram_dev_loss", math.inf):
            log(f"WARNING: {spec['experiment']} (seed {seed}) has not learned from the source after its first epoch: "
                f"development perplexity {math.exp(dev_loss):.1f} is not below the target-side bigram's "
                f"{math.exp(reference['bigram_dev_loss']):.1f} (workflow_src/train/bigram.py). At the papers' sizes every "
                f"model beats it after one epoch: check train.lr, train.init_scale and the data before spending more "
                f"GPU time (results/training_diagnostics.md lists every such model).")
        score = dev_bleu if selection == "bleu" else -dev_loss
        improved = score > best
        if improved:
            best, stale = score, 0
            save_model(best_path, model, spec, src_vocab, tgt_vocab, {"epoch": epoch, "precision": precision})
        else:
            stale += 1
        record["best"] = improved
        record["early_stop"] = stale >= t["patience"]
        history.append(record)
        log(json.dumps(record))
        saved = {"spec_hash": spec_hash(spec), "epoch": epoch, "model": model.state_dict(),
                 "optimiser": optimiser.state_dict(), "history": history, "best": best, "stale": stale,
                 "precision": precision}
        with atomic_output(checkpoint_path) as tmp:
            torch.save(saved, tmp)
        checkpoints.save_progress(out_dir, history)
    checkpoints.save_history(out_dir, history)
    publish(best_path, out_dir / "model.pt")
    if not finished:
        mark_finished(checkpoint_path, saved)
    best_epoch = max(history, key=lambda r: r["dev_bleu"] if selection == "bleu" else -r["dev_loss"])
    log(f"done: best epoch {best_epoch['epoch']} by development {selection} ({best_epoch['dev_bleu']} BLEU)")


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=json.loads, required=True, help="the resolved experiment spec (JSON)")
    for name in ("train-src", "train-tgt", "dev-src", "dev-tgt", "dev-src-words", "dev-ref", "src-vocab"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    parser.add_argument("--tgt-vocab", type=Path, help="target word counts (softmax models)")
    parser.add_argument("--tgt-table", type=Path, help="target embedding table (continuous or tied models)")
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if (args.tgt_vocab is None) == (args.tgt_table is None):
        parser.error("give exactly one of --tgt-vocab and --tgt-table")
    with job_device(args.spec.get("device", "auto"), key="train.device") as device:
        train(args.spec, args, device)


if __name__ == "__main__":
    main()
