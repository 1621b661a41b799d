"""Train one VD-LSTM language model of the tying paper (§6, appendix A), checkpointing every epoch.

`python -m workflow_src.train.train_lm (--spec JSON | --spec-file FILE) --train train.txt --valid valid.txt
 --test test.txt [--vocabulary-text whole-train.txt] --out-dir DIR [--threads N]`

Text: one sentence per line; the token stream is every line's words followed by `<eos>`; the
vocabulary is every token of the training file (valid and test must not leave it: PTB and
WikiText-2 already carry `<unk>`). Each epoch trains on the stream cut into `batch_size` columns,
in `bptt`-step segments, the state carried (and detached) from one segment to the next, with SGD:

    J = (1/B) Σ_b Σ_t ℓ_{b,t}      Zaremba et al.'s cost, which lr 1 is for (summed over the
                                   segment, averaged over the batch)
    ℓ = CE | CE + γτ J_aug (AL, Eq. 3.3) | β τ²|V| J_aug + (1 - β) CE (Figure 1, Eq. 6.1)
    lr_e = lr · lr_decay^max(0, e - decay_after),  gradients clipped to a global norm of `clip`

(with `sessions` > 1 the schedule runs again from the weights it ended with: footnote 4's PTB
small models, "re-trained by initializing to their final configuration from the first session")

and is then scored on the validation stream (eval mode, `eval_batch_size` columns, 10 as in
pytorch/examples; the remainder dropped, each column read from a zero state):
PPL = exp((1/N) Σ -log p(w_t | w_<t)). The paper reports the model after its fixed schedule and
implies no early stopping; we keep the epoch with the best validation perplexity, which under a
decaying rate is almost always the last (or, with `keep`, the last, or the one with the lowest
training loss: Figure 1 measures its models "at the minimum training loss"). A run whose last two
epochs each ended above 1.5 times its best validation perplexity has diverged and stops there
(`given_up`; docs/tying.md, "REAL diverges in the demo").

The spec: `--spec`, the JSON document of a `workflow_src.specs.LMSpec`, whose fields say what each
key means (`lm_specs.lm_spec` builds it from the config), or `--spec-file`, a file holding it (the
workflow's rules give the `spec.requested.json` a job of its own writes, `layout.requested_spec_path`).

In DIR: `spec.json` (the spec's document, written as the run begins), `checkpoint.pt` (after every
epoch, with the spec's hash: a rerun resumes from it, and the
dropout masks of epoch e are drawn from (seed, e), so it ends exactly where an uninterrupted run
would; unreadable, it is said in the log and `workflow_src.train.checkpoints` decides what to go on
from), `kept.pt` (the epoch to keep so far), `metrics.jsonl` (written when training ends, the
history so far in `metrics.partial.jsonl` until then; a line per epoch: epoch (counted
over sessions), session, lr, train_loss (the mean objective per token), train_perplexity,
valid_perplexity, best, seconds, tokens_per_second, embedding_row_norm_max and
embedding_row_norm_max_word: the largest ‖l_w‖ of L after the epoch and its word, which a runaway
of AL's target distribution shows first (docs/tying.md); with `convergence`, also
train_loss_improvement (the relative improvement above, null for the first k epochs) and
converged) and, at the end,
`model.pt` (the kept epoch's: spec, state_dict, itos, epoch; a hard link to `kept.pt`) and
`perplexity.json` (its validation and test perplexity, units per layer, parameter count, d(Lᵀ, W) of
appendix B, `stopped`: why training ended, and `valid_blocks` / `test_blocks`: [NLL sum in nats,
tokens] per block of `evidence.BLOCK_TOKENS` predicted tokens in the order of the text, the
evaluation's every token, so that exp(Σ NLL / Σ tokens) is the perplexity: a claim's evidence).
Once training ends, `checkpoint.pt` keeps only the history and a `finished` mark (no weights), so a
rerun scores `kept.pt` again without training.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from tqdm import tqdm

from workflow_src.atomic import described, one_line_faults, read_lines, write_text
from workflow_src.data.archives import CorpusError
from workflow_src.data.vocab import count_words
from workflow_src.model import compilation
from workflow_src.model.gpu import job_device
from workflow_src.model.lm import (
    EOS,
    LSTMLanguageModel,
    build_model,
    load_language_model,
    normalise_embedding_rows,
    perplexity,
    save_language_model,
)
from workflow_src.model.lm_losses import build_objective
from workflow_src.train import static_step
from workflow_src.specs import LMSpec, SpecError, add_spec_arguments, spec_argument
from workflow_src.train.lm_spec import KEEP, read, resolve  # noqa: F401 (resolve: tests read it here)
from workflow_src.train.steps import evaluate, predicted_tokens, token_nll, train_epoch
from workflow_src.train.divergence import DIVERGED_RATIO, diverged
from workflow_src.score.evidence import BLOCK_TOKENS, perplexity_blocks
from workflow_src.score.subspace import embedding_output_distance
from workflow_src.train import loop
from workflow_src.train.loop import log

DIVERGED_EPOCHS = 2  # a run that has ended this many epochs diverged stops (`given_up`)


def training_loss_improvement(history: list[dict], window: int) -> float | None:
    """(min_{i <= e-k} L_i - min_{e-k < i <= e} L_i) / min_{i <= e-k} L_i over the training losses
    L_1..L_e of `history`, k = `window`; None while e <= k."""
    losses = [record["train_loss"] for record in history]
    if len(losses) <= window:
        return None
    before = min(losses[:-window])
    return (before - min(losses[-window:])) / before


def plateaus(history: list[dict]) -> int:
    """The epochs of `history` whose training loss is not below the best before them."""
    losses = [record["train_loss"] for record in history]
    return sum(loss >= min(losses[:i]) for i, loss in enumerate(losses) if i > 0)


def kept(spec: LMSpec, history: list[dict]) -> dict:
    """The record of the epoch to keep (`KEEP[spec.keep]`), the first of equals."""
    return min(history, key=KEEP[spec.keep])


def session_epoch(spec: LMSpec, epoch: int) -> tuple[int, int]:
    """(session, epoch within it), both from 1, of an epoch counted over every session."""
    return (epoch - 1) // spec.max_epochs + 1, (epoch - 1) % spec.max_epochs + 1


def learning_rate(spec: LMSpec, epoch: int) -> float:
    """lr_e = lr · lr_decay^max(0, e - decay_after), e counted from 1 (in each session; appendix A)."""
    return spec.lr * spec.lr_decay ** max(0, epoch - spec.decay_after)


def build_vocabulary(path: Path) -> list[str]:
    """Every token of the training file (each line's words and `<eos>`), most frequent first."""
    return [word for word, _ in count_words(line + f" {EOS}" for line in read_lines(path))]


def encode(path: Path, word_ids: dict[str, int]) -> torch.Tensor:
    """The file as one stream of ids: each line's words, then `<eos>`."""
    ids = []
    for number, line in enumerate(read_lines(path), start=1):
        for word in line.split() + [EOS]:
            if word not in word_ids:
                raise CorpusError(
                    f"{path}, line {number}: {word!r} is not in the training vocabulary "
                    "(language-model corpora are closed-vocabulary: map it to <unk>)"
                )
            ids.append(word_ids[word])
    return torch.tensor(ids, dtype=torch.long)


def batchify(stream: torch.Tensor, batch_size: int) -> torch.Tensor:
    """The stream cut into `batch_size` contiguous columns (T x B), the remainder dropped."""
    length = len(stream) // batch_size
    if length < 2:
        raise CorpusError(f"{len(stream)} tokens are too few for {batch_size} columns")
    return stream[: length * batch_size].view(batch_size, length).t().contiguous()


@torch.no_grad()
def largest_embedding_row(model: LSTMLanguageModel) -> tuple[float, int]:
    """(max_w ‖l_w‖, its word id) over the rows of L: two scalar host reads, once an epoch."""
    norm, row = model.embedding.weight.norm(dim=1).max(dim=0)
    return norm.item(), row.item()


@torch.no_grad()
def scored(model: LSTMLanguageModel, data: torch.Tensor, bptt: int, precision: str) -> tuple[float, list[list[float]]]:
    """(perplexity, [NLL sum in nats, tokens] per block of `evidence.BLOCK_TOKENS` predicted tokens
    in the order of the text), the perplexity exp(sum of the blocks' NLL / sum of their tokens)."""
    nll = token_nll(model, data, bptt, precision)
    blocks = perplexity_blocks(nll.cpu().tolist())
    return perplexity(sum(b[0] for b in blocks), sum(b[1] for b in blocks)), blocks


def segments_progress(segments: list):
    """An epoch's segments with a progress bar in the job's log, every 10 s at most."""
    return tqdm(segments, desc="segments", file=sys.stderr, mininterval=10, leave=False)


def training_stream(spec: LMSpec, stream: torch.Tensor) -> torch.Tensor:
    if spec.train_slice is None:
        return stream
    length, start = spec.train_slice.length, spec.train_slice.start
    if length > len(stream):
        raise ValueError(f"train_slice of {length} tokens is longer than the training stream ({len(stream)})")
    if start is None:
        start = random.Random(spec.seed).randrange(len(stream) - length + 1)
    log(f"training on tokens [{start}, {start + length}) of {len(stream)}")
    return stream[start : start + length]


@dataclass
class Streams:
    """A job's vocabulary (`itos`) and its token streams: the training stream (a slice, where the
    spec says), and the batchified training, validation and test data on the device."""

    itos: list[str]
    train_stream: torch.Tensor
    train: torch.Tensor
    valid: torch.Tensor
    test: torch.Tensor


@dataclass
class Steps:
    """The model and what steps it: SGD, the objective and, under train.compile graphs, the captured step."""

    model: LSTMLanguageModel
    optimiser: torch.optim.Optimizer
    objective: Callable
    static: static_step.LanguageModelSteps | None


def load_streams(spec: LMSpec, args, device: torch.device) -> Streams:
    """The vocabulary and the encoded, batchified texts of the command line."""
    itos = build_vocabulary(args.vocabulary_text or args.train)
    word_ids = {word: i for i, word in enumerate(itos)}
    train_stream = training_stream(spec, encode(args.train, word_ids))
    train_data = batchify(train_stream, spec.batch_size).to(device)
    valid_data, test_data = (
        batchify(encode(path, word_ids), spec.eval_batch_size).to(device) for path in (args.valid, args.test)
    )
    log(
        f"vocabulary {len(itos)}; tokens: train {len(train_stream)}, valid {valid_data.numel()}, "
        f"test {test_data.numel()}"
    )
    return Streams(itos, train_stream, train_data, valid_data, test_data)


def build_steps(job: loop.Job, vocabulary: int) -> Steps:
    """The model, initialised from the spec's seed, on the device and compiled as the spec says,
    its optimiser (SGD) and objective."""
    spec, device = job.spec, job.device
    torch.manual_seed(spec.seed)
    model = build_model(job.spec, vocabulary).to(device)
    log(f"train.compile: {compilation.apply(model, job.spec, device)}")
    if spec.unit_norm_embeddings:
        normalise_embedding_rows(model)
    graphs = spec.compile == "graphs"  # the whole step captured: static segments, rate on the device
    optimiser = (
        static_step.sgd(model.parameters(), spec.lr, device)
        if graphs
        else torch.optim.SGD(model.parameters(), lr=spec.lr)
    )
    objective = build_objective(job.spec)
    static = (
        static_step.LanguageModelSteps(model, optimiser, objective, job.spec, device, job.precision) if graphs else None
    )
    return Steps(model, optimiser, objective, static)


def epoch_learning_rate(spec: LMSpec, history: list[dict], epoch: int) -> float:
    """The rate of `epoch` (counted over sessions): the schedule's, and with `convergence`, times
    `plateau_decay` for every plateau of `history`."""
    lr = learning_rate(spec, session_epoch(spec, epoch)[1])
    if spec.convergence is not None:
        lr *= spec.convergence.plateau_decay ** plateaus(history)
    return lr


def train_and_validate(job: loop.Job, run: loop.Run, streams: Streams, steps: Steps, epoch: int) -> dict:
    """One epoch of training and its validation perplexity: the epoch's record (the module's docstring),
    without the convergence fields; `run.best` the best validation perplexity so far."""
    spec, model = job.spec, steps.model
    lr = epoch_learning_rate(spec, run.history, epoch)
    static_step.set_learning_rate(steps.optimiser, lr)
    started = time.perf_counter()
    train_loss, train_nll, train_tokens = train_epoch(
        model,
        streams.train,
        job.spec,
        steps.optimiser,
        steps.objective,
        job.precision,
        steps.static,
        progress=segments_progress,
    )
    seconds = time.perf_counter() - started
    valid_perplexity = evaluate(model, streams.valid, spec.bptt, job.precision)
    improved, run.best = valid_perplexity < run.best, min(run.best, valid_perplexity)
    row_norm, row = largest_embedding_row(model)
    return {
        "epoch": epoch,
        "session": session_epoch(spec, epoch)[0],
        "lr": lr,
        "train_loss": train_loss / train_tokens,
        "train_perplexity": perplexity(train_nll, train_tokens),
        "valid_perplexity": valid_perplexity,
        "best": improved,
        "seconds": round(seconds, 3),
        "tokens_per_second": round(streams.train.numel() / seconds, 1),
        "embedding_row_norm_max": round(row_norm, 4),
        "embedding_row_norm_max_word": streams.itos[row],
    }


def after_epoch(job: loop.Job, run: loop.Run, streams: Streams, model: LSTMLanguageModel) -> None:
    """What the last epoch's record decides: the divergence warning, `kept.pt` where it is the
    epoch to keep, and with `convergence` its fields (`train_loss_improvement`, `converged`)."""
    spec, history, record = job.spec, run.history, run.history[-1]
    if how := diverged(history):
        row_norm, row = largest_embedding_row(model)
        log(
            f"WARNING: {spec.experiment} has diverged: {how}; the largest embedding row is now "
            f'{streams.itos[row]!r} at norm {row_norm:.1f} (docs/tying.md, "REAL diverges in the demo")'
        )
    if kept(spec, history) is record:
        save_language_model(job.kept, model, job.spec, streams.itos, record["epoch"], {"precision": job.precision})
    if spec.convergence is not None:
        improvement = training_loss_improvement(history, spec.convergence.window)
        record |= {
            "train_loss_improvement": improvement,
            "converged": improvement is not None and improvement < spec.convergence.tolerance,
        }


def scores(job: loop.Job, run: loop.Run, streams: Streams) -> dict:
    """`perplexity.json` (the module's docstring): the kept epoch's model scored on the validation
    and test streams."""
    spec = job.spec
    model, _ = load_language_model(job.kept, job.device)
    (valid_perplexity, valid_blocks), (test_perplexity, test_blocks) = (
        scored(model, data, spec.bptt, job.precision) for data in (streams.valid, streams.test)
    )
    return {
        "experiment": spec.experiment,
        "kept_epoch": kept(spec, run.history)["epoch"],
        "keep": spec.keep,
        "sessions": spec.sessions,
        "valid_perplexity": valid_perplexity,
        "test_perplexity": test_perplexity,
        "subspace_distance": embedding_output_distance(model.embedding.weight, model.output_weight).item(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "units": model.size,
        "stopped": stopped(spec, run.history),
        "train_tokens": len(streams.train_stream),
        "evaluation": {
            "batch_size": spec.eval_batch_size,
            "bptt": spec.bptt,
            "vocabulary": len(streams.itos),
            "valid_tokens": predicted_tokens(streams.valid),
            "test_tokens": predicted_tokens(streams.test),
            "block_tokens": BLOCK_TOKENS,
        },
        "valid_blocks": valid_blocks,
        "test_blocks": test_blocks,
    }


def train(spec: LMSpec, args, device: torch.device) -> None:
    """Train the spec's sessions of epochs (until convergence or divergence, where the spec says),
    from the checkpoint where there is one; publish the kept epoch as `model.pt` and score it."""
    job = loop.begin(spec, args.out_dir, "kept.pt", args.threads, device)
    streams = load_streams(spec, args, device)
    steps = build_steps(job, len(streams.itos))
    last_epoch = spec.sessions * spec.max_epochs
    run = loop.resume(job, loop.Run(float("inf")), last_epoch, stops, steps.model)
    for epoch in loop.epochs(run, last_epoch, spec.seed, stops):
        run.history.append(train_and_validate(job, run, streams, steps, epoch))
        after_epoch(job, run, streams, steps.model)
        loop.checkpoint(job, run, steps.model)
    loop.finish(job, run)
    result = scores(job, run, streams)
    write_text(args.out_dir / "perplexity.json", json.dumps(result, indent=2) + "\n")
    log(f"done: {json.dumps(result)}")


def stops(history: list[dict]) -> bool:
    """Whether training stops after the last epoch of `history`: converged, or given up."""
    return bool(history[-1].get("converged") or given_up(history))


def given_up(history: list[dict]) -> bool:
    """A run whose last `DIVERGED_EPOCHS` epochs have each ended diverged (`divergence.diverged`)
    trains no further: the kept epoch is its best already, and more epochs only cost time."""
    return len(history) >= DIVERGED_EPOCHS and all(
        diverged(history[: len(history) - i]) for i in range(DIVERGED_EPOCHS)
    )


def stopped(spec: LMSpec, history: list[dict]) -> str:
    """Why training ended, in words."""
    if given_up(history):
        return (
            f"diverged: {diverged(history)} (its last {DIVERGED_EPOCHS} epochs each above "
            f"{DIVERGED_RATIO} times the best); stopped after epoch {history[-1]['epoch']}"
        )
    if history and history[-1].get("converged"):
        rule = spec.convergence
        return (
            f"converged after epoch {history[-1]['epoch']}: the training loss improved by "
            f"{history[-1]['train_loss_improvement']:.2%} over the last {rule.window} epochs "
            f"(tolerance {rule.tolerance:.2%})"
        )
    suffix = " without converging" if spec.convergence is not None else ""
    return f"the epoch cap: {spec.sessions} x {spec.max_epochs} epochs{suffix}"


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    add_spec_arguments(parser, LMSpec)
    for name in ("train", "valid", "test"):
        parser.add_argument(f"--{name}", type=Path, required=True, help=f"{name} text, one sentence per line")
    parser.add_argument(
        "--vocabulary-text",
        type=Path,
        help="the text whose tokens are the vocabulary (default --train; a partition of a "
        "corpus keeps the whole corpus's)",
    )
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        spec = read(*spec_argument(args))
        with job_device(spec.device, key="train.device") as device:
            train(spec, args, device)
    except (CorpusError, SpecError) as err:
        parser.exit(1, f"train_lm: error: {err}\n")


if __name__ == "__main__":
    main()
