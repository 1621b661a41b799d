"""The output layers of the joint paper (Pappas, Miculicich Werlen & Henderson 2018), one form
with plug-in projections of the words' side and the context's side:

    p(y_t | y_<t, X)  ∝  exp(g_out(E) g_inp(h_t) + b)                              (Eq. 14)

E (V x d) is the decoder's input embedding, the same parameter (NMT has its own W^T instead),
h_t (d_h) the attentional state, b (V) one bias per word, sigma = tanh. The variants (Table 3):

    variant   form                                 g_out(E)            g_inp(h)
    nmt       W^T h + b                   (Eq. 3)  W (own, V x d_h)    h
    tied      E h + b                     (Eq. 4)  E                   h, or P h when d_h != d
    bilinear  E W h + b                   (Eq. 6)  E                   W h
    output    sigma(E W) h + b            (Eq. 7a) sigma(E W)          h
    context   E sigma(W h) + b            (Eq. 7b) E                   sigma(W h)
    joint     sigma(E U^T + b_u) sigma(V h + b_v) + b  (Eq. 12-15), U: d_j x d, V: d_j x d_h

Training may normalise over a sampled subset V' of the vocabulary (§3.2, `sample_vocabulary`,
`sample_vocabulary_topk` on CUDA);
validation (eval mode) and decoding (`scores`) use all of V.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from workflow_src.model import losses

VARIANTS = ("nmt", "tied", "bilinear", "output", "context", "joint")


def parameter_count(variant: str, vocab_size: int, d: int, d_h: int, d_j: int | None = None) -> int:
    """|Theta| of the output layer. The shared E is the decoder's input embedding and is counted
    there, not here, as the paper counts it (|Theta_tied| = |V|, §2.2.2):

        nmt       |V| d_h + |V|                          (Eq. 8)
        tied      |V|                                    (Eq. 9; + d d_h for P when d_h != d)
        bilinear  d d_h + |V|                            (Eq. 10)
        output    d d_h + |V|                            (Eq. 7a; Table 3 counts it as Eq. 6)
        context   d d_h + |V|                            (Eq. 7b; likewise)
        joint     d d_j + d_j d_h + |V| + 2 d_j          (Eq. 16, plus the biases b_u, b_v of
                                                          Eq. 12-13 that Eq. 16 leaves out)
    """
    v = vocab_size
    counts = {
        "nmt": lambda: v * d_h + v,
        "tied": lambda: v + (0 if d == d_h else d * d_h),
        "bilinear": lambda: d * d_h + v,
        "output": lambda: d * d_h + v,
        "context": lambda: d * d_h + v,
        "joint": lambda: d * d_j + d_j * d_h + v + 2 * d_j,
    }
    return counts[variant]()


@torch.no_grad()
def sample_vocabulary(
    target: torch.Tensor, vocab_size: int, share: float, banned: tuple[int, ...] = ()
) -> tuple[torch.Tensor, torch.Tensor]:
    """One subset per minibatch (§3.2, as the released code draws it):

        V' = {targets of the batch} ∪ negatives,   |V'| = max(floor(share |V|), #targets)

    the negatives uniform without replacement over V less the targets and the `banned` ids,
    drawn with torch's generator. Returns V' (sorted ids) and the targets' positions in V'.
    The targets must not be banned (padding is dropped before the loss).
    """
    chosen = torch.zeros(vocab_size, dtype=torch.bool, device=target.device)
    chosen[target] = True
    candidates = ~chosen
    candidates[list(banned)] = False
    candidates = candidates.nonzero().squeeze(1)
    wanted = max(int(share * vocab_size) - int(chosen.sum()), 0)
    chosen[candidates[torch.randperm(len(candidates), device=target.device)[:wanted]]] = True
    return chosen.nonzero().squeeze(1), (chosen.cumsum(0) - 1)[target]


def static_sample_size(vocab_size: int, share: float, banned: tuple[int, ...] = ()) -> int:
    """k = min(floor(share |V|), |V| - |banned|): the size of V' whenever it holds every target."""
    return min(int(share * vocab_size), vocab_size - len(set(banned)))


@torch.no_grad()
def sample_vocabulary_topk(
    target: torch.Tensor, vocab_size: int, share: float, banned: tuple[int, ...] = ()
) -> tuple[torch.Tensor, torch.Tensor]:
    """`sample_vocabulary` without a host sync (for CUDA). Every id gets a random rank, a
    permutation of 0 .. |V|-1; the targets get |V| (above all), the banned ids -1 (below all):

        V' = topk(rank, k),   k = min(floor(share |V|), |V| - |banned|)

    holds every target and the k - #targets other ids of highest rank, a uniform subset without
    replacement of V less the targets and the banned ids: the distribution of `sample_vocabulary`
    (not its draws). This needs k >= #targets, which the host knows when k >= len(target);
    otherwise `sample_vocabulary` draws V'. Returns V' (sorted ids) and the targets' positions in V'.
    """
    k = static_sample_size(vocab_size, share, banned)
    if k < len(target):
        return sample_vocabulary(target, vocab_size, share, banned)
    rank = torch.randperm(vocab_size, device=target.device).index_fill_(0, target, vocab_size)
    for word in banned:  # one at a time: a list index would be copied to the device, a sync
        rank[word].fill_(-1)
    ids = rank.topk(k).indices.sort().values
    return ids, torch.searchsorted(ids, target)


@torch.no_grad()
def sample_vocabulary_static(
    target: torch.Tensor, real: torch.Tensor, vocab_size: int, share: float, banned: tuple[int, ...] = ()
) -> tuple[torch.Tensor, torch.Tensor]:
    """`sample_vocabulary_topk` over a padded batch, with no host read at all: the targets are the
    positions `real` marks (padding's join no subset), and V' has `static_sample_size` ids, which
    the caller ensures is at least the real positions' number (`static_step` checks B x T <= k).
    The real targets get rank |V| by a scatter-max (a padding position keeps its word's rank), so
    with every position real the draws are `sample_vocabulary_topk`'s. Returns V' (sorted) and
    each position's index in V' (a padding position's is some index in range: it weighs 0)."""
    k = static_sample_size(vocab_size, share, banned)
    rank = torch.randperm(vocab_size, device=target.device)
    rank.scatter_reduce_(0, target, torch.where(real, vocab_size, -1), reduce="amax")
    for word in banned:  # one at a time: a list index would be copied to the device, a sync
        rank[word].fill_(-1)
    ids = rank.topk(k).indices.sort().values
    return ids, torch.searchsorted(ids, target).clamp_(max=k - 1)


def _projections(
    variant: str, d: int, d_h: int, d_j: int | None, activation: Callable[[], nn.Module], **factory
) -> tuple[nn.Module, nn.Module]:
    """(g_out, g_inp) of a variant, as in the table of the module docstring."""

    def linear(n_in: int, n_out: int, bias: bool = False, nonlinear: bool = False) -> nn.Module:
        projection = nn.Linear(n_in, n_out, bias=bias, **factory)
        return nn.Sequential(projection, activation()) if nonlinear else projection

    identity = nn.Identity
    if variant == "nmt":
        return identity(), identity()
    if variant == "tied":
        return identity(), identity() if d == d_h else linear(d_h, d)
    if variant == "bilinear":
        return identity(), linear(d_h, d)
    if variant == "output":
        return linear(d, d_h, nonlinear=True), identity()
    if variant == "context":
        return identity(), linear(d_h, d, nonlinear=True)
    if d_j is None:
        raise ValueError("the joint output layer needs its joint space size d_j (joint_dim)")
    return linear(d, d_j, bias=True, nonlinear=True), linear(d_h, d_j, bias=True, nonlinear=True)


class JointOutput(nn.Module):
    """p ∝ exp(g_out(E) g_inp(h) + b) (Eq. 14) for one of `VARIANTS` (see the module docstring).

    `word_vectors` is the decoder's input embedding E (V x d), the same nn.Parameter, for every
    variant but `nmt`, which learns its own W (V x d_h). `forward(h)` returns the context side
    g_inp(h); `loss` pairs it with the words of a sampled subset when training with
    `sample_share` (0 < share <= 1), with all of V otherwise; `scores` are log-probabilities
    over V. `activation` is sigma (tanh in the paper).
    """

    def __init__(
        self,
        variant: str,
        hidden: int,
        vocab_size: int,
        word_vectors: nn.Parameter | None = None,
        joint_dim: int | None = None,
        sample_share: float | None = None,
        banned: tuple[int, ...] = (),
        activation: Callable[[], nn.Module] = nn.Tanh,
    ):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown joint-paper output layer {variant!r}; one of {VARIANTS}")
        if (variant == "nmt") != (word_vectors is None):
            raise ValueError(f"output layer {variant!r}: nmt learns its own W, every other variant takes E")
        if word_vectors is not None and word_vectors.shape[0] != vocab_size:
            raise ValueError(f"E has {word_vectors.shape[0]} rows for a vocabulary of {vocab_size}")
        if sample_share is not None and not 0 < sample_share <= 1:
            raise ValueError(f"sample_share must be in (0, 1], got {sample_share}")
        self.variant, self.sample_share, self.banned = variant, sample_share, tuple(banned)
        self.shares_input_embedding = word_vectors is not None
        if word_vectors is None:
            bound = hidden**-0.5  # nn.Linear's default range
            word_vectors = nn.Parameter(torch.empty(vocab_size, hidden).uniform_(-bound, bound))
        factory = {"device": word_vectors.device, "dtype": word_vectors.dtype}
        self.word_vectors = word_vectors
        self.bias = nn.Parameter(torch.zeros(vocab_size, **factory))
        self.g_out, self.g_inp = _projections(variant, word_vectors.shape[1], hidden, joint_dim, activation, **factory)
        self._decoding_cache: tuple[tuple, torch.Tensor] | None = None

    @property
    def vocab_size(self) -> int:
        return self.word_vectors.shape[0]

    def own_parameter_count(self) -> int:
        """Trainable parameters of the layer, E left to the decoder's embedding (`parameter_count`)."""
        return sum(
            p.numel()
            for p in self.parameters()
            if p.requires_grad and not (self.shares_input_embedding and p is self.word_vectors)
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.g_inp(h)

    def logits(self, context: torch.Tensor, ids: torch.Tensor | None = None) -> torch.Tensor:
        """g_out(E_ids) g_inp(h) + b_ids over the words `ids` (all of V when None): N x |ids|.
        Only the rows `ids` of E go through g_out, which is what sampling saves."""
        if ids is None:
            return F.linear(context, self._all_words(), self.bias)
        return F.linear(context, self.g_out(self.word_vectors[ids]), self.bias[ids])

    def _all_words(self) -> torch.Tensor:
        """g_out(E) over all of V. While decoding (eval mode, no gradients) it is a constant, computed
        once and kept until a parameter it reads changes (their version counters, which an
        optimiser step or a load bumps) or the layer trains again."""
        if self.training or torch.is_grad_enabled():
            return self.g_out(self.word_vectors)
        inputs = (self.word_vectors, *self.g_out.parameters())
        key = (torch.is_autocast_enabled(), *((p.data_ptr(), p._version) for p in inputs))
        if self._decoding_cache is None or self._decoding_cache[0] != key:
            self._decoding_cache = (key, self.g_out(self.word_vectors))
        return self._decoding_cache[1]

    def train(self, mode: bool = True):
        self._decoding_cache = None
        return super().train(mode)

    def loss(self, context: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        ids = None
        if self.training and self.sample_share is not None:
            sample = sample_vocabulary_topk if target.device.type == "cuda" else sample_vocabulary
            ids, target = sample(target, self.vocab_size, self.sample_share, self.banned)
        return losses.cross_entropy(self.logits(context, ids), target)

    def scores(self, context: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.logits(context), dim=-1)

    @torch.no_grad()
    def output_representations(self) -> torch.Tensor:
        """g_out(E), one row per word: what the context is scored against (W for nmt, E itself
        when tied, sigma(E U^T + b_u) for joint; the paper's Table 1 "Output")."""
        return self.g_out(self.word_vectors)
