"""The output-layer diagnostics a full run writes (workflow_src/model/diagnostics.py), each
against a direct computation: the table's crowding by brute force, margin misses on a table
built so the answer is known, the joint layer's saturation in its two extremes."""

import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from workflow_src.model import diagnostics
from workflow_src.model.joint import JointOutput
from workflow_src.model.output_layers import ContinuousOutput


def test_table_crowding_against_brute_force():
    table = F.normalize(torch.randn(60, 4, generator=torch.Generator().manual_seed(0)), dim=-1)
    table[0] = 0  # padding
    got = diagnostics.table_crowding(table, banned=(0,), chunk=7)
    rows = table[1:].numpy()
    cosines = rows @ rows.T
    np.fill_diagonal(cosines, -np.inf)
    assert got["table_nn_cosine_median"] == pytest.approx(float(np.median(cosines.max(1))), abs=1e-6)
    assert got["table_neighbours_above_0_9"] == pytest.approx(float((cosines > 0.9).sum(1).mean()))


def test_margin_misses_counts_zero_losses_whose_nearest_word_is_wrong():
    # Words 1-3 on a circle; word 2 is 10 degrees from word 1, word 3 opposite. Predictions:
    # exactly word 1 (target 1: loss 0, right), 5 degrees off word 1 toward 2 (target 2: loss 0 at
    # gamma 0.01 against the projection negative, but word 1 is nearer: a miss), word 3 (target 1: loss > 0).
    angle = np.radians([0, 10, 180])
    table = torch.zeros(4, 2)
    table[1:] = torch.tensor(np.stack([np.cos(angle), np.sin(angle)], 1), dtype=torch.float32)
    output = ContinuousOutput(2, table, "margin", {"gamma": 0.01}, "projection", banned=(0,))
    e_hat = torch.tensor([[1.0, 0.0], [np.cos(np.radians(4)), np.sin(np.radians(4))], [-1.0, 0.0]], dtype=torch.float32)
    target = torch.tensor([1, 2, 1])

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.output = output

        def token_losses(self, *batch):
            return e_hat, target, output.loss(e_hat, target)

    losses = output.loss(e_hat, target)
    assert losses[0] == 0 and losses[1] == 0 and losses[2] > 0
    batch = types.SimpleNamespace(src=None, lengths=None, tgt_in=None, tgt_out=None, positions=None)
    got = diagnostics.margin_misses(Model(), [batch], pad=0)
    assert got == {"margin_zero_loss_share": pytest.approx(2 / 3), "margin_zero_loss_wrong_share": pytest.approx(1 / 3)}


def joint_layer(vocab: int = 50, d: int = 8, d_j: int = 6) -> JointOutput:
    embedding = nn.Parameter(torch.randn(vocab, d, generator=torch.Generator().manual_seed(1)))
    return JointOutput("joint", 8, vocab, embedding, joint_dim=d_j)


def test_joint_saturation_against_a_direct_computation():
    layer = joint_layer()
    words = layer.g_out(layer.word_vectors).detach().double()
    got = diagnostics.joint_saturation(layer, chunk=7)
    assert got["g_out_mean_abs"] == pytest.approx(words.abs().mean().item())
    assert got["g_out_shared_share"] == pytest.approx(
        (len(words) * words.mean(0).pow(2).sum() / words.pow(2).sum()).item()
    )
    assert got["g_out_bias_rms"] == pytest.approx(layer.g_out[0].bias.detach().double().pow(2).mean().sqrt().item())


def test_a_saturated_word_side_reads_as_one():
    layer = joint_layer()
    with torch.no_grad():
        layer.g_out[0].weight.zero_()
        layer.g_out[0].bias.fill_(20.0)  # tanh(20) = 1 for every word: one row shared by all
    got = diagnostics.joint_saturation(layer)
    assert got["g_out_mean_abs"] == pytest.approx(1.0) and got["g_out_shared_share"] == pytest.approx(1.0)
    assert got["g_out_bias_rms"] == pytest.approx(20.0)


def test_layers_without_a_nonlinear_word_side_have_no_saturation():
    embedding = nn.Parameter(torch.randn(50, 8))
    assert diagnostics.joint_saturation(JointOutput("tied", 8, 50, embedding)) == {}
    assert diagnostics.joint_saturation(JointOutput("context", 8, 50, embedding)) == {}
    assert set(diagnostics.joint_saturation(JointOutput("output", 8, 50, embedding))) == {
        "g_out_mean_abs",
        "g_out_shared_share",
    }
