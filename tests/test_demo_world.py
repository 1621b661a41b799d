"""The synthetic world: deterministic, Zipfian with a long tail, synonyms, morphology, reordering; its
language-modelling corpora in the real PTB and WikiText-2 layouts."""

import hashlib
import json
import random
import re
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from workflow_src import demo_world
from workflow_src.demo_world import World, WorldSize
from workflow_src.lm_data import member_lines

TRAIN, TEST = "2016-01/texts/{src}/{tgt}/{src}-{tgt}.tgz", "2016-01-test/texts/{src}/{tgt}/{src}-{tgt}.tgz"


def mirror_digests(root):
    return {p.relative_to(root).as_posix(): hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    size = WorldSize(nouns=50, verbs=10, adjectives=10, names=10)
    args = dict(pairs=["fr-en"], size=size, n_train=80, n_per_test_set=10, n_monolingual=30,
                dev_sets=["tst2013"], test_sets=["tst2015"])
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        demo_world.write_mirror(tmp_path / name, TRAIN, TEST, monolingual={"en": tmp_path / name / "en.gz"}, seed=seed, **args)
    a, b, c = (mirror_digests(tmp_path / n) for n in "abc")
    assert a == b
    assert a.keys() == c.keys() and a != c


def test_vocabulary_is_zipfian_with_a_long_tail():
    world = World(["en"], WorldSize(), seed=1)
    counts = Counter(w for s in world.parallel(["en"], 5000, "x") for w in s["en"].lower().strip(".?").replace(",", "").split())
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
    meaning = demo_world.Meaning([clause], question=False)
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
    return {name: {"format": "wikitext" if name.startswith("wikitext") else "ptb",
                   "archive": str(root / d["mirror"] / d["archive"]), "members": d["members"]}
            for name, d in DEMO["datasets"].items() if d["kind"] == "lm"}


@pytest.fixture(scope="module")
def lm_texts(tmp_path_factory):
    """{corpus: {split: text}} at the demo's sizes, read back by the pipeline's own reader."""
    corpora = lm_corpora(tmp_path_factory.mktemp("lm"))
    world = World(["en"], WorldSize(**DEMO["demo"]["world"]), DEMO["demo"]["seed"])
    demo_world.write_lm_mirror(world, corpora, LM_SIZE)
    return {name: {split: "".join(line + "\n" for line in member_lines(Path(c["archive"]), member))
                   for split, member in c["members"].items()} for name, c in corpora.items()}


def test_the_demo_has_both_corpora_of_the_tying_paper():
    assert set(lm_corpora(Path("."))) == {"ptb", "wikitext2"}
    assert {name: d["members"] for name, d in DEMO["datasets"].items() if d["kind"] == "lm"} == {
        name: d["members"] for name, d in yaml.safe_load((REPO / "config.yaml").read_text())["datasets"].items()
        if d["kind"] == "lm"}


def test_lm_archives_have_the_real_member_names(tmp_path):
    corpora = lm_corpora(tmp_path)
    demo_world.write_lm_mirror(World(["en"], WorldSize(nouns=50, verbs=10, adjectives=10, names=10), 1), corpora,
                               demo_world.LMSize(train_sentences=200, heldout_sentences=30, vocabulary=100))
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
    assert demo_world.wikitext_tokens(sentence) == ["Bakamu", "sold", "1", "@,@", "200", "red", "@-@", "tipped",
                                                    "bars", ",", "in", "3", "@.@", "5", "days", "?"]


def test_wikitext_has_articles_sections_and_paragraphs(lm_texts):
    for text in lm_texts["wikitext2"].values():
        lines = text.splitlines()
        assert lines[:3] == [" ", lines[1], " "] and re.fullmatch(r" = [^=]+ = ", lines[1])
        titles = [i for i, line in enumerate(lines) if re.fullmatch(r" = [^=]+ = ", line)]
        assert len(titles) > 5 and all(lines[i - 2:i] == [" ", " "] for i in titles[1:])  # two blanks before
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
        demo_world.main(["--iwslt-root", str(tmp_path / name / "wit3"), "--train-archive", TRAIN,
                         "--test-archive", TEST, "--pairs", "fr-en", "--dev-sets", "tst2013", "--test-sets", "tst2015", "--seed", str(seed),
                         "--train-sentences", "20", "--test-set-sentences", "5", "--monolingual-sentences", "5",
                         "--lm", json.dumps(lm_corpora(tmp_path / name)), *small])
    a, b, c = (mirror_digests(tmp_path / n) for n in "abc")
    assert {"demo-mikolov/simple-examples.tgz", "demo-smerity/wikitext-2-v1.zip"} <= a.keys()
    assert a == b
    assert a.keys() == c.keys() and a["demo-mikolov/simple-examples.tgz"] != c["demo-mikolov/simple-examples.tgz"]


def test_wmt_data_sets_sharing_a_pair_get_their_own_sizes_and_evaluation_sets(tmp_path):
    def entry(archive, split):
        return {"archive": str(tmp_path / archive), "source": f"{split}/src.de", "target": f"{split}/ref.en"}

    wmt = {name: {"train_sentences": n, "sources": {"de-en": {"train": [entry(f"{name}-train.tgz", "train")],
                                                              "dev": [entry(f"{name}-dev.tgz", "dev")],
                                                              "test": [entry(f"{name}-test.tgz", "test")]}}}
           for name, n in (("wmt16", 40), ("wmt17", 25))}
    demo_world.write_mirror(tmp_path / "iwslt", TRAIN, TEST, ["fr-en"], {}, WorldSize(nouns=30, verbs=8, adjectives=5, names=5),
                            seed=1, n_train=60, n_per_test_set=5, n_monolingual=0, dev_sets=["tst2013"],
                            test_sets=["tst2015"], wmt=wmt)

    def member(archive, name):
        with tarfile.open(tmp_path / archive) as tar:
            return tar.extractfile(name).read().decode()

    assert [len(member(f"{name}-train.tgz", "train/src.de").splitlines()) for name in wmt] == [40, 25]
    # the same pair in two data sets: different sentences in their evaluation sets
    assert member("wmt16-test.tgz", "test/ref.en") != member("wmt17-test.tgz", "test/ref.en")
