"""Word alignment and the bilingual dictionary used for `<unk>` replacement.

`python -m workflow_src.data.align --src train.fr --tgt train.en --out dict.tsv [--fast-align BIN]`
aligns the tokenized training corpus in both directions (eflomal by default, fast_align when its
binary is given), symmetrises the two alignments with grow-diag-final-and, counts aligned word
pairs, and keeps for every source word its most frequently aligned target word
(`source<TAB>target<TAB>count`).
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from workflow_src.atomic import described, read_lines, write_lines

Alignment = set[tuple[int, int]]
NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def parse_pharaoh(line: str, where: str) -> Alignment:
    links = set()
    for link in line.split():
        i, sep, j = link.partition("-")
        if not sep or not i.isdigit() or not j.isdigit():
            raise ValueError(f"{where}: expected links like '0-1', got {link!r}")
        links.add((int(i), int(j)))
    return links


def grow_diag_final_and(forward: Alignment, reverse: Alignment) -> Alignment:
    """Koehn's symmetrisation (Moses' and fast_align's atools `grow-diag-final-and`).

    Start from the intersection; repeatedly add union points next to (or diagonal to) an
    aligned point when one of their two words is still unaligned; finally add union points
    whose two words are both unaligned (`final-and`), forward direction first.
    """
    union = forward | reverse
    aligned = forward & reverse
    src_aligned = {i for i, _ in aligned}
    tgt_aligned = {j for _, j in aligned}

    def add(point):
        aligned.add(point)
        src_aligned.add(point[0])
        tgt_aligned.add(point[1])

    grew = True
    while grew:
        grew = False
        for i, j in sorted(aligned):
            for di, dj in NEIGHBOURS:
                point = (i + di, j + dj)
                if (
                    point in union
                    and point not in aligned
                    and (point[0] not in src_aligned or point[1] not in tgt_aligned)
                ):
                    add(point)
                    grew = True
    for direction in (forward, reverse):
        for point in sorted(direction):
            if point[0] not in src_aligned and point[1] not in tgt_aligned:
                add(point)
    return aligned


def run_aligner(src: Path, tgt: Path, workdir: Path, fast_align: str | None) -> tuple[Path, Path]:
    """Forward and reverse Pharaoh alignments (both as source-target links)."""
    fwd, rev = workdir / "forward.links", workdir / "reverse.links"
    if fast_align:
        joined = workdir / "corpus.src-tgt"
        write_lines(joined, (f"{s} ||| {t}" for s, t in zip(read_lines(src), read_lines(tgt))))
        for out, extra in ((fwd, []), (rev, ["-r"])):
            with open(out, "w") as f:
                subprocess.run([fast_align, "-i", str(joined), "-d", "-o", "-v", *extra], stdout=f, check=True)
    else:
        subprocess.run(
            ["eflomal-align", "-s", str(src), "-t", str(tgt), "-f", str(fwd), "-r", str(rev), "--overwrite"],
            check=True,
        )
    return fwd, rev


def dictionary(src_lines: list[str], tgt_lines: list[str], links: list[Alignment]) -> dict[str, tuple[str, int]]:
    """{source word: (its most often aligned target word, count)}; ties go to the first in order."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for src, tgt, alignment in zip(src_lines, tgt_lines, links):
        s_words, t_words = src.split(), tgt.split()
        for i, j in alignment:
            counts[s_words[i]][t_words[j]] += 1
    return {s: min(c.items(), key=lambda item: (-item[1], item[0])) for s, c in counts.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--src", type=Path, required=True)
    parser.add_argument("--tgt", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--fast-align", default=None, help="fast_align binary; default: eflomal")
    args = parser.parse_args(argv)
    src_lines, tgt_lines = read_lines(args.src), read_lines(args.tgt)
    if len(src_lines) != len(tgt_lines):
        raise SystemExit(f"{args.src} has {len(src_lines)} lines but {args.tgt} has {len(tgt_lines)}")
    with tempfile.TemporaryDirectory() as workdir:
        fwd, rev = run_aligner(args.src, args.tgt, Path(workdir), args.fast_align)
        forward = [parse_pharaoh(line, f"{fwd}:{n}") for n, line in enumerate(read_lines(fwd), 1)]
        reverse = [parse_pharaoh(line, f"{rev}:{n}") for n, line in enumerate(read_lines(rev), 1)]
    if not len(forward) == len(reverse) == len(src_lines):
        raise SystemExit(
            f"the aligner returned {len(forward)}/{len(reverse)} lines for {len(src_lines)} sentence pairs"
        )
    links = [grow_diag_final_and(f, r) for f, r in zip(forward, reverse)]
    entries = dictionary(src_lines, tgt_lines, links)
    write_lines(args.out, (f"{s}\t{t}\t{c}" for s, (t, c) in sorted(entries.items())))
    print(f"{args.out}: {len(entries)} source words")


if __name__ == "__main__":
    main()
