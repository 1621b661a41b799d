"""Parallel text as id tensors, length-bucketed batches, devices and model files."""

from __future__ import annotations

import random
from pathlib import Path

import torch

from workflow_src.atomic import atomic_output, read_lines
from workflow_src.embeddings import read_vec
from workflow_src.vocab import Vocab


def load_vocabularies(spec: dict, src_counts: Path, tgt_counts: Path | None, tgt_table: Path | None):
    """(source vocab, target vocab, target table or None) for an experiment spec."""
    src_vocab = Vocab.load(src_counts, spec["vocab"]["src_size"])
    table = None
    if tgt_table is not None:
        words, vectors = read_vec(tgt_table)
        tgt_vocab = Vocab(words)
        if tgt_vocab.itos != words:
            raise ValueError(f"{tgt_table}: the special tokens must come first, in the order {tgt_vocab.itos[:4]}")
        table = torch.from_numpy(vectors)
    else:
        tgt_vocab = Vocab.load(tgt_counts, spec["vocab"]["tgt_size"])
    return src_vocab, tgt_vocab, table


def encode_file(path: Path, vocab: Vocab, eos: bool) -> list[list[int]]:
    return [vocab.encode(line, eos=eos) for line in read_lines(path)]


def training_pairs_within(spec: dict, src: list[list[int]], tgt: list[list[int]]) -> list[int]:
    """Indices of the training pairs a spec's length limit keeps. With `max_len_unit: piece`,
    OpenNMT's preprocess -src_seq_length/-tgt_seq_length max_len: 0 < |src|, |tgt| <= max_len in
    the model's own units (BPE pieces or words), <s> and </s> not counted (`tgt` ends in </s>).
    With `word`, every pair: tokenisation already kept those of 1..max_len words."""
    limit = spec["data"]
    if limit["max_len_unit"] == "word":
        return list(range(len(src)))
    n = limit["max_len"]
    return [i for i, (s, t) in enumerate(zip(src, tgt)) if 0 < len(s) <= n and 0 < len(t) - 1 <= n]


def pad(sequences: list[list[int]], value: int) -> torch.Tensor:
    width = max(len(s) for s in sequences)
    return torch.tensor([s + [value] * (width - len(s)) for s in sequences], dtype=torch.long)


def batch_indices(lengths: list[int], batch_size: int, rng: random.Random | None) -> list[list[int]]:
    """Sentences grouped by length into batches; with `rng`, a shuffled order of batches."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], rng.random() if rng else i))
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if rng:
        rng.shuffle(batches)
    return batches


def source_batch(src: list[list[int]], idx: list[int], vocab: Vocab, device: torch.device):
    lengths = torch.tensor([max(1, len(src[i])) for i in idx])
    return pad([src[i] or [vocab.unk] for i in idx], vocab.pad).to(device), lengths.to(device)


def target_batch(tgt: list[list[int]], idx: list[int], vocab: Vocab, device: torch.device):
    """Decoder inputs `<s> w1 .. wn` and outputs `w1 .. wn </s>` (tgt already ends in </s>)."""
    tgt_in = pad([[vocab.bos] + tgt[i][:-1] for i in idx], vocab.pad)
    tgt_out = pad([tgt[i] for i in idx], vocab.pad)
    return tgt_in.to(device), tgt_out.to(device)


def save_model(path: Path, model: torch.nn.Module, spec: dict, src_vocab: Vocab, tgt_vocab: Vocab, extra: dict | None = None) -> None:
    """A self-contained model file: weights (with the target table), spec and vocabularies."""
    with atomic_output(path) as tmp:
        torch.save({"spec": spec, "state_dict": model.state_dict(), "src_itos": src_vocab.itos,
                    "tgt_itos": tgt_vocab.itos, **(extra or {})}, tmp)


def load_model(path: Path, device: torch.device):
    from workflow_src.model.seq2seq import Seq2Seq

    saved = torch.load(path, map_location=device, weights_only=False)
    src_vocab, tgt_vocab = Vocab(saved["src_itos"]), Vocab(saved["tgt_itos"])
    state = saved["state_dict"]
    table = next((state[key] for key in ("output.table", "decoder.embed.table", "word_vectors") if key in state), None)
    model = Seq2Seq(saved["spec"], len(src_vocab), len(tgt_vocab), src_vocab.pad, table)
    model.load_state_dict(state)
    return model.to(device).eval(), saved["spec"], src_vocab, tgt_vocab
