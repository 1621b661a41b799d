"""An LSTM cell's elementwise part as one operator, the way CUDA runs nn.LSTMCell:

    (a_i, a_f, a_g, a_o) = input_gates + hidden_gates + b_ih + b_hh      (nn.LSTMCell's gate order)
    c' = σ(a_f) ⊙ c + σ(a_i) ⊙ tanh(a_g)        h' = σ(a_o) ⊙ tanh(c')

On CUDA it is ATen's fused kernel `_thnn_fused_lstm_cell` (what nn.LSTMCell launches there, with
its own backward), given the biases as nn.LSTMCell gives them (torch 2.13's meta kernel for it,
which fake tensors and torch.compile run, fails without them). Elsewhere it is `repro::lstm_cell`,
a custom operator computing the same elementwise, with its backward another: one operator each
way, as on CUDA, so that the cost plan counts the kernels a GPU would launch (`workflow_src.plan`).
The decoder uses it where it computes its gates itself (`Decoder._first_cell`); the CPU's default
path keeps nn.LSTMCell.
"""

import torch

Tensor = torch.Tensor


@torch.library.custom_op("repro::lstm_cell", mutates_args=())
def _lstm_cell(
    input_gates: Tensor, hidden_gates: Tensor, c: Tensor, input_bias: Tensor, hidden_bias: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """(h', c', the gates' pre-activations, kept for the backward)."""
    gates = input_gates + hidden_gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, dim=-1)
    c_next = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c_next.tanh(), c_next, gates


@_lstm_cell.register_fake
def _(input_gates, hidden_gates, c, input_bias, hidden_bias):
    gates = torch.empty_like(input_gates)
    return torch.empty_like(c), torch.empty_like(c), gates


@torch.library.custom_op("repro::lstm_cell_backward", mutates_args=())
def _lstm_cell_backward(
    grad_h: Tensor, grad_c: Tensor, gates: Tensor, c: Tensor, c_next: Tensor
) -> tuple[Tensor, Tensor]:
    """∂L/∂gates (for both gate inputs) and ∂L/∂c from ∂L/∂h' and ∂L/∂c':

    δc = ∂L/∂c' + ∂L/∂h' ⊙ σ(a_o) ⊙ (1 - tanh²(c'))
    ∂a_i = δc ⊙ tanh(a_g) ⊙ σ'(a_i),  ∂a_f = δc ⊙ c ⊙ σ'(a_f),  ∂a_g = δc ⊙ σ(a_i) ⊙ (1 - tanh²(a_g)),
    ∂a_o = ∂L/∂h' ⊙ tanh(c') ⊙ σ'(a_o),  ∂L/∂c = δc ⊙ σ(a_f)
    """
    a_i, a_f, a_g, a_o = gates.chunk(4, dim=-1)
    i, f, g, o, tanh_c = a_i.sigmoid(), a_f.sigmoid(), a_g.tanh(), a_o.sigmoid(), c_next.tanh()
    delta_c = grad_c + grad_h * o * (1 - tanh_c * tanh_c)
    grad_gates = torch.cat(
        [
            delta_c * g * i * (1 - i),
            delta_c * c * f * (1 - f),
            delta_c * i * (1 - g * g),
            grad_h * tanh_c * o * (1 - o),
        ],
        dim=-1,
    )
    return grad_gates, delta_c * f


@_lstm_cell_backward.register_fake
def _(grad_h, grad_c, gates, c, c_next):
    return torch.empty_like(gates), torch.empty_like(c)


def _save(ctx, inputs, output):
    _, _, c, _, _ = inputs
    _, c_next, gates = output
    ctx.save_for_backward(gates, c, c_next)
    ctx.set_materialize_grads(False)  # the gates' gradient is always None: no zeros made for it


def _backward(ctx, grad_h, grad_c, _grad_gates):
    gates, c, c_next = ctx.saved_tensors
    grad_h = torch.zeros_like(c_next) if grad_h is None else grad_h
    grad_c = torch.zeros_like(c_next) if grad_c is None else grad_c
    grad_gates, grad_c_previous = _lstm_cell_backward(grad_h, grad_c, gates, c, c_next)
    grad_bias = grad_gates.sum(0)  # as CUDA's fused backward: ∂L/∂b_ih = ∂L/∂b_hh = Σ_rows ∂L/∂gates
    return grad_gates, grad_gates, grad_c_previous, grad_bias, grad_bias


_lstm_cell.register_autograd(_backward, setup_context=_save)


def lstm_cell(
    input_gates: Tensor, hidden_gates: Tensor, c: Tensor, input_bias: Tensor, hidden_bias: Tensor
) -> tuple[Tensor, Tensor]:
    """(h', c') from the products W_ih x and W_hh h, the cell c and the biases b_ih and b_hh,
    all of one dtype (the recurrent layers run outside autocast: `precision.full_precision`)."""
    cell = torch.ops.aten._thnn_fused_lstm_cell if input_gates.is_cuda else _lstm_cell
    h, c_next, _ = cell(input_gates, hidden_gates, c, input_bias, hidden_bias)
    return h, c_next
