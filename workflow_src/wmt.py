"""Extract WMT corpora from their archives into plain parallel text.

`python -m workflow_src.wmt --pair de-en --train A.tgz:SRC:TGT ... --dev D.tgz:SRC.sgm:REF.sgm
 --test T.tgz:SRC.sgm:REF.sgm --out-dir DIR` writes `DIR/{train,dev,test}.{src,tgt}`.

Training corpora are plain text members (Europarl `training/europarl-v7.de-en.de`, CommonCrawl
`commoncrawl.de-en.de`, News Commentary `training-parallel-nc-v11/news-commentary-v11.de-en.de`),
read as streams and concatenated in the given order; the two sides of each must have as many
lines. Development and test sets are `.sgm` files with one `<seg id="N">` a line inside `<doc
docid="D">`, paired by (docid, seg id); the text is taken as sacrebleu takes it (no entity
unescaping, whitespace collapsed).
"""

from __future__ import annotations

import argparse
import io
import itertools
import re
import tarfile
from pathlib import Path
from typing import Iterator

from workflow_src.atomic import atomic_output
from workflow_src.iwslt import CorpusError, pair_segments

DOC = re.compile(r'<doc\b[^>]*\bdocid="([^"]*)"', re.IGNORECASE)
SEG = re.compile(r'<seg\b[^>]*\bid="?([^">\s]+)"?[^>]*>(.*)</seg>', re.IGNORECASE)


def member_lines(archive: Path, member: str) -> Iterator[str]:
    """The lines of one archive member, streamed (never the whole file in memory)."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            try:
                handle = tar.extractfile(member)
            except KeyError:
                raise CorpusError(f"{archive}: no member {member}") from None
            with io.TextIOWrapper(handle, encoding="utf-8", errors="replace") as text:
                for line in text:
                    yield line.rstrip("\n")
    except (tarfile.TarError, OSError) as err:
        raise CorpusError(f"{archive}: cannot read the archive: {err}") from err


def parse_sgm(lines, name: str) -> dict[tuple[str, str], str]:
    """{(docid, seg id): text} of a WMT .sgm file."""
    segments: dict[tuple[str, str], str] = {}
    docid = None
    for number, line in enumerate(lines, start=1):
        doc = DOC.search(line)
        if doc:
            docid = doc.group(1)
        seg = SEG.search(line)
        if seg:
            if docid is None:
                raise CorpusError(f"{name}, line {number}: <seg> outside a <doc docid=...>")
            key = (docid, seg.group(1))
            if key in segments:
                raise CorpusError(f"{name}, line {number}: segment {key[1]} of document {docid} appears twice")
            segments[key] = " ".join(seg.group(2).split())
        elif "<seg" in line.lower():
            raise CorpusError(f"{name}, line {number}: malformed <seg> line: {line[:80]!r}")
    if not segments:
        raise CorpusError(f"{name}: no <seg> lines")
    return segments


def split_spec(spec: str) -> tuple[Path, str, str]:
    archive, source, target = spec.split(":")
    return Path(archive), source, target


def write_train(corpora: list[str], src_out: Path, tgt_out: Path) -> int:
    total = 0
    with atomic_output(src_out) as s_tmp, atomic_output(tgt_out) as t_tmp:
        with open(s_tmp, "w", encoding="utf-8") as s_file, open(t_tmp, "w", encoding="utf-8") as t_file:
            for spec in corpora:
                archive, source, target = split_spec(spec)
                n = 0
                for n, (s, t) in enumerate(itertools.zip_longest(member_lines(archive, source),
                                                                 member_lines(archive, target)), start=1):
                    if s is None or t is None:
                        shorter = source if s is None else target
                        raise CorpusError(f"{archive}: {source} and {target} differ in length: "
                                          f"{shorter} ends after line {n - 1}")
                    s_file.write(s.strip() + "\n")
                    t_file.write(t.strip() + "\n")
                print(f"{archive.name}: {n} sentence pairs")
                total += n
    return total


def read_evaluation(specs: list[str]) -> list[tuple[str, str]]:
    segments = []
    for spec in specs:
        archive, source, target = split_spec(spec)
        src = parse_sgm(member_lines(archive, source), f"{archive}:{source}")
        ref = parse_sgm(member_lines(archive, target), f"{archive}:{target}")
        segments += pair_segments(src, ref, f"{archive}:{source}", f"{archive}:{target}")
    return segments


def main(argv: list[str] | None = None) -> None:
    from workflow_src.atomic import write_lines

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", required=True)
    parser.add_argument("--train", nargs="+", required=True, metavar="ARCHIVE:SOURCE:TARGET")
    parser.add_argument("--dev", nargs="+", required=True, metavar="ARCHIVE:SOURCE_SGM:REFERENCE_SGM")
    parser.add_argument("--test", nargs="+", required=True, metavar="ARCHIVE:SOURCE_SGM:REFERENCE_SGM")
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    src, tgt = args.pair.split("-")
    total = write_train(args.train, args.out_dir / f"train.{src}", args.out_dir / f"train.{tgt}")
    print(f"{args.pair} train: {total} segments")
    for split, specs in (("dev", args.dev), ("test", args.test)):
        segments = read_evaluation(specs)
        write_lines(args.out_dir / f"{split}.{src}", (s for s, _ in segments))
        write_lines(args.out_dir / f"{split}.{tgt}", (t for _, t in segments))
        print(f"{args.pair} {split}: {len(segments)} segments")


if __name__ == "__main__":
    main()
