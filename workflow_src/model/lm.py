"""The VD-LSTM language model of the tying paper (Inan et al., 2017, §2, §4, §6.1, appendix A).

    x_t = L y*_{t-1},   h_t = LSTM(x_t, h_{t-1}),   logits_t = W h_t + b      (Eqs. 2.1-2.3)

Two LSTM layers whose width equals the embedding's. With `reuse_embedding` (RE, §4) the output
layer is the embedding itself: W = L^T and b = 0 (no bias parameter); `output_bias=False` sets
b = 0 in an untied model (§4's analysis and Figure 1).

Variational dropout (Gal, 2015, tied further as appendix A says): while training, each forward
call draws one Bernoulli mask per batch row, scaled by 1 / (1 - p), and uses it at every step:

    x_t     <- x_t ⊙ m_x                  the inputs of the first layer
    h^l_t   <- h^l_t ⊙ m_l                one mask per layer, shared by the recurrence into
                                          h^l_{t+1}, the input of layer l + 1 and, for the top
                                          layer, the output layer

Masks are drawn afresh for every call, i.e. for every 35-step BPTT segment: a segment is one
"example through the unrolled network" of appendix A, as in Zaremba's and Gal's TensorFlow code,
which samples per `session.run`. There is no word-type (embedding-matrix) dropout: appendix A
says the input embedding layer has none. Without masks (eval mode, or p = 0) the model runs
torch's fused `nn.LSTM`; with them, the same parameters are unrolled by hand.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from workflow_src.atomic import atomic_output, load_saved
from workflow_src.model.compilation import compiled
from workflow_src.model.precision import full_precision
from workflow_src.specs import LMSpec, document, load

EOS = "<eos>"  # the end of a line, a word of the language-modelling corpora

State = tuple[torch.Tensor, torch.Tensor]  # (h, c), each layers x B x H as in nn.LSTM


def unrolled_lstm(
    rnn: nn.LSTM, x: torch.Tensor, state: State, state_masks: list[torch.Tensor]
) -> tuple[torch.Tensor, State]:
    """`rnn` (time-major, unidirectional) step by step, with h^l ⊙ m_l in place of h^l wherever
    h^l is used. x: T x B x I; state_masks: one B x H mask per layer. Returns the top layer's
    masked outputs (T x B x H) and the final unmasked (h, c)."""
    h0, c0 = state
    final_h, final_c = [], []
    for layer, mask in enumerate(state_masks):
        w_ih, w_hh, b_ih, b_hh = (
            getattr(rnn, f"{name}_l{layer}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        )
        # the input mask is constant in time, so every step's input projection is one matmul
        input_gates = F.linear(x, w_ih, b_ih + b_hh)
        h, c = h0[layer], c0[layer]
        h_masked = h * mask
        outputs = []
        for gates_t in input_gates:
            i, f, g, o = (gates_t + h_masked @ w_hh.T).chunk(4, dim=-1)  # nn.LSTM's gate order
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            h_masked = h * mask
            outputs.append(h_masked)
        x = torch.stack(outputs)
        final_h.append(h)
        final_c.append(c)
    return x, (torch.stack(final_h), torch.stack(final_c))


class LSTMLanguageModel(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        size: int,
        layers: int = 2,
        dropout: float = 0.0,
        reuse_embedding: bool = False,
        init_range: float = 0.1,
        output_bias: bool = True,
    ):
        """`dropout` is a drop probability (the paper's, per size and corpus: `papers.tying.DROPOUT`);
        `init_range` r draws every parameter from U(-r, r) (Zaremba et al.: 0.1 / 0.05 / 0.04 for
        small / medium / large); `output_bias` False sets b = 0 in an untied model (§4, Figure 1)."""
        super().__init__()
        self.size, self.layers, self.dropout = size, layers, dropout
        self.embedding = nn.Embedding(vocab_size, size)  # weight: V x d, i.e. L^T
        self.rnn = nn.LSTM(size, size, layers)
        self.decoder = None if reuse_embedding else nn.Linear(size, vocab_size, bias=output_bias)
        self.unrolled = unrolled_lstm  # `compile_unrolled` replaces it by its compiled form
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -init_range, init_range)

    def compile_unrolled(self) -> None:
        """From now on the dropout segment runs through torch.compile (`workflow_src.model.compilation`,
        train.compile fuse)."""
        self.unrolled = compiled(unrolled_lstm, dynamic=None)

    @property
    def output_weight(self) -> torch.Tensor:
        """W (V x d): the embedding L^T itself under RE."""
        return self.embedding.weight if self.decoder is None else self.decoder.weight

    @property
    def output_bias(self) -> torch.Tensor | None:
        return None if self.decoder is None else self.decoder.bias

    def init_hidden(self, batch_size: int) -> State:
        weight = self.embedding.weight
        zeros = weight.new_zeros(self.layers, batch_size, self.size)
        return zeros, zeros.clone()

    def sample_masks(self, batch_size: int, like: torch.Tensor) -> list[torch.Tensor]:
        """[m_x, m_1, ..., m_layers], each B x d, entries 0 or 1 / (1 - p)."""
        keep = 1 - self.dropout
        shape = (self.layers + 1, batch_size, self.size)
        return list(torch.bernoulli(like.new_full(shape, keep)) / keep)

    def forward(self, tokens: torch.Tensor, hidden: State) -> tuple[torch.Tensor, torch.Tensor, State]:
        """tokens: T x B (time-major). Returns the logits W h + b (T x B x V: in the caller's
        autocast; the LSTM runs outside it, `precision.full_precision`), the top layer's
        outputs h (T x B x d, after dropout) and the final state, detached so that gradients
        stop at the segment boundary (truncated BPTT)."""
        x = self.embedding(tokens)
        with full_precision(x.device):  # the LSTM in fp32; the output layer in the caller's autocast
            if self.training and self.dropout > 0:
                input_mask, *state_masks = self.sample_masks(tokens.shape[1], x)
                h, hidden = self.unrolled(self.rnn, x * input_mask, hidden, state_masks)
            else:
                h, hidden = self.rnn(x, hidden)
        logits = F.linear(h, self.output_weight, self.output_bias)
        return logits, h, (hidden[0].detach(), hidden[1].detach())


def normalise_embedding_rows(model: LSTMLanguageModel) -> None:
    """l_w <- l_w / ||l_w|| for every row of L (the spec's `unit_norm_embeddings`, after each update)."""
    with torch.no_grad():
        model.embedding.weight.copy_(F.normalize(model.embedding.weight, dim=1))


def build_model(spec: LMSpec, vocab_size: int) -> LSTMLanguageModel:
    """The language model of a training spec."""
    return LSTMLanguageModel(
        vocab_size, spec.size, spec.layers, spec.dropout, spec.reuse_embedding, spec.init_range or 0.1, spec.output_bias
    )


def perplexity(nll_sum: float, tokens: int) -> float:
    """PPL = exp((1/N) Σ_t -log p(w_t | w_<t)) over N predicted tokens; inf past float range (a
    diverged model's, which its run then reports rather than crashing on)."""
    try:
        return math.exp(nll_sum / tokens)
    except OverflowError:
        return math.inf


def save_language_model(
    path: Path, model: LSTMLanguageModel, spec: LMSpec, itos: list[str], epoch: int, extra: dict | None = None
) -> None:
    with atomic_output(path) as tmp:
        torch.save(
            {"spec": document(spec), "state_dict": model.state_dict(), "itos": itos, "epoch": epoch, **(extra or {})},
            tmp,
        )


LANGUAGE_MODEL_KEYS = ("spec", "state_dict", "itos", "epoch")


def load_language_model(path: Path, device: torch.device) -> tuple[LSTMLanguageModel, list[str]]:
    """(model in eval mode on `device`, vocabulary) of a `save_language_model` file; a FileFault
    naming the file where it is missing, unreadable or not such a file."""
    saved = load_saved(
        path,
        f"a language model ({', '.join(LANGUAGE_MODEL_KEYS)}), as workflow_src.train.train_lm saves it",
        LANGUAGE_MODEL_KEYS,
        device,
    )
    model = build_model(load(LMSpec, saved["spec"], f"{path}: its spec"), len(saved["itos"]))
    model.load_state_dict(saved["state_dict"])
    return model.to(device).eval(), saved["itos"]
