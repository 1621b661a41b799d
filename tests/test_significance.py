"""The seed-averaged paired bootstrap against sacrebleu's own corpus BLEU and obvious cases."""

import random

import numpy as np
from sacrebleu.metrics import BLEU

from workflow_src.score import significance

random.seed(0)
WORDS = "the a cat dog sat ran on under mat house red blue quickly".split()
REFS = [" ".join(random.choices(WORDS, k=random.randint(4, 12))) for _ in range(200)]


def noisy(refs, rate, seed):
    rng = random.Random(seed)
    return [" ".join(w if rng.random() > rate else rng.choice(WORDS) for w in r.split()) for r in refs]


def stats(hyps):
    return significance.sentence_statistics(hyps, REFS)


def test_identity_resample_is_sacrebleus_corpus_bleu():
    seeds = [noisy(REFS, 0.3, s) for s in range(3)]
    identity = np.arange(len(REFS))[None, :]
    ours = significance.seed_mean_bleu([stats(h) for h in seeds], identity)[0]
    expected = np.mean([BLEU().corpus_score(h, [REFS]).score for h in seeds])
    assert abs(ours - expected) < 1e-9


def test_a_clearly_better_system_is_significant_and_not_the_reverse():
    indices = significance.resample_indices(len(REFS), resamples=200)
    good = [stats(noisy(REFS, 0.1, s)) for s in range(2)]
    bad = [stats(noisy(REFS, 0.5, s + 10)) for s in range(2)]
    assert significance.paired_bootstrap_p(good, bad, indices) < 0.05
    assert significance.paired_bootstrap_p(bad, good, indices) == 1.0


def test_a_system_never_beats_itself():
    indices = significance.resample_indices(len(REFS), resamples=100)
    same = [stats(noisy(REFS, 0.3, 1))]
    assert significance.paired_bootstrap_p(same, same, indices) == 1.0


def test_close_systems_are_not_significant():
    indices = significance.resample_indices(len(REFS), resamples=200)
    a = [stats(noisy(REFS, 0.3, s)) for s in range(2)]
    b = [stats(noisy(REFS, 0.3, s + 5)) for s in range(2)]
    p_ab, p_ba = significance.paired_bootstrap_p(a, b, indices), significance.paired_bootstrap_p(b, a, indices)
    assert p_ab > 0.05 or p_ba > 0.05
    assert abs(p_ab + p_ba - 1) < 0.05  # ties aside, one system wins where the other loses


def test_difference_p_is_sacrebleus_paired_bootstrap_for_one_seed():
    """The joint paper's test: sacrebleu's own PairedTest (--paired-bs) gives the same p."""
    from sacrebleu.significance import PairedTest

    indices = significance.resample_indices(len(REFS))
    for rate in (0.2, 0.3, 0.6):
        system, baseline = noisy(REFS, rate, 1), noisy(REFS, 0.3, 2)
        _, results = PairedTest(
            [("baseline", baseline), ("system", system)],
            {"BLEU": BLEU()},
            [REFS],
            test_type="bs",
            n_samples=significance.RESAMPLES,
        )()
        expected = results["BLEU"][1].p_value
        ours = significance.difference_p([stats(system)], [stats(baseline)], indices)
        assert abs(ours - expected) <= 2 / (significance.RESAMPLES + 1), (rate, ours, expected)
    clear = significance.difference_p([stats(REFS)], [stats(noisy(REFS, 0.6, 3))], indices)
    assert clear < 0.001 + 1e-9 and significance.difference_p([stats(REFS)], [stats(REFS)], indices) == 1.0
