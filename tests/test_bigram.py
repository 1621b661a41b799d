"""The target-side bigram a translation model must beat after one epoch (workflow_src/train/bigram.py):
a distribution over the vocabulary in every context, Witten-Bell's weights on a hand-counted
example, and the loss as the mean of its tokens' negative log-probabilities."""

import math

import pytest

from workflow_src.train.bigram import BEGIN, WittenBellBigram, bigram_loss

TRAIN = [[1, 2, 3], [1, 2, 2, 3], [4, 3]]
VOCAB = 6  # ids 0-5; 0 is padding, 5 never occurs


@pytest.mark.parametrize("context", [BEGIN, 1, 2, 3, 4, 5])
def test_every_context_gives_a_distribution_over_the_vocabulary(context):
    model = WittenBellBigram(TRAIN, VOCAB)
    assert sum(model.probability(context, w) for w in range(VOCAB)) == pytest.approx(1.0)
    assert all(model.probability(context, w) > 0 for w in range(VOCAB))


def test_witten_bell_on_a_hand_counted_example():
    model = WittenBellBigram(TRAIN, VOCAB)
    # 9 tokens: c(1) = 2, c(2) = 3, c(3) = 3, c(4) = 1. After 2: 2 (once) and 3 (twice): c(2) = 3, T(2) = 2.
    unigram = {w: (c + 1) / (9 + VOCAB) for w, c in {0: 0, 1: 2, 2: 3, 3: 3, 4: 1, 5: 0}.items()}
    assert model.probability(2, 3) == pytest.approx((2 + 2 * unigram[3]) / (3 + 2))
    assert model.probability(2, 5) == pytest.approx(2 * unigram[5] / (3 + 2))
    assert model.probability(5, 1) == pytest.approx(unigram[1])  # a context never seen: the unigram


def test_the_loss_is_the_mean_negative_log_probability_and_ignores_padding():
    model = WittenBellBigram(TRAIN, VOCAB)
    expected = (
        -(
            math.log(model.probability(BEGIN, 1))
            + math.log(model.probability(1, 3))
            + math.log(model.probability(BEGIN, 4))
        )
        / 3
    )
    assert bigram_loss(TRAIN, [[1, 3, 0, 0], [4]], VOCAB, ignore=frozenset({0})) == pytest.approx(expected)
    with pytest.raises(ValueError, match="no held-out tokens"):
        bigram_loss(TRAIN, [[0, 0]], VOCAB, ignore=frozenset({0}))
