"""IWSLT parsing on the real IWSLT17 sample and on archives in the generated (IWSLT16) layout."""

import io
import tarfile

import pytest

from tests.conftest import real_fixture
from workflow_src import demo_world
from workflow_src.iwslt import (ArchiveSet, CorpusError, extract_evaluation_set, extract_train, parse_mteval_xml,
                                train_tags_lines)

TRAIN, TEST = "2016-01/texts/{src}/{tgt}/{src}-{tgt}.tgz", "2016-01-test/texts/{src}/{tgt}/{src}-{tgt}.tgz"


def test_real_iwslt17_test_sets_pair_by_document_and_segment():
    archives = ArchiveSet([real_fixture("iwslt17-ted-test", "de-en.tgz"), real_fixture("iwslt17-ted-test", "en-de.tgz")])
    pairs = extract_evaluation_set(archives, "de", "en", "tst2016")
    assert len(pairs) == 1133
    assert pairs[0] == (
        "Wir stehen vor einem historischen Wendepunkt: zwischen dem Griff nach den Sternen und dem Verlust unseres Heimatplaneten.",
        "We're at a tipping point in human history, a species poised between gaining the stars and losing the planet we call home.",
    )
    assert all(src and ref for src, ref in pairs)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirror")
    size = demo_world.WorldSize(nouns=60, verbs=20, adjectives=10, names=10)
    demo_world.write_mirror(root, TRAIN, TEST, ["fr-en"], {}, size, seed=3, n_train=150, n_per_test_set=20,
                            n_monolingual=10, dev_sets=["tst2013", "tst2014"], test_sets=["tst2015", "tst2016"])
    return root


def archives_for(root, src, tgt):
    return ArchiveSet([root / TRAIN.format(src=src, tgt=tgt), root / TEST.format(src=src, tgt=tgt),
                       root / TEST.format(src=tgt, tgt=src)])


def test_generated_archives_have_the_real_layout(mirror):
    with tarfile.open(mirror / TRAIN.format(src="fr", tgt="en")) as tar:
        names = set(tar.getnames())
    assert {"fr-en/train.tags.fr-en.fr", "fr-en/train.tags.fr-en.en", "fr-en/IWSLT16.TED.tst2013.fr-en.fr.xml",
            "fr-en/IWSLT16.TED.tst2014.fr-en.en.xml"} <= names
    with tarfile.open(mirror / TEST.format(src="fr", tgt="en")) as tar:
        assert set(tar.getnames()) == {"fr-en/IWSLT16.TED.tst2015.fr-en.fr.xml", "fr-en/IWSLT16.TED.tst2016.fr-en.fr.xml"}


def test_generated_archives_extract_in_both_directions(mirror):
    fr_en = archives_for(mirror, "fr", "en")
    en_fr = archives_for(mirror, "en", "fr")
    train = extract_train(fr_en, "fr", "en")
    assert len(train) == 150 and not any(line.startswith("<") for pair in train for line in pair)
    test = extract_evaluation_set(fr_en, "fr", "en", "tst2015")
    assert len(test) == 20
    # the reverse direction's test set is the same talks with the sides swapped
    assert [(b, a) for a, b in extract_evaluation_set(en_fr, "en", "fr", "tst2015")] == test


def test_train_tags_metadata_lines_are_dropped():
    text = "<url>http://x</url>\n<keywords>a, b</keywords>\n<talkid>1</talkid>\n<title>T</title>\n" \
           "<description>D</description>\n<speaker>S</speaker>\nHello there.\n<reviewer href='x'>R</reviewer>\n" \
           "<translator href='y'>T</translator>\n  Second line.  \n"
    assert train_tags_lines(text) == ["Hello there.", "Second line."]


def test_malformed_xml_names_the_file_and_position():
    with pytest.raises(CorpusError, match=r"broken\.xml: malformed XML at line 3"):
        parse_mteval_xml(b'<mteval>\n<doc docid="1">\n<seg id="1"> a </sg>\n</doc></mteval>', "broken.xml")


def make_archive(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_mismatched_training_sides_name_both_files(tmp_path):
    make_archive(tmp_path / "fr-en.tgz", {"fr-en/train.tags.fr-en.fr": "<url>u</url>\na\nb\n",
                                          "fr-en/train.tags.fr-en.en": "<url>u</url>\na\n"})
    with pytest.raises(CorpusError, match=r"train\.tags\.fr-en\.fr has 2 segments but .*train\.tags\.fr-en\.en has 1"):
        extract_train(ArchiveSet([tmp_path / "fr-en.tgz"]), "fr", "en")


def test_unpaired_segments_are_reported(tmp_path):
    xml = lambda segs: '<mteval><doc docid="7">' + "".join(f'<seg id="{i}">s{i}</seg>' for i in segs) + "</doc></mteval>"
    make_archive(tmp_path / "a.tgz", {"fr-en/IWSLT16.TED.tst2015.fr-en.fr.xml": xml([1, 2, 3]),
                                      "fr-en/IWSLT16.TED.tst2015.fr-en.en.xml": xml([1, 3])})
    with pytest.raises(CorpusError, match=r"1 source segments .* missing .* \(first: doc 7, seg 2\)"):
        extract_evaluation_set(ArchiveSet([tmp_path / "a.tgz"]), "fr", "en", "tst2015")


def test_missing_member_says_what_is_missing(tmp_path):
    make_archive(tmp_path / "a.tgz", {"fr-en/README": "x"})
    with pytest.raises(CorpusError, match="no training text for fr"):
        extract_train(ArchiveSet([tmp_path / "a.tgz"]), "fr", "en")


def test_corrupt_archive_is_named(tmp_path):
    (tmp_path / "bad.tgz").write_bytes(b"not a tar file")
    with pytest.raises(CorpusError, match=r"bad\.tgz: cannot read the archive"):
        ArchiveSet([tmp_path / "bad.tgz"])
