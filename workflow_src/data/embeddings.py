"""Target-side word embeddings: training, `.vec` export, and the per-model target table.

`python -m workflow_src.data.embeddings train --kind fasttext --corpus corpus.txt --out fasttext.vec
 --params '{"dim": 300, ...}'` trains word2vec (gensim) or fasttext (the fastText package, or
gensim with `"backend": "gensim"`) on a tokenized monolingual corpus and writes every vector
L2-normalised in word2vec text format. Both original tools read a line break as the token
`</s>`; with gensim it is appended explicitly, so the end-of-sentence token always has a learned
vector a continuous-output decoder can predict.

`python -m workflow_src.data.embeddings table --vectors fasttext.vec --vocab vocab.en.tsv --size 50000
 --out table.vec` writes the target table of one model: the special tokens, then the `size` most
frequent training words that have a vector (vMF paper §4.1: the others become `<unk>`). `<unk>`
is the normalised mean of the vectors of words in the embedding vocabulary but outside this
target vocabulary; `<pad>` is zero; a special token without a trained vector (`<s>`, or `</s>`
in vectors trained elsewhere) gets a fixed random unit vector. Beside the table it writes
`<out>.coverage.json`, the share of the target vocabulary that has no vector (`coverage`).

`monolingual_sources(config, lang)` names the corpus the vectors of a language are trained on:
`monolingual.<lang>.corpora[monolingual.<lang>.use]`, a list of source keys (`KEY` or
`KEY::MEMBER`, a member of an archive).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from workflow_src.atomic import atomic_output, described, FileFault, one_line_faults, write_text
from workflow_src.data.vocab import EOS, PAD, SPECIALS, UNK, read_counts


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def write_vec(path: Path, words: list[str], vectors: np.ndarray) -> None:
    with atomic_output(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(f"{len(words)} {vectors.shape[1]}\n")
        for word, vector in zip(words, vectors):
            f.write(word + " " + " ".join(f"{x:.6f}" for x in vector) + "\n")


VEC_FORMAT = "word2vec text (a '<count> <dim>' header, then a word and <dim> numbers a line)"


def read_vec(path: Path) -> tuple[list[str], np.ndarray]:
    """The words and vectors of a word2vec text file, streamed; a FileFault naming the file (and
    line) where it is not that: not UTF-8, a bad header, a line of the wrong width or not numbers,
    fewer or more vectors than the header announces (a truncated file)."""
    try:
        with open(path, encoding="utf-8") as f:
            return _read_vec(path, f)
    except UnicodeDecodeError as err:
        raise FileFault(f"{path}: not UTF-8 text ({err.reason}); expected {VEC_FORMAT}") from None


def _read_vec(path: Path, f) -> tuple[list[str], np.ndarray]:
    header = f.readline().split()
    if len(header) != 2 or not all(x.isdigit() for x in header):
        raise FileFault(
            f"{path}, line 1: expected the header '<count> <dim>' of {VEC_FORMAT}, got {' '.join(header)[:80]!r}"
        )
    count, dim = map(int, header)
    words, vectors = [], np.empty((count, dim), dtype=np.float32)
    for number, line in enumerate(f, start=2):
        parts = line.rstrip("\n").rstrip(" ").split(" ")
        if len(parts) != dim + 1:
            raise FileFault(f"{path}, line {number}: expected a word and {dim} numbers, got {len(parts) - 1} numbers")
        if len(words) == count:
            raise FileFault(f"{path}, line {number}: more vectors than the {count} the header announces")
        try:
            vectors[len(words)] = np.asarray(parts[1:], dtype=np.float32)
        except ValueError:
            raise FileFault(f"{path}, line {number}: expected a word and {dim} numbers, got {line[:80]!r}") from None
        words.append(parts[0])
    if len(words) != count:
        raise FileFault(f"{path}: the header announces {count} vectors but the file has {len(words)} (truncated?)")
    return words, vectors


class _EndOfLineCorpus:
    """Sentences of a tokenized file with `</s>` appended, re-iterable for gensim's epochs."""

    def __init__(self, path: Path):
        self.path = path

    def __iter__(self):
        with open(self.path, encoding="utf-8", newline="\n") as f:
            for line in f:
                yield line.split() + [EOS]


def train_vectors(kind: str, corpus: Path, params: dict, threads: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Train `kind` ('word2vec' or 'fasttext') on `corpus`; return words and raw vectors."""
    p = dict(params)
    backend = p.pop("backend", "gensim" if kind == "word2vec" else "fasttext")
    if kind == "fasttext" and backend == "fasttext":
        import fasttext

        model = fasttext.train_unsupervised(
            str(corpus),
            model=p.get("model", "skipgram"),
            dim=p["dim"],
            ws=p["window"],
            epoch=p["epochs"],
            minCount=p["min_count"],
            neg=p["negative"],
            minn=p["minn"],
            maxn=p["maxn"],
            t=p["sample"],
            lr=p.get("lr", 0.05),
            thread=threads,
            verbose=1,
        )
        words = model.get_words()
        return words, np.stack([model.get_word_vector(w) for w in words])
    if backend != "gensim":
        raise ValueError(f"embeddings.{kind}.backend: unknown backend {backend!r} (use 'gensim' or 'fasttext')")
    from gensim.models import FastText, Word2Vec

    common = dict(
        vector_size=p["dim"],
        window=p["window"],
        epochs=p["epochs"],
        min_count=p["min_count"],
        negative=p["negative"],
        sample=p["sample"],
        sg=1 if p.get("model", "skipgram") == "skipgram" else 0,
        workers=threads,
        seed=seed,
    )
    if kind == "fasttext":
        model = FastText(_EndOfLineCorpus(corpus), min_n=p["minn"], max_n=p["maxn"], **common)
    else:
        model = Word2Vec(_EndOfLineCorpus(corpus), **common)
    return list(model.wv.index_to_key), model.wv.vectors


def monolingual_sources(config: dict, lang: str) -> list[str]:
    if lang not in config["monolingual"]:
        raise ValueError(f"monolingual: no corpus configured for {lang!r}, needed for its target embeddings")
    m = config["monolingual"][lang]
    if m["use"] not in m["corpora"]:
        raise ValueError(
            f"monolingual.{lang}.use: {m['use']!r} is not one of monolingual.{lang}.corpora ({', '.join(m['corpora'])})"
        )
    return list(m["corpora"][m["use"]])


def coverage(has_vector, counts: list[tuple[str, int]], size: int, examples: int = 20) -> dict:
    """How much of the training target vocabulary (`counts`, most frequent first; specials left
    out) has no vector: as a share of its types, of its `size` most frequent types (the target
    vocabulary were every word to have a vector) and of its tokens; and the most frequent
    words without one."""
    counts = [(w, c) for w, c in counts if w not in SPECIALS]
    missing = [(w, c) for w, c in counts if w not in has_vector]
    top_missing = sum(1 for w, _ in counts[:size] if w not in has_vector)
    tokens = sum(c for _, c in counts)

    def share(part, whole):
        return round(part / whole, 6) if whole else 0.0

    return {
        "target_types": len(counts),
        "with_vector": len(counts) - len(missing),
        "without_vector_share": share(len(missing), len(counts)),
        "most_frequent_types": min(size, len(counts)),
        "most_frequent_without_vector_share": share(top_missing, min(size, len(counts))),
        "tokens_without_vector_share": share(sum(c for _, c in missing), tokens),
        "most_frequent_without_vector": [[w, c] for w, c in missing[:examples]],
    }


def target_table(
    words: list[str], vectors: np.ndarray, counts: list[tuple[str, int]], size: int, seed: int
) -> tuple[list[str], np.ndarray, dict]:
    """The target vocabulary and its unit vectors, specials first (see the module docstring)."""
    index = {w: i for i, w in enumerate(words)}
    vectors = normalise(vectors.astype(np.float64))
    target = [w for w, _ in counts if w in index and w not in SPECIALS][:size]
    in_target = set(target)
    outside = [index[w] for w in words if w not in in_target and w not in SPECIALS]
    rng = np.random.default_rng(seed)
    table = np.zeros((len(SPECIALS) + len(target), vectors.shape[1]))
    for row, special in enumerate(SPECIALS):
        if special == PAD:
            continue
        if special == UNK and outside:
            table[row] = normalise(vectors[outside].mean(axis=0, keepdims=True))[0]
        elif special in index and special != UNK:
            table[row] = vectors[index[special]]
        else:
            table[row] = normalise(rng.standard_normal((1, vectors.shape[1])))[0]
    table[len(SPECIALS) :] = vectors[[index[w] for w in target]]
    report = {
        "training_types": len(counts),
        "training_types_with_vector": sum(1 for w, _ in counts if w in index),
        "target_vocabulary": len(target),
        "unk_is_mean_of": len(outside),
        "specials_with_trained_vector": [s for s in SPECIALS if s in index],
    }
    return list(SPECIALS) + target, table.astype(np.float32), report


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--kind", choices=("word2vec", "fasttext"), required=True)
    t.add_argument("--corpus", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--params", type=json.loads, required=True)
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--seed", type=int, default=1)
    b = sub.add_parser("table")
    b.add_argument("--vectors", type=Path, required=True)
    b.add_argument("--vocab", type=Path, required=True, help="training word counts of the target side")
    b.add_argument("--size", type=int, required=True)
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command == "train":
        words, vectors = train_vectors(args.kind, args.corpus, args.params, args.threads, args.seed)
        write_vec(args.out, words, normalise(vectors))
        print(f"{args.kind}: {len(words)} vectors of dimension {vectors.shape[1]}", file=sys.stderr)
    else:
        words, vectors = read_vec(args.vectors)
        counts = read_counts(args.vocab)
        table_words, table, report = target_table(words, vectors, counts, args.size, args.seed)
        write_vec(args.out, table_words, table)
        covered = coverage(set(words), counts, args.size)
        write_text(args.out.with_name(args.out.name + ".coverage.json"), json.dumps(covered, indent=2) + "\n")
        print(json.dumps({**report, "coverage": covered}, indent=2))


if __name__ == "__main__":
    main()
