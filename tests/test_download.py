"""The download step against a local HTTP server: good, corrupted, interrupted, redirected."""

import hashlib
import http.server
import threading

import pytest

from workflow_src.download import DownloadError, download

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB
MD5 = hashlib.md5(PAYLOAD).hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    """/good: the payload, with byte ranges; /corrupt: wrong bytes; /flaky: the first request is
    cut off half way; /redirect: 302 to /good; /missing: 404."""

    requests: list = []
    flaky_calls = 0

    def log_message(self, *args):
        pass

    def do_GET(self):
        Handler.requests.append((self.path, self.headers.get("Range")))
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/good")
            self.end_headers()
            return
        if self.path == "/missing":
            self.send_error(404)
            return
        body = PAYLOAD if self.path in ("/good", "/flaky") else PAYLOAD[:-10] + b"x" * 10
        start = 0
        if self.headers.get("Range"):
            start = int(self.headers["Range"].removeprefix("bytes=").split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        if self.path == "/flaky" and Handler.flaky_calls == 0:
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
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def quiet(message):
    pass


def test_good_file_is_verified_and_complete(server, tmp_path):
    out = tmp_path / "a" / "file.tgz"
    assert download(f"{server}/good", out, MD5, log=quiet) == MD5
    assert out.read_bytes() == PAYLOAD
    assert not out.with_name("file.tgz.part").exists()


def test_md5_mismatch_fails_clearly_and_leaves_nothing(server, tmp_path):
    out = tmp_path / "file.tgz"
    out.write_bytes(b"an older good file")  # what was there before must survive
    with pytest.raises(DownloadError) as err:
        download(f"{server}/corrupt", out, MD5, retries=0, log=quiet)
    message = str(err.value)
    assert f"{server}/corrupt" in message and MD5 in message and "md5 mismatch" in message
    assert out.read_bytes() == b"an older good file"
    assert list(tmp_path.iterdir()) == [out]


def test_partial_file_resumes_with_a_range_request(server, tmp_path):
    out = tmp_path / "file.tgz"
    out.with_name("file.tgz.part").write_bytes(PAYLOAD[:300_000])
    download(f"{server}/good", out, MD5, log=quiet)
    assert out.read_bytes() == PAYLOAD
    assert Handler.requests == [("/good", "bytes=300000-")]


def test_interrupted_transfer_is_retried_from_where_it_stopped(server, tmp_path):
    out = tmp_path / "file.tgz"
    download(f"{server}/flaky", out, MD5, backoff=0.01, log=quiet)
    assert out.read_bytes() == PAYLOAD
    assert Handler.requests[0] == ("/flaky", None)
    assert Handler.requests[1] == ("/flaky", f"bytes={len(PAYLOAD) // 2}-")


def test_redirect_is_followed(server, tmp_path):
    out = tmp_path / "file.tgz"
    download(f"{server}/redirect", out, MD5, log=quiet)
    assert out.read_bytes() == PAYLOAD


def test_missing_file_names_the_url(server, tmp_path):
    out = tmp_path / "file.tgz"
    with pytest.raises(DownloadError, match=r"/missing: HTTP 404"):
        download(f"{server}/missing", out, None, log=quiet)
    assert not any(tmp_path.iterdir())


def test_local_mirror_directory_and_file_url(tmp_path):
    mirror = tmp_path / "mirror" / "x.tgz"
    mirror.parent.mkdir()
    mirror.write_bytes(PAYLOAD)
    for url in (str(mirror), mirror.as_uri()):
        out = tmp_path / "out" / "x.tgz"
        download(url, out, MD5, log=quiet)
        assert out.read_bytes() == PAYLOAD
        out.unlink()
    with pytest.raises(DownloadError, match="no such file in the local mirror"):
        download(str(tmp_path / "nope.tgz"), tmp_path / "out" / "y.tgz", None, log=quiet)
