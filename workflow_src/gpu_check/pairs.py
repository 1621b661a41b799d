"""Two short trainings on real parallel text: a softmax CE model and an NLLvMF model, each for a
fixed time at the configured (the papers') sizes, on the training device; their target tokens
per second and loss curves.

`python3 -m workflow_src.gpu_check.pairs --config config.yaml --pairs DIR --out OUTDIR [--seconds 30]`

DIR holds `src-train.txt` and `tgt-train.txt` (one tokenized sentence a line, as the fixtures'
10,000 en-de pairs from OpenNMT-py's data/). Vocabularies are the words of these files, capped at
config datasets.iwslt16's sizes. The NLLvMF model needs target embeddings and a bare GPU machine
has no fastText: it gets a STAND-IN, random unit vectors (seeded), as its frozen target table.
Its loss curve shows that the step runs and how the loss moves; it says nothing about the BLEU that
real fastText vectors would give. Writes OUTDIR/pairs_training.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from workflow_src import layout
from workflow_src.config_check import read_checked
from workflow_src.atomic import described, exit_without_teardown, one_line_faults, read_lines, write_text
from workflow_src.data.vocab import Vocab, count_words
from workflow_src.model import compilation, precision as precisions
from workflow_src.model.gpu import job_device
from workflow_src.model.nmt_data import batch_indices, length_multiple, training_batch
from workflow_src.model.seq2seq import Seq2Seq, initialise
from workflow_src.plan.benchmark import device_name

EXPERIMENTS = ("word2word-ce", "word2emb-fasttext-tied-nllvmf_reg1reg2")
DATASET, PAIR = "iwslt16", "en-de"  # the sizes of the vMF paper's data; the fixtures' direction
STAND_IN = (
    "random unit vectors (seed 1), a stand-in for fastText target embeddings, which a bare GPU "
    "machine cannot train: the loss curve shows that the step runs and how the loss moves, not what real vectors "
    "would give"
)
POINTS = 20  # loss-curve points per training (at least)


def vocabulary(lines: list[str], size: int) -> Vocab:
    return Vocab([word for word, _ in count_words(lines)][:size])


def train_for(
    experiment: str,
    config: dict,
    src_lines: list[str],
    tgt_lines: list[str],
    seconds: float,
    device: torch.device,
    precision: str,
) -> dict:
    spec = layout.train_spec(config, DATASET, PAIR, experiment, 1)
    data = config["datasets"][DATASET]
    src_vocab = vocabulary(src_lines, data["src_vocab_size"])
    target_size = data["emb_vocab_size"] if spec.output_layer == "continuous" else data["tgt_vocab_size"]
    tgt_vocab = vocabulary(tgt_lines, target_size)
    table = None
    if spec.embeddings:
        generator = torch.Generator().manual_seed(1)
        table = F.normalize(
            torch.randn(len(tgt_vocab), config["embeddings"][spec.embeddings]["dim"], generator=generator), dim=-1
        )
        table[tgt_vocab.pad] = 0.0  # the <pad> row is zero, as in a real table
    torch.manual_seed(1)
    model = Seq2Seq(spec, len(src_vocab), len(tgt_vocab), src_vocab.pad, table)
    initialise(model, spec.train.init_scale)
    model.to(device)
    compilation.apply(model, spec, device)
    optimiser = torch.optim.Adam(
        [p for p in model.parameters() if p.requires_grad], lr=spec.train.lr, fused=device.type in ("cuda", "cpu")
    )
    src = [src_vocab.encode(line, eos=False) for line in src_lines]
    tgt = [tgt_vocab.encode(line, eos=True) for line in tgt_lines]
    rng = random.Random(1)
    curve, step, tokens, sentences = [], 0, 0, 0
    window_loss = torch.zeros((), dtype=torch.float64, device=device)
    window_tokens, every = 0, 10
    started = time.perf_counter()
    model.train()
    while time.perf_counter() - started < seconds:
        for idx in batch_indices([len(s) for s in src], spec.train.batch_size, rng, [len(t) for t in tgt]):
            batch = training_batch(src, tgt, idx, src_vocab, tgt_vocab, device, length_multiple(spec.compile)).to(
                device
            )
            with precisions.autocast(precision, device):
                loss, n = model.loss(
                    batch.src, batch.lengths, batch.tgt_in, batch.tgt_out, tgt_vocab.pad, batch.positions
                )
            optimiser.zero_grad(set_to_none=True)
            (loss / n).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), spec.train.clip)
            optimiser.step()
            step, tokens, sentences = step + 1, tokens + n, sentences + batch.sentences
            window_loss, window_tokens = window_loss + loss.detach().double(), window_tokens + n
            elapsed = time.perf_counter() - started
            if step % every == 0 or elapsed >= seconds:  # one host sync per `every` steps, to read the loss
                curve.append(
                    {"seconds": round(elapsed, 2), "step": step, "loss_per_token": window_loss.item() / window_tokens}
                )
                window_loss.zero_()
                window_tokens = 0
            if elapsed >= seconds:
                break
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - started
    return {
        "experiment": experiment,
        "seconds": round(elapsed, 2),
        "steps": step,
        "sentences": sentences,
        "target_tokens": tokens,
        "target_tokens_per_second": tokens / elapsed,
        "sizes": {
            "hidden": spec.model.hidden,
            "src_vocabulary": len(src_vocab),
            "tgt_vocabulary": len(tgt_vocab),
            "batch_size": spec.train.batch_size,
        },
        "target_embeddings": STAND_IN if table is not None else None,
        "loss_curve": curve,
    }


def line(run: dict) -> str:
    """The console line of a training: passed where every point of its loss curve is finite."""
    curve = [point["loss_per_token"] for point in run["loss_curve"]]
    if not curve or not all(math.isfinite(loss) for loss in curve):
        return (
            f"pairs training of {run['experiment']}: FAILED: loss curve {curve[:3]}... is not finite "
            "(avoid with train.precision: fp32)"
        )
    return (
        f"pairs training of {run['experiment']}: passed ({run['target_tokens_per_second']:.4g} target tokens/s, "
        f"loss {curve[0]:.3f} -> {curve[-1]:.3f} in {run['steps']} steps)"
    )


def markdown(report: dict) -> str:
    lines = [
        "# Training on real pairs",
        "",
        f"{report['pairs']} pairs from {report['source']} on {report['device']} ({report['device_name']}), "
        f"{report['precision']}, {report['seconds_each']} s per model, torch {report['torch']}.",
        "",
    ]
    for run in report["runs"]:
        lines += [
            f"## {run['experiment']}",
            "",
            f"{run['steps']} steps, {run['target_tokens_per_second']:.4g} target tokens/s, sizes {run['sizes']}."
            + (f" Target embeddings: {run['target_embeddings']}." if run["target_embeddings"] else ""),
            "",
            "| seconds | step | loss per target token |",
            "|---|---|---|",
            *[f"| {p['seconds']} | {p['step']} | {p['loss_per_token']:.4f} |" for p in run["loss_curve"]],
            "",
        ]
    return "\n".join(lines)


@one_line_faults
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--config", required=True)
    parser.add_argument("--pairs", type=Path, required=True, help="folder with src-train.txt and tgt-train.txt")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=30.0, help="training time of each model")
    args = parser.parse_args(argv)
    config = read_checked(args.config)
    src_lines = read_lines(args.pairs / "src-train.txt", "source sentences, one a line")
    tgt_lines = read_lines(args.pairs / "tgt-train.txt", "their target sentences, one a line")
    if len(src_lines) != len(tgt_lines):
        parser.error(f"{args.pairs}: {len(src_lines)} source and {len(tgt_lines)} target lines")
    with job_device(config["train"]["device"]) as device:
        precision = precisions.resolve(config["train"].get("precision", "auto"), device)
        precisions.configure(precision)
        runs = []
        for experiment in EXPERIMENTS:
            runs.append(train_for(experiment, config, src_lines, tgt_lines, args.seconds, device, precision))
            print(line(runs[-1]), flush=True)
    report = {
        "pairs": len(src_lines),
        "source": str(args.pairs),
        "device": str(device),
        "device_name": device_name(device),
        "precision": precision,
        "seconds_each": args.seconds,
        "torch": torch.__version__,
        "runs": runs,
    }
    write_text(args.out / "pairs_training.json", json.dumps(report, indent=1) + "\n")
    write_text(args.out / "pairs_training.md", markdown(report) + "\n")
    return 1 if any(": FAILED: " in line(run) for run in runs) else 0


if __name__ == "__main__":
    exit_without_teardown(main())
