"""An LSTM cell's elementwise part as one operator, the way CUDA runs nn.LSTMCell:

    (a_i, a_f, a_g, a_o) = input_gates + hidden_gates      (nn.LSTMCell's gate order)
    c' = σ(a_f) ⊙ c + σ(a_i) ⊙ tanh(a_g)        h' = σ(a_o) ⊙ tanh(c')

On CUDA it is ATen's fused kernel `_thnn_fused_lstm_cell` (what nn.LSTMCell launches there, with
its own backward). Elsewhere it is `repro::lstm_cell`, a custom operator computing the same
elementwise, with its backward another: one operator each way, as on CUDA, so that the cost plan
counts the kernels a GPU would launch (`workflow_src.plan`). The decoder uses it where it computes
its gates itself (`Decoder._first_cell`); the CPU's default path keeps nn.LSTMCell.
"""

import torch

Tensor = torch.Tensor


@torch.library.custom_op("repro::lstm_cell", mutates_args=())
def _lstm_cell(input_gates: Tensor, hidden_gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(h', c', the gates' pre-activations, kept for the backward)."""
    gates = input_gates + hidden_gates
    i, f, g, o = gates.chunk(4, dim=-1)
    c_next = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c_next.tanh(), c_next, gates


@_lstm_cell.register_fake
def _(input_gates, hidden_gates, c):
    gates = torch.empty_like(input_gates)
    return torch.empty_like(c), torch.empty_like(c), gates


@torch.library.custom_op("repro::lstm_cell_backward", mutates_args=())
def _lstm_cell_backward(grad_h: Tensor, grad_c: Tensor, gates: Tensor, c: Tensor, c_next: Tensor
                        ) -> tuple[Tensor, Tensor]:
    """∂L/∂gates (for both gate inputs) and ∂L/∂c from ∂L/∂h' and ∂L/∂c':

        δc = ∂L/∂c' + ∂L/∂h' ⊙ σ(a_o) ⊙ (1 - tanh²(c'))
        ∂a_i = δc ⊙ tanh(a_g) ⊙ σ'(a_i),  ∂a_f = δc ⊙ c ⊙ σ'(a_f),  ∂a_g = δc ⊙ σ(a_i) ⊙ (1 - tanh²(a_g)),
        ∂a_o = ∂L/∂h' ⊙ tanh(c') ⊙ σ'(a_o),  ∂L/∂c = δc ⊙ σ(a_f)
    """
    a_i, a_f, a_g, a_o = gates.chunk(4, dim=-1)
    i, f, g, o, tanh_c = a_i.sigmoid(), a_f.sigmoid(), a_g.tanh(), a_o.sigmoid(), c_next.tanh()
    delta_c = grad_c + grad_h * o * (1 - tanh_c * tanh_c)
    grad_gates = torch.cat([delta_c * g * i * (1 - i), delta_c * c * f * (1 - f), delta_c * i * (1 - g * g),
                            grad_h * tanh_c * o * (1 - o)], dim=-1)
    return grad_gates, delta_c * f


@_lstm_cell_backward.register_fake
def _(grad_h, grad_c, gates, c, c_next):
    return torch.empty_like(gates), torch.empty_like(c)


def _save(ctx, inputs, output):
    _, _, c = inputs
    _, c_next, gates = output
    ctx.save_for_backward(gates, c, c_next)
    ctx.set_materialize_grads(False)  # the gates' gradient is always None: no zeros made for it


def _backward(ctx, grad_h, grad_c, _grad_gates):
    gates, c, c_next = ctx.saved_tensors
    grad_h = torch.zeros_like(c_next) if grad_h is None else grad_h
    grad_c = torch.zeros_like(c_next) if grad_c is None else grad_c
    grad_gates, grad_c_previous = _lstm_cell_backward(grad_h, grad_c, gates, c, c_next)
    return grad_gates, grad_gates, grad_c_previous


_lstm_cell.register_autograd(_backward, setup_context=_save)


def lstm_cell(input_gates: Tensor, hidden_gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """(h', c') from the gate pre-activations W_ih x + b_ih (+ b_hh) and W_hh h, and the cell c."""
    if input_gates.is_cuda:
        dtype = input_gates.dtype  # under autocast the products are bf16; the kernel wants one dtype
        h, c_next, _ = torch.ops.aten._thnn_fused_lstm_cell(input_gates, hidden_gates.to(dtype), c.to(dtype))
        return h, c_next
    h, c_next, _ = _lstm_cell(input_gates, hidden_gates, c)
    return h, c_next
