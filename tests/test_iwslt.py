"""IWSLT extraction on the real IWSLT17 test archives and on archives in the real release layouts
(the 2016-01 bundle with nested archives, 2017-01-trnted, 2017-01-ted-test) written by the demo."""

import io
import json
import tarfile

import pytest

from tests.conftest import BUNDLE_MEMBER, iwslt_spec, real_fixture
from workflow_src.data import demo_language, demo_world, iwslt
from workflow_src.data.archives import CorpusError, Undecodable
from workflow_src.data.iwslt import (
    ArchiveSet,
    extract_evaluation_set,
    extract_train,
    needed_patterns,
    parse_mteval_xml,
    train_tags_lines,
)


def archive_specs(spec, src, tgt):
    """The archives of one direction as the pipeline lists them: the bundle's nested archive, the
    trnted archive, then the ted-test archives of this and the reverse direction."""
    return [
        f"{spec['bundle']}::{BUNDLE_MEMBER.format(src=src, tgt=tgt)}",
        spec["trnted"].format(src=src, tgt=tgt),
        spec["ted_test"].format(src=src, tgt=tgt),
        spec["ted_test"].format(src=tgt, tgt=src),
    ]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirror")
    spec = iwslt_spec(root, ["fr-en"], ["tst2013", "tst2014"], ["tst2015", "tst2016"])
    size = demo_language.WorldSize(nouns=60, verbs=20, adjectives=10, names=10)
    demo_world.write_mirror(spec, {}, size, seed=3, n_train=150, n_per_test_set=20, n_monolingual=10)
    return spec


def run(specs, out, dev_sets=("tst2013",), test_sets=("tst2015",), pair="fr-en"):
    iwslt.main(
        [
            "--pair",
            pair,
            "--archives",
            *map(str, specs),
            "--dev-sets",
            *dev_sets,
            "--test-sets",
            *test_sets,
            "--out-dir",
            str(out),
            "--stats",
            str(out / "stats.json"),
        ]
    )
    return json.loads((out / "stats.json").read_text())


def test_real_iwslt17_test_set_takes_its_reference_from_the_reverse_archive(tmp_path):
    """de-en tst2016 from the real ted-test archives (source side only in each), with the demo's
    bundle for training and development: the whole IWSLT path."""
    de_en, en_de = real_fixture("iwslt17-ted-test", "de-en.tgz"), real_fixture("iwslt17-ted-test", "en-de.tgz")
    spec = iwslt_spec(tmp_path, ["de-en"], ["tst2013"], ["tst2015"])
    demo_world.write_mirror(
        spec,
        {},
        demo_language.WorldSize(nouns=30, verbs=8, adjectives=5, names=5),
        seed=1,
        n_train=40,
        n_per_test_set=5,
        n_monolingual=0,
    )
    stats = run(
        [f"{spec['bundle']}::{BUNDLE_MEMBER.format(src='de', tgt='en')}", de_en, en_de],
        tmp_path / "out",
        test_sets=["tst2016"],
        pair="de-en",
    )
    assert stats["splits"]["test"] == {
        "segments": 1133,
        "from": [f"{de_en}:de-en/IWSLT17.TED.tst2016.de-en.de.xml", f"{en_de}:en-de/IWSLT17.TED.tst2016.en-de.en.xml"],
    }
    assert stats["undecodable_lines"] == 0 and stats["first_undecodable"] is None and stats["policy"] == "replace"
    de = (tmp_path / "out/test.de").read_text(encoding="utf-8").split("\n")[:-1]
    en = (tmp_path / "out/test.en").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(de) == len(en) == 1133 and all(de) and all(en)
    assert (de[0], en[0]) == (
        "Wir stehen vor einem historischen Wendepunkt: zwischen dem Griff nach den Sternen und dem Verlust unseres "
        "Heimatplaneten.",
        "We're at a tipping point in human history, a species poised between gaining the stars and losing the planet "
        "we call home.",
    )


def test_generated_releases_extract_in_both_directions_with_their_provenance(mirror, tmp_path):
    fr_en = run(archive_specs(mirror, "fr", "en"), tmp_path / "fr-en", ["tst2013", "tst2014"], ["tst2015", "tst2016"])
    run(
        archive_specs(mirror, "en", "fr"),
        tmp_path / "en-fr",
        ["tst2013", "tst2014"],
        ["tst2015", "tst2016"],
        pair="en-fr",
    )
    assert {split: s["segments"] for split, s in fr_en["splits"].items()} == {"train": 150, "dev": 40, "test": 40}
    bundle = archive_specs(mirror, "fr", "en")[0]
    assert fr_en["splits"]["train"]["from"] == [f"{bundle}:fr-en/train.tags.fr-en.{lang}" for lang in ("fr", "en")]
    assert fr_en["splits"]["test"]["from"] == [
        f"{mirror['trnted'].format(src='fr', tgt='en')}:fr-en/IWSLT17.TED.tst2015.fr-en.{lang}.xml"
        for lang in ("fr", "en")
    ] + [
        f"{mirror['ted_test'].format(src='fr', tgt='en')}:fr-en/IWSLT17.TED.tst2016.fr-en.fr.xml",
        f"{mirror['ted_test'].format(src='en', tgt='fr')}:en-fr/IWSLT17.TED.tst2016.en-fr.en.xml",
    ]
    train_fr = (tmp_path / "fr-en/train.fr").read_text().splitlines()
    assert len(train_fr) == 150 and not any(line.startswith("<") for line in train_fr)
    for split in ("train", "dev", "test"):  # the reverse direction is the same text with the sides swapped
        for lang in ("fr", "en"):
            assert (tmp_path / f"fr-en/{split}.{lang}").read_bytes() == (
                tmp_path / f"en-fr/{split}.{lang}"
            ).read_bytes()
    assert not list((tmp_path / "fr-en").glob(".extract-*"))  # the temporary copies are gone


def test_each_archive_is_decompressed_once(mirror, tmp_path, monkeypatch):
    opened = []
    real_open = tarfile.open

    def counting_open(name=None, mode="r", fileobj=None, **kwargs):
        opened.append(str(name))
        return real_open(name, mode, fileobj, **kwargs)

    monkeypatch.setattr(tarfile, "open", counting_open)
    run(archive_specs(mirror, "fr", "en"), tmp_path, ["tst2013", "tst2014"], ["tst2015", "tst2016"])
    # four archives and the one nested in the bundle; one sequential pass each
    assert len(opened) == 5 and len(set(opened)) == 5
    assert opened[0] == mirror["bundle"] and opened[1].endswith("-fr-en.tgz")


def make_archive(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            data = data if isinstance(data, bytes) else data.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_archives_are_searched_in_the_given_order(tmp_path):
    tags = lambda text: {f"fr-en/train.tags.fr-en.{lang}": f"<url>u</url>\n{text} {lang}\n" for lang in ("fr", "en")}  # noqa: E731
    make_archive(tmp_path / "b.tgz", tags("from b"))
    make_archive(tmp_path / "a.tgz", tags("from a"))
    for order in (["b.tgz", "a.tgz"], ["a.tgz", "b.tgz"]):
        archives = ArchiveSet([str(tmp_path / name) for name in order], needed_patterns("fr", "en", []), tmp_path)
        pairs, sources = extract_train(archives, "fr", "en", Undecodable())
        first = order[0][0]
        assert pairs == [(f"from {first} fr", f"from {first} en")]
        assert sources[0] == f"{tmp_path / order[0]}:fr-en/train.tags.fr-en.fr"


def test_same_direction_reference_wins_over_the_reverse_source(tmp_path):
    xml = lambda text: f'<mteval><doc docid="7"><seg id="1">{text}</seg></doc></mteval>'  # noqa: E731
    make_archive(tmp_path / "reverse.tgz", {"en-fr/IWSLT17.TED.tst2015.en-fr.en.xml": xml("reverse")})
    make_archive(
        tmp_path / "same.tgz",
        {
            "fr-en/IWSLT17.TED.tst2015.fr-en.fr.xml": xml("source"),
            "fr-en/IWSLT17.TED.tst2015.fr-en.en.xml": xml("same"),
        },
    )
    specs = [str(tmp_path / "reverse.tgz"), str(tmp_path / "same.tgz")]
    archives = ArchiveSet(specs, needed_patterns("fr", "en", ["tst2015"]), tmp_path)
    assert extract_evaluation_set(archives, "fr", "en", "tst2015", Undecodable())[0] == [("source", "same")]


def test_train_tags_metadata_lines_are_dropped():
    lines = [
        "<url>http://x</url>",
        "<keywords>a, b</keywords>",
        "<talkid>1</talkid>",
        "<title>T</title>",
        "<description>D</description>",
        "<speaker>S</speaker>",
        "Hello there.",
        "<reviewer href='x'>R</reviewer>",
        "<translator href='y'>T</translator>",
        "  Second line.  ",
    ]
    assert train_tags_lines(lines) == ["Hello there.", "Second line."]


def test_malformed_xml_names_the_file_and_position():
    with pytest.raises(CorpusError, match=r"broken\.xml: malformed XML at line 3"):
        parse_mteval_xml('<mteval>\n<doc docid="1">\n<seg id="1"> a </sg>\n</doc></mteval>', "broken.xml")


def test_mismatched_training_sides_name_both_files(tmp_path):
    make_archive(
        tmp_path / "fr-en.tgz",
        {"fr-en/train.tags.fr-en.fr": "<url>u</url>\na\nb\n", "fr-en/train.tags.fr-en.en": "<url>u</url>\na\n"},
    )
    archives = ArchiveSet([str(tmp_path / "fr-en.tgz")], needed_patterns("fr", "en", []), tmp_path)
    with pytest.raises(CorpusError, match=r"train\.tags\.fr-en\.fr has 2 segments but .*train\.tags\.fr-en\.en has 1"):
        extract_train(archives, "fr", "en", Undecodable())


def test_unpaired_segments_are_reported(tmp_path):
    def xml(segs):
        return '<mteval><doc docid="7">' + "".join(f'<seg id="{i}">s{i}</seg>' for i in segs) + "</doc></mteval>"

    make_archive(
        tmp_path / "a.tgz",
        {
            "fr-en/IWSLT16.TED.tst2015.fr-en.fr.xml": xml([1, 2, 3]),
            "fr-en/IWSLT16.TED.tst2015.fr-en.en.xml": xml([1, 3]),
        },
    )
    archives = ArchiveSet([str(tmp_path / "a.tgz")], needed_patterns("fr", "en", ["tst2015"]), tmp_path)
    with pytest.raises(CorpusError, match=r"1 source segments .* missing .* \(first: doc 7, seg 2\)"):
        extract_evaluation_set(archives, "fr", "en", "tst2015", Undecodable())


def test_missing_members_say_what_is_missing(tmp_path):
    make_archive(tmp_path / "a.tgz", {"fr-en/README": "x"})
    archives = ArchiveSet([str(tmp_path / "a.tgz")], needed_patterns("fr", "en", []), tmp_path)
    with pytest.raises(CorpusError, match="no training text for fr"):
        extract_train(archives, "fr", "en", Undecodable())
    with pytest.raises(CorpusError, match=r"a\.tgz: no member 2016-01/texts/fr/en/fr-en\.tgz"):
        ArchiveSet([f"{tmp_path / 'a.tgz'}::2016-01/texts/fr/en/fr-en.tgz"], needed_patterns("fr", "en", []), tmp_path)


def test_corrupt_archive_is_named(tmp_path):
    (tmp_path / "bad.tgz").write_bytes(b"not a tar file")
    with pytest.raises(CorpusError, match=r"bad\.tgz: cannot read the archive"):
        ArchiveSet([str(tmp_path / "bad.tgz")], needed_patterns("fr", "en", []), tmp_path)
