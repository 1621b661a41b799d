"""Word vocabularies: training-corpus counts on disk, a capped id mapping in memory.

`python -m workflow_src.data.vocab --input train.en --out vocab.en.tsv` writes every word of the
tokenized training text with its count, most frequent first (ties alphabetical). Models keep the
`size` most frequent words (`Vocab.load(path, size)`); the full counts also serve the rare-word
analysis, which bins test words by their training frequency.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from workflow_src.atomic import described, FileFault, read_lines, write_lines

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)


def count_words(lines: Iterable[str]) -> list[tuple[str, int]]:
    counts = Counter(word for line in lines for word in line.split())
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


COUNTS_FORMAT = "'word<TAB>count' lines (a vocabulary, as workflow_src.data.vocab writes it)"


def read_counts(path: Path) -> list[tuple[str, int]]:
    """A vocabulary's (word, count) lines; a FileFault naming the file (and line) where it is not
    UTF-8, holds no word or has a line that is not 'word<TAB>count' (garbage, a truncated last line)."""
    out = []
    for number, line in enumerate(read_lines(path, COUNTS_FORMAT), start=1):
        word, sep, count = line.rpartition("\t")
        if not sep or not count.isdigit():
            raise FileFault(f"{path}, line {number}: expected {COUNTS_FORMAT}, got {line[:80]!r}")
        out.append((word, int(count)))
    if not out:
        raise FileFault(f"{path}: empty; expected {COUNTS_FORMAT}")
    return out


class Vocab:
    """Ids for the special tokens and a list of words: `<pad>`=0, `<unk>`=1, `<s>`=2, `</s>`=3."""

    def __init__(self, words: Sequence[str]):
        self.itos = list(SPECIALS) + [w for w in words if w not in SPECIALS]
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self.pad, self.unk, self.bos, self.eos = (self.stoi[s] for s in SPECIALS)

    @classmethod
    def load(cls, counts_path: Path, size: int | None = None, keep=None) -> "Vocab":
        """The `size` most frequent words of a counts file (and only those `keep(word)` accepts)."""
        words = [w for w, _ in read_counts(counts_path) if keep is None or keep(w)]
        return cls(words[:size] if size else words)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, line: str, eos: bool = True) -> list[int]:
        ids = [self.stoi.get(w, self.unk) for w in line.split()]
        return ids + [self.eos] if eos else ids

    def decode(self, ids: Iterable[int]) -> list[str]:
        out = []
        for i in ids:
            if i == self.eos:
                break
            if i not in (self.pad, self.bos):
                out.append(self.itos[i])
        return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--input", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    with open(args.input, encoding="utf-8", newline="\n") as f:
        counts = count_words(f)
    write_lines(args.out, (f"{w}\t{c}" for w, c in counts))
    print(f"{args.input}: {len(counts)} types, {sum(c for _, c in counts)} tokens")


if __name__ == "__main__":
    main()
