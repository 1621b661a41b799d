"""Attentional seq2seq (Luong et al. 2015, as in OpenNMT): an LSTM encoder (bidirectional or not), a
stacked LSTM decoder with input feeding and global "general" attention, and a plug-in output
layer (`output_layers.py`).

    a_t = softmax_s((W_a h_s)^T h_t)     c_t = sum_s a_ts h_s     h~_t = tanh(W_c [c_t; h_t])

The decoder input at step t is [emb(y_{t-1}); h~_{t-1}] (input feeding; `model.input_feed: false`
drops h~_{t-1}, which lets teacher forcing run the whole sequence at once). Its word embeddings are
either learned (untied) or, tied, the output layer's word vectors through a learned projection to
the decoder input size: the frozen target table of the continuous layer (vMF paper §4.4), or the
trained word vectors of a softmax over pretrained embeddings (syn-margin paper §4).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from workflow_src.data.vocab import BOS, SPECIALS
from workflow_src.model.compilation import compiled
from workflow_src.model.lstm_cell import lstm_cell
from workflow_src.model.output_layers import build_output_layer
from workflow_src.model.precision import at_least_fp32, full_precision
from workflow_src.model.unpacked_encoder import unpacked
from workflow_src.specs import TrainSpec

BOS_ID = SPECIALS.index(BOS)
# Asking whether every sentence has finished copies a flag to the host, which waits for the
# device: on CUDA, decoding asks every 8 steps (finished rows go on with </s> in between).
FINISHED_CHECK_INTERVAL_CUDA = 8


def finished_check_interval(device: torch.device) -> int:
    """Steps between checks that every sentence has finished: 1 but on CUDA."""
    return FINISHED_CHECK_INTERVAL_CUDA if device.type == "cuda" else 1


class ProjectedEmbedding(nn.Module):
    """emb(w) = P e(w), e(w) a row of `vectors`: the frozen target table (a buffer) or, tied to
    a softmax, its trained word vectors (the same parameter); P learned."""

    def __init__(self, vectors: torch.Tensor, size: int):
        super().__init__()
        if isinstance(vectors, nn.Parameter):
            self.word_vectors = vectors
        else:
            self.register_buffer("table", vectors)
        self.proj = nn.Linear(vectors.shape[1], size, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        vectors = self.word_vectors if hasattr(self, "word_vectors") else self.table
        return self.proj(vectors[ids])


class Encoder(nn.Module):
    """A stacked LSTM over the source embeddings. Bidirectional (the vMF paper's Table 7), it has
    hidden / 2 units per direction and its final state is the last layer's two directions joined;
    unidirectional (the joint paper's |Θ|, OpenNMT-py's default `-brnn` off), hidden units and the
    last layer's final state. `model.encoder_bidirectional` chooses."""

    def __init__(
        self,
        vocab_size: int,
        embedding: int,
        hidden: int,
        layers: int,
        dropout: float,
        pad: int,
        bidirectional: bool = True,
    ):
        super().__init__()
        if bidirectional and hidden % 2:
            raise ValueError(f"model.hidden must be even for a bidirectional encoder, got {hidden}")
        self.bidirectional = bidirectional
        self.embed = nn.Embedding(vocab_size, embedding, padding_idx=pad)
        self.rnn = nn.LSTM(
            embedding,
            hidden // 2 if bidirectional else hidden,
            layers,
            batch_first=True,
            bidirectional=bidirectional,
            dropout=dropout if layers > 1 else 0.0,
        )
        self.dropout = nn.Dropout(dropout)
        self.packed = True  # False: the padded batch whole (`unpacked_encoder`: static shapes, train.compile graphs)

    def forward(self, src: torch.Tensor, lengths: torch.Tensor):
        """`lengths` on the host. The rows are packed in order of falling length, an order sorted
        on the host (`enforce_sorted=False` would copy its indices to and from the device with a
        host sync each way), and put back in their own order after: the same operations as torch's
        own sorting, without the waits. Not `packed`: `unpacked_encoder.unpacked`."""
        if not self.packed:
            return unpacked(self, src, lengths)
        by_length, order = torch.sort(lengths.cpu(), descending=True)
        own_order = torch.empty_like(order).scatter_(0, order, torch.arange(len(order)))
        order, own_order = (i.to(src.device, non_blocking=True) for i in (order, own_order))
        embedded = self.dropout(self.embed(src)).index_select(0, order)
        out, (h, c) = self.rnn(pack_padded_sequence(embedded, by_length, batch_first=True, enforce_sorted=True))
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        out, h, c = out.index_select(0, own_order), h.index_select(1, own_order), c.index_select(1, own_order)
        if self.bidirectional:  # last layer, both directions: B x hidden
            return out, tuple(torch.cat([s[-2], s[-1]], dim=-1) for s in (h, c))
        return out, (h[-1], c[-1])


class Decoder(nn.Module):
    """Stacked LSTM decoder with global attention. With input feeding (OpenNMT's default and the
    papers') the previous attentional state joins the input, so steps run one at a time; without
    it, teacher forcing runs the LSTM and the attention over the whole sequence at once."""

    def __init__(
        self, embed: nn.Module, embedding: int, hidden: int, layers: int, dropout: float, input_feed: bool = True
    ):
        super().__init__()
        self.embed = embed
        self.layers = layers
        self.input_feed = input_feed
        if input_feed:
            self.cells = nn.ModuleList(
                nn.LSTMCell(embedding + hidden if i == 0 else hidden, hidden) for i in range(layers)
            )
        else:
            self.rnn = nn.LSTM(embedding, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.bridge_h = nn.Linear(hidden, hidden)
        self.bridge_c = nn.Linear(hidden, hidden)
        self.attn_in = nn.Linear(hidden, hidden, bias=False)
        self.attn_out = nn.Linear(2 * hidden, hidden, bias=False)
        self.dropout = nn.Dropout(dropout)
        # Teacher forcing computes the embedding half of the first layer's input projection for
        # every step at once (`sequence`). None: where the device is CUDA; the CPU keeps the fused
        # LSTMCell, whose fp32 numbers differ from the split sum in the last bits. True on another
        # device also runs every cell as CUDA does (`_upper_cell`), for tests and the plan's counts.
        self.split_input_projection: bool | None = None
        self.compiled_step = None  # `compile_step`: a function, not a module (no state_dict entries)
        self.graphed_step = None  # decoding's step captured as CUDA graphs (`compilation.apply`, train.compile graphs)

    def init_state(self, encoder_final):
        h, c = encoder_final
        h0, c0 = torch.tanh(self.bridge_h(h)), self.bridge_c(c)
        feed = torch.zeros_like(h0)
        return [(h0, c0) for _ in range(self.layers)], feed

    def _attend(self, queries: torch.Tensor, keys):
        """Attention of queries (B x T x H) over the source: attentional states and weights."""
        memory, projected, mask = keys
        attention = torch.softmax(queries @ projected.transpose(1, 2) + mask[:, None, :], dim=-1)
        context = attention @ memory
        return torch.tanh(self.attn_out(torch.cat([context, queries], dim=-1))), attention

    def sequence(self, embedded: torch.Tensor, state, keys):
        """Teacher forcing over a whole target sequence (B x T x E) -> (B x T x H), (B x T x S)."""
        if self.input_feed:
            split = embedded.is_cuda if self.split_input_projection is None else self.split_input_projection
            embedded_gates = self.embedding_gates(embedded) if split else embedded
            states, attentions = [], []
            for t in range(embedded.shape[1]):
                h, attention, state = self.step(embedded_gates[:, t], state, keys, precomputed=split)
                states.append(h)
                attentions.append(attention)
            return torch.stack(states, dim=1), torch.stack(attentions, dim=1)
        layer_states, _ = state
        h0 = torch.stack([h for h, _ in layer_states])
        c0 = torch.stack([c for _, c in layer_states])
        out, _ = self.rnn(embedded, (h0, c0))
        attentional, attention = self._attend(out, keys)
        return self.dropout(attentional), attention

    def embedding_gates(self, embedded: torch.Tensor) -> torch.Tensor:
        """W_ih[:, :E] emb of the first layer, for every step at once (... x 4H):
        the half of its input projection that does not wait for the previous step. The cell keeps
        its one W_ih (the same parameters, checkpoints and counts)."""
        cell = self.cells[0]
        return F.linear(embedded, cell.weight_ih[:, : embedded.shape[-1]])

    def _first_cell(self, embedded_gates: torch.Tensor, feed: torch.Tensor, state):
        """LSTMCell of the first layer from precomputed `embedding_gates`: the input-feed half and
        the recurrence remain (a product each), then nn.LSTMCell's gates in one operator
        (`lstm_cell.lstm_cell`: ATen's fused kernel on CUDA)."""
        cell, (h, c) = self.cells[0], state
        feed_weight = cell.weight_ih[:, cell.weight_ih.shape[1] - feed.shape[-1] :]
        return lstm_cell(
            torch.addmm(embedded_gates, feed, feed_weight.t()),
            F.linear(h, cell.weight_hh),
            c,
            cell.bias_ih,
            cell.bias_hh,
        )

    @staticmethod
    def _upper_cell(cell: nn.LSTMCell, x: torch.Tensor, state):
        """nn.LSTMCell (any layer, its whole input) as CUDA runs it, two products and one cell
        operator, on any device."""
        (h, c) = state
        return lstm_cell(F.linear(x, cell.weight_ih), F.linear(h, cell.weight_hh), c, cell.bias_ih, cell.bias_hh)

    def attention_keys(self, memory: torch.Tensor, mask: torch.Tensor):
        """Per sentence, once: the keys W_a h_s and an additive mask (-inf at padding)."""
        return (
            memory,
            self.attn_in(memory),
            torch.zeros(mask.shape, device=memory.device).masked_fill(~mask, float("-inf")),
        )

    def compile_step(self) -> None:
        """From now on `step` runs through torch.compile (`workflow_src.model.compilation`, train.compile fuse)."""
        self.compiled_step = compiled(self._step)

    def step(self, embedded: torch.Tensor, state, keys, precomputed: bool = False):
        """One step: the embedded previous words (B x E) -> attentional state (B x H), attention
        (B x S), state. `keys` comes from `attention_keys`. With `precomputed`, `embedded` is
        the step's `embedding_gates` instead (input feeding only). Compiled after `compile_step`."""
        return (self.compiled_step or self._step)(embedded, state, keys, precomputed)

    def decode_step(self, embedded: torch.Tensor, state, keys):
        """`step` as decoding runs it (no gradients): replayed as a CUDA graph once `graphed_step`
        is set; its outputs hold until the next step (greedy and beam search use them before)."""
        return (
            self.graphed_step(embedded, state, keys, False) if self.graphed_step else self.step(embedded, state, keys)
        )

    def _step(self, embedded: torch.Tensor, state, keys, precomputed: bool):
        layer_states, feed = state
        if self.input_feed:
            new_states = []
            # split_input_projection forced on another device: nn.LSTMCell as CUDA runs it (tests, the plan's counts)
            cell_as_cuda = self.split_input_projection is True and not embedded.is_cuda
            for i, cell in enumerate(self.cells):
                if i == 0 and precomputed:
                    h, c = self._first_cell(embedded, feed, layer_states[0])
                else:
                    if i == 0:
                        x = torch.cat([embedded, feed], dim=-1)
                    h, c = self._upper_cell(cell, x, layer_states[i]) if cell_as_cuda else cell(x, layer_states[i])
                new_states.append((h, c))
                x = self.dropout(h) if i + 1 < self.layers else h
        else:
            h0 = torch.stack([h for h, _ in layer_states])
            c0 = torch.stack([c for _, c in layer_states])
            out, (h, c) = self.rnn(embedded.unsqueeze(1), (h0, c0))
            x, new_states = out.squeeze(1), list(zip(h, c))
        attentional, attention = self._attend(x.unsqueeze(1), keys)
        attentional, attention = attentional.squeeze(1), attention.squeeze(1)
        return self.dropout(attentional), attention, (new_states, attentional)


class Seq2Seq(nn.Module):
    def __init__(
        self, spec: TrainSpec, src_vocab_size: int, tgt_vocab_size: int, pad: int, table: torch.Tensor | None = None
    ):
        super().__init__()
        m = spec.model
        hidden, dropout = m.hidden, m.dropout
        self.encoder = Encoder(
            src_vocab_size, m.src_embedding, hidden, m.encoder_layers, dropout, pad, m.encoder_bidirectional
        )
        if (spec.tied or spec.embeddings) and table is None:
            raise ValueError(f"experiment {spec.experiment}: its {spec.embeddings} target vectors are missing")
        # A softmax over pretrained word vectors trains them (syn-margin paper §4): they start as
        # `table`, and `initialise` must leave them so.
        self.word_vectors = nn.Parameter(table.clone()) if spec.output_layer == "softmax" and spec.embeddings else None
        if spec.tied:
            embed = ProjectedEmbedding(table if self.word_vectors is None else self.word_vectors, m.tgt_embedding)
        else:
            embed = nn.Embedding(tgt_vocab_size, m.tgt_embedding, padding_idx=pad)
        self.decoder = Decoder(embed, m.tgt_embedding, hidden, m.decoder_layers, dropout, m.input_feed)
        # the joint paper's forms share E, the decoder's input embedding, with the output layer
        shares_embedding = spec.output_form not in (None, "nmt")
        self.output = build_output_layer(
            spec,
            hidden,
            tgt_vocab_size,
            table,
            banned=(pad, BOS_ID),
            word_vectors=embed.weight if shares_embedding else self.word_vectors,
        )

    def layer_parameters(self) -> dict[str, int]:
        """Trainable parameters of the decoder's input embedding ("input") and of the output layer
        ("output"), vMF Table 4's two counts (a matrix the two share counts in both)."""

        def trainable(module: nn.Module) -> int:
            return sum(p.numel() for p in module.parameters() if p.requires_grad)

        return {"input": trainable(self.decoder.embed), "output": trainable(self.output)}

    def _apply(self, fn, recurse=True):
        """nn.Module converts each module's buffers on its own, so `.to()` would give the tied
        embedding and the continuous output layer a copy each of the target table they share (two
        300K x 300 tables on the device, and in every checkpoint): share the converted one again."""
        shared: dict[int, list[tuple[nn.Module, str]]] = {}
        for module in self.modules():
            for name, buffer in module._buffers.items():
                if buffer is not None:
                    shared.setdefault(id(buffer), []).append((module, name))
        super()._apply(fn, recurse)
        for (module, name), *others in (group for group in shared.values() if len(group) > 1):
            for other, other_name in others:
                other._buffers[other_name] = module._buffers[name]
        return self

    def pretrained_parameters(self) -> tuple[nn.Parameter, ...]:
        return () if self.word_vectors is None else (self.word_vectors,)

    def encode(self, src: torch.Tensor, lengths: torch.Tensor):
        """(attention keys, initial decoder state) of a source batch. `lengths` may stay on the
        host (the encoder packs by host lengths): the mask's copy does not wait."""
        memory, final = self.encoder(src, lengths)
        lengths = lengths.to(src.device, non_blocking=True)
        mask = torch.arange(src.shape[1], device=src.device)[None, :] < lengths[:, None]
        return self.decoder.attention_keys(memory, mask), self.decoder.init_state(final)

    def forward(self, src, lengths, tgt_in) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced outputs (B x T x out) and attention (B x T x S). Encoder and decoder run
        outside autocast (`precision.full_precision`); the output layer runs in the caller's."""
        with full_precision(src.device):
            keys, state = self.encode(src, lengths)
            embedded = self.decoder.dropout(self.decoder.embed(tgt_in))  # every step's input at once
            states, attentions = self.decoder.sequence(embedded, state, keys)
        return self.output(states), attentions

    def loss(self, src, lengths, tgt_in, tgt_out, pad: int, positions: torch.Tensor | None = None):
        """Summed loss over the non-padding target tokens, and their number. `positions`, their
        flat indices worked out on the host (`nmt_data.TrainingBatch`), spare the device sync of
        finding them by mask. The loss runs in fp32 or wider whatever the autocast precision."""
        _, _, per_token = self.token_losses(src, lengths, tgt_in, tgt_out, pad, positions)
        return per_token.sum(), len(per_token)

    def token_losses(self, src, lengths, tgt_in, tgt_out, pad: int, positions: torch.Tensor | None = None):
        """(outputs, targets, losses) of the non-padding target tokens, one row each (see `loss`)."""
        out, _ = self(src, lengths, tgt_in)
        if positions is None:
            positions = (tgt_out != pad).flatten().nonzero().squeeze(1)
        selected = at_least_fp32(out.flatten(0, 1).index_select(0, positions))
        target = tgt_out.flatten().index_select(0, positions)
        return selected, target, self.output.loss(selected, target)

    @torch.no_grad()
    def greedy(self, src, lengths, bos: int, eos: int, banned: list[int], max_len: int, check_every: int | None = None):
        """Batched greedy decoding: (B x T) word ids and (B x T) most-attended source positions.
        A finished row continues with </s>; the search stops at the first step t, a multiple of
        `check_every` (default `finished_check_interval`), where every row has finished, or at
        `max_len`. Up to the first </s> the output does not depend on `check_every`."""
        check_every = check_every or finished_check_interval(src.device)
        banned = torch.tensor(banned, dtype=torch.long, device=src.device)  # a list index would copy it every step
        keys, state = self.encode(src, lengths)
        y = torch.full((src.shape[0],), bos, dtype=torch.long, device=src.device)
        done = torch.zeros_like(y, dtype=torch.bool)
        words, attended = [], []
        for t in range(1, max_len + 1):
            h, attention, state = self.decoder.decode_step(self.decoder.embed(y), state, keys)
            scores = self.output.scores(self.output(h)).index_fill_(1, banned, float("-inf"))
            y = scores.argmax(-1).masked_fill(done, eos)
            words.append(y)
            attended.append(attention.argmax(-1))
            done |= y == eos
            if t % check_every == 0 and bool(done.all()):
                break
        return torch.stack(words, 1), torch.stack(attended, 1)

    @torch.no_grad()
    def beam_search(
        self,
        src,
        lengths,
        bos: int,
        eos: int,
        banned: list[int],
        max_len: int,
        beam: int,
        check_every: int | None = None,
    ):
        """Batched beam search over log-probabilities (summed, no length penalty): the best
        hypothesis per sentence, as (B x T) word ids and most-attended source positions. A
        finished hypothesis continues with </s> at no cost; the search stops as `greedy` does."""
        check_every = check_every or finished_check_interval(src.device)
        banned = torch.tensor(banned, dtype=torch.long, device=src.device)
        batch = src.shape[0]
        keys, state = self.encode(src, lengths)
        expand = torch.arange(batch, device=src.device).repeat_interleave(beam)
        keys, state = tuple(k[expand] for k in keys), _select_state(state, expand)
        scores = torch.full((batch, beam), float("-inf"), device=src.device)
        scores[:, 0] = 0.0  # all beams start as one hypothesis
        finished = torch.zeros(batch, beam, dtype=torch.bool, device=src.device)
        y = torch.full((batch * beam,), bos, dtype=torch.long, device=src.device)
        words, parents, attended = [], [], []
        for t in range(1, max_len + 1):
            h, attention, state = self.decoder.decode_step(self.decoder.embed(y), state, keys)
            log_probs = self.output.scores(self.output(h)).index_fill_(1, banned, float("-inf"))
            done = finished.view(-1)
            log_probs.masked_fill_(done[:, None], float("-inf"))
            log_probs[:, eos].masked_fill_(done, 0.0)  # a finished hypothesis only continues with </s>, at no cost
            vocab = log_probs.shape[1]
            total = (scores.view(-1, 1) + log_probs).view(batch, beam * vocab)
            scores, flat = total.topk(beam, dim=1)
            parent, y = flat // vocab, flat % vocab
            rows = (parent + torch.arange(batch, device=src.device)[:, None] * beam).view(-1)
            state = _select_state(state, rows)
            words.append(y)
            parents.append(parent)
            attended.append(attention.argmax(-1)[rows].view(batch, beam))
            finished = finished.gather(1, parent) | (y == eos)
            y = y.view(-1)
            if t % check_every == 0 and bool(finished.all()):
                break
        best = scores.argmax(-1)
        out_words, out_attended = [], []
        for t in range(len(words) - 1, -1, -1):  # follow the back-pointers from the best beam
            out_words.append(words[t].gather(1, best[:, None]).squeeze(1))
            out_attended.append(attended[t].gather(1, best[:, None]).squeeze(1))
            best = parents[t].gather(1, best[:, None]).squeeze(1)
        return torch.stack(out_words[::-1], 1), torch.stack(out_attended[::-1], 1)


def initialise(model: Seq2Seq, scale: float) -> None:
    """Uniform(-scale, scale) for every learned parameter (OpenNMT's param_init) but the
    pretrained word vectors."""
    pretrained = {id(p) for p in model.pretrained_parameters()}
    for p in model.parameters():
        if p.requires_grad and id(p) not in pretrained:
            nn.init.uniform_(p, -scale, scale)


def _select_state(state, index: torch.Tensor):
    """The decoder state (per-layer (h, c) and the input feed) of the rows `index`."""
    layer_states, feed = state
    return [(h[index], c[index]) for h, c in layer_states], feed[index]
