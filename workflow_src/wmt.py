"""Extract WMT corpora from their archives into plain parallel text.

`python -m workflow_src.wmt --pair de-en --sources JSON --out-dir DIR` writes
`DIR/{train,dev,test}.{src,tgt}`; `--sources` lists, per split, archives and their members.

Training corpora are plain text members (Europarl `training/europarl-v7.de-en.de`, CommonCrawl
`commoncrawl.de-en.de`, News Commentary `training-parallel-nc-v11/news-commentary-v11.de-en.de`)
or a tab-separated member (the wiki headlines), read as streams and concatenated in the given
order; the two sides of each must have as many lines. Development and test sets are `.sgm` files with one `<seg id="N">` a line inside `<doc
docid="D">`, paired by (docid, seg id); the text is taken as sacrebleu takes it (no entity
unescaping, whitespace collapsed).
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
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


def corpus_lines(entry: dict) -> Iterator[tuple[str, str]]:
    """(source, target) lines of one training corpus: two plain-text members, or the columns of
    one tab-separated member (the wiki headlines), 1-based."""
    archive = Path(entry["archive"])
    if "tsv" in entry:
        columns = entry["source_column"] - 1, entry["target_column"] - 1
        for number, line in enumerate(member_lines(archive, entry["tsv"]), start=1):
            fields = line.split("\t")
            if len(fields) <= max(columns):
                raise CorpusError(f"{archive}:{entry['tsv']}, line {number}: expected {max(columns) + 1} "
                                  f"tab-separated columns, found {len(fields)}")
            yield fields[columns[0]], fields[columns[1]]
        return
    source, target = entry["source"], entry["target"]
    for number, (s, t) in enumerate(itertools.zip_longest(member_lines(archive, source), member_lines(archive, target)), 1):
        if s is None or t is None:
            shorter = source if s is None else target
            raise CorpusError(f"{archive}: {source} and {target} differ in length: {shorter} ends after line {number - 1}")
        yield s, t


def write_train(corpora: list[dict], src_out: Path, tgt_out: Path) -> int:
    """Concatenate the training corpora into two files, streaming; returns the pair count."""
    total = 0
    with atomic_output(src_out) as s_tmp, atomic_output(tgt_out) as t_tmp:
        with open(s_tmp, "w", encoding="utf-8") as s_file, open(t_tmp, "w", encoding="utf-8") as t_file:
            for entry in corpora:
                n = 0
                for n, (s, t) in enumerate(corpus_lines(entry), start=1):
                    s_file.write(s.strip() + "\n")
                    t_file.write(t.strip() + "\n")
                print(f"{Path(entry['archive']).name}: {n} sentence pairs")
                total += n
    return total


def read_evaluation(entries: list[dict]) -> list[tuple[str, str]]:
    segments = []
    for entry in entries:
        archive, source, target = Path(entry["archive"]), entry["source"], entry["target"]
        src = parse_sgm(member_lines(archive, source), f"{archive}:{source}")
        ref = parse_sgm(member_lines(archive, target), f"{archive}:{target}")
        segments += pair_segments(src, ref, f"{archive}:{source}", f"{archive}:{target}")
    return segments


def main(argv: list[str] | None = None) -> None:
    from workflow_src.atomic import write_lines

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", required=True)
    parser.add_argument("--sources", type=json.loads, required=True,
                        help='{"train": [{"archive", "source", "target"} or {"archive", "tsv", "source_column", '
                             '"target_column"}, ...], "dev": [{"archive", "source", "target"}], "test": [...]}')
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    src, tgt = args.pair.split("-")
    total = write_train(args.sources["train"], args.out_dir / f"train.{src}", args.out_dir / f"train.{tgt}")
    print(f"{args.pair} train: {total} segments")
    for split in ("dev", "test"):
        segments = read_evaluation(args.sources[split])
        write_lines(args.out_dir / f"{split}.{src}", (s for s, _ in segments))
        write_lines(args.out_dir / f"{split}.{tgt}", (t for _, t in segments))
        print(f"{args.pair} {split}: {len(segments)} segments")


if __name__ == "__main__":
    main()
