"""The synthetic world: deterministic, Zipfian with a long tail, synonyms, morphology, reordering."""

import hashlib
import random
from collections import Counter

from workflow_src import demo_world
from workflow_src.demo_world import World, WorldSize

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
