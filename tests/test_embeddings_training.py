"""Target embeddings trained on the demo world: normalised, with </s>, synonyms close together."""

import numpy as np
import pytest

from workflow_src.data.demo_language import World, WorldSize
from workflow_src.data.embeddings import normalise, read_vec, train_vectors, write_vec
from workflow_src.data.preprocess import tokenize

SETTINGS = {
    "word2vec": {"dim": 32, "model": "cbow", "window": 5, "negative": 10, "sample": 1e-3, "epochs": 15, "min_count": 2},
    "fasttext": {
        "dim": 32,
        "model": "skipgram",
        "window": 5,
        "negative": 5,
        "sample": 1e-3,
        "epochs": 10,
        "min_count": 2,
        "minn": 3,
        "maxn": 6,
    },
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


def test_table_writes_the_share_of_the_target_vocabulary_without_a_vector(tmp_path, capsys):
    import json

    from workflow_src.data.embeddings import main

    write_vec(tmp_path / "v.vec", ["the", "cat", "</s>", "dog"], normalise(np.eye(4)))
    (tmp_path / "vocab.tsv").write_text("the\t9\ncat\t5\nzebu\t4\ndog\t1\n")
    main(
        [
            "table",
            "--vectors",
            str(tmp_path / "v.vec"),
            "--vocab",
            str(tmp_path / "vocab.tsv"),
            "--size",
            "2",
            "--out",
            str(tmp_path / "table.vec"),
        ]
    )
    report = json.loads((tmp_path / "table.vec.coverage.json").read_text())
    assert report["target_types"] == 4 and report["with_vector"] == 3 and report["without_vector_share"] == 0.25
    assert report["tokens_without_vector_share"] == round(4 / 19, 6)
    assert report["most_frequent_without_vector"] == [["zebu", 4]]
    assert json.loads(capsys.readouterr().out)["coverage"] == report
    assert read_vec(tmp_path / "table.vec")[0][-2:] == ["the", "cat"]
