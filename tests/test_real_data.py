"""Real-data preparation against a local HTTP mirror that reproduces the real layouts and quirks.

The mirror holds the real IWSLT17 ted-test archives and PTB / WikiText-2 files of
../shared/fixtures/real, packed as their real archives, plus the IWSLT16 bundle, IWSLT17 trnted
and WMT17 archives built in their real layouts around real German-English sentence pairs (the
WMT sample there; en-fi's Finnish is the demo world's): `|||` wiki headlines, a News Commentary
member with a lone carriage return on one side, and a U+0085 inside a Europarl line. A News
Crawl file of real English and a slice of the real PTB serve the chain test, which carries the
real text on through BPE, embeddings, alignment, training, decoding, scoring and rendering.
The sources are configured as config.yaml's, each with its quirk on the way: an HTML page where
the bundle belongs, then Drive's confirmation page in front of it; a first mirror that is down;
a redirect; a connection cut half way. The workflow downloads, extracts and prepares
everything and writes the statistics table; corrupted, truncated, missing and HTML downloads
fail with a message naming the URL and leave nothing Snakemake would take for done.
"""

import csv
import gzip
import hashlib
import html
import http.server
import json
import shutil
import tarfile
import threading
import urllib.parse
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, pack_tgz, real_fixture, snakemake
from tests.google_drive import DRIVE_ID, drive_confirmation
from workflow_src.data import demo_language, demo_world

IWSLT17 = {"de-en.tgz": "e3f5b2a075a2da1a395c8b60bf1e9be1", "en-de.tgz": "b68e7097b179491f6c466ef41ad72b9b"}
WMT = "wmt17/translation-task"
BUNDLE = "iwslt16/2016-01.tgz"
NEWS = "news-crawl/en/news.2015.en.shuffled.deduped.gz"
PTB_SLICE = "ptb/slice/simple-examples.tgz"
NEL = "\u0085"  # NEXT LINE: a line break to str.splitlines(), a character inside a line to every release


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def wmt_sources(root: str) -> dict:
    """A WMT17-shaped en-de / de-en / en-fi source list: plain members (News Commentary among
    them), `|||` headlines, and sgm sets."""

    def e(archive, source, target):
        return {"archive": f"{root}/{archive}", "source": source, "target": target}

    europarl = "wmt13/training-parallel-europarl-v7.tgz"
    nc = f"{WMT}/training-parallel-nc-v12.tgz"
    return {
        "de-en": {
            "train": [
                e(europarl, "training/europarl-v7.de-en.de", "training/europarl-v7.de-en.en"),
                e(nc, "training/news-commentary-v12.de-en.de", "training/news-commentary-v12.de-en.en"),
            ],
            "dev": [e(f"{WMT}/dev.tgz", "dev/newstest2014-deen-src.de.sgm", "dev/newstest2014-deen-ref.en.sgm")],
            "test": [e(f"{WMT}/dev.tgz", "dev/newstest2015-deen-src.de.sgm", "dev/newstest2015-deen-ref.en.sgm")],
        },
        "en-de": {
            "train": [
                e(europarl, "training/europarl-v7.de-en.en", "training/europarl-v7.de-en.de"),
                e(nc, "training/news-commentary-v12.de-en.en", "training/news-commentary-v12.de-en.de"),
            ],
            "dev": [e(f"{WMT}/dev.tgz", "dev/newstest2014-deen-src.en.sgm", "dev/newstest2014-deen-ref.de.sgm")],
            "test": [e(f"{WMT}/dev.tgz", "dev/newstest2015-ende-src.en.sgm", "dev/newstest2015-ende-ref.de.sgm")],
        },
        "en-fi": {
            "train": [
                e(
                    f"{WMT}/training-parallel-ep-v8.tgz",
                    "training/europarl-v8.fi-en.en",
                    "training/europarl-v8.fi-en.fi",
                ),
                {
                    "archive": f"{root}/wmt15/wiki-titles.tgz",
                    "delimited": "wiki/fi-en/titles.fi-en",
                    "delimiter": "|||",
                    "source_column": 2,
                    "target_column": 1,
                },
            ],
            "dev": [e(f"{WMT}/dev.tgz", "dev/newstest2015-enfi-src.en.sgm", "dev/newstest2015-enfi-ref.fi.sgm")],
            "test": [e(f"{WMT}/dev.tgz", "dev/newstest2016-enfi-src.en.sgm", "dev/newstest2016-enfi-ref.fi.sgm")],
        },
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


class RealText:
    """A stand-in for the demo world whose German and English sentences are real: the WMT news,
    Europarl and CommonCrawl pairs of ../shared/fixtures/real/wmt-toy-ende, unescaped back to
    their raw characters (the sample is Moses-escaped), kept to 25 tokens a side so that toy
    models train on them in seconds. Each stream gets its own slice of the sample (the same on
    every call), so training, development and test text are disjoint; pairs with another language
    (en-fi) fall back to `world`."""

    def __init__(self, world: demo_language.World):
        self.world = world
        sides = {
            lang: real_fixture("wmt-toy-ende", f"{side}-train.txt").read_text().splitlines()
            for lang, side in (("en", "src"), ("de", "tgt"))
        }
        self.pairs = [
            {lang: html.unescape(line) for lang, line in zip(sides, lines)}
            for lines in zip(*sides.values())
            if all(0 < len(line.split()) <= 25 for line in lines)
        ]
        self.streams: dict[str, list[dict[str, str]]] = {}
        self.used = 0

    def parallel(self, languages: list[str], n: int, stream: str) -> list[dict[str, str]]:
        if not set(languages) <= {"de", "en"}:
            return self.world.parallel(languages, n, stream)
        if stream not in self.streams:
            self.streams[stream] = self.pairs[self.used : self.used + n]
            self.used += n
            assert len(self.streams[stream]) == n, "the real sample ran out"
        return [{lang: pair[lang] for lang in languages} for pair in self.streams[stream]]


IWSLT = {
    "pairs": ["de-en"],
    "dev_sets": ["tst2013"],
    "test_sets": ["tst2015", "tst2016"],
    "bundle_member": "2016-01/texts/{src}/{tgt}/{src}-{tgt}.tgz",
}


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """The served files, at the paths config.yaml's source keys name."""
    root = tmp_path_factory.mktemp("mirror")
    size = demo_language.WorldSize(nouns=80, verbs=20, adjectives=10, names=10)
    iwslt = {
        **IWSLT,
        "bundle": str(root / BUNDLE),
        "trnted": str(root / "wit3/2017-01-trnted/texts/{src}/{tgt}/{src}-{tgt}.tgz"),
        "ted_test": str(root / "generated-ted-test/{src}-{tgt}.tgz"),
    }  # tst2016: the real archives instead
    real = RealText(demo_language.World(["de", "en", "fi"], size, seed=5))
    demo_world.write_iwslt_mirror(real, iwslt, n_train=300, n_per_test_set=20)
    for name in IWSLT17:
        target = root / "wit3" / "2017-01-ted-test" / "texts" / name[:2] / name[3:5] / name
        target.parent.mkdir(parents=True)
        shutil.copyfile(real_fixture("iwslt17-ted-test", name), target)
    demo_world.write_wmt_mirror(real, wmt_sources(str(root)), n_train=240, n_per_set=30)
    with_next_line_character(root / "wmt13/training-parallel-europarl-v7.tgz", "training/europarl-v7.de-en.de", 7)
    (root / NEWS).parent.mkdir(parents=True)
    (root / NEWS).write_bytes(
        gzip.compress("".join(p["en"] + "\n" for p in real.parallel(["en"], 2000, "news")).encode())
    )
    ptb = {
        split: real_fixture("ptb", f"ptb.{source}.txt").read_bytes()
        for split, source in (("train", "valid"), ("valid", "valid"), ("test", "test"))
    }
    pack_tgz(
        root / "ptb" / "simple-examples.tgz",
        {f"./simple-examples/data/ptb.{split}.txt": data for split, data in ptb.items()},
    )
    pack_tgz(root / PTB_SLICE, {f"./simple-examples/data/ptb.{split}.txt": data for split, data in ptb_slice().items()})
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
            return self.send_page(
                b"<!DOCTYPE html><html><head><title>WIT3 - Page not found</title></head><body>"
                b"The archive has moved.</body></html>",
                "text/html",
            )
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
            self.wfile.write(data[start : start + (len(data) - start) // 2])
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
        BUNDLE: {
            "md5": md5(mirror / BUNDLE),
            "urls": [f"{server}/html/{BUNDLE}", f"{server}/uc?export=download&id={DRIVE_ID}"],
        },
        # the real archives, by their real md5s
        **{
            f"wit3/2017-01-ted-test/texts/{n[:2]}/{n[3:5]}/{n}": {
                "md5": digest,
                "urls": [f"{server}/wit3/2017-01-ted-test/texts/{n[:2]}/{n[3:5]}/{n}"],
            }
            for n, digest in IWSLT17.items()
        },
        # a first mirror that is down, then a redirect
        **{
            f"wit3/2017-01-trnted/texts/{p[:2]}/{p[3:]}/{p}.tgz": {
                "no_md5_reason": generated,
                "urls": [f"{server}/down/{p}.tgz", f"{server}/moved/wit3/2017-01-trnted/texts/{p[:2]}/{p[3:]}/{p}.tgz"],
            }
            for p in ("de-en", "en-de")
        },
        # a connection cut half way, resumed
        **{key: {"no_md5_reason": generated, "urls": [f"{server}/flaky/{key}"]} for key in wmt_keys},
        f"{WMT}/dev.tgz": {"md5": md5(mirror / WMT / "dev.tgz"), "urls": [f"{server}/flaky/{WMT}/dev.tgz"]},
        "ptb/simple-examples.tgz": {"no_md5_reason": generated, "urls": [f"{server}/ptb/simple-examples.tgz"]},
        "wikitext/wikitext-2-v1.zip": {"no_md5_reason": generated, "urls": [f"{server}/wikitext/wikitext-2-v1.zip"]},
    }
    config["mirrors"] = {}
    sources = {
        pair: {
            split: [{**e, "archive": e["archive"].lstrip("/")} for e in entries] for split, entries in splits.items()
        }
        for pair, splits in wmt17.items()
    }
    config["datasets"] = {
        "iwslt16": {
            **full["datasets"]["iwslt16"],
            **{k: v for k, v in IWSLT.items() if k != "bundle_member"},
            "max_len": 50,
            "src_vocab_size": 1000,
            "tgt_vocab_size": 1000,
            "emb_vocab_size": 1000,
            "bpe_merges": {"src": 100, "tgt": 100},
        },
        "wmt17": {
            "kind": "wmt",
            "pairs": ["en-de", "de-en", "en-fi"],
            "sources": sources,
            "max_len": 50,
            "max_len_unit": "word",
            "max_ratio": 9,
            "src_vocab_size": 1000,
            "tgt_vocab_size": 1000,
            "emb_vocab_size": 1000,
            "bpe_merges": {"src": 100, "tgt": 100},
        },
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
    assert int(rows_of(tmp_path)[("wmt17", "de-en", "training pairs")]["ours"]) == int(
        rows_of(tmp_path)[("wmt17", "en-de", "training pairs")]["ours"]
    )
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


@pytest.mark.parametrize(
    "route, expected",
    [
        ("corrupt", "md5 mismatch: expected"),
        ("truncated", "giving up after 2 attempts"),
        ("nowhere", "HTTP 404"),
        ("html", "WIT3 - Page not found"),
    ],
)
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


def ptb_slice() -> dict[str, bytes]:
    """A slice of the real PTB at toy size, its vocabulary closed as the real one's: train holds
    400 lines of the real validation text, then the slice's validation and test lines."""
    valid, test = (
        real_fixture("ptb", f"ptb.{split}.txt").read_text().splitlines(keepends=True) for split in ("valid", "test")
    )
    splits = {"valid": valid[400:450], "test": test[:50]}
    splits["train"] = valid[:400] + splits["valid"] + splits["test"]
    return {split: "".join(lines).encode() for split, lines in splits.items()}


CHAIN_PAPERS = {
    "vmf": {"table1": {"rows": ["word2word-ce", "word2emb-word2vec-nllvmf_reg1"], "pairs": {"iwslt16": ["de-en"]}}},
    "joint": {"table1": {"queries": ["the", "is", "and"]}},
    # the grid names WikiText-2 too, which is not configured here (its column says so)
    "tying": {
        "table1": {
            "rows": [f"lm-small-{v}" for v in ("vd", "al", "re", "real")],
            "tune": {"gamma": {"ptb": [0.65], "wikitext2": [1.25]}},
        }
    },
}


def chain_config(server: str, mirror: Path) -> dict:
    """config_for's sources at toy sizes, for one table of each model family: vMF Table 1's CE and
    NLLvMF rows on IWSLT16 de-en (tested on the real tst2016), joint Table 1 on WMT17 de-en, and
    tying Table 1's small rows on a slice of the real PTB; English embeddings from a News Crawl
    file of real English."""
    config = config_for(server, mirror)
    datasets = config["datasets"]
    iwslt = {k: v for k, v in datasets["iwslt16"].items() if k != "note"}  # the note is the real hosts'
    config["datasets"] = {
        "iwslt16": {**iwslt, "test_sets": ["tst2016"]},
        "wmt17": {**datasets["wmt17"], "pairs": ["de-en"], "bpe_sizes": {"32k": 100}},
        "ptb": {**datasets["ptb"], "archive": PTB_SLICE},
    }
    config["sources"] |= {
        NEWS: {
            "no_md5_reason": "generated in the real layout by the test, not the real file",
            "urls": [f"{server}/{NEWS}"],
        },
        PTB_SLICE: {"md5": md5(mirror / PTB_SLICE), "urls": [f"{server}/{PTB_SLICE}"]},
    }
    config["monolingual"] = {"en": {"use": "news2015", "max_sentences": None, "corpora": {"news2015": [NEWS]}}}
    config["papers"] = CHAIN_PAPERS
    # the demo's toy sizes, smaller still: 32 units, one layer, one epoch
    config["model"] |= {"hidden": 32, "src_embedding": 32, "tgt_embedding": 32}
    config["architectures"]["joint"] |= {
        "encoder_layers": 1,
        "decoder_layers": 1,
        "hidden": 32,
        "src_embedding": 32,
        "tgt_embedding": 32,
    }
    config["embeddings"]["word2vec"] |= {"dim": 32, "epochs": 5}
    config["train"] |= {"max_epochs": 1, "patience": 1, "batch_size": 32, "overrides": {}}
    config["lm"] |= {"max_epochs": {size: 1 for size in config["lm"]["max_epochs"]}, "batch_size": 10, "bptt": 20}
    return config


def csv_rows(path: Path) -> dict[str, list[dict]]:
    with open(path) as f:
        rows = {}
        for r in csv.DictReader(f):
            rows.setdefault(r.get("experiment") or r.get("query"), []).append(r)
        return rows


def test_every_rule_after_preparation_runs_on_real_text(mirror, server, tmp_path):
    """BPE, embeddings, alignment, training, decoding, scoring and rendering of one table per
    model family, on the mirror's real text."""
    run_with(
        tmp_path,
        chain_config(server, mirror),
        "results/vmf/table1.csv",
        "results/joint/table1.csv",
        "results/tying/table1.csv",
    )
    host = f"from {urllib.parse.urlparse(server).netloc}"
    # the prepared text is the mirror's: real English from the WMT sample, the real tst2016, PTB's slice
    sample = real_fixture("wmt-toy-ende", "src-train.txt").read_text().splitlines()
    english = {" ".join(html.unescape(line).split()) for line in sample}
    data = tmp_path / "results/data"
    for corpus in ("iwslt16", "wmt17"):
        raw = (data / f"{corpus}/de-en/raw/train.en").read_text().splitlines()
        assert raw and all(" ".join(line.split()) in english for line in raw)
    test_segments = json.loads((data / "iwslt16/de-en/raw/evaluation.stats.json").read_text())["splits"]["test"][
        "segments"
    ]
    assert test_segments == 1133  # the real tst2016 alone
    assert json.loads((data / "ptb/stats.json").read_text())["test"]["words"] == len(ptb_slice()["test"].split())
    # vMF Table 1: CE and NLLvMF, trained, decoded on tst2016 and scored
    vmf = csv_rows(tmp_path / "results/vmf/table1.csv")
    assert sorted(vmf) == ["word2emb-word2vec-nllvmf_reg1", "word2word-ce"]
    for experiment, (row,) in vmf.items():
        assert float(row["de-en ours"]) >= 0 and row["fr-en ours"] == "" and host in row["data"]
        hypotheses = tmp_path / f"results/models/iwslt16/de-en/{experiment}/seed1/test.greedy.hyp"
        assert len(hypotheses.read_text().splitlines()) == test_segments
    assert (tmp_path / "results/align/iwslt16/de-en/dict.tsv").stat().st_size > 0
    # joint Table 1: the nearest BPE pieces of each query, with their cosines, in every model's column
    joint = csv_rows(tmp_path / "results/joint/table1.csv")
    assert sorted(joint) == ["and", "is", "the"]
    for row in (r for rows in joint.values() for r in rows):
        for side in ("NMT Input", "NMT Output", "NMT-tied Input/Output", "NMT-joint Input", "NMT-joint Output"):
            assert -1 <= float(row[f"{side} ours"].rsplit("(", 1)[1].rstrip(")")) <= 1
    # tying Table 1: the small rows' perplexities on PTB
    tying = csv_rows(tmp_path / "results/tying/table1.csv")
    assert sorted(tying) == [f"lm-small-{v}" for v in ("al", "re", "real", "vd")]
    for (row,) in tying.values():
        assert (
            float(row["PTB valid ours"]) > 1 and float(row["PTB test ours"]) > 1 and row["Wikitext-2 test ours"] == ""
        )
        assert host in row["data"]
