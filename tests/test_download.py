"""The download step against a local HTTP server: mirrors in order, content checks, Drive's
confirmation page, resumed and redirected transfers, local copies and the command line."""

import gzip
import hashlib
import http.server
import io
import random
import re
import socket
import tarfile
import threading
import urllib.parse
import zipfile

import pytest

from tests.google_drive import DRIVE_ID, DRIVE_UUID, QUOTA_ID, drive_confirmation
from workflow_src.data.download import DownloadError, download, main


def tgz(members: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def zipped(members: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return raw.getvalue()


PAYLOAD = tgz({"2016-01/texts/de/en/de-en.tgz": random.Random(0).randbytes(1 << 20)})  # ~1 MiB, incompressible
MD5 = hashlib.md5(PAYLOAD).hexdigest()
ZIP = zipped({"wikitext-2/wiki.test.tokens": b" = Robert Boulter = \n"})
DRIVE_QUOTA = (
    '<!DOCTYPE html><html><head><title>Google Drive - Quota exceeded</title><meta http-equiv="content-type" '
    'content="text/html; charset=utf-8"/></head><body><div class="uc-main"><div id="uc-text"><p '
    'class="uc-error-caption">'
    'Sorry, you can&#39;t view or download this file at this time.</p><p class="uc-error-subcaption">Too many users '
    "have viewed or downloaded this file recently. Please try accessing the file again "
    "later.</p></div></div></body></html>"
).encode()
MOVED_PAGE = (
    b"<!DOCTYPE html>\n<html><head>\n<title>WIT3 &ndash; Page not found</title></head><body>Moved.</body></html>"
)


class Handler(http.server.BaseHTTPRequestHandler):
    """Files with byte ranges: /good, /good2, /flaky (first request cut off half way), /corrupt (wrong
    tail), /archive.zip, /not-a-tar.tgz (gzip, no tar inside), /not-a-zip.zip, /not-gzip.gz. /redirect:
    302 to /good; /missing: 404. /page: an HTML page with status 200; /sniffed: the same page labelled
    as bytes. /uc?export=download&id=: Drive's confirmation page, or its quota error page; /download:
    the bytes Drive's form leads to."""

    requests: list = []
    flaky_calls = 0

    def log_message(self, *args):
        pass

    def do_GET(self):
        Handler.requests.append((self.path, self.headers.get("Range")))
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        files = {
            "/good": PAYLOAD,
            "/good2": PAYLOAD,
            "/flaky": PAYLOAD,
            "/corrupt": PAYLOAD[:-10] + b"x" * 10,
            "/archive.zip": ZIP,
            "/not-a-tar.tgz": gzip.compress(b"plain text, not a tar\n" * 100),
            "/not-a-zip.zip": b"PK but not really a zip\n" * 10,
            "/not-gzip.gz": b"plain text\n" * 10,
        }
        if url.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/good")
            self.end_headers()
        elif url.path in files:
            self.send_bytes(files[url.path], "application/octet-stream", cut=url.path == "/flaky")
        elif url.path == "/page":
            self.send_bytes(MOVED_PAGE, "text/html; charset=utf-8")
        elif url.path == "/sniffed":
            self.send_bytes(b"\n  " + MOVED_PAGE.replace(b"DOCTYPE html", b"doctype HTML"), "application/octet-stream")
        elif url.path == "/uc" and query == {"export": "download", "id": DRIVE_ID}:
            self.send_bytes(drive_confirmation(self.server.server_address[1]), "text/html; charset=utf-8")
        elif url.path == "/uc" and query == {"export": "download", "id": QUOTA_ID}:
            self.send_bytes(DRIVE_QUOTA, "text/html; charset=utf-8")
        elif url.path == "/download" and query == {
            "id": DRIVE_ID,
            "export": "download",
            "confirm": "t",
            "uuid": DRIVE_UUID,
        }:
            self.send_bytes(PAYLOAD, "application/x-gzip")
        else:
            self.send_error(404)

    def send_bytes(self, body: bytes, content_type: str, cut: bool = False):
        start = 0
        if self.headers.get("Range"):
            start = int(self.headers["Range"].removeprefix("bytes=").split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        if cut and Handler.flaky_calls == 0:
            Handler.flaky_calls += 1
            self.wfile.write(body[start : start + len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body[start:])


@pytest.fixture()
def server():
    Handler.requests, Handler.flaky_calls = [], 0
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


@pytest.fixture()
def refused():
    """A URL on a port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/good"


class Log(list):
    def __call__(self, message):
        self.append(message)

    def __str__(self):
        return "\n".join(self)


FAST = {"retries": 1, "backoff": 0.01, "timeout": 5}


def test_good_file_is_verified_and_complete(server, tmp_path):
    out, log = tmp_path / "a" / "file.tgz", Log()
    assert download([f"{server}/good"], out, MD5, log=log) == MD5
    assert out.read_bytes() == PAYLOAD
    assert sorted(p.name for p in out.parent.iterdir()) == ["file.tgz"]
    assert f"using mirror 1 of 1: {server}/good" in log and "verified" in str(log)


def test_md5_mismatch_fails_clearly_and_leaves_nothing(server, tmp_path):
    out = tmp_path / "file.tgz"
    out.write_bytes(b"an older good file")  # what was there before must survive
    with pytest.raises(DownloadError) as err:
        download([f"{server}/corrupt"], out, MD5, retries=0, log=Log())
    assert f"{server}/corrupt: md5 mismatch: expected {MD5}, received " in str(err.value)
    assert out.read_bytes() == b"an older good file"
    assert list(tmp_path.iterdir()) == [out]


def test_partial_file_resumes_with_a_range_request(server, tmp_path):
    out = tmp_path / "file.tgz"
    out.with_name("file.tgz.part").write_bytes(PAYLOAD[:300_000])
    out.with_name("file.tgz.part.url").write_text(f"{server}/good")
    log = Log()
    download([f"{server}/good"], out, MD5, log=log)
    assert out.read_bytes() == PAYLOAD
    assert Handler.requests == [("/good", "bytes=300000-")]
    assert f"resuming {server}/good at byte 300000" in log


def test_partial_file_of_another_mirror_is_not_resumed(server, tmp_path):
    out = tmp_path / "file.tgz"
    out.with_name("file.tgz.part").write_bytes(b"x" * 300_000)  # bytes of some other mirror's file
    out.with_name("file.tgz.part.url").write_text(f"{server}/elsewhere")
    download([f"{server}/good"], out, MD5, log=Log())
    assert out.read_bytes() == PAYLOAD
    assert Handler.requests == [("/good", None)]


def test_interrupted_transfer_is_retried_from_where_it_stopped(server, tmp_path):
    out = tmp_path / "file.tgz"
    download([f"{server}/flaky"], out, MD5, backoff=0.01, log=Log())
    assert out.read_bytes() == PAYLOAD
    assert Handler.requests == [("/flaky", None), ("/flaky", f"bytes={len(PAYLOAD) // 2}-")]


def test_redirect_is_followed(server, tmp_path):
    out = tmp_path / "file.tgz"
    download([f"{server}/redirect"], out, MD5, log=Log())
    assert out.read_bytes() == PAYLOAD


def test_missing_file_names_the_url(server, tmp_path):
    with pytest.raises(DownloadError, match=r"/missing: HTTP 404 Not Found"):
        download([f"{server}/missing"], tmp_path / "file.tgz", no_md5_reason="none published", log=Log())
    assert not any(tmp_path.iterdir())
    assert Handler.requests == [("/missing", None)]  # final for that URL: not retried


def test_local_mirror_directory_and_file_url(tmp_path):
    mirror = tmp_path / "mirror" / "x.tgz"
    mirror.parent.mkdir()
    mirror.write_bytes(PAYLOAD)
    for url in (str(mirror), mirror.as_uri()):
        out = tmp_path / "out" / "x.tgz"
        download([url], out, MD5, log=Log())
        assert out.read_bytes() == PAYLOAD
        out.unlink()
    with pytest.raises(DownloadError, match="nope.tgz: no such file"):
        download([str(tmp_path / "nope.tgz")], tmp_path / "out" / "y.tgz", no_md5_reason="test", log=Log())


@pytest.mark.parametrize("path", ["/page", "/sniffed"])  # labelled text/html; labelled as bytes
def test_html_page_where_an_archive_belongs_fails_at_once(server, tmp_path, path):
    out = tmp_path / "2016-01.tgz"
    with pytest.raises(DownloadError) as err:
        download([f"{server}/{path}"], out, no_md5_reason="test", log=Log())
    assert (f"{server}/{path}: an HTML page where a tar archive was expected: title 'WIT3 – Page not found'") in str(
        err.value
    )
    assert len(Handler.requests) == 1
    assert not any(tmp_path.iterdir())


def test_drive_confirmation_page_leads_to_the_file(server, tmp_path):
    out, log = tmp_path / "2016-01.tgz", Log()
    url = f"{server}/uc?export=download&id={DRIVE_ID}"
    assert download([url], out, MD5, log=log) == MD5
    assert out.read_bytes() == PAYLOAD
    assert [path for path, _ in Handler.requests] == [
        f"/uc?export=download&id={DRIVE_ID}",
        f"/download?id={DRIVE_ID}&export=download&confirm=t&uuid={DRIVE_UUID}",
    ]
    assert "confirmation page" in str(log) and f"using mirror 1 of 1: {url}" in log


def test_drive_error_page_fails_with_its_title(server, tmp_path):
    url = f"{server}/uc?export=download&id={QUOTA_ID}"
    with pytest.raises(
        DownloadError, match=re.escape(url) + ": an HTML page where .* title 'Google Drive - Quota exceeded'"
    ):
        download([url], tmp_path / "2016-01.tgz", MD5, log=Log())


@pytest.mark.parametrize("down", ["missing", "refused"])
def test_a_mirror_that_is_down_falls_back_to_the_next(server, refused, tmp_path, down):
    first = f"{server}/missing" if down == "missing" else refused
    out, log = tmp_path / "file.tgz", Log()
    assert download([first, f"{server}/good"], out, MD5, log=log, **FAST) == MD5
    assert out.read_bytes() == PAYLOAD
    assert f"using mirror 2 of 2: {server}/good" in log
    assert any(line.startswith(f"mirror 1 of 2 failed: {first}: ") for line in log)


def test_the_first_good_mirror_wins_and_later_ones_are_never_asked(server, tmp_path):
    out, log = tmp_path / "file.tgz", Log()
    download([f"{server}/missing", f"{server}/good", f"{server}/good2"], out, MD5, log=log)
    assert [path for path, _ in Handler.requests] == ["/missing", "/good"]
    assert f"using mirror 2 of 3: {server}/good" in log


def test_when_every_mirror_fails_the_error_lists_each_with_its_reason(server, refused, tmp_path):
    out = tmp_path / "file.tgz"
    urls = [f"{server}/missing", f"{server}/corrupt", f"{server}/page", refused]
    with pytest.raises(DownloadError) as err:
        download(urls, out, MD5, log=Log(), **FAST)
    lines = str(err.value).splitlines()
    assert lines[0] == "no source of file.tgz passed its checks:"
    assert lines[1] == f"  {server}/missing: HTTP 404 Not Found"
    assert lines[2].startswith(f"  {server}/corrupt: md5 mismatch: expected {MD5}, received ")
    assert lines[3].startswith(f"  {server}/page: an HTML page where a tar archive was expected: title ")
    assert lines[4].startswith(f"  {refused}: giving up after 2 attempts; last error: connection error: ")
    assert len(lines) == 5
    assert not any(tmp_path.iterdir())  # no file, no .part, no note of where a .part came from


@pytest.mark.parametrize(
    "path, name, expected",
    [
        ("/not-a-tar.tgz", "x.tgz", "not a tar archive (file could not be opened successfully: method gz: "),
        ("/not-a-zip.zip", "x.zip", "not a zip archive (File is not a zip file)"),
        ("/not-gzip.gz", "x.gz", "not a gzip file (Not a gzipped file"),
    ],
)
def test_an_archive_that_does_not_open_as_its_name_says_fails(server, tmp_path, path, name, expected):
    with pytest.raises(DownloadError) as err:
        download([f"{server}{path}"], tmp_path / name, no_md5_reason="test", log=Log())
    assert f"{server}{path}: {expected}" in str(err.value)
    assert not any(tmp_path.iterdir())


def test_zip_archive_passes(server, tmp_path):
    out, log = tmp_path / "wikitext-2-v1.zip", Log()
    download([f"{server}/archive.zip"], out, no_md5_reason="none published", log=log)
    assert out.read_bytes() == ZIP
    assert "not verified: none published" in str(log)


def test_a_local_copy_is_preferred_and_copied(server, tmp_path):
    copies = tmp_path / "mine"
    copies.mkdir()
    (copies / "2016-01.tgz").write_bytes(PAYLOAD)
    out, log = tmp_path / "resources" / "2016-01.tgz", Log()
    download([f"{server}/good"], out, MD5, local_copies=[tmp_path / "empty", copies], log=log)
    assert out.read_bytes() == PAYLOAD and (copies / "2016-01.tgz").read_bytes() == PAYLOAD
    assert Handler.requests == []
    assert f"using local copy in {copies}: {copies / '2016-01.tgz'}" in log
    assert sorted(p.name for p in out.parent.iterdir()) == ["2016-01.tgz"]


def test_a_local_copy_with_the_wrong_md5_is_skipped(server, tmp_path):
    copies = tmp_path / "mine"
    copies.mkdir()
    (copies / "2016-01.tgz").write_bytes(PAYLOAD[:-10] + b"x" * 10)
    out, log = tmp_path / "resources" / "2016-01.tgz", Log()
    download([f"{server}/good"], out, MD5, local_copies=[copies], log=log)
    assert out.read_bytes() == PAYLOAD
    assert any(line.startswith(f"local copy in {copies} failed: ") and "md5 mismatch" in line for line in log)
    assert f"using mirror 1 of 1: {server}/good" in log
    assert sorted(p.name for p in out.parent.iterdir()) == ["2016-01.tgz"]


def test_command_line_takes_mirrors_in_order_and_logs_to_stderr(server, tmp_path, capsys):
    out = tmp_path / "file.tgz"
    main(
        [
            "--out",
            str(out),
            "--no-md5-reason",
            "the host publishes none",
            "--url",
            f"{server}/missing",
            "--url",
            f"{server}/good",
            "--retries",
            "0",
        ]
    )
    assert out.read_bytes() == PAYLOAD
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"using mirror 2 of 2: {server}/good" in captured.err
    assert "not verified: the host publishes none" in captured.err


def test_command_line_requires_an_md5_or_the_reason_there_is_none(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--out", str(tmp_path / "file.tgz"), "--url", "http://127.0.0.1:9/x"])
    assert exit.value.code == 2
    assert "one of the arguments --md5 --no-md5-reason is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "file.tgz"), "--url", "x", "--md5", "abc"])
    assert "'abc' is not 32 hexadecimal digits" in capsys.readouterr().err
    with pytest.raises(ValueError, match="exactly one of md5 and no_md5_reason"):
        download(["x"], tmp_path / "file.tgz")
    assert not any(tmp_path.iterdir())


def test_command_line_failure_exits_with_every_reason(server, tmp_path):
    with pytest.raises(SystemExit) as exit:
        main(
            ["--out", str(tmp_path / "file.tgz"), "--md5", MD5, "--url", f"{server}/missing", "--url", f"{server}/page"]
        )
    message = str(exit.value.code)
    assert message.startswith("download failed: no source of file.tgz passed its checks:")
    assert f"{server}/missing: HTTP 404" in message and f"{server}/page: an HTML page" in message
