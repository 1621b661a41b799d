"""Byte-pair encoding with sentencepiece, one model per language.

`python -m workflow_src.data.bpe --merges 32000 --train train.fr --model-prefix DIR/fr
 --encode train.fr:DIR/train.fr ...` learns a BPE model on the tokenized training text and writes
each given file encoded as space-separated pieces; without `--merges` and `--train` it encodes
with the model `DIR/fr.model` (the evaluation sets of each direction, with the corpus's model).
A BPE side's vocabulary is every piece of its encoded training text, uncapped (`workflow_src.data.vocab`
counts them), as OpenNMT's preprocess built it from BPE'd data.

Sentencepiece is parameterised by its vocabulary size, not by merges. A BPE vocabulary is the
special pieces, every character of the training text (coverage 1.0) and one piece per merge, so
`vocab_size = merges + characters + specials`; `hard_vocab_limit=false` lets a small corpus stop
early when it runs out of pairs to merge.

Normalisation is the identity: sentencepiece's default NFKC would rewrite characters (ﬁ → fi,
１２ → 12, … → ...) in the pieces, hence in hypotheses, but never in the references they are
scored against.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Iterable

import sentencepiece as spm

from workflow_src.atomic import atomic_output, described, stream_lines, write_lines

SPECIAL_PIECES = 3  # <unk>, <s>, </s>; padding is disabled
WORD_BOUNDARY = "\u2581"


def vocab_size_for_merges(lines: Iterable[str], merges: int) -> int:
    characters = {WORD_BOUNDARY}
    for line in lines:
        characters.update(line)
    return merges + len({c for c in characters if not c.isspace()}) + SPECIAL_PIECES


def train(train_file: Path, model_prefix: Path, merges: int, threads: int = 1) -> spm.SentencePieceProcessor:
    lines = stream_lines(train_file)
    model_prefix.parent.mkdir(parents=True, exist_ok=True)
    with (
        atomic_output(model_prefix.with_suffix(".model")) as model,
        atomic_output(model_prefix.with_suffix(".vocab")) as vocab,
    ):
        tmp_prefix = model.with_suffix("")
        spm.SentencePieceTrainer.train(
            input=str(train_file),
            model_prefix=str(tmp_prefix),
            model_type="bpe",
            vocab_size=vocab_size_for_merges(lines, merges),
            hard_vocab_limit=False,
            character_coverage=1.0,
            normalization_rule_name="identity",
            pad_id=-1,
            num_threads=threads,
            input_sentence_size=0,
            minloglevel=1,
        )
        Path(f"{tmp_prefix}.model").replace(model)
        Path(f"{tmp_prefix}.vocab").replace(vocab)
    return spm.SentencePieceProcessor(model_file=str(model_prefix.with_suffix(".model")))


def encode(processor: spm.SentencePieceProcessor, line: str) -> str:
    return " ".join(processor.encode(line, out_type=str))


def decode(pieces: list[str]) -> str:
    """Pieces back to the tokenized text they came from."""
    return "".join(pieces).replace(WORD_BOUNDARY, " ").strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--merges", type=int, help="learn a model with this many merges (with --train)")
    parser.add_argument("--train", type=Path, help="the tokenized training text to learn it from")
    parser.add_argument("--model-prefix", type=Path, required=True, help="PREFIX.model: the model learnt, or used")
    parser.add_argument("--encode", nargs="*", default=[], metavar="IN:OUT")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if (args.train is None) != (args.merges is None):
        parser.error("--train and --merges go together (without both, --model-prefix names an existing model)")
    if args.train:
        processor = train(args.train, args.model_prefix, args.merges, args.threads)
    else:
        processor = spm.SentencePieceProcessor(model_file=str(args.model_prefix.with_suffix(".model")))
    print(f"{args.model_prefix}: {processor.get_piece_size()} pieces")
    for job in args.encode:
        src, dst = job.split(":")
        write_lines(Path(dst), (encode(processor, line) for line in stream_lines(Path(src))))


if __name__ == "__main__":
    main()
