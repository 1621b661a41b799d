"""The LSTM cell as one operator (workflow_src.model.lstm_cell): nn.LSTMCell's numbers, a
hand-written backward checked against finite differences, and one operator each way."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from workflow_src.model.lstm_cell import lstm_cell


def test_it_is_nn_lstmcell():
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(6, 5)
    x, h, c = torch.randn(3, 6), torch.randn(3, 5), torch.randn(3, 5)
    expected = cell(x, (h, c))
    got = lstm_cell(F.linear(x, cell.weight_ih), F.linear(h, cell.weight_hh), c, cell.bias_ih, cell.bias_hh)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("outputs", ["both", "h only", "c only"])
def test_its_backward_matches_finite_differences(outputs):
    torch.manual_seed(1)
    inputs = (
        torch.randn(3, 8, dtype=torch.float64, requires_grad=True),
        torch.randn(3, 8, dtype=torch.float64, requires_grad=True),
        torch.randn(3, 2, dtype=torch.float64, requires_grad=True),
        torch.randn(8, dtype=torch.float64, requires_grad=True),
        torch.randn(8, dtype=torch.float64, requires_grad=True),
    )
    pick = {"both": lambda h, c: (h, c), "h only": lambda h, c: h, "c only": lambda h, c: c}[outputs]
    assert torch.autograd.gradcheck(lambda *a: pick(*lstm_cell(*a)), inputs)


def test_it_is_one_operator_each_way():
    class Operators(TorchDispatchMode):
        names: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.name())
            return func(*args, **(kwargs or {}))

    gates = torch.randn(3, 8, requires_grad=True)
    c, bias = torch.randn(3, 2), torch.zeros(8)
    h, c_next = lstm_cell(gates, gates.detach(), c, bias, bias)
    grad_h, grad_c = torch.ones_like(h), torch.ones_like(c_next)
    with Operators() as operators:
        h, c_next = lstm_cell(gates, gates.detach(), c, bias, bias)
        torch.autograd.backward((h, c_next), (grad_h, grad_c))
    cell_operators = [n for n in operators.names if n.startswith("repro::")]
    assert cell_operators == ["repro::lstm_cell", "repro::lstm_cell_backward"]


def test_cuda_runs_atens_fused_kernel_with_its_biases():
    """On CUDA the cell is `_thnn_fused_lstm_cell` with both biases: torch 2.13's meta kernel for
    it (fake tensors, torch.compile) reads the biases' devices and fails on None."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        gates, c, bias = (
            torch.randn(3, 8, device="cuda"),
            torch.randn(3, 2, device="cuda"),
            torch.randn(8, device="cuda"),
        )
        h, c_next = lstm_cell(gates, gates, c, bias, bias)
    assert (h.device.type, c_next.device.type) == ("cuda", "cuda")
    assert h.shape == c_next.shape == (3, 2) and h.dtype == torch.float32
