"""One of `parts` equal partitions of a language-modelling corpus's training text (the tying
paper's Table 2 trains on the two halves of WikiText-2's).

`python -m workflow_src.data.lm_partition --corpus results/data/wikitext2 --part 1 --parts 2
 --out-dir results/data/wikitext2part1`

The training text is cut into `parts` contiguous ranges of lines of equal size (the last takes
the remainder) and range `part` (from 1) is written as train.txt; validation and test are the
corpus's own. The vocabulary stays the whole corpus's (train_lm --vocabulary-text).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from workflow_src.atomic import atomic_output, described, read_lines, write_lines


def partition(lines: list[str], part: int, parts: int) -> list[str]:
    if not 1 <= part <= parts:
        raise ValueError(f"part {part} of {parts}: parts are numbered from 1")
    size = len(lines) // parts
    return lines[(part - 1) * size : part * size if part < parts else len(lines)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--corpus", type=Path, required=True, help="folder with train.txt, valid.txt, test.txt")
    parser.add_argument("--part", type=int, required=True)
    parser.add_argument("--parts", type=int, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    lines = partition(read_lines(args.corpus / "train.txt"), args.part, args.parts)
    write_lines(args.out_dir / "train.txt", lines)
    for split in ("valid", "test"):
        with atomic_output(args.out_dir / f"{split}.txt") as tmp:
            shutil.copyfile(args.corpus / f"{split}.txt", tmp)
    print(f"{args.corpus}/train.txt part {args.part} of {args.parts}: {len(lines)} lines")


if __name__ == "__main__":
    main()
