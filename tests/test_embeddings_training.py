"""Target embeddings trained on the demo world: normalised, with </s>, synonyms close together."""

import numpy as np
import pytest

from workflow_src.demo_world import World, WorldSize
from workflow_src.embeddings import normalise, read_vec, train_vectors, write_vec
from workflow_src.preprocess import tokenize

SETTINGS = {
    "word2vec": {"dim": 32, "model": "cbow", "window": 5, "negative": 10, "sample": 1e-3, "epochs": 15, "min_count": 2},
    "fasttext": {"dim": 32, "model": "skipgram", "window": 5, "negative": 5, "sample": 1e-3, "epochs": 10,
                 "min_count": 2, "minn": 3, "maxn": 6},
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    world = World(["en"], WorldSize(nouns=60, verbs=15, adjectives=10, names=10, synonym_rate=0.5), seed=2)
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("".join(tokenize(s["en"], "en").lower() + "\n" for s in world.parallel(["en"], 6000, "mono")))
    return world, path


@pytest.mark.parametrize("kind,backend", [("word2vec", "gensim"), ("fasttext", "fasttext"), ("fasttext", "gensim")])
def test_vectors_are_normalised_know_eos_and_cluster_synonyms(corpus, tmp_path, kind, backend):
    world, path = corpus
    words, vectors = train_vectors(kind, path, {**SETTINGS[kind], "backend": backend}, threads=1, seed=1)
    write_vec(tmp_path / "v.vec", words, normalise(vectors))
    words, vectors = read_vec(tmp_path / "v.vec")
    assert "</s>" in words
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    index = {w: i for i, w in enumerate(words)}
    synonyms = [alts for alts in world.lexicons["en"].nouns[:30] if len(alts) > 1 and all(a in index for a in alts)]
    assert len(synonyms) >= 3
    similarity = vectors @ vectors.T
    synonym_cos = np.mean([similarity[index[a[0]], index[a[1]]] for a in synonyms])
    nouns = [alts[0] for alts in world.lexicons["en"].nouns[:30] if alts[0] in index]
    other_cos = np.mean([similarity[index[a], index[b]] for a in nouns for b in nouns if a != b])
    assert synonym_cos > other_cos + 0.2, (synonym_cos, other_cos)


def test_unknown_backend_names_the_setting(corpus):
    with pytest.raises(ValueError, match=r"embeddings\.fasttext\.backend"):
        train_vectors("fasttext", corpus[1], {**SETTINGS["fasttext"], "backend": "glove"}, threads=1, seed=1)
