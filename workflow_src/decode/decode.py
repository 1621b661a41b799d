"""Translate a test set with a trained model, replace `<unk>`, and detokenize.

`python -m workflow_src.decode.decode --model model.pt --src test.fr --src-words test.fr --dictionary
 dict.tsv --tgt-lang en --out-tok test.hyp.tok --out test.hyp`

Decoding is batched greedy search: the argmax of the output layer's scores at every step (for a
continuous layer, the nearest neighbour of e_hat by vMF density, a matrix product over the unit
table); with `--beam K > 1`, batched beam search over log-probabilities (softmax models). Each
`<unk>` in the output is replaced through the source word with the highest attention at that step:
its dictionary translation, or the word itself when the dictionary has none (Denkowski & Neubig
2017, as in vMF paper §4.1). Subword outputs are joined; the result is detruecased and detokenized
with sacremoses.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from workflow_src.atomic import described, one_line_faults, read_lines, write_lines
from workflow_src.data import bpe
from workflow_src.data.preprocess import postprocess
from workflow_src.data.vocab import UNK, Vocab
from workflow_src.model import compilation
from workflow_src.model.gpu import job_device
from workflow_src.model.nmt_data import batch_indices, length_multiple, load_model, source_batch
from workflow_src.specs import TrainSpec


def read_dictionary(path: Path) -> dict[str, str]:
    entries = {}
    for number, line in enumerate(read_lines(path), start=1):
        parts = line.split("\t")
        if len(parts) < 2:
            raise ValueError(f"{path}, line {number}: expected 'source<TAB>target[<TAB>count]'")
        entries[parts[0]] = parts[1]
    return entries


def piece_to_word(pieces: list[str]) -> list[int]:
    """For each subword piece, the index of the word it belongs to (pieces start words with ▁)."""
    index, out = -1, []
    for piece in pieces:
        if piece.startswith(bpe.WORD_BOUNDARY) or index < 0:
            index += 1
        out.append(index)
    return out


def replace_unknowns(
    hypothesis: list[str],
    attended: list[int],
    source_words: list[str],
    word_of_position: list[int],
    dictionary: dict[str, str],
) -> list[str]:
    """Replace each `<unk>` by the dictionary translation of its most-attended source word, or
    by that word itself. `word_of_position[p]` is the source word at source position p."""
    out = []
    for unit, position in zip(hypothesis, attended):
        if unit == UNK and position < len(word_of_position):
            source_word = source_words[word_of_position[position]]
            unit = dictionary.get(source_word, source_word)
        out.append(unit)
    return out


def translate(
    model,
    spec: TrainSpec,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    sources: list[str],
    device: torch.device,
    batch_size: int = 64,
    beam: int = 1,
    max_len_ratio: float = 2.0,
    max_len_extra: int = 10,
):
    """Translations (target units) and, per output unit, the most-attended source position:
    greedy when beam is 1, else beam search (softmax models only)."""
    if beam > 1 and spec.output_layer != "softmax":
        raise ValueError(
            f"beam search needs log-probabilities; experiment {spec.experiment} has a "
            f"{spec.output_layer} output layer (vMF paper §8.3 leaves its beam search open)"
        )
    encoded = [src_vocab.encode(line, eos=False) for line in sources]
    hypotheses: list = [None] * len(sources)
    banned = [tgt_vocab.pad, tgt_vocab.bos]
    for idx in batch_indices([len(s) for s in encoded], batch_size, rng=None):
        src, lengths = source_batch(encoded, idx, src_vocab, device, length_multiple(spec.compile))
        max_len = int(max_len_ratio * int(lengths.max()) + max_len_extra)
        if beam == 1:
            words, attended = model.greedy(src, lengths, tgt_vocab.bos, tgt_vocab.eos, banned, max_len)
        else:
            words, attended = model.beam_search(src, lengths, tgt_vocab.bos, tgt_vocab.eos, banned, max_len, beam)
        words, attended = words.tolist(), attended.tolist()  # one copy each: a row's would sync every row
        for row, i in enumerate(idx):
            units = tgt_vocab.decode(words[row])
            hypotheses[i] = (units, attended[row][: len(units)])
    return hypotheses


def finish(
    units: list[str],
    attended: list[int],
    source_units: list[str],
    source_words: list[str],
    spec: TrainSpec,
    dictionary: dict[str, str],
) -> str:
    """Model output units -> one tokenized target sentence (unk replaced, subwords joined)."""
    word_of_position = piece_to_word(source_units) if spec.source_unit == "bpe" else list(range(len(source_units)))
    units = replace_unknowns(units, attended, source_words, word_of_position, dictionary)
    return bpe.decode(units) if spec.target_unit == "bpe" else " ".join(units)


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--src", type=Path, required=True, help="source in the model's units")
    parser.add_argument("--src-words", type=Path, required=True, help="the same source, tokenized words")
    parser.add_argument("--dictionary", type=Path, required=True)
    parser.add_argument("--tgt-lang", required=True)
    parser.add_argument("--out-tok", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--beam", type=int, default=1, help="1: greedy (nearest neighbour for continuous outputs)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sources, source_words = read_lines(args.src), read_lines(args.src_words)
    if len(sources) != len(source_words):
        raise SystemExit(f"{args.src} has {len(sources)} lines but {args.src_words} has {len(source_words)}")
    dictionary = read_dictionary(args.dictionary)
    with job_device(args.device) as device:
        model, spec, src_vocab, tgt_vocab = load_model(args.model, device)
        compilation.apply(model, spec, device)  # as the model was trained (its saved spec)
        hypotheses = translate(model, spec, src_vocab, tgt_vocab, sources, device, args.batch_size, args.beam)
    tokenized = [
        finish(units, attended, src.split(), words.split(), spec, dictionary)
        for (units, attended), src, words in zip(hypotheses, sources, source_words)
    ]
    write_lines(args.out_tok, tokenized)
    write_lines(args.out, postprocess(tokenized, args.tgt_lang))
    n_unk = sum(units.count(UNK) for units, _ in hypotheses)
    print(f"{len(tokenized)} sentences, {n_unk} <unk> replaced")


if __name__ == "__main__":
    main()
