"""Fixed-seed, fixed-batch training steps of tiny models of every kind, the losses as exact
float.hex strings: the fp32 CPU reference that speed work must leave bit-for-bit unchanged."""

from __future__ import annotations

import torch

from workflow_src.model.lm import LSTMLanguageModel
from workflow_src.model.losses import cross_entropy
from tests.conftest import translation_spec
from workflow_src.model.seq2seq import Seq2Seq

BASE = {
    "experiment": "tiny",
    "source_unit": "word",
    "target_unit": "word",
    "output_layer": "softmax",
    "loss": "ce",
    "loss_params": {},
    "embeddings": None,
    "tied": False,
    "tgt_lang": "en",
    "device": "cpu",
    "model": {
        "encoder_layers": 1,
        "decoder_layers": 2,
        "hidden": 16,
        "src_embedding": 8,
        "tgt_embedding": 8,
        "dropout": 0.2,
    },
}
KINDS = {
    "softmax": {},
    "joint_sampled": {"output_form": "joint", "joint_dim": 12, "sample_share": 0.5},
    "tied_nllvmf": {
        "output_layer": "continuous",
        "loss": "nllvmf",
        "loss_params": {"lambda1": 0.02},
        "embeddings": "x",
        "tied": True,
    },
    "most_informative": {
        "output_layer": "continuous",
        "loss": "margin",
        "negative": "most_informative",
        "embeddings": "x",
        "tied": True,
    },
}
VOCAB, DIM = 40, 6


def batches(seed: int, steps: int = 3):
    """(src, lengths, tgt_in, tgt_out) with padding (id 0) on both sides."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        lengths = torch.tensor([7, 5, 5, 2])
        src = torch.randint(4, VOCAB, (4, 7), generator=g) * (torch.arange(7)[None] < lengths[:, None])
        tgt_len = torch.tensor([6, 6, 3, 4])
        tgt_out = torch.randint(4, VOCAB, (4, 6), generator=g) * (torch.arange(6)[None] < tgt_len[:, None])
        tgt_in = torch.cat([torch.full((4, 1), 2), tgt_out[:, :-1]], 1) * (torch.arange(6)[None] < tgt_len[:, None])
        out.append((src, lengths, tgt_in, tgt_out))
    return out


def seq2seq_losses(kind: str, step=None, steps: int = 3, repeat: int = 1) -> list[str]:
    """Summed losses of `steps` Adam steps (the batches repeated `repeat` times); `step(model,
    batch)` -> (loss sum, tokens) replaces `model.loss` where a test gives one."""
    torch.manual_seed(11)
    table = torch.nn.functional.normalize(torch.randn(VOCAB, DIM), dim=-1)
    table[0] = 0
    model = Seq2Seq(translation_spec({**BASE, **KINDS[kind]}), VOCAB, VOCAB, 0, table)
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    model.train()
    losses = []
    for batch in batches(5, steps) * repeat:
        loss, n = step(model, batch) if step else model.loss(*batch, 0)
        optimiser.zero_grad()
        (loss / n).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        losses.append(float(loss.detach()).hex())
    return losses


def lm_losses(reuse_embedding: bool) -> list[str]:
    torch.manual_seed(3)
    model = LSTMLanguageModel(VOCAB, 10, 2, 0.3, reuse_embedding)
    optimiser = torch.optim.SGD(model.parameters(), lr=1.0)
    data = torch.randint(0, VOCAB, (31, 4), generator=torch.Generator().manual_seed(2))
    hidden, losses = model.init_hidden(4), []
    for start in range(0, 30, 10):
        logits, _, hidden = model(data[start : start + 10], hidden)
        loss = cross_entropy(logits.flatten(0, 1), data[start + 1 : start + 11].flatten()).sum()
        optimiser.zero_grad()
        (loss / 4).backward()
        optimiser.step()
        losses.append(float(loss.detach()).hex())
    return losses


def reference() -> dict[str, list[str]]:
    return {**{kind: seq2seq_losses(kind) for kind in KINDS}, "lm": lm_losses(False), "lm_tied": lm_losses(True)}


if __name__ == "__main__":
    import json

    print(json.dumps(reference(), indent=1))
