"""Alignment symmetrisation and dictionary, target tables, BPE, Moses processing, vocabularies."""

import numpy as np
import pytest

from workflow_src.data import bpe
from workflow_src.data.align import dictionary, grow_diag_final_and, parse_pharaoh
from workflow_src.data.embeddings import normalise, read_vec, target_table, write_vec
from workflow_src.data.preprocess import keep_pair, postprocess, tokenize, train_truecaser, truecase
from workflow_src.data.vocab import SPECIALS, Vocab, count_words, read_counts


# -- alignment -------------------------------------------------------------------------------
def test_grow_diag_final_and_by_hand():
    forward = {(0, 0), (1, 1), (3, 4)}
    reverse = {(0, 0), (1, 1), (1, 2), (3, 5)}
    # intersection {(0,0), (1,1)}; grow-diag adds (1,2), a neighbour of (1,1) whose target word is
    # unaligned; nothing in the union touches (1,2) further. final-and: the forward (3,4) joins
    # (both words unaligned), after which the reverse (3,5) no longer does (source 3 is aligned).
    assert grow_diag_final_and(forward, reverse) == {(0, 0), (1, 1), (1, 2), (3, 4)}
    # diagonal growth chains: (2,3) touches (1,2) diagonally, (3,3) touches (2,3)
    assert grow_diag_final_and({(0, 0), (1, 1), (2, 3)}, {(0, 0), (1, 1), (1, 2), (3, 3)}) == {
        (0, 0),
        (1, 1),
        (1, 2),
        (2, 3),
        (3, 3),
    }


def test_symmetrisation_keeps_the_intersection_and_stays_in_the_union():
    rng = np.random.default_rng(0)
    for _ in range(50):
        f = {(int(i), int(j)) for i, j in rng.integers(0, 6, size=(5, 2))}
        r = {(int(i), int(j)) for i, j in rng.integers(0, 6, size=(5, 2))}
        sym = grow_diag_final_and(f, r)
        assert f & r <= sym <= f | r


def test_dictionary_keeps_the_most_frequent_translation():
    src = ["le chat", "le chat noir", "un chat"]
    tgt = ["the cat", "the black cat", "a cat"]
    links = [{(0, 0), (1, 1)}, {(0, 0), (1, 2), (2, 1)}, {(0, 0), (1, 1)}]
    assert dictionary(src, tgt, links) == {"le": ("the", 2), "chat": ("cat", 3), "noir": ("black", 1), "un": ("a", 1)}


def test_pharaoh_parse_errors_name_the_place():
    assert parse_pharaoh("0-0 1-2", "x") == {(0, 0), (1, 2)}
    with pytest.raises(ValueError, match="fwd:3"):
        parse_pharaoh("0-0 1:2", "fwd:3")


# -- embeddings ------------------------------------------------------------------------------
def test_target_table_unk_is_the_mean_of_embedding_words_outside_the_vocabulary():
    words = ["</s>", "cat", "dog", "mat", "zebra", "yak"]
    vectors = np.random.default_rng(0).standard_normal((6, 8))
    counts = [("cat", 10), ("the", 9), ("dog", 5), ("mat", 1)]  # "the" has no vector
    table_words, table, report = target_table(words, vectors, counts, size=2, seed=0)
    assert table_words == list(SPECIALS) + ["cat", "dog"]
    unit = normalise(vectors)
    outside = unit[[3, 4, 5]]  # mat (beyond size), zebra, yak
    expected_unk = outside.mean(0) / np.linalg.norm(outside.mean(0))
    np.testing.assert_allclose(table[1], expected_unk, atol=1e-6)
    np.testing.assert_allclose(table[0], 0)  # <pad>
    np.testing.assert_allclose(table[3], unit[0], atol=1e-6)  # </s> keeps its trained vector
    np.testing.assert_allclose(np.linalg.norm(table[1:], axis=1), 1, atol=1e-5)
    assert report["training_types_with_vector"] == 3 and report["unk_is_mean_of"] == 3


def test_vec_roundtrip_and_errors(tmp_path):
    path = tmp_path / "x.vec"
    write_vec(path, ["a", "b"], np.array([[1.0, 0.0], [0.6, 0.8]]))
    words, vectors = read_vec(path)
    assert words == ["a", "b"] and np.allclose(vectors, [[1, 0], [0.6, 0.8]])
    path.write_text("2 2\na 1 0\nb 1\n")
    with pytest.raises(ValueError, match=r"x\.vec, line 3: expected a word and 2 numbers"):
        read_vec(path)


# -- BPE ---------------------------------------------------------------------------------------
def test_bpe_merges_set_the_vocabulary_and_decoding_restores_the_text(tmp_path):
    lines = [f"the {w}ing {w}ed {w}s ." for w in ("walk", "talk", "jump", "play", "look", "cook")] * 20
    train = tmp_path / "train.en"
    train.write_text("\n".join(lines) + "\n")
    processor = bpe.train(train, tmp_path / "bpe" / "en", merges=20)
    characters = len({c for line in lines for c in line if c != " "}) + 1
    assert processor.get_piece_size() == 20 + characters + bpe.SPECIAL_PIECES
    for line in lines[:6] + ["the unseenword ."]:
        assert bpe.decode(bpe.encode(processor, line).split()) == line


def test_bpe_keeps_characters_that_nfkc_would_rewrite(tmp_path):
    """Identity normalisation: a hypothesis's pieces decode to the characters the reference has."""
    lines = ["the ﬁnal score was １２ to ３ …", "café ﬁle ﬂow ½ ｗｉｄｅ …", "the ﬁle is ﬁne ."] * 10
    train = tmp_path / "train.en"
    train.write_text("\n".join(lines) + "\n", encoding="utf-8")
    processor = bpe.train(train, tmp_path / "bpe" / "en", merges=10)
    for line in lines[:3]:
        pieces = bpe.encode(processor, line).split()
        assert bpe.decode(pieces).encode("utf-8") == line.encode("utf-8")
        assert processor.unk_id() not in processor.encode(line)


# -- Moses processing ------------------------------------------------------------------------
def test_tokenize_without_escaping_and_postprocess_back():
    assert tokenize("Hello, world! It's 5 o'clock.", "en") == "Hello , world ! It 's 5 o 'clock ."
    assert list(postprocess(["hello , world ! it 's fine ."], "en")) == ["Hello, world! It's fine."]


def test_truecaser_uses_known_casing(tmp_path):
    corpus = ["the cat sat .", "The cat ran .", "we saw the cat .", "Paris is big .", "we saw Paris ."]
    truecaser = train_truecaser(corpus, tmp_path / "tc.en")
    assert truecase(truecaser, "The cat saw Paris .") == "the cat saw Paris ."
    assert (tmp_path / "tc.en").exists()


def test_cleaning_drops_empty_and_long_pairs():
    assert keep_pair("a b", "c", 2)
    assert not keep_pair("a b c", "c", 2)
    assert not keep_pair("", "c", 2)


# -- vocabularies ----------------------------------------------------------------------------
def test_vocabulary_counts_order_and_capping(tmp_path):
    counts = count_words(["b a b", "c b a", "d"])
    assert counts == [("b", 3), ("a", 2), ("c", 1), ("d", 1)]
    path = tmp_path / "v.tsv"
    path.write_text("".join(f"{w}\t{c}\n" for w, c in counts))
    assert read_counts(path) == counts
    vocab = Vocab.load(path, size=2)
    assert vocab.itos == list(SPECIALS) + ["b", "a"]
    assert vocab.encode("a c") == [vocab.stoi["a"], vocab.unk, vocab.eos]
    assert vocab.decode([vocab.bos, vocab.stoi["b"], vocab.eos, vocab.stoi["a"]]) == ["b"]
    path.write_text("a\t1\nbad\n")
    with pytest.raises(ValueError, match=r"v\.tsv, line 2"):
        read_counts(path)


def test_streamed_truecaser_is_sacremoses_own(tmp_path):
    from sacremoses import MosesTruecaser

    corpus = [
        "the cat sat .",
        "The cat ran .",
        "we saw the cat .",
        "Paris is big .",
        "we saw Paris .",
        "iPhone sales rose .",
        "the iPhone is new .",
    ]
    ours = train_truecaser(iter(corpus), tmp_path / "ours.tc")
    theirs = MosesTruecaser()
    theirs.train([line.split() for line in corpus], save_to=str(tmp_path / "theirs.tc"))
    assert ours.model == theirs.model
    assert (tmp_path / "ours.tc").read_text() == (tmp_path / "theirs.tc").read_text()


def test_length_ratio_cleaning():
    assert keep_pair("a b c", "x", 10, max_ratio=3)
    assert not keep_pair("a b c d", "x", 10, max_ratio=3)
    assert not keep_pair("x", "a b c d", 10, max_ratio=3)
    assert keep_pair("a b c d", "x", 10, max_ratio=None)
    assert keep_pair(" ".join(["w"] * 80), " ".join(["w"] * 70), None)  # the limit counts pieces, at training
    assert not keep_pair("", "x", None)


def test_bpe_encodes_evaluation_sets_with_the_corpus_model(tmp_path):
    """The evaluation sets of each direction are encoded with the model learnt once per corpus."""
    train = tmp_path / "train.en"
    train.write_text("the walking talker walked .\nthe talking walker talked .\n" * 20)
    (tmp_path / "test.en").write_text("the walker talked .\n")
    bpe.main(
        [
            "--merges",
            "10",
            "--train",
            str(train),
            "--model-prefix",
            str(tmp_path / "bpe" / "en"),
            "--encode",
            f"{train}:{tmp_path / 'bpe' / 'train.en'}",
        ]
    )
    bpe.main(
        [
            "--model-prefix",
            str(tmp_path / "bpe" / "en"),
            "--encode",
            f"{tmp_path / 'test.en'}:{tmp_path / 'bpe' / 'test.en'}",
        ]
    )
    pieces = (tmp_path / "bpe" / "test.en").read_text().split()
    assert bpe.decode(pieces) == "the walker talked ." and set(pieces) <= set(
        (tmp_path / "bpe" / "train.en").read_text().split()
    )
    with pytest.raises(SystemExit):
        bpe.main(["--train", str(train), "--model-prefix", str(tmp_path / "other")])  # --train without --merges
