"""The level a translation model must beat after its first epoch: a bigram language model of the
target side, which reads no source at all.

A softmax model whose development loss per target token is still above this bigram's after one
epoch has learned nothing from the source yet. At the papers' sizes (10^4-10^5 steps an epoch)
every baseline is far below it; a model that is not points at a schedule or an initialisation
that does not train (as the joint paper's baselines at toy width and Adam 1e-3 did in the
demo), and a full run should say so at once rather than after its last epoch.

Witten-Bell interpolation (no parameter to tune), over the ids the model itself scores, end of
sentence included, each sentence starting from a begin-of-sentence context:

    p(w | v) = (c(v, w) + T(v) p_1(w)) / (c(v) + T(v)),    p_1(w) = (c(w) + 1) / (N + |V|)

with c the training counts, T(v) the number of distinct words that follow v, N the training
tokens and |V| the vocabulary (so every word, unseen ones too, has p > 0).
"""

from __future__ import annotations

import math
from collections import Counter

BEGIN = -1  # the context of a sentence's first token: no vocabulary id


class WittenBellBigram:
    """Counts of training sentences (lists of ids) and p(w | v) from them (module docstring)."""

    def __init__(self, sentences: list[list[int]], vocab_size: int, ignore: frozenset[int] = frozenset()):
        self.vocab_size, self.ignore = vocab_size, ignore
        self.unigrams, self.bigrams, self.contexts = Counter(), Counter(), Counter()
        for words in map(self.kept, sentences):
            self.unigrams.update(words)
            self.contexts.update([BEGIN, *words[:-1]])
            self.bigrams.update(zip([BEGIN, *words[:-1]], words))
        self.followers = Counter(v for v, _ in self.bigrams)
        self.tokens = sum(self.unigrams.values())

    def kept(self, sentence: list[int]) -> list[int]:
        return [w for w in sentence if w not in self.ignore]

    def probability(self, context: int, word: int) -> float:
        unigram = (self.unigrams[word] + 1) / (self.tokens + self.vocab_size)
        seen, distinct = self.contexts[context], self.followers[context]
        return (self.bigrams[context, word] + distinct * unigram) / (seen + distinct) if seen else unigram


def bigram_loss(
    train: list[list[int]], heldout: list[list[int]], vocab_size: int, ignore: frozenset[int] = frozenset()
) -> float:
    """Mean negative log-likelihood (nats per token) of the `heldout` sentences' tokens under the
    Witten-Bell bigram of the `train` sentences (lists of ids; tokens in `ignore`, padding, are
    neither counted nor scored)."""
    model = WittenBellBigram(train, vocab_size, ignore)
    scored = [(v, w) for words in map(model.kept, heldout) for v, w in zip([BEGIN, *words[:-1]], words)]
    if not scored:
        raise ValueError("bigram_loss: no held-out tokens to score")
    return -sum(math.log(model.probability(v, w)) for v, w in scored) / len(scored)
