"""Translation batches of static shapes (config `train.compile: graphs`): B rows exactly, S and T
padded up to a length bucket, every target position weighted.

    B   train.batch_size; rows past the batch's sentences are padding: source `<pad>` of length 1
        (one position to attend to), target all `<pad>`, weight 0
    S   the smallest bucket of `train.length_buckets` at least the longest source; past the last
        bucket, the next multiple of it
    T   likewise for the longest target (`w1 .. wn </s>`)
    w   B x T: 1 at real target tokens, 0 at padding, so that the loss is Σ w ℓ over every position

The token and sentence counts travel as device tensors (the loss is divided by one of them
inside the captured step), and as host integers (the epoch's counts and speeds). Each (S, T)
is one captured graph; the price is the padding, which `target_positions` measures.
"""

from __future__ import annotations

import dataclasses

import torch

from workflow_src.data.vocab import Vocab


def bucket(length: int, buckets: list[int]) -> int:
    """The smallest of `buckets` (rising) that holds `length`, or the next multiple of the last."""
    for size in buckets:
        if length <= size:
            return size
    return -(-length // buckets[-1]) * buckets[-1]


@dataclasses.dataclass
class StaticBatch:
    src: torch.Tensor  # B x S ids
    lengths: torch.Tensor  # B source lengths (1 for a padding row)
    tgt_in: torch.Tensor  # B x T decoder inputs `<s> w1 .. wn`
    tgt_out: torch.Tensor  # B x T outputs `w1 .. wn </s>`
    weights: torch.Tensor  # B x T float: 1 at real target tokens
    token_count: torch.Tensor  # () float: real target tokens
    sentence_count: torch.Tensor  # () float: real rows
    tokens: int  # the same two counts on the host
    sentences: int

    DEVICE_FIELDS = ("src", "lengths", "tgt_in", "tgt_out", "weights", "token_count", "sentence_count")

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return tuple(getattr(self, name) for name in self.DEVICE_FIELDS)

    def to(self, device: torch.device) -> "StaticBatch":
        """The batch on `device`; from pinned memory the copies overlap the running step."""
        return dataclasses.replace(
            self, **{name: getattr(self, name).to(device, non_blocking=True) for name in self.DEVICE_FIELDS}
        )


def _rows(sequences: list[list[int]], width: int, value: int) -> torch.Tensor:
    return torch.tensor([s + [value] * (width - len(s)) for s in sequences], dtype=torch.long)


def static_batch(
    src: list[list[int]],
    tgt: list[list[int]],
    idx: list[int],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    device: torch.device,
    batch_size: int,
    buckets: list[int],
) -> StaticBatch:
    """The batch `idx` (at most `batch_size` pairs; `tgt` rows end in </s>) on the host, pinned
    where `device` is CUDA, shaped B x bucketed S and T (module docstring)."""
    if len(idx) > batch_size:
        raise ValueError(f"a batch of {len(idx)} pairs does not fit train.batch_size {batch_size}")
    padding_rows = batch_size - len(idx)
    sources = [src[i] or [src_vocab.unk] for i in idx] + [[src_vocab.pad]] * padding_rows
    targets = [tgt[i] for i in idx]
    width = bucket(max(len(s) for s in sources), buckets)
    steps = bucket(max(len(t) for t in targets), buckets)
    tgt_in = _rows([[tgt_vocab.bos] + t[:-1] for t in targets] + [[]] * padding_rows, steps, tgt_vocab.pad)
    tgt_out = _rows(targets + [[]] * padding_rows, steps, tgt_vocab.pad)
    lengths = torch.tensor([len(s) for s in sources])
    weights = (
        torch.arange(steps)[None, :] < torch.tensor([len(t) for t in targets] + [0] * padding_rows)[:, None]
    ).float()
    tokens = sum(len(t) for t in targets)
    batch = StaticBatch(
        _rows(sources, width, src_vocab.pad),
        lengths,
        tgt_in,
        tgt_out,
        weights,
        torch.tensor(float(tokens)),
        torch.tensor(float(len(idx))),
        tokens,
        len(idx),
    )
    if device.type == "cuda":
        batch = dataclasses.replace(batch, **{name: getattr(batch, name).pin_memory() for name in batch.DEVICE_FIELDS})
    return batch


def target_positions(
    tgt_lengths: list[int], batches: list[list[int]], batch_size: int, buckets: list[int] | None
) -> int:
    """Target positions the batches compute: Σ B x T, B = `batch_size` and T bucketed (static
    shapes), or, with `buckets` None, Σ rows x the longest target (eager batches)."""
    if buckets is None:
        return sum(len(b) * max(tgt_lengths[i] for i in b) for b in batches)
    return sum(batch_size * bucket(max(tgt_lengths[i] for i in b), buckets) for b in batches)


def padding_record(tgt_lengths: list[int], batches: list[list[int]], batch_size: int, buckets: list[int]) -> dict:
    """The epoch's padding, for metrics.jsonl: target positions computed per real target token,
    with static shapes and as eager batches would have computed them (1.0: no padding)."""
    tokens = sum(tgt_lengths[i] for b in batches for i in b)
    return {
        "static_target_positions_per_token": round(
            target_positions(tgt_lengths, batches, batch_size, buckets) / tokens, 4
        ),
        "eager_target_positions_per_token": round(target_positions(tgt_lengths, batches, batch_size, None) / tokens, 4),
    }
