"""Analysis tables: rare-word F1 by a hand computation, convergence time from training logs."""

import pytest

from workflow_src.analysis import bin_label, binned_f1, frequency_bin, time_to_convergence

BINS = ((1, 1), (2, 2), (3, 4), (5, None))


def test_rare_word_f1_by_hand():
    train = {"the": 50, "cat": 1, "sat": 2, "mat": 3, "dog": 1}
    references = ["the cat sat on the mat", "the dog sat"]
    hypotheses = ["the cat sat on a mat", "a dog dog sat"]
    bins = binned_f1(references, hypotheses, train, BINS)
    # unseen (bin 0): ref {on}, hyp {on, a, a}: 1 match, P = 1/3, R = 1/1
    assert bins[0]["precision"] == pytest.approx(1 / 3) and bins[0]["recall"] == 1
    assert bins[0]["f1"] == pytest.approx(2 * (1 / 3) / (1 / 3 + 1))
    # frequency 1: ref {cat, dog}, hyp {cat, dog, dog}: matches clipped per sentence = 2
    assert (bins[1]["precision"], bins[1]["recall"]) == pytest.approx((2 / 3, 1.0))
    # frequency 2: sat twice in both: P = R = 1
    assert bins[2]["f1"] == 1.0
    # 3-4: mat; 5+: the (ref 3, hyp 1 -> P 1, R 1/3)
    assert bins[3]["f1"] == 1.0
    assert (bins[4]["precision"], bins[4]["recall"]) == pytest.approx((1.0, 1 / 3))
    assert bins[4]["reference_words"] == 3


def test_bins_and_labels():
    assert [frequency_bin(n, BINS) for n in (1, 2, 3, 4, 5, 1000)] == [0, 1, 2, 2, 3, 3]
    assert frequency_bin(0, BINS) is None
    assert [bin_label(*b) for b in BINS] == ["1", "2", "3-4", "5+"]


def test_convergence_is_the_lowest_development_loss_not_the_best_bleu():
    """vMF Table 3's criterion (§4.1): the epoch of the lowest validation loss (perplexity), here
    epoch 2, although development BLEU (`best`, what training selects on) kept rising to epoch 3."""
    history = [
        {"epoch": 1, "train_seconds_total": 10.0, "dev_loss": 3.0, "dev_bleu": 5.0, "best": True},
        {"epoch": 2, "train_seconds_total": 21.0, "dev_loss": 2.5, "dev_bleu": 6.0, "best": True},
        {"epoch": 3, "train_seconds_total": 30.0, "dev_loss": 2.6, "dev_bleu": 7.0, "best": True},
    ]
    assert time_to_convergence(history) == (21.0, 2, True)


def test_a_loss_still_falling_at_the_last_epoch_is_not_converged():
    history = [
        {"epoch": 1, "train_seconds_total": 10.0, "dev_loss": -20.0},
        {"epoch": 2, "train_seconds_total": 21.0, "dev_loss": -23.5},
    ]
    assert time_to_convergence(history) == (21.0, 2, False)

