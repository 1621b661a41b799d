"""Extract IWSLT (WIT3) TED corpora from their archives into plain parallel text.

`python -m workflow_src.iwslt --pair fr-en --archives A.tgz B.tgz ... --dev-sets tst2013 tst2014
 --test-sets tst2015 tst2016 --out-dir DIR` writes `DIR/{train,dev,test}.{src,tgt}`, one
segment a line, untokenized.

Layout (the real one, reproduced by the demo): `<s>-<t>/train.tags.<s>-<t>.<lang>` is plain text
with metadata lines (`<url>`, `<talkid>`, `<title>`, ...) between talks; the evaluation sets are
`<s>-<t>/IWSLT16.TED.<set>.<s>-<t>.<lang>.xml` with `<seg id="N">` inside `<doc docid="D">`.
Test archives hold the source side only: the reference of `<set>` for `s-t` is then the `t` side
of the reverse archive `t-s`. Segments of the two sides are paired by (docid, seg id).
"""

from __future__ import annotations

import argparse
import re
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

from workflow_src.atomic import write_lines

METADATA_TAGS = ("url", "talkid", "title", "description", "keywords", "speaker", "reviewer", "translator")
METADATA_LINE = re.compile(r"^\s*<(%s)[\s>]" % "|".join(re.escape(t) for t in METADATA_TAGS))


class CorpusError(ValueError):
    pass


def train_tags_lines(text: str) -> list[str]:
    """The segments of a `train.tags` file: every line but the metadata lines, stripped."""
    return [line.strip() for line in text.splitlines() if not METADATA_LINE.match(line)]


def parse_mteval_xml(data: bytes, name: str) -> dict[tuple[str, str], str]:
    """{(docid, seg id): text} of an IWSLT/mteval XML file; malformed XML names the file."""
    try:
        root = ET.fromstring(data)
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
    for a, b, a_name, b_name, role in ((src, ref, src_name, ref_name, "source"), (ref, src, ref_name, src_name, "reference")):
        unmatched = [key for key in a if key not in b]
        if unmatched:
            docid, seg = unmatched[0]
            raise CorpusError(
                f"{a_name} and {b_name} do not pair up: {len(unmatched)} {role} segments of "
                f"{a_name} are missing from {b_name} (first: doc {docid}, seg {seg})"
            )
    return [(text, ref[key]) for key, text in src.items()]


class ArchiveSet:
    """The members of several .tgz archives, found by the last part of their names."""

    def __init__(self, archives: list[Path]):
        self.members: dict[str, tuple[Path, str]] = {}
        for archive in archives:
            try:
                with tarfile.open(archive, "r:*") as tar:
                    for member in tar.getmembers():
                        if member.isfile():
                            self.members.setdefault(Path(member.name).name, (archive, member.name))
            except (tarfile.TarError, OSError) as err:
                raise CorpusError(f"{archive}: cannot read the archive: {err}") from err

    def find(self, pattern: str) -> tuple[str, bytes] | None:
        """(description, bytes) of the first member whose file name matches `pattern`."""
        regex = re.compile(pattern)
        for filename, (archive, member) in sorted(self.members.items()):
            if regex.fullmatch(filename):
                with tarfile.open(archive, "r:*") as tar:
                    data = tar.extractfile(member).read()
                return f"{archive}:{member}", data

    def require(self, pattern: str, what: str) -> tuple[str, bytes]:
        found = self.find(pattern)
        if found is None:
            raise CorpusError(f"no {what} (a member matching {pattern!r}) in {sorted({str(a) for a, _ in self.members.values()})}")
        return found


def extract_train(archives: ArchiveSet, src: str, tgt: str) -> list[tuple[str, str]]:
    pair = f"{src}-{tgt}"
    src_name, src_data = archives.require(rf"train\.tags\.{pair}\.{src}", f"training text for {src}")
    tgt_name, tgt_data = archives.require(rf"train\.tags\.{pair}\.{tgt}", f"training text for {tgt}")
    src_lines = train_tags_lines(src_data.decode("utf-8"))
    tgt_lines = train_tags_lines(tgt_data.decode("utf-8"))
    if len(src_lines) != len(tgt_lines):
        raise CorpusError(
            f"{src_name} has {len(src_lines)} segments but {tgt_name} has {len(tgt_lines)} "
            "once the metadata lines are dropped"
        )
    return list(zip(src_lines, tgt_lines))


def extract_evaluation_set(archives: ArchiveSet, src: str, tgt: str, name: str) -> list[tuple[str, str]]:
    """One evaluation set; its reference comes from the same direction or the reverse one."""
    xml = lambda pair, lang: rf"IWSLT\d+\.TED\.{re.escape(name)}\.{pair}\.{lang}\.xml"  # noqa: E731
    src_name, src_data = archives.require(xml(f"{src}-{tgt}", src), f"{name} source side ({src})")
    ref = archives.find(xml(f"{src}-{tgt}", tgt)) or archives.require(
        xml(f"{tgt}-{src}", tgt), f"{name} reference ({tgt}), in this or the reverse-direction archive"
    )
    ref_name, ref_data = ref
    return pair_segments(
        parse_mteval_xml(src_data, src_name), parse_mteval_xml(ref_data, ref_name), src_name, ref_name
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", required=True, help="src-tgt, e.g. fr-en")
    parser.add_argument("--archives", type=Path, nargs="+", required=True)
    parser.add_argument("--dev-sets", nargs="+", required=True)
    parser.add_argument("--test-sets", nargs="+", required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    src, tgt = args.pair.split("-")
    archives = ArchiveSet(args.archives)
    splits = {"train": extract_train(archives, src, tgt)}
    for split, names in (("dev", args.dev_sets), ("test", args.test_sets)):
        splits[split] = [seg for name in names for seg in extract_evaluation_set(archives, src, tgt, name)]
    for split, segments in splits.items():
        write_lines(args.out_dir / f"{split}.{src}", (s for s, _ in segments))
        write_lines(args.out_dir / f"{split}.{tgt}", (t for _, t in segments))
        print(f"{args.pair} {split}: {len(segments)} segments")


if __name__ == "__main__":
    main()
