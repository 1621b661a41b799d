"""The synthetic world: deterministic, Zipfian with a long tail, synonyms, morphology, reordering; its
language-modelling corpora in the real PTB and WikiText-2 layouts."""

import hashlib
import io
import itertools
import json
import random
import re
import tarfile
import zipfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, iwslt_spec, real_fixture
from workflow_src.data import demo_language, demo_world
from workflow_src.data.demo_language import World, WorldSize
from workflow_src.data.lm_data import member_lines


def mirror_digests(root):
    return {
        p.relative_to(root).as_posix(): hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    size = WorldSize(nouns=50, verbs=10, adjectives=10, names=10)
    args = dict(size=size, n_train=80, n_per_test_set=10, n_monolingual=30)
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        iwslt = iwslt_spec(tmp_path / name, ["fr-en"], ["tst2013"], ["tst2015", "tst2016"])
        demo_world.write_mirror(iwslt, monolingual={"en": tmp_path / name / "en.gz"}, seed=seed, **args)
    a, b, c = (mirror_digests(tmp_path / n) for n in "abc")
    assert a == b
    assert a.keys() == c.keys() and a != c


def test_vocabulary_is_zipfian_with_a_long_tail():
    world = World(["en"], WorldSize(), seed=1)
    counts = Counter(
        w for s in world.parallel(["en"], 5000, "x") for w in s["en"].lower().strip(".?").replace(",", "").split()
    )
    frequencies = sorted(counts.values(), reverse=True)
    singletons = sum(1 for f in frequencies if f == 1)
    assert singletons > 0.3 * len(frequencies)  # a long tail of words seen once
    assert frequencies[0] > 50 * frequencies[len(frequencies) // 2]


def test_synonyms_morphology_and_word_order():
    world = World(["en", "fr", "de"], WorldSize(), seed=1)
    en = world.lexicons["en"]
    assert any(len(alternatives) > 1 for alternatives in en.nouns)  # target-side synonyms
    assert en.plural_suffix and len(set(en.verb_suffix.values())) > 2  # inflection
    rng = random.Random(0)
    clause = world._clause(rng)
    while clause.obj is None or clause.subject.name or clause.preposition is not None:
        clause = world._clause(rng)
    meaning = demo_language.Meaning([clause], question=False)
    fr = world.realise(meaning, "fr", random.Random(1)).rstrip(".").split()
    de = world.realise(meaning, "de", random.Random(1)).rstrip(".").split()
    verb_stem = world.lexicons["de"].verbs[clause.verb][0]
    assert de[-1].startswith(verb_stem) or de[-2] == world.lexicons["de"].future_auxiliary  # verb-final
    assert not fr[-1].startswith(world.lexicons["fr"].verbs[clause.verb][0])  # SVO


def test_names_are_shared_across_languages():
    world = World(["en", "fr"], WorldSize(), seed=3)
    sentences = world.parallel(["en", "fr"], 300, "names")
    shared = [n for n in world.names if any(n in s["en"] and n in s["fr"] for s in sentences)]
    assert shared


# -- the language-modelling corpora --------------------------------------------------------------
DEMO = yaml.safe_load((REPO / "config.demo.yaml").read_text())
LM_SIZE = demo_world.LMSize(**{k.removeprefix("lm_"): v for k, v in DEMO["demo"].items() if k.startswith("lm_")})


def lm_corpora(root):
    """The demo's language-modelling data sets as `--lm` gives them (rules/demo.smk), under root."""
    return {
        name: {
            "format": "wikitext" if name.startswith("wikitext") else "ptb",
            "archive": str(root / d.get("mirror", "") / d["archive"]),
            "members": d["members"],
        }
        for name, d in DEMO["datasets"].items()
        if d["kind"] == "lm"
    }


@pytest.fixture(scope="module")
def lm_texts(tmp_path_factory):
    """{corpus: {split: text}} at the demo's sizes, read back by the pipeline's own reader."""
    corpora = lm_corpora(tmp_path_factory.mktemp("lm"))
    world = World(["en"], WorldSize(**DEMO["demo"]["world"]), DEMO["demo"]["seed"])
    demo_world.write_lm_mirror(world, corpora, LM_SIZE)
    return {
        name: {
            split: "".join(line + "\n" for line in member_lines(Path(c["archive"]), member))
            for split, member in c["members"].items()
        }
        for name, c in corpora.items()
    }


def test_the_demo_has_both_corpora_of_the_tying_paper():
    assert set(lm_corpora(Path("."))) == {"ptb", "wikitext2"}
    assert {name: d["members"] for name, d in DEMO["datasets"].items() if d["kind"] == "lm"} == {
        name: d["members"]
        for name, d in yaml.safe_load((REPO / "config.yaml").read_text())["datasets"].items()
        if d["kind"] == "lm"
    }


def test_lm_archives_have_the_real_member_names(tmp_path):
    corpora = lm_corpora(tmp_path)
    demo_world.write_lm_mirror(
        World(["en"], WorldSize(nouns=50, verbs=10, adjectives=10, names=10), 1),
        corpora,
        demo_world.LMSize(train_sentences=200, heldout_sentences=30, vocabulary=100),
    )
    with tarfile.open(corpora["ptb"]["archive"]) as tar:
        assert sorted(tar.getnames()) == [f"./simple-examples/data/ptb.{s}.txt" for s in ("test", "train", "valid")]
    with zipfile.ZipFile(corpora["wikitext2"]["archive"]) as z:
        assert sorted(z.namelist()) == [f"wikitext-2/wiki.{s}.tokens" for s in ("test", "train", "valid")]


def test_ptb_is_lowercase_without_punctuation_one_sentence_a_line(lm_texts):
    for text in lm_texts["ptb"].values():
        lines = text.splitlines()
        assert all(line.startswith(" ") and line.endswith(" ") and line.strip() for line in lines)
        assert all(re.fullmatch(r"<unk>|N|[a-z][a-z'-]*", word) for line in lines for word in line.split())
    assert "<unk>" in lm_texts["ptb"]["train"].split()


def test_tokenization_of_numbers_hyphens_and_punctuation():
    sentence = "Bakamu sold 1,200 red-tipped bars, in 3.5 days?"
    assert demo_world.ptb_tokens(sentence) == ["bakamu", "sold", "N", "red-tipped", "bars", "in", "N", "days"]
    assert demo_world.wikitext_tokens(sentence) == [
        "Bakamu",
        "sold",
        "1",
        "@,@",
        "200",
        "red",
        "@-@",
        "tipped",
        "bars",
        ",",
        "in",
        "3",
        "@.@",
        "5",
        "days",
        "?",
    ]


def test_wikitext_has_articles_sections_and_paragraphs(lm_texts):
    for text in lm_texts["wikitext2"].values():
        lines = text.splitlines()
        assert lines[:3] == [" ", lines[1], " "] and re.fullmatch(r" = [^=]+ = ", lines[1])
        titles = [i for i, line in enumerate(lines) if re.fullmatch(r" = [^=]+ = ", line)]
        assert len(titles) > 5 and all(lines[i - 2 : i] == [" ", " "] for i in titles[1:])  # two blanks before
        assert any(re.fullmatch(r" = = [^=]+ = = ", line) for line in lines)
        assert all(lines[i + 1] == " " for i, line in enumerate(lines) if line.startswith(" = "))
        assert any(line.count(" . ") + line.count(" ? ") >= 3 for line in lines)  # paragraphs of sentences
        assert all(line.startswith(" ") and (line == " " or line.endswith(" ")) for line in lines)
    words = lm_texts["wikitext2"]["train"].split()
    assert "<unk>" in words and "," in words and any(w[0].isupper() for w in words)


def test_vocabulary_is_closed_and_of_the_configured_size(lm_texts):
    for texts in lm_texts.values():
        train = set(texts["train"].split())
        assert len(train | {"<eos>"}) == LM_SIZE.vocabulary
        assert set(texts["valid"].split()) <= train and set(texts["test"].split()) <= train


def test_demo_sizes_leave_room_for_a_20000_word_slice(lm_texts):
    for texts in lm_texts.values():
        assert len(texts["train"].split()) > 20000 * 1.2  # a slice of 20,000 words with room for its start
        assert all(3000 < len(texts[split].split()) + texts[split].count("\n") < 6000 for split in ("valid", "test"))


def test_lm_archives_same_seed_same_bytes(tmp_path):
    small = ["--lm-train-sentences", "300", "--lm-heldout-sentences", "40", "--lm-vocabulary", "150"]
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        iwslt = iwslt_spec(tmp_path / name / "wit3", ["fr-en"], ["tst2013"], ["tst2015"])
        demo_world.main(
            [
                "--iwslt",
                json.dumps(iwslt),
                "--seed",
                str(seed),
                "--train-sentences",
                "20",
                "--test-set-sentences",
                "5",
                "--monolingual-sentences",
                "5",
                "--lm",
                json.dumps(lm_corpora(tmp_path / name)),
                *small,
            ]
        )
    a, b, c = (mirror_digests(tmp_path / n) for n in "abc")
    ptb, wikitext = (
        Path(lm_corpora(tmp_path / "a")[name]["archive"]).relative_to(tmp_path / "a").as_posix()
        for name in ("ptb", "wikitext2")
    )
    assert {ptb, wikitext} <= a.keys()
    assert a == b
    assert a.keys() == c.keys() and a[ptb] != c[ptb]


def test_wmt_data_sets_sharing_a_pair_get_their_own_sizes_and_evaluation_sets(tmp_path):
    def entry(archive, split):
        return {"archive": str(tmp_path / archive), "source": f"{split}/src.de", "target": f"{split}/ref.en"}

    wmt = {
        name: {
            "train_sentences": n,
            "sources": {
                "de-en": {
                    "train": [entry(f"{name}-train.tgz", "train")],
                    "dev": [entry(f"{name}-dev.tgz", "dev")],
                    "test": [entry(f"{name}-test.tgz", "test")],
                }
            },
        }
        for name, n in (("wmt16", 40), ("wmt17", 25))
    }
    demo_world.write_mirror(
        iwslt_spec(tmp_path / "iwslt", ["fr-en"], ["tst2013"], ["tst2015"]),
        {},
        WorldSize(nouns=30, verbs=8, adjectives=5, names=5),
        seed=1,
        n_train=60,
        n_per_test_set=5,
        n_monolingual=0,
        wmt=wmt,
    )

    def member(archive, name):
        with tarfile.open(tmp_path / archive) as tar:
            return tar.extractfile(name).read().decode()

    assert [len(member(f"{name}-train.tgz", "train/src.de").splitlines()) for name in wmt] == [40, 25]
    # the same pair in two data sets: different sentences in their evaluation sets
    assert member("wmt16-test.tgz", "test/ref.en") != member("wmt17-test.tgz", "test/ref.en")


# -- the formats of the real releases ----------------------------------------------------------
def tgz_members(path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def xml_shape(data: bytes):
    """What a parser sees of an IWSLT XML file, its texts aside: the elements down to the documents
    with their attribute names, each document's sequence of element kinds, and how a segment's text
    is padded."""
    root = ET.fromstring(data)
    srcset = root.find("srcset")
    docs = list(srcset.iter("doc"))
    sequences = {tuple(tag for tag, _ in itertools.groupby(child.tag for child in doc)) for doc in docs}
    padding = {(seg.text[0] == " ", seg.text[-1] == " ") for doc in docs for seg in doc.iter("seg")}
    return (
        root.tag,
        [child.tag for child in root],
        sorted(srcset.attrib),
        {tuple(sorted(d.attrib)) for d in docs},
        sequences,
        padding,
    )


@pytest.fixture(scope="module")
def demo_de_en(tmp_path_factory):
    root = tmp_path_factory.mktemp("iwslt")
    spec = iwslt_spec(root, ["de-en"], ["dev2010", "tst2014"], ["tst2015", "tst2016"])
    demo_world.write_mirror(
        spec,
        {},
        WorldSize(nouns=30, verbs=8, adjectives=5, names=5),
        seed=1,
        n_train=70,
        n_per_test_set=70,
        n_monolingual=0,
    )
    return spec


def test_ted_test_archives_are_as_the_real_ones(demo_de_en):
    """Against the real 2017-01-ted-test de-en and en-de archives: the source side only, member
    names, a README, the XML's elements, attributes, setid, language names and segment padding."""
    for src, tgt in (("de", "en"), ("en", "de")):
        pair = f"{src}-{tgt}"
        real = tgz_members(real_fixture("iwslt17-ted-test", f"{pair}.tgz"))
        demo = tgz_members(demo_de_en["ted_test"].format(src=src, tgt=tgt))
        test_set = f"{pair}/IWSLT17.TED.tst2016.{pair}.{src}.xml"
        assert set(demo) == {test_set, f"{pair}/README"} and set(demo) <= set(real)
        assert all(name.endswith(f".{src}.xml") for name in real if name.endswith(".xml"))  # source side only
        assert xml_shape(demo[test_set]) == xml_shape(real[test_set])
        for data in (demo[test_set], real[test_set]):
            srcset = ET.fromstring(data).find("srcset")
            assert srcset.attrib == {"setid": "iwslt2017-tst2016", "srclang": {"de": "german", "en": "english"}[src]}
            assert data.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<mteval>\n<srcset ')


def test_bundle_nests_an_archive_per_direction_and_trnted_holds_tst2015(demo_de_en):
    bundle = tgz_members(demo_de_en["bundle"])
    assert set(bundle) == {"2016-01/texts/de/en/de-en.tgz", "2016-01/texts/en/de/en-de.tgz"}
    inner = tarfile.open(fileobj=io.BytesIO(bundle["2016-01/texts/de/en/de-en.tgz"]))
    assert sorted(inner.getnames()) == sorted(
        [f"de-en/IWSLT16.TED.{s}.de-en.{lang}.xml" for s in ("dev2010", "tst2014") for lang in ("de", "en")]
        + ["de-en/train.tags.de-en.de", "de-en/train.tags.de-en.en"]
    )
    trnted = tgz_members(demo_de_en["trnted"].format(src="de", tgt="en"))
    assert set(trnted) == {
        "de-en/train.tags.de-en.de",
        "de-en/train.tags.de-en.en",
        "de-en/IWSLT17.TED.tst2015.de-en.de.xml",
        "de-en/IWSLT17.TED.tst2015.de-en.en.xml",
    }
    real = tgz_members(real_fixture("iwslt17-ted-test", "de-en.tgz"))["de-en/IWSLT17.TED.tst2016.de-en.de.xml"]
    assert xml_shape(trnted["de-en/IWSLT17.TED.tst2015.de-en.en.xml"]) == xml_shape(real)


def test_the_release_of_each_evaluation_set():
    assert [demo_world.release_of(s) for s in ("dev2010", "tst2010", "tst2014", "tst2015", "tst2016")] == [
        "bundle",
        "bundle",
        "bundle",
        "trnted",
        "ted_test",
    ]
    with pytest.raises(ValueError, match="tst2017"):
        demo_world.release_of("tst2017")


@pytest.fixture(scope="module")
def demo_wmt_archives(tmp_path_factory):
    """News Commentary and the wiki headlines under their real archive and member names."""
    root = tmp_path_factory.mktemp("wmt")
    nc = {
        "archive": str(root / "training-parallel-nc-v11.tgz"),
        "source": "training-parallel-nc-v11/news-commentary-v11.de-en.de",
        "target": "training-parallel-nc-v11/news-commentary-v11.de-en.en",
    }
    headlines = {
        "archive": str(root / "wiki-titles.tgz"),
        "delimited": "wiki/fi-en/titles.fi-en",
        "delimiter": "|||",
        "source_column": 2,
        "target_column": 1,
    }
    sources = {"de-en": {"train": [nc], "dev": [], "test": []}, "en-fi": {"train": [headlines], "dev": [], "test": []}}
    demo_world.write_wmt_mirror(
        World(["de", "en", "fi"], WorldSize(nouns=30, verbs=8, adjectives=5, names=5), 1),
        sources,
        n_train=90,
        n_per_set=5,
    )
    return sources


def test_headlines_are_written_as_published(demo_wmt_archives):
    """`Finnish ||| English`, one pair a line (sockeye's task list; HF wmt_utils splits on "|||")."""
    text = tgz_members(demo_wmt_archives["en-fi"]["train"][0]["archive"])["wiki/fi-en/titles.fi-en"].decode()
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 91
    assert all(re.fullmatch(r"[^|\s](?:[^|]*[^|\s])? \|\|\| [^|\s](?:[^|]*[^|\s])?", line) for line in lines[:-1])


def test_news_commentary_has_a_lone_carriage_return_on_one_side(demo_wmt_archives):
    nc = next(e for e in demo_wmt_archives["de-en"]["train"] if "news-commentary" in e["source"])
    members = tgz_members(nc["archive"])
    source, target = members[nc["source"]], members[nc["target"]]
    assert source.count(b"\r") == 1 and b"\r\n" not in source and b"\r" not in target
    assert source.count(b"\n") == target.count(b"\n")
    assert len(source.decode().splitlines()) == target.count(b"\n") + 1  # what universal newlines would make of it
