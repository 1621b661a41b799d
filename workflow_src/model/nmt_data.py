"""Parallel text as id tensors, length-bucketed batches, devices and model files."""

from __future__ import annotations

import dataclasses
import queue
import random
import threading
from pathlib import Path
from typing import Iterable, Iterator

import torch

from workflow_src.atomic import atomic_output, load_saved, read_lines
from workflow_src.data.embeddings import read_vec
from workflow_src.data.vocab import Vocab
from workflow_src.specs import TrainSpec, document, load


def load_vocabularies(spec: TrainSpec, src_counts: Path, tgt_counts: Path | None, tgt_table: Path | None):
    """(source vocab, target vocab, target table or None) for an experiment spec."""
    src_vocab = Vocab.load(src_counts, spec.vocab.src_size)
    table = None
    if tgt_table is not None:
        words, vectors = read_vec(tgt_table)
        tgt_vocab = Vocab(words)
        if tgt_vocab.itos != words:
            raise ValueError(f"{tgt_table}: the special tokens must come first, in the order {tgt_vocab.itos[:4]}")
        table = torch.from_numpy(vectors)
    else:
        tgt_vocab = Vocab.load(tgt_counts, spec.vocab.tgt_size)
    return src_vocab, tgt_vocab, table


def encode_file(path: Path, vocab: Vocab, eos: bool) -> list[list[int]]:
    return [vocab.encode(line, eos=eos) for line in read_lines(path)]


def training_pairs_within(spec: TrainSpec, src: list[list[int]], tgt: list[list[int]]) -> list[int]:
    """Indices of the training pairs a spec's length limit keeps. With `max_len_unit: piece`,
    OpenNMT's preprocess -src_seq_length/-tgt_seq_length max_len: 0 < |src|, |tgt| <= max_len in
    the model's own units (BPE pieces or words), <s> and </s> not counted (`tgt` ends in </s>).
    With `word`, every pair: tokenisation already kept those of 1..max_len words."""
    if spec.data.max_len_unit == "word":
        return list(range(len(src)))
    n = spec.data.max_len
    return [i for i, (s, t) in enumerate(zip(src, tgt)) if 0 < len(s) <= n and 0 < len(t) - 1 <= n]


def pad(sequences: list[list[int]], value: int, multiple: int = 1) -> torch.Tensor:
    """Rows padded with `value` to the longest, rounded up to a multiple of `multiple`."""
    width = -(-max(len(s) for s in sequences) // multiple) * multiple
    return torch.tensor([s + [value] * (width - len(s)) for s in sequences], dtype=torch.long)


def batch_indices(
    lengths: list[int], batch_size: int, rng: random.Random | None, second_lengths: list[int] | None = None
) -> list[list[int]]:
    """Sentences grouped by length into batches of `batch_size`; with `second_lengths` (the
    targets'), by both: source length first, then target length, rising for odd source lengths
    and falling for even ones, so that a batch straddling two source lengths also has targets of
    about one length. With `rng`, ties are broken at random and the batches shuffled."""
    second = second_lengths or [0] * len(lengths)
    order = sorted(
        range(len(lengths)),
        key=lambda i: (lengths[i], second[i] if lengths[i] % 2 else -second[i], rng.random() if rng else i),
    )
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if rng:
        rng.shuffle(batches)
    return batches


def length_multiple(compile_setting: str) -> int:
    """Padding granule of a batch's time axes under `train.compile` (a spec's `compile`): 8 where
    the decoder step is compiled (fuse, graphs: fewer distinct shapes to compile and capture), 1
    off. Eager, a padded step is a whole decoder step more of work (about 3.5 per batch at
    granule 8) for nothing, on any device."""
    return 8 if compile_setting != "off" else 1


def _source_ids(src: list[list[int]], idx: list[int], vocab: Vocab, multiple: int):
    lengths = torch.tensor([max(1, len(src[i])) for i in idx])
    return pad([src[i] or [vocab.unk] for i in idx], vocab.pad, multiple), lengths


def _target_ids(tgt: list[list[int]], idx: list[int], vocab: Vocab, multiple: int):
    """Decoder inputs `<s> w1 .. wn` and outputs `w1 .. wn </s>` (tgt already ends in </s>)."""
    return (
        pad([[vocab.bos] + tgt[i][:-1] for i in idx], vocab.pad, multiple),
        pad([tgt[i] for i in idx], vocab.pad, multiple),
    )


def source_batch(src: list[list[int]], idx: list[int], vocab: Vocab, device: torch.device, multiple: int = 1):
    """(B x S ids on `device`, B lengths on the host): the encoder packs by host lengths, so
    reading them needs no device round trip. S is padded to a multiple of `multiple`."""
    ids, lengths = _source_ids(src, idx, vocab, multiple)
    return ids.to(device), lengths


def target_batch(tgt: list[list[int]], idx: list[int], vocab: Vocab, device: torch.device, multiple: int = 1):
    """Decoder inputs `<s> w1 .. wn` and outputs `w1 .. wn </s>` on `device`, T padded to a
    multiple of `multiple`."""
    tgt_in, tgt_out = _target_ids(tgt, idx, vocab, multiple)
    return tgt_in.to(device), tgt_out.to(device)


@dataclasses.dataclass
class TrainingBatch:
    """One training batch. `positions` are the flat (row-major) indices of its non-padding
    target tokens and `tokens` their number, both worked out on the host, so the loss selects
    them without a device sync (a boolean mask would need one to learn its size)."""

    src: torch.Tensor
    lengths: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    positions: torch.Tensor
    tokens: int
    sentences: int

    def map(self, fn) -> "TrainingBatch":
        """The batch with `fn` applied to its device-bound tensors (not the host lengths)."""
        return dataclasses.replace(
            self, **{name: fn(getattr(self, name)) for name in ("src", "tgt_in", "tgt_out", "positions")}
        )

    def to(self, device: torch.device) -> "TrainingBatch":
        """The batch on `device`; from pinned memory the copies overlap the running step."""
        return self.map(lambda t: t.to(device, non_blocking=True))


def training_batch(
    src: list[list[int]],
    tgt: list[list[int]],
    idx: list[int],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    device: torch.device,
    multiple: int = 1,
) -> TrainingBatch:
    """The batch `idx` on the host (pinned where `device` is CUDA), S and T padded to multiples
    of `multiple` (`length_multiple`)."""
    source, lengths = _source_ids(src, idx, src_vocab, multiple)
    tgt_in, tgt_out = _target_ids(tgt, idx, tgt_vocab, multiple)
    width = tgt_out.shape[1]
    positions = torch.tensor(
        [row * width + t for row, i in enumerate(idx) for t in range(len(tgt[i]))], dtype=torch.long
    )
    batch = TrainingBatch(source, lengths, tgt_in, tgt_out, positions, len(positions), len(idx))
    return batch.map(torch.Tensor.pin_memory) if device.type == "cuda" else batch


PRODUCER = "prefetched batches"  # the background thread's name


def prefetched(
    make: Iterable[TrainingBatch], device: torch.device, depth: int = 4, background: bool | None = None
) -> Iterator[TrainingBatch]:
    """The batches on `device`. With `background` (None: where the device is CUDA) a thread builds
    them (padding, pinning) ahead of the training loop, `depth` at most; else they are built in
    turn, on this thread (the CPU's threads are busy training).

    The thread stops once the consumer has: this generator closed (its loop left early), or the
    main thread ended (an error in the consumer's step, which closes no generator). It is not a
    daemon, so the interpreter waits for it (a batch's build at most) before it exits: a daemon
    thread still building a batch in torch's code as the interpreter finalises is ended inside C++
    when it re-takes the GIL, and the process aborts (pytorch/pytorch#38228)."""
    if not (device.type == "cuda" if background is None else background):
        yield from (batch.to(device) for batch in make)
        return
    ready: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    failure: list[BaseException] = []
    stopped = threading.Event()
    main = threading.main_thread()

    def hand_over(item) -> bool:
        """Puts `item` for the consumer, waiting while it may still take it; False once it has stopped."""
        while not stopped.is_set() and main.is_alive():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def produce() -> None:
        try:
            for batch in make:
                if not hand_over(batch):
                    return
        except BaseException as err:  # handed to the consumer, raised there
            failure.append(err)
        finally:
            hand_over(done)

    producer = threading.Thread(target=produce, name=PRODUCER)
    producer.start()
    try:
        while (batch := ready.get()) is not done:
            yield batch.to(device)
    finally:
        stopped.set()
        producer.join()
    if failure:
        raise failure[0]


def save_model(
    path: Path, model: torch.nn.Module, spec: TrainSpec, src_vocab: Vocab, tgt_vocab: Vocab, extra: dict | None = None
) -> None:
    """A self-contained model file: weights (with the target table), the spec's document and vocabularies."""
    with atomic_output(path) as tmp:
        torch.save(
            {
                "spec": document(spec),
                "state_dict": model.state_dict(),
                "src_itos": src_vocab.itos,
                "tgt_itos": tgt_vocab.itos,
                **(extra or {}),
            },
            tmp,
        )


MODEL_KEYS = ("spec", "state_dict", "src_itos", "tgt_itos")


def load_model(path: Path, device: torch.device):
    """(model in eval mode on `device`, spec, source vocab, target vocab) of a `save_model` file; a
    FileFault naming the file where it is missing, unreadable or not such a file."""
    from workflow_src.model.seq2seq import Seq2Seq

    saved = load_saved(
        path, f"a translation model ({', '.join(MODEL_KEYS)}), as workflow_src.train.train saves it", MODEL_KEYS, device
    )
    src_vocab, tgt_vocab = Vocab(saved["src_itos"]), Vocab(saved["tgt_itos"])
    state = saved["state_dict"]
    table = next((state[key] for key in ("output.table", "decoder.embed.table", "word_vectors") if key in state), None)
    spec = load(TrainSpec, saved["spec"], f"{path}: its spec")
    model = Seq2Seq(spec, len(src_vocab), len(tgt_vocab), src_vocab.pad, table)
    model.load_state_dict(state)
    return model.to(device).eval(), spec, src_vocab, tgt_vocab
