"""Extract WMT corpora from their archives into plain parallel text.

`python -m workflow_src.data.wmt --pair de-en --sources JSON --out-dir DIR --stats PATH` writes
`DIR/{train,dev,test}.{src,tgt}` and the statistics (`archives.write_stats`) to PATH; `--sources`
lists, per split, archives (tar or zip) and their members.

Training corpora, concatenated in the given order, are either two plain-text members, one line a
sentence (Europarl `training/europarl-v7.de-en.de`, News Commentary
`training-parallel-nc-v11/news-commentary-v11.de-en.de`), whose line counts must agree, or one
delimited member whose 1-based columns are the two sides, each stripped (the wiki headlines
`wiki/fi-en/titles.fi-en`: `Finnish ||| English` lines). Development and test sets are `.sgm`
files with one `<seg id="N">` a line inside `<doc docid="D">`, paired by (docid, seg id); the
text is taken as sacrebleu takes it (no entity unescaping, whitespace collapsed).

Each archive is decompressed once, in one pass that copies only the members named into a
temporary directory beside the output. Lines end at b"\\n" only: News Commentary has lone "\\r"
inside lines, which become spaces (`archives.clean_line`); U+0085, U+2028 and form feeds stay inside
their lines. Undecodable bytes: one policy, `replace` (U+FFFD), counted in the statistics with the
first offending member and line.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import tempfile
from pathlib import Path
from typing import Iterator

from workflow_src.atomic import atomic_output, described, write_lines
from workflow_src.data.archives import (
    CorpusError,
    Undecodable,
    clean_line,
    decoded_lines,
    extract_members,
    member_name,
    write_stats,
)
from workflow_src.data.iwslt import pair_segments

DOC = re.compile(r'<doc\b[^>]*\bdocid="([^"]*)"', re.IGNORECASE)
SEG = re.compile(r'<seg\b[^>]*\bid="?([^">\s]+)"?[^>]*>(.*)</seg>', re.IGNORECASE)


def entry_members(entry: dict) -> list[str]:
    """The member names of a source entry: `delimited`, or `source` and `target`."""
    if "delimited" in entry:
        return [entry["delimited"]]
    if "source" in entry and "target" in entry:
        return [entry["source"], entry["target"]]
    raise CorpusError(
        f"source entry {json.dumps(entry)}: needs 'source' and 'target' members, or a 'delimited' "
        "member with 'delimiter', 'source_column' and 'target_column'"
    )


class Members:
    """The members the sources name, each archive decompressed once into `workdir`; their lines
    decoded under the one policy (`Undecodable`)."""

    def __init__(self, sources: dict[str, list[dict]], workdir: Path):
        wanted: dict[str, set[str]] = {}
        for entries in sources.values():
            for entry in entries:
                wanted.setdefault(entry["archive"], set()).update(member_name(n) for n in entry_members(entry))
        self.files: dict[tuple[str, str], Path] = {}
        for archive, names in wanted.items():
            with contextlib.closing(extract_members(Path(archive), names.__contains__, workdir)) as members:
                for name, file in members:
                    self.files.setdefault((archive, name), file)
                    if len(self.files.keys() & {(archive, n) for n in names}) == len(names):
                        break
            missing = sorted(n for n in names if (archive, n) not in self.files)
            if missing:
                raise CorpusError(f"{archive}: no member {', '.join(missing)}")
        self.undecodable = Undecodable()

    def lines(self, archive: str, member: str) -> Iterator[str]:
        return decoded_lines(self.files[archive, member_name(member)], f"{archive}:{member}", self.undecodable)


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


def corpus_lines(members: Members, entry: dict) -> Iterator[tuple[str, str]]:
    """(source, target) lines of one training corpus: two plain-text members, or two 1-based
    columns of one delimited member, fields stripped."""
    archive = entry["archive"]
    if "delimited" in entry:
        delimiter, columns = entry["delimiter"], (entry["source_column"] - 1, entry["target_column"] - 1)
        for number, line in enumerate(members.lines(archive, entry["delimited"]), start=1):
            fields = line.split(delimiter)
            if len(fields) <= max(columns):
                raise CorpusError(
                    f"{archive}:{entry['delimited']}, line {number}: expected {max(columns) + 1} "
                    f"fields separated by {delimiter!r}, found {len(fields)}"
                )
            yield fields[columns[0]], fields[columns[1]]
        return
    source, target = entry["source"], entry["target"]
    sides = itertools.zip_longest(members.lines(archive, source), members.lines(archive, target))
    for number, (s, t) in enumerate(sides, start=1):
        if s is None or t is None:
            shorter = source if s is None else target
            raise CorpusError(
                f"{archive}: {source} and {target} differ in length: {shorter} ends after line {number - 1}"
            )
        yield s, t


def write_train(members: Members, corpora: list[dict], src_out: Path, tgt_out: Path) -> int:
    """Concatenate the training corpora into two files, streaming; returns the pair count."""
    total = 0
    with atomic_output(src_out) as s_tmp, atomic_output(tgt_out) as t_tmp:
        with (
            open(s_tmp, "w", encoding="utf-8", newline="\n") as s_file,
            open(t_tmp, "w", encoding="utf-8", newline="\n") as t_file,
        ):
            for entry in corpora:
                n = 0
                for n, (s, t) in enumerate(corpus_lines(members, entry), start=1):
                    s_file.write(clean_line(s) + "\n")
                    t_file.write(clean_line(t) + "\n")
                print(f"{Path(entry['archive']).name}: {n} sentence pairs")
                total += n
    return total


def read_evaluation(members: Members, entries: list[dict]) -> list[tuple[str, str]]:
    segments = []
    for entry in entries:
        archive, source, target = entry["archive"], entry["source"], entry["target"]
        src = parse_sgm(members.lines(archive, source), f"{archive}:{source}")
        ref = parse_sgm(members.lines(archive, target), f"{archive}:{target}")
        segments += pair_segments(src, ref, f"{archive}:{source}", f"{archive}:{target}")
    return segments


def extract(
    pair: str,
    sources: dict[str, list[dict]],
    out_dir: Path,
    stats: Path,
    splits: tuple[str, ...] = ("train", "dev", "test"),
) -> None:
    """Write `splits` of the pair (the training text is shared by both directions of a corpus, the
    evaluation sets are not: they are extracted by separate jobs)."""
    src, tgt = pair.split("-")
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = {split: entries for split, entries in sources.items() if split in splits}
    counts = {}
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".extract-") as workdir:
        members = Members(sources, Path(workdir))
        if "train" in splits:
            counts["train"] = write_train(members, sources["train"], out_dir / f"train.{src}", out_dir / f"train.{tgt}")
        for split in (name for name in ("dev", "test") if name in splits):
            segments = read_evaluation(members, sources[split])
            write_lines(out_dir / f"{split}.{src}", (s for s, _ in segments))
            write_lines(out_dir / f"{split}.{tgt}", (t for _, t in segments))
            counts[split] = len(segments)
    for split, n in counts.items():
        print(f"{pair} {split}: {n} segments")
    write_stats(
        stats,
        {
            split: (n, [f"{e['archive']}:{m}" for e in sources[split] for m in entry_members(e)])
            for split, n in counts.items()
        },
        members.undecodable,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--pair", required=True)
    parser.add_argument(
        "--sources",
        type=json.loads,
        required=True,
        help='{"train": [{"archive", "source", "target"} or {"archive", "delimited", "delimiter", '
        '"source_column", "target_column"}, ...], "dev": [{"archive", "source", "target"}], '
        '"test": [...]}',
    )
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--stats", type=Path, required=True)
    parser.add_argument("--splits", nargs="+", choices=("train", "dev", "test"), default=("train", "dev", "test"))
    args = parser.parse_args(argv)
    extract(args.pair, args.sources, args.out_dir, args.stats, tuple(args.splits))


if __name__ == "__main__":
    main()
