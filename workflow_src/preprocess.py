"""Moses-faithful tokenization, truecasing and cleaning (sacremoses).

Parallel data:
`python -m workflow_src.preprocess parallel --pair fr-en --raw-dir RAW --out-dir TOK --max-len 100
 [--max-ratio 9]` tokenizes every split (tokenizer.perl without escaping), trains one truecasing
model per language on the tokenized training side, truecases every split with `use_known=True`
(what truecase.perl does; sacremoses' command line cannot set it), and drops training pairs with
an empty side, a side longer than `--max-len` tokens or a length ratio above `--max-ratio`
(clean-corpus-n.perl). Development and test sets are never filtered. Everything streams: corpora
of millions of lines never sit in memory.

Monolingual data (for target embeddings):
`python -m workflow_src.preprocess monolingual --lang en --input news.gz --out corpus.txt
 --truecase-model en.truecase [--max-sentences N]` streams the corpus (plain or gzip), tokenizes,
trains a truecaser on it and writes the truecased text.

`python -m workflow_src.preprocess postprocess --lang en --input hyp.tok --out hyp.txt`
undoes both for decoder output: detruecasing and detokenization.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Iterator

from sacremoses import MosesDetokenizer, MosesDetruecaser, MosesTokenizer, MosesTruecaser

from workflow_src.atomic import atomic_output, read_lines, stream_lines, write_lines, write_text

SPLITS = ("train", "dev", "test")


_TOKENIZERS: dict[str, MosesTokenizer] = {}


def tokenize(line: str, lang: str) -> str:
    tokenizer = _TOKENIZERS.get(lang) or _TOKENIZERS.setdefault(lang, MosesTokenizer(lang=lang))
    return tokenizer.tokenize(line.strip(), escape=False, return_str=True)


def _tokenize_job(args: tuple[str, str]) -> str:
    return tokenize(*args)


def tokenize_all(lines: Iterable[str], lang: str, threads: int = 1) -> Iterator[str]:
    """Tokenize a stream of lines, in order, with `threads` worker processes."""
    jobs = ((line, lang) for line in lines)
    if threads <= 1:
        yield from map(_tokenize_job, jobs)
        return
    with multiprocessing.get_context("spawn").Pool(threads) as pool:
        yield from pool.imap(_tokenize_job, jobs, chunksize=2000)


def train_truecaser(tokenized: Iterable[str], model_path: Path) -> MosesTruecaser:
    """truecase.perl's model from a stream of tokenized lines (counts only, never the corpus,
    in memory), saved to `model_path`."""
    truecaser = MosesTruecaser()
    casing: dict[str, Counter] = defaultdict(Counter)
    for line in tokenized:
        for lowercase, surface, weight in truecaser.learn_truecase_weights(line.split()):
            casing[lowercase][surface] += weight
    with atomic_output(model_path) as tmp:
        truecaser._save_model_from_casing(casing, str(tmp))
    truecaser.model = truecaser._casing_to_model(casing)
    return truecaser


def truecase(truecaser: MosesTruecaser, line: str) -> str:
    return truecaser.truecase(line, return_str=True, use_known=True)


def keep_pair(src: str, tgt: str, max_len: int, max_ratio: float | None = None) -> bool:
    """Moses' clean-corpus-n: both sides 1..max_len tokens, and their length ratio <= max_ratio."""
    n_src, n_tgt = len(src.split()), len(tgt.split())
    if not (0 < n_src <= max_len and 0 < n_tgt <= max_len):
        return False
    return max_ratio is None or max(n_src / n_tgt, n_tgt / n_src) <= max_ratio


class SideStats:
    def __init__(self):
        self.tokens, self.types = 0, set()

    def add(self, line: str) -> None:
        words = line.split()
        self.tokens += len(words)
        self.types.update(words)


def preprocess_parallel(pair: str, raw_dir: Path, out_dir: Path, max_len: int, max_ratio: float | None = None,
                        threads: int = 1) -> dict:
    """Tokenize, truecase and clean every split of a pair, streaming: the tokenized text goes to
    temporary files, the truecasers learn from them, and the output is written line by line."""
    src_lang, tgt_lang = pair.split("-")
    out_dir.mkdir(parents=True, exist_ok=True)
    stats = {}
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".tokenized.") as tmp:
        tokenized = {}
        for split in SPLITS:
            for lang in (src_lang, tgt_lang):
                tokenized[(split, lang)] = Path(tmp) / f"{split}.{lang}"
                write_lines(tokenized[(split, lang)], tokenize_all(stream_lines(raw_dir / f"{split}.{lang}"), lang, threads))
        truecasers = {lang: train_truecaser(stream_lines(tokenized[("train", lang)]), out_dir / f"truecase.{lang}")
                      for lang in (src_lang, tgt_lang)}
        for split in SPLITS:
            counts = {"sentences_raw": 0, "sentences": 0}
            sides = {src_lang: SideStats(), tgt_lang: SideStats()}
            with atomic_output(out_dir / f"{split}.{src_lang}") as s_tmp, atomic_output(out_dir / f"{split}.{tgt_lang}") as t_tmp, \
                    open(s_tmp, "w", encoding="utf-8") as s_out, open(t_tmp, "w", encoding="utf-8") as t_out:
                pairs = itertools.zip_longest(stream_lines(tokenized[(split, src_lang)]), stream_lines(tokenized[(split, tgt_lang)]))
                for number, (s, t) in enumerate(pairs, start=1):
                    if s is None or t is None:
                        raise ValueError(f"{raw_dir}/{split}.{src_lang} and {split}.{tgt_lang} differ in length "
                                         f"(one ends after line {number - 1})")
                    counts["sentences_raw"] += 1
                    s, t = truecase(truecasers[src_lang], s), truecase(truecasers[tgt_lang], t)
                    if split == "train" and not keep_pair(s, t, max_len, max_ratio):
                        continue
                    counts["sentences"] += 1
                    s_out.write(s + "\n")
                    t_out.write(t + "\n")
                    sides[src_lang].add(s)
                    sides[tgt_lang].add(t)
            stats[split] = {**counts, **{f"tokens_{lang}": side.tokens for lang, side in sides.items()},
                            **{f"types_{lang}": len(side.types) for lang, side in sides.items()}}
    write_text(out_dir / "stats.json", json.dumps(stats, indent=2) + "\n")
    return stats


def preprocess_monolingual(lang: str, source: Path, out: Path, truecase_model: Path, max_sentences: int | None,
                           threads: int = 1) -> dict:
    """Tokenize a monolingual corpus (plain or gzip) and truecase it with a model learnt from
    it, streaming; returns its statistics (also written to `<out>.stats.json`)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".tokenized.") as tmp:
        tokenized = Path(tmp) / "corpus"
        lines = (line for line in stream_lines(source) if line.strip())
        write_lines(tokenized, tokenize_all(itertools.islice(lines, max_sentences), lang, threads))
        truecaser = train_truecaser(stream_lines(tokenized), truecase_model)
        side = SideStats()
        sentences = 0
        with atomic_output(out) as out_tmp, open(out_tmp, "w", encoding="utf-8") as f:
            for line in stream_lines(tokenized):
                line = truecase(truecaser, line)
                side.add(line)
                sentences += 1
                f.write(line + "\n")
    stats = {"sentences": sentences, f"tokens_{lang}": side.tokens, f"types_{lang}": len(side.types)}
    write_text(out.with_name(out.name + ".stats.json"), json.dumps(stats, indent=2) + "\n")
    return stats


def postprocess(lines: Iterable[str], lang: str) -> Iterator[str]:
    """Detruecase (capitalise sentence starts) and detokenize decoder output."""
    detruecaser, detokenizer = MosesDetruecaser(), MosesDetokenizer(lang=lang)
    for line in lines:
        tokens = detruecaser.detruecase(line)
        yield detokenizer.detokenize(tokens)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parallel")
    p.add_argument("--pair", required=True)
    p.add_argument("--raw-dir", type=Path, required=True)
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--max-len", type=int, required=True)
    p.add_argument("--max-ratio", type=float, default=None, help="drop training pairs whose length ratio exceeds it")
    p.add_argument("--threads", type=int, default=1)
    m = sub.add_parser("monolingual")
    m.add_argument("--lang", required=True)
    m.add_argument("--input", type=Path, required=True)
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--truecase-model", type=Path, required=True)
    m.add_argument("--max-sentences", type=int, default=None)
    m.add_argument("--threads", type=int, default=1)
    d = sub.add_parser("postprocess")
    d.add_argument("--lang", required=True)
    d.add_argument("--input", type=Path, required=True)
    d.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "parallel":
        stats = preprocess_parallel(args.pair, args.raw_dir, args.out_dir, args.max_len, args.max_ratio, args.threads)
        print(json.dumps(stats, indent=2))
    elif args.command == "monolingual":
        stats = preprocess_monolingual(args.lang, args.input, args.out, args.truecase_model, args.max_sentences, args.threads)
        print(json.dumps(stats, indent=2))
    else:
        write_lines(args.out, postprocess(read_lines(args.input), args.lang))


if __name__ == "__main__":
    main()
