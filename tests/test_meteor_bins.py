"""METEOR by output-frequency bin (the joint paper's Figure 3): Meteor Universal's formula with
delta and function words, on hand-worked sentences."""

import json
import random

import numpy as np
import pytest
import sentencepiece as spm

from workflow_src.score import meteor
from workflow_src.score.meteor import (
    MeteorParameters,
    add_statistics,
    align,
    binned_meteor,
    meteor_score,
    meteor_statistics,
)

ENGLISH = MeteorParameters(0.85, 0.2, 0.6, 0.0)  # the paper's English parameters


def corpus_score(pairs, function_words, p):
    total = None
    for h, r in pairs:
        h, r = h.split(), r.split()
        total = add_statistics(total, meteor_statistics(h, r, align(h, r), function_words, stages=1))
    return meteor_score(total, p)


def test_score_follows_meteor_universal_by_hand():
    # a b c d against a b x c d: 4 matches in 2 chunks (a b | c d)
    p = MeteorParameters(0.85, 0.2, 0.6, 1.0)  # delta 1: content words only, none are function words
    precision, recall = 4 / 4, 4 / 5
    fmean = precision * recall / (0.85 * precision + 0.15 * recall)
    expected = fmean * (1 - 0.6 * (2 / 4) ** 0.2)
    assert corpus_score([("a b c d", "a b x c d")], set(), p)["score"] == pytest.approx(expected, rel=1e-12)


def test_delta_zero_counts_only_the_function_words():
    # function words {c, x}: the hypothesis has c (matched), the reference c (matched) and x
    result = corpus_score([("a b c d", "a b x c d")], {"c", "x"}, ENGLISH)
    assert result["precision"] == 1.0 and result["recall"] == 0.5
    fmean = 0.5 / (0.85 + 0.15 * 0.5)
    assert result["score"] == pytest.approx(fmean * (1 - 0.6 * (2 / 4) ** 0.2), rel=1e-12)
    # unmatched content words change nothing but the fragmentation they cause
    other = corpus_score([("a b c d z z", "a b x c d y")], {"c", "x"}, ENGLISH)
    assert (other["precision"], other["recall"]) == (1.0, 0.5)
    # no function word in the hypothesis: nothing to score
    assert corpus_score([("a b", "a b x")], {"x"}, ENGLISH)["score"] == 0.0


def test_corpus_statistics_sum_and_a_whole_match_adds_no_chunk():
    pairs = [("a b c d", "a b x c d"), ("e f", "e f")]
    total = None
    for h, r in pairs:
        h, r = h.split(), r.split()
        total = add_statistics(total, meteor_statistics(h, r, align(h, r), set(), 1))
    assert (total["test_length"], total["reference_length"], total["matches"], total["chunks"]) == (6, 7, 6, 2)
    p = MeteorParameters(0.85, 0.2, 0.6, 1.0)
    fmean = 1 * (6 / 7) / (0.85 + 0.15 * 6 / 7)
    assert meteor_score(total, p)["score"] == pytest.approx(fmean * (1 - 0.6 * (2 / 6) ** 0.2), rel=1e-12)
    assert corpus_score([("e f", "e f")], set(), p)["score"] == 1.0


def test_alignment_takes_the_longest_runs_first():
    # "the" twice in the hypothesis, three times in the reference: "the dog" is one run
    h, r = "the cat saw the dog".split(), "the cat and the dog ran the end".split()
    matches = align(h, r)
    assert [(i, j) for i, j, _ in matches] == [(0, 0), (1, 1), (3, 3), (4, 4)]
    assert meteor.count_chunks(matches) == 2  # the cat | the dog
    # of equal runs, the one nearest in relative position
    assert [(i, j) for i, j, _ in align("x a".split(), "a y z a".split())] == [(1, 3)]
    # a later stage only sees what the earlier left unmatched
    staged = align("runs ran".split(), "ran running".split(), keys=(lambda w: w, lambda w: w[:2]))
    assert staged == [(0, 1, 1), (1, 0, 0)]


def test_frequency_bins_are_thirds_of_the_vocabulary_most_frequent_first():
    counts = [("a", 9), ("b", 5), ("c", 5), ("d", 3), ("e", 2), ("f", 1), ("g", 1)]
    bins = meteor.frequency_bins(counts, ("high", "medium", "low"))
    assert bins == {"high": {"a", "b", "c"}, "medium": {"d", "e"}, "low": {"f", "g"}}


def test_binned_meteor_scores_each_bin_on_its_own_units():
    bins = {"high": {"the", "a"}, "low": {"zebra", "okapi"}}
    hyps = [["the", "zebra", "runs"], ["a", "dog"]]
    refs = [["the", "okapi", "runs"], ["a", "dog"]]
    result = binned_meteor(hyps, refs, bins, ENGLISH)
    assert result["high"]["precision"] == result["high"]["recall"] == 1.0
    assert result["low"]["score"] == 0.0 and result["low"]["reference_function_words"] == 1
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        binned_meteor(hyps, refs[:1], bins, ENGLISH)


def test_sentence_statistics_sum_to_the_corpus_statistics_and_score():
    """Each bin's per-sentence vectors (a whole match in one chunk counting no chunk) sum to the
    statistics `add_statistics` accumulates, and give the figure's corpus score exactly."""
    rng = random.Random(5)
    words = "the a of zebra okapi runs dog cat sat on mat".split()
    refs = [rng.choices(words, k=rng.randint(2, 9)) for _ in range(40)] + [["the", "dog"], ["a", "cat", "sat"]]
    hyps = [
        [w if rng.random() < 0.7 else rng.choice(words) for w in r] + rng.choices(words, k=rng.randint(0, 2))
        for r in refs[:40]
    ] + [["the", "dog"], ["a", "cat", "sat"]]  # two whole matches in one chunk
    bins = {"high": {"the", "a", "of"}, "medium": {"runs", "dog", "cat", "sat"}, "low": {"zebra", "okapi", "on", "mat"}}
    for name, result in binned_meteor(hyps, refs, bins, ENGLISH).items():
        pairs = [(" ".join(h), " ".join(r)) for h, r in zip(hyps, refs)]
        today = corpus_score(pairs, bins[name], ENGLISH)
        summed = meteor.vector_statistics(np.sum(result["sentences"], axis=0))
        assert meteor_score(summed, ENGLISH) == today and result["score"] == today["score"], name
        assert result["sentences"][-1][meteor.SCALAR_STATISTICS.index("chunks")] == 0  # a whole match adds no chunk
        assert meteor.vector_statistics(result["sentences"][0])["test_length"] == len(hyps[0])


def test_bins_tool_segments_hypotheses_with_the_models_pieces(tmp_path):
    text = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 30
    (tmp_path / "train.en").write_text("\n".join(text) + "\n")
    spm.SentencePieceTrainer.train(
        input=str(tmp_path / "train.en"),
        model_prefix=str(tmp_path / "en"),
        model_type="bpe",
        vocab_size=30,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    processor = spm.SentencePieceProcessor(model_file=str(tmp_path / "en.model"))
    pieces = [" ".join(processor.encode(line, out_type=str)) for line in text]
    (tmp_path / "test.en").write_text("\n".join(pieces[:3]) + "\n")
    (tmp_path / "hyp.tok").write_text("\n".join(text[:3]) + "\n")
    from collections import Counter

    counts = Counter(piece for line in pieces for piece in line.split())
    (tmp_path / "vocab.en.tsv").write_text("".join(f"{p}\t{c}\n" for p, c in counts.most_common()))
    meteor.main(
        [
            "bins",
            "--hyp",
            str(tmp_path / "hyp.tok"),
            "--ref-pieces",
            str(tmp_path / "test.en"),
            "--sentencepiece-model",
            str(tmp_path / "en.model"),
            "--counts",
            str(tmp_path / "vocab.en.tsv"),
            "--parameters",
            "0.85",
            "0.2",
            "0.6",
            "0",
            "--out",
            str(tmp_path / "out.json"),
        ]
    )
    result = json.loads((tmp_path / "out.json").read_text())
    assert list(result["bins"]) == ["high", "medium", "low"]
    assert sum(b["units"] for b in result["bins"].values()) == len(counts)
    # the hypotheses are the references: every bin with units in the test set scores 1
    assert all(b["score"] == 1.0 for b in result["bins"].values() if b["reference_function_words"])
    assert "delta 0" in result["signature"] and "BPE pieces" in result["signature"]
    assert all(len(b["sentences"]) == 3 for b in result["bins"].values())  # one vector per test sentence
