"""The encoder's LSTM without host-length packing: static shapes for a captured step (config
`train.compile: graphs`, `workflow_src/train/static_step.py`).

`Encoder.forward` packs its rows by lengths read on the host. A captured step cannot read them, so
here the padded batch runs whole, one layer and one direction at a time with that layer's own
parameters (`torch._VF.lstm`, what nn.LSTM calls), and each row's state is taken at its length L:

    forward direction   h_{L-1} by a gather of the outputs (an LSTM is causal: its outputs before
                        L do not see the padding after it)
    backward direction  each row reversed within its length by a gather (t <-> L-1-t for t < L,
                        padding left in place), run forward, and its outputs reversed back by the
                        same gather; its final state is the reversed run's at L-1
    cell state c        nn.LSTM returns every step's h but only the last step's c, so the top
                        layer's c at L-1 is recomputed from what is known, in closed form:

        a_t = [x_t; h_{t-1}] [W_ih; W_hh]^T + b_ih + b_hh        (one product for every t, h_{-1} = 0)
        c_t = f_t c_{t-1} + i_t g_t,  c_{-1} = 0   =>   c_{L-1} = Σ_{k<L} exp(G_k) i_k g_k,
        G_k = Σ_{k<j<L} log f_j                                 (f = σ(a_f), i = σ(a_i), g = tanh(a_g))

                        G is a reverse cumulative sum of log σ(a_f), masked to the row's length:
                        each exponent is a direct sum of terms <= 0 (no difference of large sums,
                        no overflow), and the whole is a fixed handful of kernels whatever the
                        length, where the recurrence would put a loop of S steps into the graph.

Between layers, dropout at the module's rate while training, as nn.LSTM applies it. Outputs at
padding are zero, as `pad_packed_sequence` leaves them. In eval mode the results are the packed
encoder's within fp32 rounding (tests/test_static_step.py); while training, dropout draws other
values (the packed encoder drops out the packed rows), from the same distribution.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

WEIGHTS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def reversal_index(lengths: torch.Tensor, width: int) -> torch.Tensor:
    """B x S positions: L-1-t for t < L, t at padding (an involution: applied twice, the identity)."""
    t = torch.arange(width, device=lengths.device)
    return torch.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)


def gather_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x[b, index[b, t]] for B x S x H `x`."""
    return x.gather(1, index.unsqueeze(-1).expand_as(x))


def at_position(x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
    """x[b, position[b]]: B x H."""
    return x.gather(1, position[:, None, None].expand(-1, 1, x.shape[-1])).squeeze(1)


def layer_weights(rnn: nn.LSTM, layer: int, reverse: bool) -> list[torch.Tensor]:
    suffix = "_reverse" if reverse else ""
    return [getattr(rnn, f"{name}_l{layer}{suffix}") for name in WEIGHTS]


def run_direction(rnn: nn.LSTM, weights: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """One layer, one direction of `rnn` over B x S x I, from a zero state: B x S x H."""
    zeros = x.new_zeros(1, x.shape[0], rnn.hidden_size)
    out, _, _ = torch._VF.lstm(x, (zeros, zeros), weights, True, 1, 0.0, rnn.training, False, True)
    return out


def final_cell(weights: list[torch.Tensor], x: torch.Tensor, h: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """c_{L-1} of one direction of a layer from its inputs x (B x S x I) and outputs h (B x S x H),
    `valid` (B x S) true before each row's length (see the module docstring)."""
    w_ih, w_hh, b_ih, b_hh = weights
    h_previous = F.pad(h[:, :-1], (0, 0, 1, 0))
    gates = F.linear(torch.cat([x, h_previous], dim=-1), torch.cat([w_ih, w_hh], dim=1), b_ih + b_hh)
    i, f, g, _ = gates.chunk(4, dim=-1)  # nn.LSTM's gate order
    mask = valid.unsqueeze(-1).to(gates.dtype)
    log_forget = F.logsigmoid(f) * mask
    through_end = log_forget.flip(1).cumsum(1).flip(1)  # Σ_{k<=j<L} log f_j
    after = F.pad(through_end[:, 1:], (0, 0, 0, 1))  # G_k = Σ_{k<j<L} log f_j
    return (torch.exp(after) * torch.sigmoid(i) * torch.tanh(g) * mask).sum(1)


def unpacked(encoder: nn.Module, src: torch.Tensor, lengths: torch.Tensor):
    """`Encoder.forward` without packing: (memory B x S x hidden, zero at padding; (h, c) of the
    last layer, both directions joined when bidirectional). `lengths` may be on the host or the
    device (copied without waiting)."""
    rnn: nn.LSTM = encoder.rnn
    lengths = lengths.to(src.device, non_blocking=True)
    width = src.shape[1]
    valid = torch.arange(width, device=src.device)[None, :] < lengths[:, None]
    last = lengths - 1
    reverse = reversal_index(lengths, width) if rnn.bidirectional else None
    x = encoder.dropout(encoder.embed(src))
    finals = []
    for layer in range(rnn.num_layers):
        if layer:
            x = F.dropout(x, rnn.dropout, rnn.training)
        outputs = []
        for backward in (False, True) if rnn.bidirectional else (False,):
            weights = layer_weights(rnn, layer, backward)
            inputs = gather_rows(x, reverse) if backward else x
            out = run_direction(rnn, weights, inputs)
            if layer == rnn.num_layers - 1:
                finals.append((at_position(out, last), final_cell(weights, inputs, out, valid)))
            outputs.append(gather_rows(out, reverse) if backward else out)
        x = torch.cat(outputs, dim=-1) if len(outputs) > 1 else outputs[0]
    memory = x * valid.unsqueeze(-1).to(x.dtype)
    h, c = (torch.cat(parts, dim=-1) for parts in zip(*finals))
    return memory, (h, c)
