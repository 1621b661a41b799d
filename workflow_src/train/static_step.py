"""A whole training step as one function of static shapes, with no host read: what
`train.compile: graphs` captures once per shape and replays (`workflow_src/model/graphs.py`).

Translation (`train.py`), on batches of `workflow_src/model/static_batches.py` (B rows, S and T
bucketed, weights w: 1 at real target tokens, 0 at padding):

    L = Σ_{b,t} w_{b,t} ℓ(y_{b,t})          every position, padding weighted 0: today's summed loss
    backward of L / N, N = the token count or the sentence count (train.loss_normalisation), a
    device tensor; clipping to a global norm (clip_grad_norm_: the norm stays on the device); Adam
    (fused, `capturable`, its rate a device tensor)

with the encoder unpacked (`model/unpacked_encoder.py`) and a sampled softmax drawing a subset of
fixed size on the device (`joint.sample_vocabulary_static`). Validation's loss is the same sum
without the update; decoding's step is the decoder's own (`compilation.apply`).

Language models (`train_lm.py`), on segments of exactly `bptt` steps (the epoch's last one padded,
weight 0): J = (1/B) Σ w ℓ, clipping, SGD (fused, its rate a device tensor), the optional unit
norm of L's rows, and the carried state handed to the next segment.

Each function here runs as it is on any device: the CPU tests compare it with the eager step
(tests/test_static_step.py); only the capture is CUDA's.
"""

from __future__ import annotations

import functools
from typing import Callable

import torch
import torch.nn.functional as F

from workflow_src.step_mode import check_length_buckets
from workflow_src.model import precision as precisions
from workflow_src.model.graphs import Captured
from workflow_src.model.joint import JointOutput, sample_vocabulary_static, static_sample_size
from workflow_src.model.lm import normalise_embedding_rows
from workflow_src.model.losses import cross_entropy
from workflow_src.model.nmt_data import batch_indices, prefetched
from workflow_src.model.precision import at_least_fp32
from workflow_src.model.static_batches import StaticBatch, bucket, padding_record, static_batch
from workflow_src.specs import LMSpec, TrainSpec
from workflow_src.step_mode import LENGTH_BUCKETS_KEY as KEY


# -- optimisers whose rate is a device tensor ------------------------------------------------------
def with_device_rate(optimiser: torch.optim.Optimizer, device: torch.device) -> torch.optim.Optimizer:
    """`optimiser` with each group's rate a device tensor: fp32, which the fused CUDA kernels read
    through a float pointer (`lr.data_ptr<float>()`, docs/cluster.md). Set after construction,
    whose check of the rate (`0 <= lr`) would read a device tensor on the host."""
    for group in optimiser.param_groups:
        group["lr"] = torch.tensor(group["lr"], dtype=torch.float32, device=device)
    return optimiser


def adam(parameters, lr: float, device: torch.device) -> torch.optim.Adam:
    """Adam as train.py's (fused), `capturable` (its step count on the device; a capture of a
    non-capturable one is refused by torch), with its rate a device tensor."""
    return with_device_rate(torch.optim.Adam(parameters, lr=lr, fused=True, capturable=True), device)


def sgd(parameters, lr: float, device: torch.device) -> torch.optim.SGD:
    """SGD, fused: with a tensor rate its kernel reads the rate on the device (the for-each and
    for-loop versions would read it on the host)."""
    return with_device_rate(torch.optim.SGD(parameters, lr=lr, fused=True), device)


def set_learning_rate(optimiser: torch.optim.Optimizer, lr: float) -> None:
    """Every group's rate: in place where it is a tensor (a captured step reads that tensor)."""
    for group in optimiser.param_groups:
        if isinstance(group["lr"], torch.Tensor):
            group["lr"].fill_(lr)
        else:
            group["lr"] = lr


# -- translation ------------------------------------------------------------------------------------
def position_losses(model, src, lengths, tgt_in, tgt_out, weights) -> torch.Tensor:
    """w ℓ at every target position of a static batch, flat (B T), in fp32 or wider. A sampled
    softmax normalises over `sample_vocabulary_static`'s subset of the real targets' batch."""
    out, _ = model(src, lengths, tgt_in)
    context, target, weight = at_least_fp32(out.flatten(0, 1)), tgt_out.flatten(), weights.flatten()
    output = model.output
    if isinstance(output, JointOutput) and output.training and output.sample_share is not None:
        ids, positions = sample_vocabulary_static(
            target, weight > 0, output.vocab_size, output.sample_share, output.banned
        )
        return cross_entropy(output.logits(context, ids), positions) * weight
    return output.loss(context, target) * weight


def nmt_training_step(
    model,
    optimiser,
    clip: float,
    normalisation: str,
    precision: str,
    src,
    lengths,
    tgt_in,
    tgt_out,
    weights,
    token_count,
    sentence_count,
) -> torch.Tensor:
    """One training step on a static batch; returns the summed loss L (detached)."""
    with precisions.autocast(precision, src.device, cache=False):
        loss = position_losses(model, src, lengths, tgt_in, tgt_out, weights).sum()
    optimiser.zero_grad(set_to_none=False)  # the gradients stay where the captured step wrote them
    (loss / (token_count if normalisation == "token" else sentence_count)).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimiser.step()
    return loss.detach()


@torch.no_grad()
def nmt_evaluation_loss(model, precision: str, src, lengths, tgt_in, tgt_out, weights) -> torch.Tensor:
    """The summed loss of a static batch, no update. The output layer's decoding cache (g_out(E),
    kept between calls) is emptied before and after: a captured graph must compute it, not read
    a tensor that the next optimiser step makes stale."""
    model.output.eval()  # eval() empties the cache
    with precisions.autocast(precision, src.device, cache=False):
        loss = position_losses(model, src, lengths, tgt_in, tgt_out, weights).sum()
    model.output.eval()
    return loss


class TranslationSteps:
    """train.py's training step and validation loss under `train.compile: graphs`: static
    batches, and the steps captured per (S, T) bucket."""

    def __init__(self, model, optimiser, spec: TrainSpec, device: torch.device, precision: str, src_vocab, tgt_vocab):
        t = spec.train
        self.model, self.device, self.src_vocab, self.tgt_vocab = model, device, src_vocab, tgt_vocab
        buckets = None if spec.length_buckets is None else list(spec.length_buckets)
        self.batch_size, self.buckets = t.batch_size, check_length_buckets(buckets)
        self.training = Captured(
            functools.partial(nmt_training_step, model, optimiser, t.clip, t.loss_normalisation, precision),
            device,
            module=model,
        )
        self.evaluation = Captured(functools.partial(nmt_evaluation_loss, model, precision), device, module=model)

    def check_sample(self, tgt: list[list[int]]) -> None:
        """A sampled softmax holds every target of a batch in its fixed k words only if B x T <= k
        for the longest T: else a one-line error naming the settings."""
        output = self.model.output
        if not (isinstance(output, JointOutput) and output.sample_share is not None):
            return
        k = static_sample_size(output.vocab_size, output.sample_share, output.banned)
        positions = self.batch_size * bucket(max(len(t) for t in tgt), self.buckets)
        if positions > k:
            raise ValueError(
                f"train.compile graphs: a batch of {positions} target positions (train.batch_size "
                f"{self.batch_size} x the longest target's bucket of train.{KEY}) may hold more words than "
                f"the {k} its sampled softmax draws (sample_share {output.sample_share}); use train.compile off"
            )

    def batch(self, src, tgt, idx: list[int]) -> StaticBatch:
        return static_batch(src, tgt, idx, self.src_vocab, self.tgt_vocab, self.device, self.batch_size, self.buckets)

    def step(self, batch: StaticBatch) -> tuple[torch.Tensor, int]:
        """(the summed loss, a device tensor; the target tokens), as `Seq2Seq.loss` gives them."""
        return self.training(*batch.tensors()), batch.tokens

    def padding(self, tgt: list[list[int]], batches: list[list[int]]) -> dict:
        return padding_record([len(t) for t in tgt], batches, self.batch_size, self.buckets)

    def mean_loss(self, src, tgt) -> float:
        """`train.mean_loss` on static batches: the development loss per target token."""
        self.model.eval()
        batches = batch_indices([len(s) for s in src], self.batch_size, None, [len(t) for t in tgt])
        total, tokens = torch.zeros((), dtype=torch.float64, device=self.device), 0
        for batch in prefetched((self.batch(src, tgt, idx) for idx in batches), self.device):
            total, tokens = total + self.evaluation(*batch.tensors()[:5]).double(), tokens + batch.tokens
        return total.item() / max(tokens, 1)


# -- language models --------------------------------------------------------------------------------
def lm_training_step(
    model,
    optimiser,
    objective: Callable,
    clip: float,
    ce_objective: bool,
    after_update,
    precision: str,
    inputs,
    targets,
    weights,
    h,
    c,
):
    """One training segment: (Σ w ℓ, Σ w CE, both float64; the next state (h, c))."""
    with precisions.autocast(precision, inputs.device, cache=False):
        logits, _, hidden = model(inputs, (h, c))
    logits, targets, weights = at_least_fp32(logits.flatten(0, 1)), targets.flatten(), weights.flatten()
    per_token = objective(logits, targets, model.embedding.weight, model.output_bias) * weights
    optimiser.zero_grad(set_to_none=False)
    (per_token.sum() / inputs.shape[1]).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimiser.step()
    if after_update is not None:
        after_update(model)
    nll = per_token if ce_objective else cross_entropy(logits, targets) * weights
    return per_token.detach().double().sum(), nll.detach().double().sum(), hidden[0], hidden[1]


class LanguageModelSteps:
    """train_lm.py's training segment under `train.compile: graphs`: every segment `bptt` steps
    long (one captured graph), the last one padded with weight 0 (its final state, which nothing
    reads, is the padding's). L's rows are renormalised after each update where the spec says
    `unit_norm_embeddings`, as the eager step (`steps.train_epoch`) does."""

    def __init__(self, model, optimiser, objective: Callable, spec: LMSpec, device: torch.device, precision: str):
        after_update = normalise_embedding_rows if spec.unit_norm_embeddings else None
        self.bptt = spec.bptt
        self.weights: dict[tuple[int, int], torch.Tensor] = {}
        self.training = Captured(
            functools.partial(
                lm_training_step,
                model,
                optimiser,
                objective,
                spec.clip,
                spec.loss == "ce",
                after_update,
                precision,
            ),
            device,
            module=model,
        )

    def step(self, inputs: torch.Tensor, targets: torch.Tensor, hidden):
        """(Σ ℓ, Σ CE, next state) of a T x B segment, T <= bptt."""
        real = inputs.shape[0]
        missing = self.bptt - real
        if (real, inputs.shape[1]) not in self.weights:  # made once per segment length: bptt and an epoch's last
            weights = (torch.arange(self.bptt, device=inputs.device) < real).float()[:, None]
            self.weights[real, inputs.shape[1]] = weights.expand(self.bptt, inputs.shape[1])
        weights = self.weights[real, inputs.shape[1]]
        if missing:
            inputs, targets = (F.pad(x, (0, 0, 0, missing)) for x in (inputs, targets))
        total, nll, h, c = self.training(inputs, targets, weights, *hidden)
        return total, nll, (h, c)
