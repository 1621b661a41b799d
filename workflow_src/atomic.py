"""Atomic file output: a file appears complete under its final name, or not at all. And reading
the pipeline's own files back, where a file that is not what it should be (truncated, garbage,
missing) is a `FileFault`: one line naming the path and what was expected.

Text files are read and written with lines ending at "\n" only: a lone "\r", U+0085 or U+2028
stays inside its line (universal newlines, and `str.splitlines`, would break lines there).
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterator, NoReturn


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


def read_lines(path: str | os.PathLike, expected: str = "lines of text") -> list[str]:
    """The lines of a UTF-8 text file; a FileFault naming it where it is missing or unreadable, or not
    UTF-8 (garbage, or a binary file where text belongs), with `expected`, what the file should hold."""
    try:
        with open(path, encoding="utf-8", newline="\n") as f:
            return [line.removesuffix("\n") for line in f]
    except UnicodeDecodeError as err:
        raise FileFault(f"{path}: not UTF-8 text ({err.reason}); expected {expected}") from None
    except OSError as err:
        raise FileFault(f"{path}: {err.strerror or err}; expected {expected}") from None


def stream_lines(path: str | os.PathLike) -> Iterator[str]:
    """The lines of a text file (gzip-compressed when its name ends in .gz), one at a time."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as f:
        for line in f:
            yield line.removesuffix("\n")


# -- reading the pipeline's own files back ---------------------------------------------------------
class FileFault(ValueError):
    """A file that is missing, unreadable or not what it should be. Its message is one line: the
    path, what is wrong, and what was expected there."""


def _first_line(err: BaseException) -> str:
    """The first sentence of an exception's message (torch's run on for lines)."""
    text = str(err).strip()
    return (text.splitlines()[0].split(". ")[0] if text else type(err).__name__)[:200]


def load_saved(path: str | os.PathLike, expected: str, keys: tuple[str, ...] = (), device="cpu") -> dict:
    """The dict that torch.save wrote to `path` (a checkpoint, a model), loaded onto `device`;
    a FileFault where the file is missing, cannot be read (truncated, garbage) or lacks `keys`.
    `expected` says what the file should be, for the message."""
    import torch  # here: the text tools that import this module need no torch

    path = Path(path)
    if not path.is_file():
        raise FileFault(f"{path}: missing; expected {expected}")
    try:
        saved = torch.load(path, map_location=device, weights_only=False)
    except Exception as err:  # torch's zip reader, pickle and the OS each fail their own way
        raise FileFault(f"{path}: unreadable ({type(err).__name__}: {_first_line(err)}); expected {expected}") from None
    missing = [key for key in keys if not isinstance(saved, dict) or key not in saved]
    if missing or not isinstance(saved, dict):
        raise FileFault(f"{path}: no {', '.join(missing) or 'dict'} in it; expected {expected}")
    return saved


def read_records(path: str | os.PathLike, expected: str = "one JSON object per line") -> list[dict]:
    """The JSON objects of a JSONL file (metrics.jsonl: one per epoch), blank lines skipped; a
    FileFault naming the file and line where a line is not a JSON object (a truncated last line,
    garbage) or the file is missing or not UTF-8 text."""
    if not Path(path).is_file():
        raise FileFault(f"{path}: missing; expected {expected}")
    records = []
    for number, line in enumerate(read_lines(path, expected), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise FileFault(f"{path}, line {number}: not JSON ({err.msg}); expected {expected}") from None
        if not isinstance(record, dict):
            raise FileFault(f"{path}, line {number}: a JSON {type(record).__name__}; expected {expected}")
        records.append(record)
    return records


def described(doc: str) -> str:
    """A module docstring's first paragraph, on one line: its command's --help description."""
    return " ".join(doc.strip().split("\n\n")[0].split())


def one_line_faults(main: Callable) -> Callable:
    """A command's `main` that ends on a FileFault with its one line (`<command>: error: ...`, exit
    status 1) rather than a traceback: the line names the file, which is all a reader needs."""

    @functools.wraps(main)
    def run(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except FileFault as fault:
            run_as = Path(sys.argv[0])  # `python -m workflow_src.plan` runs workflow_src/plan/__main__.py
            if run_as.name == "__main__.py" and Path(__file__).resolve().parent in run_as.resolve().parents:
                command = run_as.parent.name
            else:  # a module run as a script, or called (as tests do: argv is pytest's)
                command = run_as.stem if main.__module__ == "__main__" else main.__module__.rpartition(".")[2]
            sys.exit(f"{command}: error: {fault}")

    return run


def exit_without_teardown(status: int) -> NoReturn:
    """End the process with `status` once stdout and stderr are flushed, skipping the interpreter's
    teardown. For a command whose verdict is its (atomically written) report and its status: a crash
    in a library's teardown after them must not overturn them. CI saw one once, after a GPU check
    on the CPU had passed and written its report: `terminate called without an active exception`,
    exit 134 (the class of crash in pytorch/pytorch#38228, a thread taking the GIL while the
    interpreter finalises)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


METRICS = "one JSON record per training epoch, as workflow_src/train writes metrics.jsonl"


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """A training run's metrics.jsonl (`read_records`)."""
    return read_records(path, METRICS)


def read_config(value: str) -> dict:
    """A config given as a JSON object, a JSON file, or a YAML file (PyYAML imported only then: a bare
    GPU machine has none, and takes the JSON that `python -m workflow_src.gpu_check export-config` writes)."""
    if value.lstrip().startswith("{"):
        return json.loads(value)
    path = Path(value)
    if path.suffix == ".json":
        return json.loads(path.read_text())
    try:
        import yaml
    except ImportError:
        sys.exit(
            f"{path} is YAML and PyYAML is not installed here; on a machine with it run "
            f"`python -m workflow_src.gpu_check export-config {path} {path.with_suffix('.json')}` and pass "
            "the JSON file instead"
        )
    return yaml.safe_load(path.read_text())
