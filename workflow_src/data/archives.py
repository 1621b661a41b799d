"""Reading released corpora: archives decompressed once, bytes split into lines as released.

Text: lines end at b"\n" only (never at "\r", U+0085, U+2028 or a form feed, which
`str.splitlines()` and universal newlines break at); a lone "\r" inside a line of plain-text
corpus becomes a space (News Commentary has them on one side only: TFDS #2474, PR #2633).
Undecodable bytes: one policy, `replace`; they become U+FFFD, and the lines holding them are
counted and the first is named in the statistics.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from workflow_src.atomic import write_text

UNDECODABLE_POLICY = "replace"
MEMBER_SEPARATOR = "::"  # `ARCHIVE::MEMBER`: a member of an archive, named in a command line


class CorpusError(ValueError):
    pass


# -- bytes to lines ----------------------------------------------------------------------------
class Undecodable:
    """Lines that are not valid UTF-8, decoded with U+FFFD for each bad byte sequence (policy
    `replace`); counted, the first named as `file, line L`."""

    def __init__(self):
        self.lines = 0
        self.first: str | None = None

    def decode(self, raw: bytes, name: str, number: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.lines += 1
            self.first = self.first or f"{name}, line {number}"
            return raw.decode("utf-8", UNDECODABLE_POLICY)


def split_lines(f: BinaryIO, name: str, undecodable: Undecodable) -> Iterator[str]:
    """The lines of a binary stream, split on b"\\n" only, then decoded; streamed."""
    for number, raw in enumerate(f, start=1):  # a binary stream's lines end at b"\n" only
        yield undecodable.decode(raw.removesuffix(b"\n"), name, number)


def decoded_lines(path: Path, name: str, undecodable: Undecodable) -> Iterator[str]:
    """The lines of a file (`split_lines`), `name` the file as the statistics call it."""
    with open(path, "rb") as f:
        yield from split_lines(f, name, undecodable)


def clean_line(line: str) -> str:
    """A line of plain-text corpus: a lone "\\r" a space, outer whitespace stripped."""
    return line.replace("\r", " ").strip()


# -- archives ----------------------------------------------------------------------------------
def member_name(name: str) -> str:
    return name.removeprefix("./")


def extract_members(
    archive: Path, select: Callable[[str], bool], into: Path, label: str | None = None
) -> Iterator[tuple[str, Path]]:
    """(name, file) of each member `select` accepts (by its name without a leading "./"), copied
    to a file of its own under `into`, in one sequential pass over a tar (any compression) or
    zip archive; the caller may stop early. Unreadable archives raise CorpusError naming `label`."""
    label = label or str(archive)

    def copy(handle, name: str) -> Path:
        fd, path = tempfile.mkstemp(dir=into, suffix="-" + Path(name).name)
        with open(fd, "wb") as out:
            shutil.copyfileobj(handle, out, 1 << 20)
        return Path(path)

    try:
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as z:
                for info in z.infolist():
                    if not info.is_dir() and select(member_name(info.filename)):
                        with z.open(info) as handle:
                            yield member_name(info.filename), copy(handle, info.filename)
            return
        with tarfile.open(archive, "r|*") as tar:
            for info in tar:
                if info.isfile() and select(member_name(info.name)):
                    yield member_name(info.name), copy(tar.extractfile(info), info.name)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as err:
        raise CorpusError(f"{label}: cannot read the archive: {err}") from err


# -- statistics --------------------------------------------------------------------------------
def write_stats(path: Path, splits: dict[str, tuple[int, list[str]]], undecodable: Undecodable) -> None:
    """{"splits": {split: {"segments", "from": [archive:member, ...]}}, "undecodable_lines",
    "first_undecodable", "policy"}."""
    stats = {
        "splits": {split: {"segments": n, "from": sources} for split, (n, sources) in splits.items()},
        "undecodable_lines": undecodable.lines,
        "first_undecodable": undecodable.first,
        "policy": UNDECODABLE_POLICY,
    }
    write_text(path, json.dumps(stats, indent=2) + "\n")
