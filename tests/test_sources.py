"""The configured sources: each answers today's layout, is pinned by md5 or says why not, and
every file a data set names is one of them."""

import pytest
import yaml

from tests.conftest import REPO
from workflow_src.data import sources


@pytest.fixture(scope="module", params=["config.yaml", "config.demo.yaml"])
def config(request):
    return yaml.safe_load((REPO / request.param).read_text())


def named_sources(config):
    """(data set, source key) of every file a data set or corpus reads."""
    for name, d in config["datasets"].items():
        if d["kind"] == "lm":
            yield name, d["archive"]
        elif d["kind"] == "iwslt":
            for pair in d["pairs"]:
                src, tgt = pair.split("-")
                for a in d["archives"]:
                    yield name, a["source"].format(src=src, tgt=tgt)
        else:
            for splits in d["sources"].values():
                for entries in splits.values():
                    yield from ((name, e["archive"]) for e in entries)


def test_every_source_is_pinned_or_says_why(config):
    for key, entry in config["sources"].items():
        assert ("md5" in entry) != ("no_md5_reason" in entry), key
        assert entry["urls"], key


def test_every_named_file_is_a_source_with_urls(config):
    for dataset, key in named_sources(config):
        assert key in config["sources"], f"{dataset} reads {key}, which is not in sources"
        assert all(sources.urls(config, key)), key


def test_full_config_uses_no_host_that_stopped_answering():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    urls = [url for key in config["sources"] for url in sources.urls(config, key)]
    assert not [url for url in urls if "wit3.fbk.eu" in url]  # 404 since 2021 (fairseq #3623)
    iwslt = [key for name, key in named_sources(config) if name == "iwslt16"]
    # train and dev from the 2016-01 bundle (torchtext's md5), tst2015/2016 from IWSLT 2017's archives
    assert config["sources"]["iwslt16/2016-01.tgz"]["md5"] == "c393ed3fc2a1b0f004b3331043f615ae"
    assert "wit3/2017-01-ted-test/texts/en/fr/en-fr.tgz" in iwslt  # fr-en's tst2016 references
    assert config["sources"]["wmt15/wiki-titles.tgz"]["md5"] == "f74eef43032766d55884a5073ed8ce27"


def test_mirror_names_expand_and_an_unknown_one_is_named():
    config = {
        "mirrors": {"statmt": "http://data.statmt.org/", "local": "/data/copies"},
        "sources": {
            "a.tgz": {"urls": ["{statmt}/wmt16/a.tgz", "{local}/a.tgz"]},
            "b.tgz": {"urls": ["{nowhere}/b.tgz"]},
        },
    }
    assert sources.urls(config, "a.tgz") == ["http://data.statmt.org/wmt16/a.tgz", "/data/copies/a.tgz"]
    with pytest.raises(ValueError, match=r"sources\.b\.tgz: no mirror named 'nowhere'"):
        sources.urls(config, "b.tgz")
    with pytest.raises(ValueError, match="no entry for 'c.tgz'"):
        sources.entry(config, "c.tgz")
    with pytest.raises(ValueError, match="not a local path"):
        sources.local_path(config, "a.tgz")
