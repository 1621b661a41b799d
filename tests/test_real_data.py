"""Real-data preparation against a local HTTP mirror that reproduces the real layouts and quirks.

The mirror holds the real IWSLT17 ted-test archives and PTB / WikiText-2 files of
../shared/fixtures/real, packed as their real archives, plus the IWSLT16 bundle, IWSLT17 trnted
and WMT17 archives built in their real layouts by the demo world: `|||` wiki headlines, a News
Commentary member with a lone carriage return on one side, and a U+0085 inside a Europarl line.
The sources are configured as config.yaml's, each with its quirk on the way: an HTML page where
the bundle belongs, then Drive's confirmation page in front of it; a first mirror that is down;
a redirect; a connection cut half way. The workflow downloads, extracts and prepares
everything and writes the statistics table; corrupted, truncated, missing and HTML downloads
fail with a message naming the URL and leave nothing Snakemake would take for done.
"""

import csv
import hashlib
import http.server
import io
import json
import shutil
import tarfile
import threading
import urllib.parse
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, real_fixture
from tests.test_download import DRIVE_ID, drive_confirmation
from tests.test_workflow import snakemake
from workflow_src import demo_world

IWSLT17 = {"de-en.tgz": "e3f5b2a075a2da1a395c8b60bf1e9be1", "en-de.tgz": "b68e7097b179491f6c466ef41ad72b9b"}
WMT = "wmt17/translation-task"
BUNDLE = "iwslt16/2016-01.tgz"
NEL = "\u0085"  # NEXT LINE: a line break to str.splitlines(), a character inside a line to every release


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def pack_tgz(path: Path, members: dict[str, bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def wmt_sources(root: str) -> dict:
    """A WMT17-shaped en-de / de-en / en-fi source list: plain members (News Commentary among
    them), `|||` headlines, and sgm sets."""
    def e(archive, source, target):
        return {"archive": f"{root}/{archive}", "source": source, "target": target}

    europarl = "wmt13/training-parallel-europarl-v7.tgz"
    nc = f"{WMT}/training-parallel-nc-v12.tgz"
    return {
        "de-en": {"train": [e(europarl, "training/europarl-v7.de-en.de", "training/europarl-v7.de-en.en"),
                            e(nc, "training/news-commentary-v12.de-en.de", "training/news-commentary-v12.de-en.en")],
                  "dev": [e(f"{WMT}/dev.tgz", "dev/newstest2014-deen-src.de.sgm", "dev/newstest2014-deen-ref.en.sgm")],
                  "test": [e(f"{WMT}/dev.tgz", "dev/newstest2015-deen-src.de.sgm", "dev/newstest2015-deen-ref.en.sgm")]},
        "en-de": {"train": [e(europarl, "training/europarl-v7.de-en.en", "training/europarl-v7.de-en.de"),
                            e(nc, "training/news-commentary-v12.de-en.en", "training/news-commentary-v12.de-en.de")],
                  "dev": [e(f"{WMT}/dev.tgz", "dev/newstest2014-deen-src.en.sgm", "dev/newstest2014-deen-ref.de.sgm")],
                  "test": [e(f"{WMT}/dev.tgz", "dev/newstest2015-ende-src.en.sgm", "dev/newstest2015-ende-ref.de.sgm")]},
        "en-fi": {"train": [e(f"{WMT}/training-parallel-ep-v8.tgz", "training/europarl-v8.fi-en.en", "training/europarl-v8.fi-en.fi"),
                            {"archive": f"{root}/wmt15/wiki-titles.tgz", "delimited": "wiki/fi-en/titles.fi-en",
                             "delimiter": "|||", "source_column": 2, "target_column": 1}],
                  "dev": [e(f"{WMT}/dev.tgz", "dev/newstest2015-enfi-src.en.sgm", "dev/newstest2015-enfi-ref.fi.sgm")],
                  "test": [e(f"{WMT}/dev.tgz", "dev/newstest2016-enfi-src.en.sgm", "dev/newstest2016-enfi-ref.fi.sgm")]},
    }


def with_next_line_character(archive: Path, member: str, line: int) -> None:
    """Repack `archive` with a U+0085 inside line `line` (0-based) of `member`."""
    with tarfile.open(archive) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    lines = members[member].split(b"\n")
    lines[line] = lines[line].replace(b" ", f" {NEL}".encode(), 1)
    members[member] = b"\n".join(lines)
    archive.unlink()
    pack_tgz(archive, members)


IWSLT = {"pairs": ["de-en"], "dev_sets": ["tst2013"], "test_sets": ["tst2015", "tst2016"],
         "bundle_member": "2016-01/texts/{src}/{tgt}/{src}-{tgt}.tgz"}


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """The served files, at the paths config.yaml's source keys name."""
    root = tmp_path_factory.mktemp("mirror")
    size = demo_world.WorldSize(nouns=80, verbs=20, adjectives=10, names=10)
    iwslt = {**IWSLT, "bundle": str(root / BUNDLE), "trnted": str(root / "wit3/2017-01-trnted/texts/{src}/{tgt}/{src}-{tgt}.tgz"),
             "ted_test": str(root / "generated-ted-test/{src}-{tgt}.tgz")}  # tst2016: the real archives instead
    demo_world.write_mirror(iwslt, {}, size, seed=4, n_train=300, n_per_test_set=20, n_monolingual=10)
    for name in IWSLT17:
        target = root / "wit3" / "2017-01-ted-test" / "texts" / name[:2] / name[3:5] / name
        target.parent.mkdir(parents=True)
        shutil.copyfile(real_fixture("iwslt17-ted-test", name), target)
    world = demo_world.World(["de", "en", "fi"], size, seed=5)
    demo_world.write_wmt_mirror(world, wmt_sources(str(root)), n_train=240, n_per_set=30)
    with_next_line_character(root / "wmt13/training-parallel-europarl-v7.tgz", "training/europarl-v7.de-en.de", 7)
    ptb = {split: real_fixture("ptb", f"ptb.{source}.txt").read_bytes()
           for split, source in (("train", "valid"), ("valid", "valid"), ("test", "test"))}
    pack_tgz(root / "ptb" / "simple-examples.tgz",
             {f"./simple-examples/data/ptb.{split}.txt": data for split, data in ptb.items()})
    (root / "wikitext").mkdir()
    with zipfile.ZipFile(root / "wikitext" / "wikitext-2-v1.zip", "w") as z:
        for split, source in (("train", "valid"), ("valid", "valid"), ("test", "test")):
            z.writestr(f"wikitext-2/wiki.{split}.tokens", real_fixture("wikitext-2", f"{source}.txt").read_bytes())
    return root


class MirrorHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the mirror with byte ranges, and the quirks of real hosts:
    /moved/<path> redirects to /<path>; the first request of each /flaky/<path> is cut off half
    way, /truncated/<path> always is; /corrupt/<path> serves the file with its last byte changed;
    /down/<path> answers 404; /html/<path> answers 200 with a page titled like a moved host's;
    /uc?export=download&id=<id> is Drive's confirmation page, whose form leads to /download,
    which serves the bundle."""

    directory = None
    served_flaky: set = set()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=str(self.directory), **kwargs)

    def log_message(self, *args):
        pass

    def send_page(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/uc" and urllib.parse.parse_qs(query).get("id") == [DRIVE_ID]:
            return self.send_page(drive_confirmation(self.server.server_address[1]), "text/html; charset=utf-8")
        if path == "/download":
            path = f"/{BUNDLE}"
        if path.startswith("/html/"):
            return self.send_page(b"<!DOCTYPE html><html><head><title>WIT3 - Page not found</title></head><body>"
                                  b"The archive has moved.</body></html>", "text/html")
        if path.startswith(("/moved/", "/down/")):
            if path.startswith("/down/"):
                return self.send_error(404)
            self.send_response(301)
            self.send_header("Location", path.removeprefix("/moved"))
            self.end_headers()
            return
        mode = next((m for m in ("flaky", "truncated", "corrupt") if path.startswith(f"/{m}/")), None)
        file = Path(self.directory) / path.removeprefix(f"/{mode}" if mode else "").lstrip("/")
        if not file.is_file():
            self.send_error(404)
            return
        data = file.read_bytes()
        if mode == "corrupt":
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        start = int(self.headers["Range"].removeprefix("bytes=").split("-")[0]) if self.headers.get("Range") else 0
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        cut = mode == "truncated" or (mode == "flaky" and path not in MirrorHandler.served_flaky)
        if cut:
            MirrorHandler.served_flaky.add(path)
            self.wfile.write(data[start:start + (len(data) - start) // 2])
            self.close_connection = True
        else:
            self.wfile.write(data[start:])


@pytest.fixture(scope="module")
def server(mirror):
    MirrorHandler.directory = mirror
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MirrorHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def config_for(server: str, mirror: Path) -> dict:
    """config.yaml's data sets and source keys, each source served with a quirk on its way."""
    config = yaml.safe_load((REPO / "config.demo.yaml").read_text())
    full = yaml.safe_load((REPO / "config.yaml").read_text())
    for key in ("demo", "workdir"):
        del config[key]
    config["download"] = {"retries": 1, "backoff": 0.05}
    wmt17 = wmt_sources("")
    wmt_keys = sorted({e["archive"].lstrip("/") for splits in wmt17.values() for es in splits.values() for e in es})
    generated = "generated in the real layout by the test, not the real file"
    config["sources"] = {
        # an HTML page where the bundle belongs, then Drive's confirmation page in front of it
        BUNDLE: {"md5": md5(mirror / BUNDLE), "urls": [f"{server}/html/{BUNDLE}", f"{server}/uc?export=download&id={DRIVE_ID}"]},
        # the real archives, by their real md5s
        **{f"wit3/2017-01-ted-test/texts/{n[:2]}/{n[3:5]}/{n}": {
            "md5": digest, "urls": [f"{server}/wit3/2017-01-ted-test/texts/{n[:2]}/{n[3:5]}/{n}"]} for n, digest in IWSLT17.items()},
        # a first mirror that is down, then a redirect
        **{f"wit3/2017-01-trnted/texts/{p[:2]}/{p[3:]}/{p}.tgz": {
            "no_md5_reason": generated, "urls": [f"{server}/down/{p}.tgz", f"{server}/moved/wit3/2017-01-trnted/texts/{p[:2]}/{p[3:]}/{p}.tgz"]}
           for p in ("de-en", "en-de")},
        # a connection cut half way, resumed
        **{key: {"no_md5_reason": generated, "urls": [f"{server}/flaky/{key}"]} for key in wmt_keys},
        f"{WMT}/dev.tgz": {"md5": md5(mirror / WMT / "dev.tgz"), "urls": [f"{server}/flaky/{WMT}/dev.tgz"]},
        "ptb/simple-examples.tgz": {"no_md5_reason": generated, "urls": [f"{server}/ptb/simple-examples.tgz"]},
        "wikitext/wikitext-2-v1.zip": {"no_md5_reason": generated, "urls": [f"{server}/wikitext/wikitext-2-v1.zip"]},
    }
    config["mirrors"] = {}
    sources = {pair: {split: [{**e, "archive": e["archive"].lstrip("/")} for e in entries] for split, entries in splits.items()}
               for pair, splits in wmt17.items()}
    config["datasets"] = {
        "iwslt16": {**full["datasets"]["iwslt16"], **{k: v for k, v in IWSLT.items() if k != "bundle_member"},
                    "max_len": 50, "src_vocab_size": 1000, "tgt_vocab_size": 1000, "emb_vocab_size": 1000,
                    "bpe_merges": {"src": 100, "tgt": 100}},
        "wmt17": {"kind": "wmt", "pairs": ["en-de", "de-en", "en-fi"], "sources": sources, "max_len": 50, "max_len_unit": "word", "max_ratio": 9,
                  "src_vocab_size": 1000, "tgt_vocab_size": 1000, "emb_vocab_size": 1000, "bpe_merges": {"src": 100, "tgt": 100}},
        "ptb": full["datasets"]["ptb"],
        "wikitext2": full["datasets"]["wikitext2"],
    }
    config["monolingual"] = {}
    config["papers"] = {}
    return config


def run_with(tmp_path: Path, config: dict, *targets: str, check=True):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    return snakemake(tmp_path, *targets, "--configfile", str(tmp_path / "config.yaml"), "--cores", "2", check=check)


def rows_of(workdir: Path) -> dict:
    with open(workdir / "results/data_statistics.csv") as f:
        return {(r["corpus"], r["pair or language"], r["quantity"]): r for r in csv.DictReader(f)}


def test_every_corpus_is_fetched_through_the_mirror_and_prepared(mirror, server, tmp_path):
    config = config_for(server, mirror)
    real_iwslt17 = [f"resources/wit3/2017-01-ted-test/texts/{n[:2]}/{n[3:5]}/{n}" for n in IWSLT17]
    run_with(tmp_path, config, "results/data_statistics.csv", *real_iwslt17)
    for path in real_iwslt17:  # the real archives, verified against their real checksums
        assert md5(tmp_path / path) == IWSLT17[Path(path).name]
    logs = tmp_path / "logs/download"
    bundle_log = (logs / f"{BUNDLE}.log").read_text()
    assert "mirror 1 of 2 failed" in bundle_log and "WIT3 - Page not found" in bundle_log  # HTML, named by its title
    assert "confirmation page" in bundle_log and "using mirror 2 of 2" in bundle_log and "verified" in bundle_log
    trnted_log = (logs / "wit3/2017-01-trnted/texts/de/en/de-en.tgz.log").read_text()
    assert "HTTP 404" in trnted_log and "using mirror 2 of 2" in trnted_log  # the first mirror is down
    dev_log = (logs / f"{WMT}/dev.tgz.log").read_text()
    assert "resuming" in dev_log and "verified" in dev_log  # the cut-off transfer resumed, then matched
    # IWSLT16 de-en: train and dev from the bundle, tst2015 from trnted, tst2016 the real release
    iwslt = tmp_path / "results/data/iwslt16/de-en/raw"
    stats = json.loads((iwslt / "evaluation.stats.json").read_text())
    test_from = " ".join(stats["splits"]["test"]["from"])
    assert "2017-01-trnted" in test_from and "IWSLT17.TED.tst2016.de-en.de.xml" in test_from
    assert "IWSLT17.TED.tst2016.en-de.en.xml" in test_from  # references: the reverse direction's source side
    assert stats["splits"]["test"]["segments"] == 20 + 1133 and stats["undecodable_lines"] == 0
    train = json.loads((iwslt / "train.stats.json").read_text())
    assert "2016-01.tgz::2016-01/texts/de/en/de-en.tgz" in " ".join(train["splits"]["train"]["from"])
    # WMT17 de-en reads en-de's training members the other way round: one extraction, tokenisation
    # and truecasing of them serves both directions; the evaluation sets are each direction's own
    assert not (tmp_path / "results/data/wmt17/de-en/raw/train.de").exists()
    assert (tmp_path / "results/data/wmt17/de-en/tok/test.de").exists()
    assert int(rows_of(tmp_path)[("wmt17", "de-en", "training pairs")]["ours"]) == \
        int(rows_of(tmp_path)[("wmt17", "en-de", "training pairs")]["ours"])
    # the quirks: News Commentary's lone \r and Europarl's U+0085 stay inside their lines
    raw = tmp_path / "results/data/wmt17/en-de/raw"
    lines = {lang: (raw / f"train.{lang}").read_bytes().split(b"\n") for lang in ("de", "en")}
    assert len(lines["de"]) == len(lines["en"]) == 240 + 1  # Europarl and News Commentary, one line each
    assert NEL in lines["de"][7].decode() and not any(b"\r" in line for line in lines["de"] + lines["en"])
    rows = rows_of(tmp_path)
    assert rows[("wmt17", "en-fi", "training pairs before cleaning")]["ours"] == "240"  # Europarl v8 + `|||` headlines
    assert rows[("wmt17", "en-fi", "training pairs")]["paper"] == "2500000"
    assert int(rows[("wmt17", "en-de", "test pairs")]["ours"]) == 30
    assert rows[("iwslt16", "de-en", "training pairs")]["source"] == "vMF §4.1"
    ptb = json.loads((tmp_path / "results/data/ptb/stats.json").read_text())
    assert ptb["test"]["words"] == 78669 and ptb["test"]["tokens"] == 78669 + 3761  # Mikolov's PTB test set
    assert rows[("ptb", "-", "test tokens")]["paper"] == "82000"
    wikitext = json.loads((tmp_path / "results/data/wikitext2/stats.json").read_text())
    assert wikitext["valid"]["out_of_vocabulary"] == 0.0  # trained on its own validation text here
    en_fi = (tmp_path / "results/data/wmt17/en-fi/tok/train.fi").read_text().splitlines()
    assert len(en_fi) == int(rows[("wmt17", "en-fi", "training pairs")]["ours"]) > 0


@pytest.mark.parametrize("route, expected", [
    ("corrupt", "md5 mismatch: expected"),
    ("truncated", "giving up after 2 attempts"),
    ("nowhere", "HTTP 404"),
    ("html", "WIT3 - Page not found"),
])
def test_bad_downloads_fail_clearly_and_leave_no_output(mirror, server, tmp_path, route, expected):
    key = f"{WMT}/dev.tgz"
    config = config_for(server, mirror)
    config["sources"][key]["urls"] = [f"{server}/{route}/{key}"]
    result = run_with(tmp_path, config, f"resources/{key}", check=False)
    assert result.returncode != 0
    log = (tmp_path / f"logs/download/{key}.log").read_text()
    assert expected in log and f"{server}/{route}/{key}" in log
    assert not (tmp_path / f"resources/{key}").exists()
    parts = list((tmp_path / "resources").rglob("*.part"))
    assert parts == ([tmp_path / f"resources/{key}.part"] if route == "truncated" else [])  # a cut transfer resumes
