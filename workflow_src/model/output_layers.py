"""The plug-in output layers of the seq2seq model.

Each layer maps the decoder's attentional states h (N x H) to its output, scores every target
word for decoding (higher is better), and gives the training loss per token:

- `SoftmaxOutput`: s = W h + b, p = softmax(s), trained with cross-entropy;
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


class SoftmaxOutput(nn.Module):
    def __init__(self, hidden: int, vocab_size: int):
        super().__init__()
        self.proj = nn.Linear(hidden, vocab_size)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.proj(h)

    def loss(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return losses.cross_entropy(logits, target)

    def scores(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(logits, dim=-1)


class ContinuousOutput(nn.Module):
    def __init__(self, hidden: int, table: torch.Tensor, loss: str, loss_params: dict, negative: str | None,
                 banned: tuple[int, ...]):
        super().__init__()
        if (loss == "margin") != (negative is not None):
            raise ValueError(f"loss {loss!r}: a margin loss needs a negative sampler, and only it takes one")
        self.register_buffer("table", table)  # V x m, unit rows (the <pad> row is zero)
        self.proj = nn.Linear(hidden, table.shape[1])
        self.loss_fn = functools.partial(losses.CONTINUOUS_LOSSES[loss], **loss_params)
        self.negative = losses.NEGATIVES[negative] if negative else None
        self.banned = banned

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.proj(h)

    def loss(self, e_hat: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        e = self.table[target]
        if self.negative is None:
            return self.loss_fn(e_hat, e)
        return self.loss_fn(e_hat, e, self.table[self.negative(e_hat, target, self.table, self.banned)])

    def scores(self, e_hat: torch.Tensor) -> torch.Tensor:
        """e_hat^T e(w) for every w. For unit e(w) this one ranking is every loss's decoding rule
        (vMF paper §4.3): the vMF log-density up to log C_m(||e_hat||), constant in w; the cosine
        up to 1/||e_hat||; and minus half the squared L2 distance up to a constant."""
        return e_hat @ self.table.T


def build_output_layer(spec: dict, hidden: int, vocab_size: int, table: torch.Tensor | None,
                       banned: tuple[int, ...]) -> nn.Module:
    if spec["output_layer"] == "softmax":
        return SoftmaxOutput(hidden, vocab_size)
    if spec["output_layer"] == "continuous":
        if table is None:
            raise ValueError(f"experiment {spec['experiment']}: a continuous output layer needs target embeddings")
        return ContinuousOutput(hidden, table, spec["loss"], spec.get("loss_params", {}), spec.get("negative"), banned)
    raise ValueError(f"experiment {spec['experiment']}: unknown output_layer {spec['output_layer']!r}")
