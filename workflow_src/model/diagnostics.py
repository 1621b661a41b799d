"""What a full run writes beside each model (metrics.jsonl) so that a layer that does not train
shows before its last epoch: three measures the demo's failures were traced with.

- `table_crowding`: how close the target table's words are to each other. Margin losses reach
  zero once cos(e_hat, u) exceeds the negative's cosine by gamma; in a crowded table that
  happens before the target is e_hat's nearest word.
- `margin_misses`: the share of development tokens whose margin loss is zero while e_hat's
  nearest word is not the target: tokens the loss no longer corrects.
- `joint_saturation`: the word side g_out(E) = tanh(E U^T + b_u) of the joint paper's layer. A
  tanh near +-1 everywhere (mean |g_out| near 1), a large b_u, and one row shared by all words
  (the mean row holding most of the squared norm) mean the words no longer differ in the joint space.
"""

from __future__ import annotations

import torch
from torch import nn

from workflow_src.model.joint import JointOutput

CROWDED_COSINE = 0.9


@torch.no_grad()
def table_crowding(table: torch.Tensor, banned: tuple[int, ...], sample: int = 5000, chunk: int = 256) -> dict:
    """Over up to `sample` words evenly spaced in the unit table (V x m), their nearest other word:

    table_nn_cosine_median        median_w max_{v != w} cos(e_w, e_v)
    table_neighbours_above_0_9    mean_w |{v != w : cos(e_w, e_v) > 0.9}|
    """
    allowed = torch.ones(len(table), dtype=torch.bool, device=table.device)
    allowed[list(banned)] = False
    ids = allowed.nonzero().squeeze(1)
    ids = ids[torch.linspace(0, len(ids) - 1, min(sample, len(ids)), device=ids.device).long()]
    nearest, crowded = [], []
    for start in range(0, len(ids), chunk):
        rows = ids[start : start + chunk]
        cosines = table[rows].float() @ table.float().T
        cosines[torch.arange(len(rows), device=rows.device), rows] = float("-inf")
        cosines[:, ~allowed] = float("-inf")
        nearest.append(cosines.max(-1).values)
        crowded.append((cosines > CROWDED_COSINE).sum(-1).float())
    return {
        "table_nn_cosine_median": torch.cat(nearest).median().item(),
        "table_neighbours_above_0_9": torch.cat(crowded).mean().item(),
    }


@torch.no_grad()
def margin_misses(model: nn.Module, batches, pad: int) -> dict:
    """Over the development tokens of `batches` (nmt_data.TrainingBatch), for a margin loss:

        margin_zero_loss_share          |{t : L_t = 0}| / |T|
        margin_zero_loss_wrong_share    |{t : L_t = 0, argmax_w e_hat_t^T e_w != y_t}| / |T|

    read from the device once, at the end."""
    model.eval()
    output = model.output
    banned = torch.tensor(output.banned, device=output.table.device)
    zero = wrong = torch.zeros((), dtype=torch.long, device=output.table.device)
    tokens = 0
    for batch in batches:
        e_hat, target, per_token = model.token_losses(
            batch.src, batch.lengths, batch.tgt_in, batch.tgt_out, pad, batch.positions
        )
        nearest = output.scores(e_hat).index_fill_(1, banned, float("-inf")).argmax(-1)
        silent = per_token == 0
        zero, wrong, tokens = zero + silent.sum(), wrong + (silent & (nearest != target)).sum(), tokens + len(target)
    counts = torch.stack([zero, wrong]).tolist()
    return {
        "margin_zero_loss_share": counts[0] / max(tokens, 1),
        "margin_zero_loss_wrong_share": counts[1] / max(tokens, 1),
    }


@torch.no_grad()
def joint_saturation(layer: JointOutput, chunk: int = 16384) -> dict:
    """For a layer whose word side g_out is a projection then a nonlinearity (Eq. 7a, Eq. 15); {} otherwise:

    g_out_mean_abs        mean |g_out(E)|                       (tanh: 1 is saturated)
    g_out_bias_rms        sqrt(mean b_u^2)                     (Eq. 15's b_u; absent for Eq. 7a)
    g_out_shared_share    |V| ||mean_w g_out(E)_w||^2 / ||g_out(E)||_F^2   (1: every word the same row)
    """
    if not isinstance(layer.g_out, nn.Sequential):
        return {}
    projection = layer.g_out[0]
    absolute = squares = torch.zeros((), dtype=torch.float64, device=layer.word_vectors.device)
    rows = torch.zeros(projection.out_features, dtype=torch.float64, device=layer.word_vectors.device)
    for start in range(0, layer.vocab_size, chunk):
        words = layer.g_out(layer.word_vectors[start : start + chunk]).double()
        absolute, squares, rows = absolute + words.abs().sum(), squares + words.pow(2).sum(), rows + words.sum(0)
    vocab = layer.vocab_size
    values = torch.stack([absolute / words.shape[1] / vocab, vocab * (rows / vocab).pow(2).sum() / squares]).tolist()
    result = {"g_out_mean_abs": values[0], "g_out_shared_share": values[1]}
    if projection.bias is not None:
        result["g_out_bias_rms"] = projection.bias.double().pow(2).mean().sqrt().item()
    return result
