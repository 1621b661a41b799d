"""Real-data preparation against a local HTTP mirror that reproduces the real layouts.

The mirror holds the real IWSLT17 test archives and PTB / WikiText-2 files of
../shared/fixtures/real, packed as their real archives, plus IWSLT16 and WMT17 archives built in
their real layouts. The workflow downloads everything through the mirror's quirks (a redirect,
a connection cut half way), prepares it, and writes the statistics table; corrupted, truncated
and missing files fail with a message naming the URL and leave nothing Snakemake would take
for done.
"""

import csv
import hashlib
import http.server
import io
import json
import shutil
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, real_fixture
from tests.test_workflow import snakemake
from workflow_src import demo_world

IWSLT17 = {"de-en.tgz": "e3f5b2a075a2da1a395c8b60bf1e9be1", "en-de.tgz": "b68e7097b179491f6c466ef41ad72b9b"}
WMT = "wmt17/translation-task"


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
    """A WMT17-shaped en-de / de-en / en-fi source list (plain, sgm and tab-separated members)."""
    def e(archive, source, target):
        return {"archive": f"{root}/{archive}", "source": source, "target": target}

    europarl = "wmt13/training-parallel-europarl-v7.tgz"
    return {
        "de-en": {"train": [e(europarl, "training/europarl-v7.de-en.de", "training/europarl-v7.de-en.en")],
                  "dev": [e(f"{WMT}/dev.tgz", "dev/newstest2014-deen-src.de.sgm", "dev/newstest2014-deen-ref.en.sgm")],
                  "test": [e(f"{WMT}/dev.tgz", "dev/newstest2015-deen-src.de.sgm", "dev/newstest2015-deen-ref.en.sgm")]},
        "en-de": {"train": [e(europarl, "training/europarl-v7.de-en.en", "training/europarl-v7.de-en.de")],
                  "dev": [e(f"{WMT}/dev.tgz", "dev/newstest2014-deen-src.en.sgm", "dev/newstest2014-deen-ref.de.sgm")],
                  "test": [e(f"{WMT}/dev.tgz", "dev/newstest2015-ende-src.en.sgm", "dev/newstest2015-ende-ref.de.sgm")]},
        "en-fi": {"train": [e(f"{WMT}/training-parallel-ep-v8.tgz", "training/europarl-v8.fi-en.en", "training/europarl-v8.fi-en.fi"),
                            {"archive": f"{root}/wmt15/wiki-titles.tgz", "tsv": "wiki/fi-en/titles.fi-en",
                             "source_column": 2, "target_column": 1}],
                  "dev": [e(f"{WMT}/dev.tgz", "dev/newstest2015-enfi-src.en.sgm", "dev/newstest2015-enfi-ref.fi.sgm")],
                  "test": [e(f"{WMT}/dev.tgz", "dev/newstest2016-enfi-src.en.sgm", "dev/newstest2016-enfi-ref.fi.sgm")]},
    }


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirror")
    size = demo_world.WorldSize(nouns=80, verbs=20, adjectives=10, names=10)
    demo_world.write_mirror(root / "wit3", "2016-01/texts/{src}/{tgt}/{src}-{tgt}.tgz",
                            "2016-01-test/texts/{src}/{tgt}/{src}-{tgt}.tgz", ["fr-en"], {}, size, seed=4,
                            n_train=300, n_per_test_set=20, n_monolingual=10, dev_sets=["tst2013"], test_sets=["tst2015"])
    world = demo_world.World(["de", "en", "fi"], size, seed=5)
    demo_world.write_wmt_mirror(world, wmt_sources(str(root / "statmt")), n_train=240, n_per_set=30)
    for name in IWSLT17:
        target = root / "wit3-2017" / "2017-01-ted-test" / "texts" / name[:2] / name[3:5] / name
        target.parent.mkdir(parents=True)
        shutil.copyfile(real_fixture("iwslt17-ted-test", name), target)
    ptb = {split: real_fixture("ptb", f"ptb.{source}.txt").read_bytes()
           for split, source in (("train", "valid"), ("valid", "valid"), ("test", "test"))}
    pack_tgz(root / "mikolov" / "simple-examples.tgz",
             {f"./simple-examples/data/ptb.{split}.txt": data for split, data in ptb.items()})
    (root / "smerity").mkdir()
    with zipfile.ZipFile(root / "smerity" / "wikitext-2-v1.zip", "w") as z:
        for split, source in (("train", "valid"), ("valid", "valid"), ("test", "test")):
            z.writestr(f"wikitext-2/wiki.{split}.tokens", real_fixture("wikitext-2", f"{source}.txt").read_bytes())
    return root


class MirrorHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the mirror with byte ranges. /moved/<path> redirects to /<path>; the first request
    of each /flaky/<path> is cut off half way; /truncated/<path> always is; /corrupt/<path>
    serves the file with its last byte changed."""

    directory = None
    served_flaky: set = set()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=str(self.directory), **kwargs)

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path
        if path.startswith("/moved/"):
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


def config_for(server: str, mirror: Path, checksums: dict) -> dict:
    config = yaml.safe_load((REPO / "config.demo.yaml").read_text())
    del config["demo"]
    config["mirrors"] = {"wit3": f"{server}/moved/wit3", "statmt": f"{server}/flaky/statmt",
                         "mikolov": f"{server}/mikolov", "smerity": f"{server}/smerity",
                         "wit3-2017": f"{server}/wit3-2017", "broken": f"{server}/corrupt/statmt",
                         "cut": f"{server}/truncated/statmt"}
    config["download"] = {"retries": 1, "backoff": 0.05}
    config["checksums"] = checksums
    sources = {pair: {split: [{**{k: v for k, v in e.items() if k != "archive"}, "mirror": "statmt",
                               "archive": e["archive"].removeprefix(str(mirror / "statmt") + "/")} for e in entries]
                      for split, entries in splits.items()} for pair, splits in wmt_sources(str(mirror / "statmt")).items()}
    config["datasets"] = {
        "iwslt16": {**config["datasets"]["iwslt16"], "mirror": "wit3", "pairs": ["fr-en"], "dev_sets": ["tst2013"],
                    "test_sets": ["tst2015"]},
        "wmt17": {"kind": "wmt", "pairs": ["en-de", "de-en", "en-fi"], "sources": sources, "max_len": 50, "max_ratio": 9,
                  "src_vocab_size": 1000, "tgt_vocab_size": 1000, "emb_vocab_size": 1000, "bpe_merges": {"src": 100, "tgt": 100}},
        "ptb": {"kind": "lm", "mirror": "mikolov", "archive": "simple-examples.tgz",
                "members": {s: f"simple-examples/data/ptb.{s}.txt" for s in ("train", "valid", "test")}},
        "wikitext2": {"kind": "lm", "mirror": "smerity", "archive": "wikitext-2-v1.zip",
                      "members": {s: f"wikitext-2/wiki.{s}.tokens" for s in ("train", "valid", "test")}},
    }
    config["monolingual"] = {}
    config["papers"] = {}
    return config


def run_with(tmp_path: Path, config: dict, *targets: str, check=True):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml"), "--cores", "2", *targets, check=check)


def test_every_corpus_is_fetched_through_the_mirror_and_prepared(mirror, server, tmp_path):
    checksums = {f"wit3-2017/2017-01-ted-test/texts/{n[:2]}/{n[3:5]}/{n}": digest for n, digest in IWSLT17.items()}
    checksums[f"statmt/{WMT}/dev.tgz"] = md5(mirror / "statmt" / WMT / "dev.tgz")
    config = config_for(server, mirror, checksums)
    real_iwslt17 = [f"resources/wit3-2017/2017-01-ted-test/texts/{n[:2]}/{n[3:5]}/{n}" for n in IWSLT17]
    run_with(tmp_path, config, "results/data_statistics.csv", *real_iwslt17)
    for path in real_iwslt17:  # the real archives, verified against their real checksums
        assert md5(tmp_path / path) == IWSLT17[Path(path).name]
    log = (tmp_path / f"logs/download/statmt/{WMT}/dev.tgz.log").read_text()
    assert "resuming" in log and "verified" in log  # the cut-off transfer resumed, then matched
    with open(tmp_path / "results/data_statistics.csv") as f:
        rows = {(r["corpus"], r["pair or language"], r["quantity"]): r for r in csv.DictReader(f)}
    assert rows[("wmt17", "en-fi", "training pairs before cleaning")]["ours"] == "240"  # Europarl v8 + wiki headlines
    assert rows[("wmt17", "en-fi", "training pairs")]["paper"] == "2500000"
    assert int(rows[("wmt17", "en-de", "test pairs")]["ours"]) == 30
    assert rows[("iwslt16", "fr-en", "training pairs")]["source"] == "vMF §4.1"
    ptb = json.loads((tmp_path / "results/data/ptb/stats.json").read_text())
    assert ptb["test"]["words"] == 78669 and ptb["test"]["tokens"] == 78669 + 3761  # Mikolov's PTB test set
    assert rows[("ptb", "-", "test tokens")]["paper"] == "82000"
    wikitext = json.loads((tmp_path / "results/data/wikitext2/stats.json").read_text())
    assert wikitext["valid"]["out_of_vocabulary"] == 0.0  # trained on its own validation text here
    en_fi = (tmp_path / "results/data/wmt17/en-fi/tok/train.fi").read_text().splitlines()
    assert len(en_fi) == int(rows[("wmt17", "en-fi", "training pairs")]["ours"]) > 0


@pytest.mark.parametrize("mirror_name, expected", [
    ("broken", "md5 mismatch: expected"),
    ("cut", "giving up after 2 attempts"),
    ("missing", "HTTP 404"),
])
def test_bad_downloads_fail_clearly_and_leave_no_output(mirror, server, tmp_path, mirror_name, expected):
    path = f"{WMT}/dev.tgz"
    checksums = {f"broken/{path}": md5(mirror / "statmt" / path)}
    config = config_for(server, mirror, checksums)
    config["mirrors"]["missing"] = f"{server}/nowhere"
    result = run_with(tmp_path, config, f"resources/{mirror_name}/{path}", check=False)
    assert result.returncode != 0
    log = (tmp_path / f"logs/download/{mirror_name}/{path}.log").read_text()
    assert expected in log and f"{server}" in log
    assert not (tmp_path / f"resources/{mirror_name}/{path}").exists()
