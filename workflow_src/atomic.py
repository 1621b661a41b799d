"""Atomic file output: a file appears complete under its final name, or not at all.

Text files are read and written with lines ending at "\n" only: a lone "\r", U+0085 or U+2028
stays inside its line (universal newlines, and `str.splitlines`, would break lines there).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
from pathlib import Path
from typing import Iterator


_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds.

    The temporary file lives in the same directory so the final `os.replace` is atomic. On any
    exception it is removed and whatever was at `path` before is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual permissions
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_output(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_lines(path: str | os.PathLike, lines) -> None:
    with atomic_output(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            for line in lines:
                f.write(line.rstrip("\n") + "\n")


def read_lines(path: str | os.PathLike) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.removesuffix("\n") for line in f]


def stream_lines(path: str | os.PathLike) -> Iterator[str]:
    """The lines of a text file (gzip-compressed when its name ends in .gz), one at a time."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as f:
        for line in f:
            yield line.removesuffix("\n")
