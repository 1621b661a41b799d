"""WMT extraction (generated archives in the real layout) and METEOR."""

import io
import tarfile

import pytest

from workflow_src.data import demo_language, demo_world
from workflow_src.data.archives import CorpusError
from workflow_src.data.wmt import Members, parse_sgm, read_evaluation, write_train
from workflow_src.score.meteor import meteor_nltk, parse_jar_output, prepare_wordnet


def entry(archive, source, target):
    return {"archive": archive, "source": source, "target": target}


@pytest.fixture(scope="module")
def wmt(tmp_path_factory):
    root = tmp_path_factory.mktemp("wmt")
    europarl = f"{root}/wmt13/training-parallel-europarl-v7.tgz"
    spec = {
        "de-en": {
            "train": [
                entry(europarl, "training/europarl-v7.de-en.de", "training/europarl-v7.de-en.en"),
                {
                    "archive": f"{root}/wmt15/wiki-titles.tgz",
                    "delimited": "wiki/de-en/titles.de-en",
                    "delimiter": "|||",
                    "source_column": 1,
                    "target_column": 2,
                },
            ],
            "dev": [
                entry(f"{root}/wmt16/dev.tgz", "dev/newstest2015-deen-src.de.sgm", "dev/newstest2015-deen-ref.en.sgm")
            ],
            "test": [
                entry(
                    f"{root}/wmt16/test.tgz", "test/newstest2016-deen-src.de.sgm", "test/newstest2016-deen-ref.en.sgm"
                )
            ],
        },
        "en-de": {  # the reverse direction shares the training corpus and adds its own test set
            "train": [entry(europarl, "training/europarl-v7.de-en.en", "training/europarl-v7.de-en.de")],
            "dev": [
                entry(f"{root}/wmt16/dev.tgz", "dev/newstest2015-ende-src.en.sgm", "dev/newstest2015-ende-ref.de.sgm")
            ],
            "test": [
                entry(
                    f"{root}/wmt16/test.tgz", "test/newstest2016-ende-src.en.sgm", "test/newstest2016-ende-ref.de.sgm"
                )
            ],
        },
    }
    world = demo_language.World(
        ["de", "en"], demo_language.WorldSize(nouns=40, verbs=10, adjectives=5, names=5), seed=2
    )
    demo_world.write_wmt_mirror(world, spec, n_train=101, n_per_set=70)
    return root, spec


def test_training_corpora_are_concatenated(wmt, tmp_path):
    _, spec = wmt
    members = Members(spec["de-en"], tmp_path)
    assert write_train(members, spec["de-en"]["train"], tmp_path / "train.de", tmp_path / "train.en") == 101
    de = (tmp_path / "train.de").read_text().split("\n")[:-1]
    assert len(de) == 101
    members = Members(spec["en-de"], tmp_path)
    assert write_train(members, spec["en-de"]["train"], tmp_path / "r.en", tmp_path / "r.de") == 51
    assert (tmp_path / "r.de").read_text().split("\n")[:-1] == de[:51]  # the same corpus, read the other way


def test_sgm_sets_pair_by_document_and_segment(wmt, tmp_path):
    _, spec = wmt
    segments = read_evaluation(Members(spec["de-en"], tmp_path), spec["de-en"]["test"])
    assert len(segments) == 70 and all(s and t for s, t in segments)
    with tarfile.open(spec["de-en"]["test"][0]["archive"]) as tar:
        assert set(tar.getnames()) == {
            "test/newstest2016-deen-src.de.sgm",
            "test/newstest2016-deen-ref.en.sgm",
            "test/newstest2016-ende-src.en.sgm",
            "test/newstest2016-ende-ref.de.sgm",
        }


def test_sgm_parsing_keeps_text_as_sacrebleu_does():
    lines = [
        '<srcset setid="x" srclang="any">',
        '<doc sysid="ref" docid="d1" genre="news">',
        "<p>",
        '<seg id="1"> AT&T  buys   it </seg>',
        '<seg id="2">Second.</seg>',
        "</p>",
        "</doc>",
    ]
    assert parse_sgm(lines, "x.sgm") == {("d1", "1"): "AT&T buys it", ("d1", "2"): "Second."}
    with pytest.raises(CorpusError, match=r"x\.sgm, line 1: <seg> outside"):
        parse_sgm(['<seg id="1">a</seg>'], "x.sgm")


def test_unequal_training_sides_name_the_members(tmp_path):
    archive = tmp_path / "c.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in (("c.de-en.de", "a\nb\nc\n"), ("c.de-en.en", "a\nb\n")):
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
    corpora = [entry(str(archive), "c.de-en.de", "c.de-en.en")]
    with pytest.raises(
        CorpusError, match=r"c\.de-en\.de and c\.de-en\.en differ in length: c\.de-en\.en ends after line 2"
    ):
        write_train(Members({"train": corpora}, tmp_path), corpora, tmp_path / "s", tmp_path / "t")
    assert not (tmp_path / "s").exists() and not (tmp_path / "t").exists()


def test_meteor_synonyms_module_uses_wordnet(tmp_path):
    prepare_wordnet(tmp_path / "nltk_data")
    refs, hyps = ["The car is red."], ["The automobile is red."]
    with_synonyms = meteor_nltk(hyps, refs, "en", tmp_path / "nltk_data")
    without = meteor_nltk(hyps, refs, "en", None)
    assert with_synonyms["score"] > without["score"]
    assert "synonyms (WordNet 3.0)" in with_synonyms["signature"] and "synonyms" not in without["signature"]
    assert meteor_nltk(refs, refs, "en", None)["score"] > 99


def test_official_jar_output_is_parsed():
    output = "Meteor version: 1.5\n\nSegment 1 score:\t0.5\n\nFinal score:\t\t0.2837\n"
    assert parse_jar_output(output) == 0.2837
    with pytest.raises(RuntimeError, match="no 'Final score:'"):
        parse_jar_output("Error: something")


def test_sentence_meteor_is_nltks_when_there_is_no_stemming(tmp_path):
    from nltk.translate.meteor_score import meteor_score

    from workflow_src.score.meteor import _NoStemming, load_wordnet, sentence_meteor

    prepare_wordnet(tmp_path / "nltk_data")
    wordnet = load_wordnet(tmp_path / "nltk_data")
    pairs = [
        ("the car is red on the road".split(), "a red automobile is on a road".split()),
        ("he walked home".split(), "he went home quickly".split()),
        ("x y z".split(), "a b c".split()),
    ]
    for ref, hyp in pairs:
        assert sentence_meteor(ref, hyp, _NoStemming(), wordnet) == pytest.approx(
            meteor_score([ref], hyp, stemmer=_NoStemming(), wordnet=wordnet)
        )
