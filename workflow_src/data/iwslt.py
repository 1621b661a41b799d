"""Extract IWSLT (WIT3) TED corpora from their archives into plain parallel text.

`python -m workflow_src.data.iwslt --pair fr-en --archives SPEC [SPEC ...] --dev-sets tst2013 tst2014
 --test-sets tst2015 tst2016 --out-dir DIR --stats PATH` writes `DIR/{train,dev,test}.{src,tgt}`,
one segment a line, untokenized, and the statistics (`archives.write_stats`) to PATH.

A SPEC is an archive `PATH` (.tgz, .tar.*, .zip) or `PATH::MEMBER`, an archive inside one (the
2016-01 bundle's `2016-01/texts/<s>/<t>/<s>-<t>.tgz`). Archives are searched in the given order:
each file needed (train.tags of each side, each evaluation set's source and reference) comes from
the first archive holding it. Each archive is decompressed once, in one pass that copies only the
members needed into a temporary directory beside the output.

Layout (the real one): `<s>-<t>/train.tags.<s>-<t>.<lang>` is plain text with metadata lines
(`<url>`, `<talkid>`, `<title>`, ...) between talks; the evaluation sets are
`<s>-<t>/IWSLT1[67].TED.<set>.<s>-<t>.<lang>.xml` with `<seg id="N">` inside `<doc docid="D">`.
The 2017-01-ted-test archives hold the source side only: the reference of `<set>` for `s-t` is then
the source file of the reverse archive `t-s`, used only when no archive has the same-direction
one. Segments of the two sides are paired by (docid, seg id).

Text and undecodable bytes: as `workflow_src.data.archives` reads them.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterable

from workflow_src.atomic import described, write_lines
from workflow_src.data.archives import (
    MEMBER_SEPARATOR,
    CorpusError,
    Undecodable,
    clean_line,
    decoded_lines,
    extract_members,
    member_name,
    write_stats,
)

METADATA_TAGS = ("url", "talkid", "title", "description", "keywords", "speaker", "reviewer", "translator")
METADATA_LINE = re.compile(r"^\s*<(%s)[\s>]" % "|".join(re.escape(t) for t in METADATA_TAGS))


class ArchiveSet:
    """The members of several archives that match the given file-name patterns, found in the
    order the archives are given: a pattern is looked for only in archives after none of the
    earlier ones held it. Each archive (SPEC `PATH` or `PATH::MEMBER`, an archive inside an
    archive) is decompressed once, into `workdir`."""

    def __init__(self, specs: list[str], patterns: Iterable[str], workdir: Path):
        self.specs = list(specs)
        self.found: dict[str, tuple[str, Path]] = {}  # pattern -> (description, extracted file)
        compiled = {p: re.compile(p) for p in dict.fromkeys(patterns)}
        for spec in self.specs:
            wanted = {p: r for p, r in compiled.items() if p not in self.found}
            if not wanted:
                break
            self._search(spec, wanted, workdir)

    def _search(self, spec: str, wanted: dict[str, re.Pattern], workdir: Path) -> None:
        path, _, inner = spec.partition(MEMBER_SEPARATOR)
        archive = Path(path)
        if inner:  # copied out under a name that ends as the member's does, so a .zip stays one
            with contextlib.closing(
                extract_members(archive, lambda name: name == member_name(inner), workdir, path)
            ) as it:
                archive = next(it, (None, None))[1]
            if archive is None:
                raise CorpusError(f"{path}: no member {inner}")

        def select(name: str) -> bool:
            filename = Path(name).name
            return any(regex.fullmatch(filename) for p, regex in wanted.items() if p not in self.found)

        with contextlib.closing(extract_members(archive, select, workdir, spec)) as members:
            for name, file in members:
                for p, regex in wanted.items():
                    if p not in self.found and regex.fullmatch(Path(name).name):
                        self.found[p] = (f"{spec}:{name}", file)
                if all(p in self.found for p in wanted):
                    break  # the rest of the archive is not needed
        if inner:
            archive.unlink()

    def find(self, pattern: str) -> tuple[str, Path] | None:
        """(archive:member, extracted file) of the first member matching `pattern`, or None."""
        return self.found.get(pattern)

    def require(self, pattern: str, what: str) -> tuple[str, Path]:
        found = self.find(pattern)
        if found is None:
            raise CorpusError(f"no {what} (a member matching {pattern!r}) in {', '.join(self.specs)}")
        return found


# -- the IWSLT formats -------------------------------------------------------------------------
def train_tags_lines(lines: Iterable[str]) -> list[str]:
    """The segments of a `train.tags` file: every line but the metadata lines, cleaned (`clean_line`)."""
    return [clean_line(line) for line in lines if not METADATA_LINE.match(line)]


def parse_mteval_xml(text: str, name: str) -> dict[tuple[str, str], str]:
    """{(docid, seg id): text, whitespace collapsed} of an IWSLT/mteval XML file; malformed XML
    names the file."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        line, column = err.position
        raise CorpusError(f"{name}: malformed XML at line {line}, column {column}: {err}") from err
    segments: dict[tuple[str, str], str] = {}
    for doc in root.iter("doc"):
        docid = doc.get("docid")
        for seg in doc.iter("seg"):
            key = (docid, seg.get("id"))
            if key in segments:
                raise CorpusError(f"{name}: segment {key[1]} of document {docid} appears twice")
            segments[key] = " ".join((seg.text or "").split())
    if not segments:
        raise CorpusError(f"{name}: no <seg> elements inside <doc> elements")
    return segments


def pair_segments(
    src: dict[tuple[str, str], str], ref: dict[tuple[str, str], str], src_name: str, ref_name: str
) -> list[tuple[str, str]]:
    """Source and reference texts paired by (docid, seg id), in source order."""
    for a, b, a_name, b_name, role in (
        (src, ref, src_name, ref_name, "source"),
        (ref, src, ref_name, src_name, "reference"),
    ):
        unmatched = [key for key in a if key not in b]
        if unmatched:
            docid, seg = unmatched[0]
            raise CorpusError(
                f"{a_name} and {b_name} do not pair up: {len(unmatched)} {role} segments of "
                f"{a_name} are missing from {b_name} (first: doc {docid}, seg {seg})"
            )
    return [(text, ref[key]) for key, text in src.items()]


def train_patterns(src: str, tgt: str) -> dict[str, str]:
    """{language: pattern of its train.tags file name}."""
    return {lang: rf"train\.tags\.{src}-{tgt}\.{lang}" for lang in (src, tgt)}


def evaluation_patterns(src: str, tgt: str, name: str) -> tuple[str, str, str]:
    """Patterns of a set's source file, its same-direction reference and the reverse direction's source."""
    xml = lambda pair, lang: rf"IWSLT\d+\.TED\.{re.escape(name)}\.{pair}\.{lang}\.xml"  # noqa: E731
    return xml(f"{src}-{tgt}", src), xml(f"{src}-{tgt}", tgt), xml(f"{tgt}-{src}", tgt)


def needed_patterns(src: str, tgt: str, sets: Iterable[str], train: bool = True) -> list[str]:
    return [
        *(train_patterns(src, tgt).values() if train else ()),
        *(p for name in sets for p in evaluation_patterns(src, tgt, name)),
    ]


def extract_train(
    archives: ArchiveSet, src: str, tgt: str, undecodable: Undecodable
) -> tuple[list[tuple[str, str]], list[str]]:
    """(segment pairs, the members they came from)."""
    found = [
        archives.require(pattern, f"training text for {lang}") for lang, pattern in train_patterns(src, tgt).items()
    ]
    (src_name, src_file), (tgt_name, tgt_file) = found
    src_lines = train_tags_lines(decoded_lines(src_file, src_name, undecodable))
    tgt_lines = train_tags_lines(decoded_lines(tgt_file, tgt_name, undecodable))
    if len(src_lines) != len(tgt_lines):
        raise CorpusError(
            f"{src_name} has {len(src_lines)} segments but {tgt_name} has {len(tgt_lines)} "
            "once the metadata lines are dropped"
        )
    return list(zip(src_lines, tgt_lines)), [src_name, tgt_name]


def extract_evaluation_set(
    archives: ArchiveSet, src: str, tgt: str, name: str, undecodable: Undecodable
) -> tuple[list[tuple[str, str]], list[str]]:
    """One evaluation set and the members it came from; its reference comes from the same
    direction or, failing that, the reverse one."""
    source, same, reverse = evaluation_patterns(src, tgt, name)
    src_name, src_file = archives.require(source, f"{name} source side ({src})")
    ref_name, ref_file = archives.find(same) or archives.require(
        reverse, f"{name} reference ({tgt}), in this or the reverse-direction archive"
    )
    texts = [
        "\n".join(decoded_lines(file, label, undecodable))
        for file, label in ((src_file, src_name), (ref_file, ref_name))
    ]
    pairs = pair_segments(
        parse_mteval_xml(texts[0], src_name), parse_mteval_xml(texts[1], ref_name), src_name, ref_name
    )
    return pairs, [src_name, ref_name]


def extract(
    pair: str,
    specs: list[str],
    dev_sets: list[str],
    test_sets: list[str],
    out_dir: Path,
    stats: Path,
    splits: tuple[str, ...] = ("train", "dev", "test"),
) -> None:
    """Write `splits` of the pair: the training text, and the evaluation sets named for dev and test."""
    src, tgt = pair.split("-")
    out_dir.mkdir(parents=True, exist_ok=True)
    undecodable = Undecodable()
    sets = {"dev": dev_sets, "test": test_sets}
    evaluation = [split for split in ("dev", "test") if split in splits]
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".extract-") as workdir:
        patterns = needed_patterns(src, tgt, [name for split in evaluation for name in sets[split]], "train" in splits)
        archives = ArchiveSet(specs, patterns, Path(workdir))
        extracted = {"train": extract_train(archives, src, tgt, undecodable)} if "train" in splits else {}
        for split in evaluation:
            found = [extract_evaluation_set(archives, src, tgt, name, undecodable) for name in sets[split]]
            extracted[split] = (
                [seg for segments, _ in found for seg in segments],
                [m for _, members in found for m in members],
            )
    for split, (segments, _) in extracted.items():
        write_lines(out_dir / f"{split}.{src}", (s for s, _ in segments))
        write_lines(out_dir / f"{split}.{tgt}", (t for _, t in segments))
        print(f"{pair} {split}: {len(segments)} segments")
    write_stats(
        stats, {split: (len(segments), sources) for split, (segments, sources) in extracted.items()}, undecodable
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--pair", required=True, help="src-tgt, e.g. fr-en")
    parser.add_argument(
        "--archives",
        nargs="+",
        required=True,
        metavar="SPEC",
        help="PATH or PATH::MEMBER (an archive inside an archive), searched in this order",
    )
    parser.add_argument("--dev-sets", nargs="+", required=True)
    parser.add_argument("--test-sets", nargs="+", required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--stats", type=Path, required=True)
    parser.add_argument("--splits", nargs="+", choices=("train", "dev", "test"), default=("train", "dev", "test"))
    args = parser.parse_args(argv)
    extract(args.pair, args.archives, args.dev_sets, args.test_sets, args.out_dir, args.stats, tuple(args.splits))


if __name__ == "__main__":
    main()
