"""Unigram precision, recall and F1 of test words binned by their training frequency: the
rare-word measure of the vMF paper's Table 5 (`report/analysis.py` renders it), per sentence so
that a claim's bootstrap can resample the test sentences (`report/table_evidence.py`)."""

from __future__ import annotations

from collections import Counter


def frequency_bin(count: int, bins) -> int | None:
    for i, (low, high) in enumerate(bins):
        if count >= low and (high is None or count <= high):
            return i
    return None


def bin_label(low: int, high: int | None) -> str:
    return f"{low}+" if high is None else str(low) if low == high else f"{low}-{high}"


def sentence_bin_counts(
    references: list[str], hypotheses: list[str], train_counts: dict[str, int], bins
) -> list[list[list[int]]]:
    """Per test sentence, per bin (bin 0: words unseen in training, then `bins`), [matched,
    hypothesis words, reference words] of the words whose training frequency falls in the bin;
    a word matches min(#hyp, #ref) times in its sentence."""
    all_bins = [(0, 0), *bins]
    out = []
    for ref, hyp in zip(references, hypotheses, strict=True):
        counts = [[0, 0, 0] for _ in all_bins]
        r, h = Counter(ref.split()), Counter(hyp.split())
        for word in r.keys() | h.keys():
            b = frequency_bin(train_counts.get(word, 0), all_bins)
            if b is None:
                continue
            counts[b][0] += min(r[word], h[word])
            counts[b][1] += h[word]
            counts[b][2] += r[word]
        out.append(counts)
    return out


def binned_f1(references: list[str], hypotheses: list[str], train_counts: dict[str, int], bins) -> list[dict]:
    """Unigram precision, recall and F1 of test words grouped by training frequency.

    Per sentence, a word matches min(#hyp, #ref) times (`sentence_bin_counts`); per bin, P =
    matches / hypothesis words, R = matches / reference words, F1 = 2PR / (P + R) (= 2 matches /
    (hypothesis + reference words)). Bin 0 holds words unseen in training.
    """
    return bin_scores(sentence_bin_counts(references, hypotheses, train_counts, bins), len(bins) + 1)


def bin_scores(per_sentence: list[list[list[int]]], bins: int) -> list[dict]:
    """Per bin, P, R and F1 of the summed [matched, hypothesis, reference] counts of every sentence."""
    out = []
    for b in range(bins):
        matched, in_hyp, in_ref = (sum(sentence[b][i] for sentence in per_sentence) for i in range(3))
        precision = matched / in_hyp if in_hyp else 0.0
        recall = matched / in_ref if in_ref else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out.append({"precision": precision, "recall": recall, "f1": f1, "reference_words": in_ref})
    return out
