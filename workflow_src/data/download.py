"""Fetch one file from an ordered list of mirrors: resumable, retried, content-checked, md5-verified.

`python -m workflow_src.data.download --out PATH (--md5 HEX | --no-md5-reason TEXT) --url URL [--url URL ...]
[--local-copy DIR ...] [--retries N] [--backoff S] [--timeout T]`

Candidates, in order: `DIR/<name of PATH>` for each `--local-copy DIR`, then each `--url` (`http(s)://`,
`file://` or a plain local path). The first candidate that passes every check is renamed onto PATH and
the log names it; when none does, the error lists every candidate with what it returned.

Checks, in order:
- HTTP: a 4xx other than 408 rejects that URL; anything else transient is retried after
  backoff * 2**attempt seconds, resuming with a Range request.
- HTML (Content-Type text/html, or a body starting `<!DOCTYPE html` / `<html`) rejects the URL with the
  page's title, unless gdown reads it as Google Drive's confirmation page: then its link is fetched.
- Content, by PATH's name: .tgz .tar .tar.gz .tar.bz2 .tar.xz open with tarfile and have a first member;
  .zip has a readable central directory and a member; .gz .bz2 .xz decompress their first block.
- md5, when one is given.

Network bytes live in `PATH.part`, and `PATH.part.url` names the mirror they came from: they are
resumed from that mirror only, and replaced when another mirror's bytes arrive. A rejected
candidate's bytes are removed; a transfer that gave up on transient errors keeps them for a rerun.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import hashlib
import html
import http.client
import lzma
import os
import re
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from gdown.download import get_url_from_gdrive_confirmation
from gdown.exceptions import FileURLRetrievalError

from workflow_src.atomic import atomic_output, described

CHUNK = 1 << 20
SNIFF = 1024  # bytes read to recognise an HTML page
PAGE_LIMIT = 1 << 20  # bytes of an HTML page kept for its title and Drive's confirmation form
TAR_SUFFIXES = (".tgz", ".tar", ".tar.gz", ".tar.bz2", ".tar.xz")
STREAM_OPENERS = {
    ".gz": ("a gzip file", gzip.open),
    ".bz2": ("a bzip2 file", bz2.open),
    ".xz": ("an xz file", lzma.open),
}


class DownloadError(RuntimeError):
    pass


class _Rejected(Exception):
    """One candidate failed; `keep_part`: its bytes stay in PATH.part for a rerun to resume."""

    def __init__(self, reason: str, keep_part: bool = False):
        super().__init__(reason)
        self.keep_part = keep_part


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def md5_of(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def local_path(url: str) -> Path | None:
    """The filesystem path a `file://` URL or plain path names; None for network URLs."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return Path(urllib.request.url2pathname(parsed.path))
    if len(parsed.scheme) <= 1:  # no scheme, or a Windows drive letter
        return Path(url)
    return None


def expected_format(name: str) -> str:
    """What a file called `name` must be, in words."""
    if name.endswith(TAR_SUFFIXES):
        return "a tar archive"
    if name.endswith(".zip"):
        return "a zip archive"
    for suffix, (what, _) in STREAM_OPENERS.items():
        if name.endswith(suffix):
            return what
    return repr(name)


def looks_like_html(head: bytes) -> bool:
    start = head.lstrip().lower()
    return start.startswith(b"<!doctype html") or start.startswith(b"<html")


def html_failure(page: str, name: str) -> str:
    match = re.search(r"<title[^>]*>(.*?)</title>", page, re.IGNORECASE | re.DOTALL)
    title = " ".join(html.unescape(match.group(1)).split()) if match else "(none)"
    return f"an HTML page where {expected_format(name)} was expected: title {title!r}"


def check_content(path: Path, name: str) -> None:
    """Raise _Rejected unless `path` opens as the format `name` says; reads only its first block."""
    with open(path, "rb") as f:
        head = f.read(SNIFF)
    if looks_like_html(head):
        with open(path, "rb") as f:
            raise _Rejected(html_failure(f.read(PAGE_LIMIT).decode("utf-8", "replace"), name))
    try:
        if name.endswith(TAR_SUFFIXES):
            with tarfile.open(path, "r:*") as tar:  # the mode the extraction steps use
                if tar.next() is None:
                    raise _Rejected("a tar archive with no members")
        elif name.endswith(".zip"):
            with zipfile.ZipFile(path) as archive:
                if not archive.infolist():
                    raise _Rejected("a zip archive with no members")
        else:
            for suffix, (_, opener) in STREAM_OPENERS.items():
                if name.endswith(suffix):
                    with opener(path) as stream:
                        stream.read(CHUNK)
    except (tarfile.TarError, zipfile.BadZipFile, gzip.BadGzipFile, OSError, EOFError, lzma.LZMAError) as err:
        detail = str(err).replace(":\n- ", ": ").replace("\n- ", "; ")  # tarfile's "r:*" lists each method
        raise _Rejected(f"not {expected_format(name)} ({detail})") from err


def verify(path: Path, name: str, md5: str | None) -> str:
    """The md5 of `path` after its content check; _Rejected on a mismatch."""
    check_content(path, name)
    received = md5_of(path)
    if md5 and received != md5:
        raise _Rejected(f"md5 mismatch: expected {md5}, received {received} ({path.stat().st_size} bytes)")
    return received


def _describe(err: Exception) -> str:
    if isinstance(err, urllib.error.HTTPError):
        return f"HTTP {err.code} {err.reason}"
    if isinstance(err, urllib.error.ContentTooShortError):
        return str(err.reason)
    if isinstance(err, urllib.error.URLError):
        return f"connection error: {err.reason}"
    return f"connection error: {err or type(err).__name__}"


def _transfer(url: str, part: Path, source_note: Path, mirror: str, timeout: float, log) -> str | None:
    """Write `url` into `part`, resuming the bytes `mirror` left there; an HTML page's text instead."""
    resumable = part.exists() and source_note.exists() and source_note.read_text() == mirror
    offset = part.stat().st_size if resumable else 0
    request = urllib.request.Request(url, headers={"User-Agent": "softmax-bottleneck-repro/1"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:  # the range starts at the end: the file is complete
            return None
        raise
    with response:
        resuming = offset and response.status == 206
        head = response.read(SNIFF)
        is_html = "text/html" in response.headers.get("Content-Type", "") or looks_like_html(head)
        if is_html and not resuming:
            return (head + response.read(PAGE_LIMIT)).decode("utf-8", "replace")
        if offset and not resuming:
            log(f"server ignored the range request for {url}; starting over")
        elif resuming:
            log(f"resuming {url} at byte {offset}")
        length = response.headers.get("Content-Length")
        expected_total = (offset if resuming else 0) + int(length) if length is not None else None
        if not resuming:  # never a moment where the note names a mirror the bytes are not from
            part.unlink(missing_ok=True)
            source_note.write_text(mirror)
        with open(part, "ab" if resuming else "wb") as out:
            out.write(head)
            shutil.copyfileobj(response, out, CHUNK)
    received = part.stat().st_size
    if expected_total is not None and received < expected_total:
        raise urllib.error.ContentTooShortError(f"transfer of {url} ended at byte {received} of {expected_total}", None)
    return None


def _fetch(url, part, source_note, mirror, retries, backoff, timeout, log) -> str | None:
    """_transfer, retried with backoff; _Rejected on a final HTTP error or when the retries run out."""
    for attempt in range(retries + 1):
        try:
            return _transfer(url, part, source_note, mirror, timeout, log)
        except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
            if isinstance(err, urllib.error.HTTPError) and 400 <= err.code < 500 and err.code != 408:
                raise _Rejected(_describe(err)) from err
            if attempt == retries:
                raise _Rejected(
                    f"giving up after {retries + 1} attempts; last error: {_describe(err)}", keep_part=True
                ) from err
            wait = backoff * 2**attempt
            log(f"{url}: {_describe(err)}; retrying in {wait:.2f}s (attempt {attempt + 2} of {retries + 1})")
            time.sleep(wait)
    raise AssertionError("unreachable")


def _from_network(url: str, out: Path, md5, retries, backoff, timeout, log) -> str:
    part, source_note = out.with_name(out.name + ".part"), out.with_name(out.name + ".part.url")
    try:
        page = _fetch(url, part, source_note, url, retries, backoff, timeout, log)
        if page is not None:
            try:
                confirmed = get_url_from_gdrive_confirmation(page)
            except (FileURLRetrievalError, KeyError) as err:
                raise _Rejected(html_failure(page, out.name)) from err
            log(f"{url}: Google Drive's confirmation page; following its download link {confirmed}")
            try:
                page = _fetch(confirmed, part, source_note, url, retries, backoff, timeout, log)
            except _Rejected as err:
                raise _Rejected(f"Drive's confirmation link {confirmed}: {err}", err.keep_part) from err
            if page is not None:
                raise _Rejected(f"Drive's confirmation link {confirmed}: {html_failure(page, out.name)}")
        received = verify(part, out.name, md5)
    except _Rejected as err:
        if not err.keep_part:
            part.unlink(missing_ok=True)
            source_note.unlink(missing_ok=True)
        elif part.exists():
            log(
                f"{part} keeps {part.stat().st_size} bytes from {url}; a rerun resumes them "
                "unless another mirror's bytes replace them first"
            )
        raise
    os.replace(part, out)
    source_note.unlink()
    return received


def _from_file(path: Path, out: Path, md5) -> str:
    if not path.is_file():
        raise _Rejected("no such file")
    with atomic_output(out) as tmp:
        shutil.copyfile(path, tmp)
        received = verify(tmp, out.name, md5)
    return received


def download(
    urls: list[str],
    out: Path,
    md5: str | None = None,
    *,
    no_md5_reason: str | None = None,
    local_copies: list[Path] = (),
    retries: int = 5,
    backoff: float = 2.0,
    timeout: float = 60.0,
    log=_stderr,
) -> str:
    """Fetch `out` from the first candidate that passes every check; return its md5 (see module doc)."""
    if (md5 is None) == (no_md5_reason is None):
        raise ValueError("give exactly one of md5 and no_md5_reason")
    if md5 is not None and not re.fullmatch(r"[0-9a-fA-F]{32}", md5):
        raise ValueError(f"md5 {md5!r} is not 32 hexadecimal digits")
    if no_md5_reason is not None and not no_md5_reason.strip():
        raise ValueError("no_md5_reason is empty: say why the file cannot be verified")
    md5 = md5.lower() if md5 else None
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    candidates = [(f"local copy in {d}", str(Path(d) / out.name)) for d in local_copies]
    candidates += [(f"mirror {i} of {len(urls)}", url) for i, url in enumerate(urls, 1)]
    failures = []
    for label, source in candidates:
        path = local_path(source)
        try:
            if path is not None:
                received = _from_file(path, out, md5)
            else:
                received = _from_network(source, out, md5, retries, backoff, timeout, log)
        except _Rejected as err:
            log(f"{label} failed: {source}: {err}")
            failures.append(f"{source}: {err}")
            continue
        log(f"using {label}: {source}")
        log(f"{source} -> {out} (md5 {received}, " + ("verified)" if md5 else f"not verified: {no_md5_reason})"))
        return received
    raise DownloadError(f"no source of {out.name} passed its checks:\n" + "\n".join(f"  {f}" for f in failures))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--url", dest="urls", action="append", required=True, help="a mirror; repeat, in order")
    checksum = parser.add_mutually_exclusive_group(required=True)
    checksum.add_argument("--md5", help="expected md5 (32 hex digits)")
    checksum.add_argument("--no-md5-reason", help="why no md5 is published; written to the log")
    parser.add_argument(
        "--local-copy",
        dest="local_copies",
        action="append",
        type=Path,
        default=[],
        help="a directory searched first for a file named like --out; repeatable",
    )
    parser.add_argument("--retries", type=int, default=5)
    parser.add_argument("--backoff", type=float, default=2.0, help="first wait in seconds, doubling")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    try:
        download(
            args.urls,
            args.out,
            args.md5,
            no_md5_reason=args.no_md5_reason,
            local_copies=args.local_copies,
            retries=args.retries,
            backoff=args.backoff,
            timeout=args.timeout,
        )
    except ValueError as err:
        parser.error(str(err))
    except DownloadError as err:
        sys.exit(f"download failed: {err}")


if __name__ == "__main__":
    main()
