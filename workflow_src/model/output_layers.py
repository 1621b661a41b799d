"""The plug-in output layers of the seq2seq model.

Each layer maps the decoder's attentional states h (N x H) to its output, scores every target
word for decoding (higher is better), and gives the training loss per token:

- softmax layers, `workflow_src.model.joint.JointOutput`: p = softmax(g_out(E) g_inp(h) + b),
  trained with cross-entropy (over a sampled share of the vocabulary if the spec says so). Its
  forms: W h + b (`nmt`, the default); E (P h) + b (`tied`) over word vectors E (V x d) that are
  pretrained `embeddings` (syn-margin paper §4) or, with `output_form`, the decoder's input
  embedding (the joint paper's NMT-tied), and the joint paper's other forms;
- `ContinuousOutput`: e_hat = W h (m-dimensional), trained against the frozen unit target
  embeddings with a continuous loss; decoding scores are the vMF log-density
  log C_m(||e_hat||) + e_hat^T e(w), whose argmax over w is the nearest neighbour by cosine.

`build_output_layer(spec, ...)` picks one by the experiment's `output_layer`.
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from workflow_src.model import losses
from workflow_src.model.joint import JointOutput
from workflow_src.specs import TrainSpec


class ContinuousOutput(nn.Module):
    def __init__(
        self,
        hidden: int,
        table: torch.Tensor,
        loss: str,
        loss_params: dict,
        negative: str | None,
        banned: tuple[int, ...],
    ):
        super().__init__()
        if (loss == "margin") != (negative is not None):
            raise ValueError(f"loss {loss!r}: a margin loss needs a negative sampler, and only it takes one")
        self.register_buffer("table", table)  # V x m, unit rows (the <pad> row is zero)
        self.proj = nn.Linear(hidden, table.shape[1])
        self.loss_fn = functools.partial(losses.CONTINUOUS_LOSSES[loss], **loss_params)
        self.negative = losses.NEGATIVES[negative] if negative else None
        self.banned = banned

    @property
    def vocab_size(self) -> int:
        return self.table.shape[0]

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.proj(h)

    def loss(self, e_hat: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        e = self.table[target]
        if self.negative is None:
            return self.loss_fn(e_hat, e)
        return self.loss_fn(e_hat, e, self.negative(e_hat, target, self.table, self.banned))

    def scores(self, e_hat: torch.Tensor) -> torch.Tensor:
        """e_hat^T e(w) for every w. For unit e(w) this one ranking is every loss's decoding rule
        (vMF paper §4.3): the vMF log-density up to log C_m(||e_hat||), constant in w; the cosine
        up to 1/||e_hat||; and minus half the squared L2 distance up to a constant."""
        return e_hat @ self.table.T


def build_output_layer(
    spec: TrainSpec,
    hidden: int,
    vocab_size: int,
    table: torch.Tensor | None,
    banned: tuple[int, ...],
    word_vectors: nn.Parameter | None = None,
) -> nn.Module:
    """The experiment's output layer. `word_vectors` is E of a softmax: pretrained vectors, or the
    decoder's input embedding for the joint paper's forms but `nmt`."""
    if spec.output_layer == "softmax":
        form = spec.output_form or ("nmt" if word_vectors is None else "tied")
        return JointOutput(
            form,
            hidden,
            vocab_size,
            word_vectors,
            joint_dim=spec.joint_dim,
            sample_share=spec.sample_share,
            banned=banned,
        )
    if spec.output_layer == "continuous":
        if table is None:
            raise ValueError(f"experiment {spec.experiment}: a continuous output layer needs target embeddings")
        return ContinuousOutput(hidden, table, spec.loss, spec.loss_params, spec.negative, banned)
    raise ValueError(f"experiment {spec.experiment}: unknown output_layer {spec.output_layer!r}")
