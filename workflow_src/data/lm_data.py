"""Language-modelling corpora (PTB, WikiText-2) from their archives, with their statistics.

`python -m workflow_src.data.lm_data --archive simple-examples.tgz --member train:simple-examples/data/ptb.train.txt
 ... --out-dir results/data/ptb` writes `<split>.txt` for each member (a .tgz or a .zip; a leading
`./` in member names is ignored) and `stats.json`: lines, words, tokens (words plus one end of
sentence per line, the count language-modelling papers report), vocabulary size (with `<eos>`)
and the share of held-out tokens outside the training vocabulary.
"""

from __future__ import annotations

import argparse
import io
import json
import tarfile
import zipfile
from collections import Counter
from pathlib import Path
from typing import Iterator

from workflow_src.atomic import atomic_output, described, write_text
from workflow_src.data.archives import CorpusError


def member_lines(archive: Path, member: str) -> Iterator[str]:
    """The lines of a member of a .tgz or .zip archive, streamed."""
    wanted = member.removeprefix("./")
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                names = {n.removeprefix("./"): n for n in z.namelist()}
                if wanted not in names:
                    raise CorpusError(f"{archive}: no member {member}")
                with z.open(names[wanted]) as raw, io.TextIOWrapper(raw, encoding="utf-8", newline="\n") as text:
                    yield from (line.rstrip("\n") for line in text)
            return
        with tarfile.open(archive, "r:*") as tar:
            names = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
            if wanted not in names:
                raise CorpusError(f"{archive}: no member {member}")
            with io.TextIOWrapper(tar.extractfile(names[wanted]), encoding="utf-8", newline="\n") as text:
                yield from (line.rstrip("\n") for line in text)
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as err:
        raise CorpusError(f"{archive}: cannot read the archive: {err}") from err


def extract(archive: Path, members: dict[str, str], out_dir: Path) -> dict:
    counts: dict[str, Counter] = {}
    stats = {}
    for split, member in members.items():
        words = Counter()
        lines = 0
        with atomic_output(out_dir / f"{split}.txt") as tmp, open(tmp, "w", encoding="utf-8") as out:
            for line in member_lines(archive, member):
                out.write(line + "\n")
                words.update(line.split())
                lines += 1
        if not lines:
            raise CorpusError(f"{archive}:{member} is empty")
        counts[split] = words
        stats[split] = {"lines": lines, "words": sum(words.values()), "tokens": sum(words.values()) + lines}
    vocabulary = set(counts["train"]) | {"<eos>"}
    stats["vocabulary"] = len(vocabulary)
    for split, words in counts.items():
        if split != "train":
            unknown = sum(c for w, c in words.items() if w not in vocabulary)
            stats[split]["out_of_vocabulary"] = round(unknown / max(1, sum(words.values())), 6)
    write_text(out_dir / "stats.json", json.dumps(stats, indent=2) + "\n")
    return stats


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--archive", type=Path, required=True)
    parser.add_argument("--member", nargs="+", required=True, metavar="SPLIT:MEMBER")
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    members = dict(m.split(":", 1) for m in args.member)
    if "train" not in members:
        parser.error("a train member is required (the vocabulary is the training set's)")
    print(json.dumps(extract(args.archive, members, args.out_dir), indent=2))


if __name__ == "__main__":
    main()
