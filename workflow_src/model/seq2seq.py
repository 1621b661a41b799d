"""Attentional seq2seq (Luong et al. 2015, as in OpenNMT): a bidirectional LSTM encoder, a
stacked LSTM decoder with input feeding and global "general" attention, and a plug-in output
layer (`output_layers.py`).

    a_t = softmax_s(h_t^T W_a h_s)     c_t = sum_s a_ts h_s     h~_t = tanh(W_c [c_t; h_t])

The decoder input at step t is [emb(y_{t-1}); h~_{t-1}]. Its word embeddings are either learned
(untied) or, tied, the frozen target table of the continuous layer through a learned
projection to the decoder input size (vMF paper §4.4).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from workflow_src.model.output_layers import build_output_layer


class FrozenTableEmbedding(nn.Module):
    """emb(w) = P e(w) with e the frozen target table and P learned."""

    def __init__(self, table: torch.Tensor, size: int):
        super().__init__()
        self.register_buffer("table", table)
        self.proj = nn.Linear(table.shape[1], size, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.proj(self.table[ids])


class Encoder(nn.Module):
    def __init__(self, vocab_size: int, embedding: int, hidden: int, layers: int, dropout: float, pad: int):
        super().__init__()
        if hidden % 2:
            raise ValueError(f"model.hidden must be even for a bidirectional encoder, got {hidden}")
        self.embed = nn.Embedding(vocab_size, embedding, padding_idx=pad)
        self.rnn = nn.LSTM(embedding, hidden // 2, layers, batch_first=True, bidirectional=True,
                           dropout=dropout if layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src: torch.Tensor, lengths: torch.Tensor):
        packed = pack_padded_sequence(self.dropout(self.embed(src)), lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h, c) = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        # last layer, both directions: B x hidden
        final = lambda s: torch.cat([s[-2], s[-1]], dim=-1)  # noqa: E731
        return out, (final(h), final(c))


class Decoder(nn.Module):
    def __init__(self, embed: nn.Module, embedding: int, hidden: int, layers: int, dropout: float):
        super().__init__()
        self.embed = embed
        self.layers = layers
        self.cells = nn.ModuleList(
            nn.LSTMCell(embedding + hidden if i == 0 else hidden, hidden) for i in range(layers)
        )
        self.bridge_h = nn.Linear(hidden, hidden)
        self.bridge_c = nn.Linear(hidden, hidden)
        self.attn_in = nn.Linear(hidden, hidden, bias=False)
        self.attn_out = nn.Linear(2 * hidden, hidden, bias=False)
        self.dropout = nn.Dropout(dropout)

    def init_state(self, encoder_final):
        h, c = encoder_final
        h0, c0 = torch.tanh(self.bridge_h(h)), self.bridge_c(c)
        feed = torch.zeros_like(h0)
        return [(h0, c0) for _ in range(self.layers)], feed

    def step(self, y: torch.Tensor, state, memory: torch.Tensor, memory_mask: torch.Tensor):
        """One step: previous word ids (B) -> attentional state (B x H), attention (B x S), state."""
        layer_states, feed = state
        x = torch.cat([self.dropout(self.embed(y)), feed], dim=-1)
        new_states = []
        for i, cell in enumerate(self.cells):
            h, c = cell(x, layer_states[i])
            new_states.append((h, c))
            x = self.dropout(h) if i + 1 < self.layers else h
        scores = torch.bmm(memory, self.attn_in(x).unsqueeze(2)).squeeze(2)
        scores = scores.masked_fill(~memory_mask, float("-inf"))
        attention = torch.softmax(scores, dim=-1)
        context = torch.bmm(attention.unsqueeze(1), memory).squeeze(1)
        attentional = torch.tanh(self.attn_out(torch.cat([context, x], dim=-1)))
        return self.dropout(attentional), attention, (new_states, attentional)


class Seq2Seq(nn.Module):
    def __init__(self, spec: dict, src_vocab_size: int, tgt_vocab_size: int, pad: int, table: torch.Tensor | None = None):
        super().__init__()
        m = spec["model"]
        hidden, dropout = m["hidden"], m["dropout"]
        self.encoder = Encoder(src_vocab_size, m["src_embedding"], hidden, m["encoder_layers"], dropout, pad)
        if spec.get("tied"):
            if table is None:
                raise ValueError(f"experiment {spec['experiment']}: tied decoder embeddings need a target table")
            embed = FrozenTableEmbedding(table, m["tgt_embedding"])
        else:
            embed = nn.Embedding(tgt_vocab_size, m["tgt_embedding"], padding_idx=pad)
        self.decoder = Decoder(embed, m["tgt_embedding"], hidden, m["decoder_layers"], dropout)
        self.output = build_output_layer(spec, hidden, tgt_vocab_size, table)

    def encode(self, src: torch.Tensor, lengths: torch.Tensor):
        memory, final = self.encoder(src, lengths)
        mask = torch.arange(src.shape[1], device=src.device)[None, :] < lengths[:, None]
        return memory, mask, self.decoder.init_state(final)

    def forward(self, src, lengths, tgt_in) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced outputs (B x T x out) and attention (B x T x S)."""
        memory, mask, state = self.encode(src, lengths)
        states, attentions = [], []
        for t in range(tgt_in.shape[1]):
            h, attention, state = self.decoder.step(tgt_in[:, t], state, memory, mask)
            states.append(h)
            attentions.append(attention)
        return self.output(torch.stack(states, dim=1)), torch.stack(attentions, dim=1)

    def loss(self, src, lengths, tgt_in, tgt_out, pad: int) -> tuple[torch.Tensor, int]:
        """Summed loss over the non-padding target tokens, and their number."""
        out, _ = self(src, lengths, tgt_in)
        keep = tgt_out != pad
        per_token = self.output.loss(out[keep], tgt_out[keep])
        return per_token.sum(), int(keep.sum())

    @torch.no_grad()
    def greedy(self, src, lengths, bos: int, eos: int, banned: list[int], max_len: int):
        """Batched greedy decoding: (B x T) word ids and (B x T) most-attended source positions."""
        memory, mask, state = self.encode(src, lengths)
        y = torch.full((src.shape[0],), bos, dtype=torch.long, device=src.device)
        done = torch.zeros_like(y, dtype=torch.bool)
        words, attended = [], []
        for _ in range(max_len):
            h, attention, state = self.decoder.step(y, state, memory, mask)
            scores = self.output.scores(self.output(h))
            scores[:, banned] = float("-inf")
            y = scores.argmax(-1).masked_fill(done, eos)
            words.append(y)
            attended.append(attention.argmax(-1))
            done |= y == eos
            if bool(done.all()):
                break
        return torch.stack(words, 1), torch.stack(attended, 1)
