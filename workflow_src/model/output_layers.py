"""The plug-in output layers of the seq2seq model.

Each layer maps the decoder's attentional states h (N x H) to its output, scores every target
word for decoding (higher is better), and gives the training loss per token:

- `SoftmaxOutput`: s = W h + b, p = softmax(s), trained with cross-entropy;
- `WordVectorSoftmaxOutput`: s = E (P h) + b, a softmax over word vectors E (V x d) that can be
  initialised with pretrained embeddings and shared with the decoder's input (tied);
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

    @property
    def vocab_size(self) -> int:
        return self.proj.out_features

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.proj(h)

    def loss(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return losses.cross_entropy(logits, target)

    def scores(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(logits, dim=-1)


class WordVectorSoftmaxOutput(SoftmaxOutput):
    """s = E (P h) + b. `word_vectors` (E, V x d) is a parameter the caller may share with the
    decoder's input embeddings; P projects the attentional state (d_h) to d."""

    def __init__(self, hidden: int, word_vectors: nn.Parameter):
        nn.Module.__init__(self)
        self.word_vectors = word_vectors
        self.proj = nn.Linear(hidden, word_vectors.shape[1], bias=False)
        self.bias = nn.Parameter(torch.zeros(word_vectors.shape[0]))

    @property
    def vocab_size(self) -> int:
        return self.word_vectors.shape[0]

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(self.proj(h), self.word_vectors, self.bias)


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


def build_output_layer(spec: dict, hidden: int, vocab_size: int, table: torch.Tensor | None,
                       banned: tuple[int, ...], word_vectors: nn.Parameter | None = None) -> nn.Module:
    if spec["output_layer"] == "softmax":
        return SoftmaxOutput(hidden, vocab_size) if word_vectors is None else WordVectorSoftmaxOutput(hidden, word_vectors)
    if spec["output_layer"] == "continuous":
        if table is None:
            raise ValueError(f"experiment {spec['experiment']}: a continuous output layer needs target embeddings")
        return ContinuousOutput(hidden, table, spec["loss"], spec.get("loss_params", {}), spec.get("negative"), banned)
    raise ValueError(f"experiment {spec['experiment']}: unknown output_layer {spec['output_layer']!r}")
