"""One training step of each trainer, as the training jobs take it, with no import beyond torch
and the model package: the GPU check (`workflow_src.gpu_check`) and `graph_check` run exactly
these on a bare GPU machine (no tqdm, sacremoses or PyYAML there).

    translation      `training_step`: forward in the precision, the summed loss over its divisor
                     (`loss_divisor`), backward, clipping, Adam
    language models  `train_epoch`: each bptt segment's objective over its batch's columns,
                     backward, clipping, SGD (and L's rows renormalised where the spec says)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import torch

from workflow_src.model import precision as precisions
from workflow_src.model.lm import normalise_embedding_rows, perplexity
from workflow_src.model.losses import cross_entropy
from workflow_src.model.precision import at_least_fp32
from workflow_src.train import static_step

if TYPE_CHECKING:
    from workflow_src.specs import LMSpec


def loss_divisor(normalisation: str, tokens: int, sentences: int) -> int:
    """What a batch's summed loss is divided by before backward (and so before clipping): its target
    tokens, or its sentences (OpenNMT-py's default `-normalization sents`, the joint paper's code)."""
    if normalisation not in ("token", "sentence"):
        raise ValueError(f"train.loss_normalisation: {normalisation!r} is not token or sentence")
    return tokens if normalisation == "token" else sentences


def training_step(model, optimiser, batch, pad: int, precision: str, clip: float, normalisation: str):
    """One eager training step on a `nmt_data.TrainingBatch`: forward in `precision`, backward of
    the summed loss over its divisor, clipping, the optimiser. Returns (summed loss, target tokens)."""
    with precisions.autocast(precision, batch.src.device):
        loss, n = model.loss(batch.src, batch.lengths, batch.tgt_in, batch.tgt_out, pad, batch.positions)
    optimiser.zero_grad(set_to_none=True)
    (loss / loss_divisor(normalisation, n, batch.sentences)).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimiser.step()
    return loss, n


def segments(data: torch.Tensor, bptt: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """(inputs, next-word targets) for each `bptt`-step segment of batchified data."""
    for start in range(0, len(data) - 1, bptt):
        end = min(start + bptt, len(data) - 1)
        yield data[start:end], data[start + 1 : end + 1]


def predicted_tokens(data: torch.Tensor) -> int:
    """N: every token of batchified data but each column's first is predicted."""
    return (len(data) - 1) * data.shape[1]


def train_epoch(
    model,
    data,
    spec: LMSpec,
    optimiser,
    objective,
    precision: str = "fp32",
    static: static_step.LanguageModelSteps | None = None,
    progress=iter,
) -> tuple[float, float, int]:
    """One pass over the batchified training data: the sums of the objective and of the CE over
    its predicted tokens, and their number. The forward pass runs in `precision`, the objective
    on fp32 logits. With `static` (train.compile graphs), each segment is its captured step;
    `progress` wraps the list of segments (train_lm: a progress bar in the job's log)."""
    model.train()
    hidden = model.init_hidden(data.shape[1])
    total = nll = torch.zeros((), dtype=torch.float64, device=data.device)
    for inputs, targets in progress(list(segments(data, spec.bptt))):
        if static is not None:
            segment_total, segment_nll, hidden = static.step(inputs, targets, hidden)
            total, nll = total + segment_total, nll + segment_nll
            continue
        with precisions.autocast(precision, data.device):
            logits, _, hidden = model(inputs, hidden)
        logits, targets = at_least_fp32(logits.flatten(0, 1)), targets.flatten()
        per_token = objective(logits, targets, model.embedding.weight, model.output_bias)
        optimiser.zero_grad(set_to_none=True)
        (per_token.sum() / data.shape[1]).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), spec.clip)
        optimiser.step()
        if spec.unit_norm_embeddings:
            normalise_embedding_rows(model)
        total = total + per_token.detach().double().sum()
        nll = nll + (per_token if spec.loss == "ce" else cross_entropy(logits, targets)).detach().double().sum()
    return total.item(), nll.item(), predicted_tokens(data)


def token_nll(model, data: torch.Tensor, bptt: int, precision: str = "fp32") -> torch.Tensor:
    """-log p(w_t | w_<t) in nats (float64, on the data's device: no host read) of every predicted
    token of batchified data, each column read from a zero state, in the order of the text:
    column by column (each a contiguous stretch of it), each but its first token."""
    model.eval()
    hidden = model.init_hidden(data.shape[1])
    nll = []
    for inputs, targets in segments(data, bptt):
        with precisions.autocast(precision, data.device):
            logits, _, hidden = model(inputs, hidden)
        nll.append(cross_entropy(logits.flatten(0, 1), targets.flatten()).double().view(targets.shape))
    return torch.cat(nll).t().flatten()


def evaluate(model, data: torch.Tensor, bptt: int, precision: str = "fp32") -> float:
    """Perplexity of batchified data, each column read from a zero state."""
    return perplexity(token_nll(model, data, bptt, precision).sum().item(), predicted_tokens(data))
