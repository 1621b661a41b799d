"""The statistics of every prepared corpus beside what the papers state about it.

`python -m workflow_src.data.statistics --stats JSON --data-note TEXT --out-prefix results/data_statistics`
reads each corpus's `stats.json` (written by `preprocess` and `lm_data`; for `coverage`, the
`<table>.coverage.json` of `embeddings table`) and writes one table: corpus, pair or language,
quantity, the paper's statement, ours and their ratio.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from workflow_src.atomic import described
from workflow_src import artefacts, layout, registry
from workflow_src.tables import write_table

VMF = "vMF §4.1"
JOINT = "joint §4.1"
TYING = "tying §6"

# (corpus, pair or language) -> quantity -> (what a paper states, which paper)
STATED: dict[tuple[str, str], dict[str, tuple[float, str]]] = {
    **{
        ("iwslt16", pair): {
            "training pairs": (220_000, VMF),
            "training target types": (55_000, VMF),
            "development pairs": (2_300, VMF),
            "test pairs": (2_200, VMF),
        }
        for pair in ("fr-en", "de-en", "en-fr")
    },
    ("wmt16", "de-en"): {"training pairs": (4_500_000, VMF), "training target types": (800_000, VMF)},
    **{
        ("wmt17", pair): {
            "training pairs": (pairs, JOINT),
            "development pairs": (dev, JOINT),
            "test pairs": (3_000, JOINT),
            **{
                f"BPE vocabulary, {k}000 merges ({lang})": (k * 1000, JOINT + ": |V| ~ the BPE operations")
                for k in (32, 64, 128)
                for lang in pair.split("-")
            },
        }
        for pair, pairs, dev in (
            ("en-fi", 2_500_000, 1_300),
            ("fi-en", 2_500_000, 1_300),
            ("en-de", 5_800_000, 3_000),
            ("de-en", 5_800_000, 3_000),
        )
    },
    ("ptb", "-"): {
        "training tokens": (929_000, TYING),
        "validation tokens": (73_000, TYING),
        "test tokens": (82_000, TYING),
        "vocabulary": (10_000, TYING),
    },
    ("wikitext2", "-"): {
        "training tokens": (2_088_000, TYING),
        "validation tokens": (217_000, TYING),
        "test tokens": (245_000, TYING),
        "vocabulary": (33_278, TYING),
    },
    ("monolingual", "en"): {"tokens": (4e9, VMF + ": 4B+ tokens of WMT16 monolingual English")},
    ("monolingual", "fr"): {"tokens": (2e9, VMF + ": 2B+ tokens of WMT16 monolingual French")},
}


ARTEFACT_INPUT = re.compile(
    r"^results/(?:models|data)/([^/]+)/([a-z]{2}-[a-z]{2})/(?:([^/]+)/seed\d+/)?|^results/lm/([^/]+)/"
)


def used_data(config: dict) -> tuple[dict[str, set[str]], set[tuple[str, str, str]], dict[str, set[str]]]:
    """What the configured papers' artefacts read, from their input paths (`layout.inputs`):
    {data set: its pairs} (a language-model corpus: its base data set, no pairs), the
    (data set, pair, vectors) of every target side with pretrained vectors, and {data set: the
    `bpe_sizes` keys} its models segment with."""
    pairs: dict[str, set[str]] = {}
    vectors: set[tuple[str, str, str]] = set()
    bpe: dict[str, set[str]] = {}
    for paper, artefact_id in layout.configured_artefacts(config):
        ctx = layout.context(config, paper, artefact_id)
        for path in layout.inputs(registry.artefact(paper, artefact_id), ctx, paper, artefact_id):
            if not (m := ARTEFACT_INPUT.match(path)):
                continue
            dataset, pair, experiment, corpus = m.groups()
            if corpus is not None:
                pairs.setdefault(artefacts.Corpus(corpus, "").base, set())
                continue
            pairs.setdefault(dataset, set()).add(pair)
            if experiment is not None:
                e = registry.experiment(experiment)
                if e.embeddings is not None:
                    vectors.add((dataset, pair, e.embeddings))
                if e.bpe is not None:
                    bpe.setdefault(dataset, set()).add(e.bpe)
    return pairs, vectors, bpe


def corpora(config: dict) -> list[list]:
    """[kind, corpus, pair or language, stats.json] of every corpus that the configured papers'
    artefacts use (`used_data`): one paper's statistics download only that paper's data. With no
    paper configured (`papers: {}`, data preparation alone): every configured corpus."""
    if layout.configured_artefacts(config):
        pairs, vectors, bpe = used_data(config)
        trained = {(pair.split("-")[1], kind) for _, pair, kind in vectors}  # (language, vectors)
    else:
        pairs = {name: set(d.get("pairs", ())) for name, d in config["datasets"].items()}
        bpe = {name: set(d.get("bpe_sizes", {})) for name, d in config["datasets"].items()}
        trained = {(lang, kind) for lang in config["monolingual"] for kind in config["embeddings"]}
    result = []
    for name, d in config["datasets"].items():
        if name not in pairs:
            continue
        if d["kind"] == "lm":
            result.append(["lm", name, "-", f"results/data/{name}/stats.json"])
            continue
        used = [p for p in d["pairs"] if p in pairs[name]]
        result += [["parallel", name, p, layout.parallel_stats_paths(config, name, p)] for p in used]
        result += [
            [f"bpe{merges}", name, p, layout.corpus_bpe_file(config, name, p, merges, f"vocab.{lang}.tsv")]
            for key, merges in d.get("bpe_sizes", {}).items()
            if key in bpe.get(name, ())
            for p in used
            for lang in p.split("-")
        ]
    # the embedding corpus of each language whose vectors a model uses, and the share of each used
    # target vocabulary in that language without one of those vectors (vectors trained anyway)
    result += [
        ["monolingual", f"monolingual ({m['use']})", lang, f"results/embeddings/{lang}/corpus.txt.stats.json"]
        for lang, m in config["monolingual"].items()
        if any(lang == t for t, _ in trained)
    ]
    result += [
        ["coverage", name, p, f"results/data/{name}/{p}/emb/{kind}.vec.coverage.json"]
        for name, d in config["datasets"].items()
        if "emb_vocab_size" in d and name in pairs
        for p in d["pairs"]
        if p in pairs[name] and p.split("-")[1] in config["monolingual"]
        for kind in config["embeddings"]
        if (p.split("-")[1], kind) in trained
    ]
    return result


def quantities(kind: str, pair: str, stats, path: str) -> dict[str, float]:
    """The measured quantities of one corpus from its stats.json (a BPE model: its piece counts)."""
    if kind == "parallel":
        tgt = pair.split("-")[1]
        return {
            "training pairs": stats["train"]["sentences"],
            "training pairs before cleaning": stats["train"]["sentences_raw"],
            "training target types": stats["train"][f"types_{tgt}"],
            "training target tokens": stats["train"][f"tokens_{tgt}"],
            "development pairs": stats["dev"]["sentences"],
            "test pairs": stats["test"]["sentences"],
        }
    if kind.startswith("bpe"):
        return {
            f"BPE vocabulary, {kind.removeprefix('bpe')} merges ({Path(path).suffixes[-2].lstrip('.')})": len(stats)
        }
    if kind == "lm":
        return {
            "training tokens": stats["train"]["tokens"],
            "validation tokens": stats["valid"]["tokens"],
            "test tokens": stats["test"]["tokens"],
            "vocabulary": stats["vocabulary"],
        }
    if kind == "coverage":
        vectors = Path(path).name.split(".")[0]
        return {
            f"target types without a {vectors} vector (share)": stats["without_vector_share"],
            f"{stats['most_frequent_types']} most frequent target types without a {vectors} vector (share)": stats[
                "most_frequent_without_vector_share"
            ],
            f"training target tokens without a {vectors} vector (share)": stats["tokens_without_vector_share"],
        }
    lang = pair
    return {
        "sentences": stats["sentences"],
        "tokens": stats[f"tokens_{lang}"],
        "types": stats[f"types_{lang}"],
        "lines with undecodable bytes": stats.get("undecodable_lines", 0),
    }


def build(corpora: list[list[str]]) -> tuple[list[str], list[dict]]:
    columns = ["corpus", "pair or language", "quantity", "paper", "ours", "ours / paper", "source"]
    rows = []
    for kind, corpus, pair, path in corpora:
        key = ("monolingual" if kind == "monolingual" else corpus, pair)
        stated = STATED.get(key, {})
        if kind == "parallel":  # a stats file per split: the training text's is the corpus's
            stats = {split: counts for part in path for split, counts in json.loads(Path(part).read_text()).items()}
        else:
            data = Path(path).read_text()
            stats = data.splitlines() if kind.startswith("bpe") else json.loads(data)
        for quantity, ours in quantities(kind, pair, stats, path).items():
            paper, source = stated.get(quantity, (None, ""))
            rows.append(
                {
                    "corpus": corpus,
                    "pair or language": pair,
                    "quantity": quantity,
                    "paper": paper,
                    "ours": ours,
                    "ours / paper": round(ours / paper, 3) if paper else None,
                    "source": source,
                }
            )
    return columns, rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument(
        "--corpora",
        type=json.loads,
        required=True,
        help='[[kind (parallel, lm, monolingual, coverage, bpe<merges>), corpus, pair or language ("-"), '
        "stats.json (for bpe, the piece counts; for parallel, a list: one per split)], ...]",
    )
    parser.add_argument("--data-note", required=True)
    parser.add_argument("--out-prefix", type=Path, required=True)
    args = parser.parse_args(argv)
    columns, rows = build(args.corpora)
    prefix = args.out_prefix
    footer = [
        "Ours: after extraction and cleaning (training pairs), tokenized and truecased (types); "
        "LM tokens count one end of sentence per line. Monolingual: the embedding corpus "
        "(monolingual.<lang>.use), blank lines dropped, truecased with the language's shared model. "
        "Without a vector: shares of the training target vocabulary that the embeddings lack."
    ]
    write_table(
        prefix.with_suffix(".csv"),
        prefix.with_suffix(".md"),
        prefix.with_suffix(".html"),
        "Corpus statistics",
        args.data_note,
        columns,
        rows,
        footer,
    )


if __name__ == "__main__":
    main()
