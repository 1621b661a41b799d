"""Fetch one file by URL: resumable, retried with backoff, md5-verified, written atomically.

`python -m workflow_src.download --url URL --out PATH [--md5 HEX]`

URLs may be `http(s)://`, `file://` or a plain local path (a local mirror). While a transfer is
in progress the bytes live in `PATH.part`, a name Snakemake never takes for the output; an
interrupted transfer resumes from there with an HTTP range request. Only a complete file whose
md5 matches (when one is given) is renamed onto `PATH`. A checksum mismatch deletes the partial
file and fails with the URL, the expected and the received digest.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

CHUNK = 1 << 20


class DownloadError(RuntimeError):
    pass


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


def _transfer(url: str, part: Path, timeout: float, log) -> None:
    """Append the rest of `url` to `part`, asking for a byte range if `part` has bytes already."""
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "softmax-bottleneck-repro/1"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:  # the range starts at the end: the file is complete
            return
        raise
    with response:
        if offset and response.status != 206:
            log(f"server ignored the range request for {url}; starting over")
            offset = 0
        elif offset:
            log(f"resuming {url} at byte {offset}")
        expected_total = response.headers.get("Content-Length")
        expected_total = offset + int(expected_total) if expected_total is not None else None
        with open(part, "ab" if offset else "wb") as out:
            shutil.copyfileobj(response, out, CHUNK)
    received = part.stat().st_size
    if expected_total is not None and received < expected_total:
        raise urllib.error.ContentTooShortError(
            f"transfer of {url} ended at byte {received} of {expected_total}", None
        )


def download(
    url: str,
    out: Path,
    md5: str | None = None,
    retries: int = 5,
    backoff: float = 2.0,
    timeout: float = 60.0,
    log=lambda message: print(message, file=sys.stderr, flush=True),
) -> str:
    """Fetch `url` to `out` and return its md5. See the module docstring for the guarantees."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    source = local_path(url)
    if source is not None:
        if not source.is_file():
            raise DownloadError(f"{url}: no such file in the local mirror ({source})")
        shutil.copyfile(source, part)
    else:
        for attempt in range(retries + 1):
            try:
                _transfer(url, part, timeout, log)
                break
            except (urllib.error.URLError, OSError, ConnectionError) as err:
                if isinstance(err, urllib.error.HTTPError) and 400 <= err.code < 500 and err.code != 408:
                    part.unlink(missing_ok=True)
                    raise DownloadError(f"{url}: HTTP {err.code} {err.reason}") from err
                if attempt == retries:
                    raise DownloadError(
                        f"{url}: giving up after {retries + 1} attempts; last error: {err}; "
                        f"{part} keeps the {part.stat().st_size if part.exists() else 0} bytes "
                        "received so far and a rerun resumes from there"
                    ) from err
                wait = backoff * 2**attempt
                log(f"{url}: {err}; retrying in {wait:.0f}s (attempt {attempt + 2} of {retries + 1})")
                time.sleep(wait)
    received = md5_of(part)
    if md5 and received != md5.lower():
        size = part.stat().st_size
        part.unlink()
        raise DownloadError(
            f"{url}: md5 mismatch: expected {md5.lower()}, received {received} ({size} bytes); "
            "the partial file was removed"
        )
    os.replace(part, out)
    log(f"{url} -> {out} (md5 {received}{', verified' if md5 else ', no checksum configured'})")
    return received


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--md5", default=None, help="expected md5 (hex); omitted: not verified")
    parser.add_argument("--retries", type=int, default=5)
    parser.add_argument("--backoff", type=float, default=2.0, help="first wait in seconds, doubling")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    try:
        download(args.url, args.out, args.md5 or None, args.retries, args.backoff, args.timeout)
    except DownloadError as err:
        sys.exit(f"download failed: {err}")


if __name__ == "__main__":
    main()
