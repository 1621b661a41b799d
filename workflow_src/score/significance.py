"""Paired bootstrap resampling of BLEU (Koehn 2004) for systems trained with several seeds.

A resample draws the n test sentences with replacement, the same draw for every system. On a
resample a system scores the mean over its seeds of sacrebleu's corpus BLEU (default settings,
as the `bleu` rule scores) on those sentences. For "A is better than B",

    p = (1 + #{resamples: BLEU_A <= BLEU_B}) / (1 + R)

and A's gain is significant at level alpha when p < alpha. `difference_p` is the two-sided test of
sacrebleu's paired bootstrap (`sacrebleu --paired-bs`, after Moses'
bootstrap-hypothesis-difference-significance.pl), the same number for one seed each.
"""

from __future__ import annotations

import numpy as np
from sacrebleu.metrics import BLEU

RESAMPLES = 1000


def sentence_statistics(hypotheses: list[str], references: list[str], tokenize: str | None = None) -> np.ndarray:
    """BLEU's sufficient statistics per sentence (n x 10: lengths, n-gram matches and totals),
    with sacrebleu's tokenizer `tokenize` (its default 13a when None; "none" for tokenized text)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    metric = BLEU() if tokenize is None else BLEU(tokenize=tokenize)
    return np.array(metric._extract_corpus_statistics(hypotheses, [references]), dtype=np.int64)


def resample_indices(sentences: int, resamples: int = RESAMPLES, seed: int = 12345) -> np.ndarray:
    """R x n sentence indices: the draw of sacrebleu's paired bootstrap at its default seed."""
    return np.random.default_rng(seed).choice(sentences, size=(resamples, sentences), replace=True)


def seed_mean_bleu(statistics_by_seed: list[np.ndarray], indices: np.ndarray) -> np.ndarray:
    """Mean BLEU over seeds on each resample (indices: R x n) -> R."""
    metric = BLEU()
    scores = np.zeros(len(indices))
    for statistics in statistics_by_seed:
        sums = np.stack([statistics[row].sum(0) for row in indices])
        scores += [metric._compute_score_from_stats(list(s)).score for s in sums]
    return scores / len(statistics_by_seed)


def paired_bootstrap_p(system: list[np.ndarray], baseline: list[np.ndarray], indices: np.ndarray) -> float:
    """p of "system beats baseline", each given as per-seed sentence statistics."""
    wins_not = np.sum(seed_mean_bleu(system, indices) <= seed_mean_bleu(baseline, indices))
    return float((1 + wins_not) / (1 + len(indices)))


def difference_p(system: list[np.ndarray], baseline: list[np.ndarray], indices: np.ndarray) -> float:
    """p of "the two differ", as sacrebleu's paired bootstrap computes it: with d the observed
    |BLEU_A - BLEU_B| and d_r that difference on resample r,

        p = (1 + #{r: d_r - mean_r(d_r) > d}) / (1 + R)

    (each system's BLEU the mean over its seeds). Two systems with the same BLEU do not differ: p = 1
    (sacrebleu's formula would give 1 / (1 + R) for identical outputs)."""
    everything = np.arange(len(indices[0]))[None]
    observed = abs(seed_mean_bleu(system, everything)[0] - seed_mean_bleu(baseline, everything)[0])
    if observed == 0:
        return 1.0
    differences = np.abs(seed_mean_bleu(system, indices) - seed_mean_bleu(baseline, indices))
    return float((1 + np.sum(differences - differences.mean() > observed)) / (1 + len(indices)))
