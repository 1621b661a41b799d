"""Moses-faithful tokenization, truecasing and cleaning (sacremoses).

Parallel data:
`python -m workflow_src.preprocess parallel --pair fr-en --raw-dir RAW --out-dir TOK --max-len 100`
tokenizes every split (tokenizer.perl without escaping), trains one truecasing model per language
on the tokenized training side, truecases every split with `use_known=True` (what truecase.perl
does; sacremoses' command line cannot set it), and drops training pairs with an empty side or a
side longer than `--max-len` tokens. Development and test sets are never filtered.

Monolingual data (for target embeddings):
`python -m workflow_src.preprocess monolingual --lang en --input news.gz --out corpus.txt
 --truecase-model en.truecase [--max-sentences N]` streams the corpus (plain or gzip), tokenizes,
trains a truecaser on it and writes the truecased text.

`python -m workflow_src.preprocess postprocess --lang en --input hyp.tok --out hyp.txt`
undoes both for decoder output: detruecasing and detokenization.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import multiprocessing
from pathlib import Path
from typing import Iterable, Iterator

from sacremoses import MosesDetokenizer, MosesDetruecaser, MosesTokenizer, MosesTruecaser

from workflow_src.atomic import atomic_output, read_lines, write_lines, write_text

SPLITS = ("train", "dev", "test")


def open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if str(path).endswith(".gz") else open(path, encoding="utf-8")


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


def train_truecaser(tokenized: list[str], model_path: Path) -> MosesTruecaser:
    truecaser = MosesTruecaser()
    truecaser.train([line.split() for line in tokenized])
    with atomic_output(model_path) as tmp:
        truecaser.save_model(str(tmp))
    return truecaser


def truecase(truecaser: MosesTruecaser, line: str) -> str:
    return truecaser.truecase(line, return_str=True, use_known=True)


def keep_pair(src: str, tgt: str, max_len: int) -> bool:
    n_src, n_tgt = len(src.split()), len(tgt.split())
    return 0 < n_src <= max_len and 0 < n_tgt <= max_len


def preprocess_parallel(pair: str, raw_dir: Path, out_dir: Path, max_len: int, threads: int = 1) -> dict:
    src_lang, tgt_lang = pair.split("-")
    tokenized = {
        (split, lang): list(tokenize_all(read_lines(raw_dir / f"{split}.{lang}"), lang, threads))
        for split in SPLITS
        for lang in (src_lang, tgt_lang)
    }
    stats = {}
    for lang in (src_lang, tgt_lang):
        truecaser = train_truecaser(tokenized[("train", lang)], out_dir / f"truecase.{lang}")
        for split in SPLITS:
            tokenized[(split, lang)] = [truecase(truecaser, line) for line in tokenized[(split, lang)]]
    for split in SPLITS:
        src, tgt = tokenized[(split, src_lang)], tokenized[(split, tgt_lang)]
        if len(src) != len(tgt):
            raise ValueError(f"{raw_dir}/{split}.{src_lang} has {len(src)} lines but {split}.{tgt_lang} has {len(tgt)}")
        kept = [(s, t) for s, t in zip(src, tgt) if split != "train" or keep_pair(s, t, max_len)]
        write_lines(out_dir / f"{split}.{src_lang}", (s for s, _ in kept))
        write_lines(out_dir / f"{split}.{tgt_lang}", (t for _, t in kept))
        stats[split] = {
            "sentences_raw": len(src),
            "sentences": len(kept),
            **{f"tokens_{lang}": sum(len(x.split()) for x in side) for lang, side in zip((src_lang, tgt_lang), zip(*kept))},
            **{f"types_{lang}": len({w for x in side for w in x.split()}) for lang, side in zip((src_lang, tgt_lang), zip(*kept))},
        }
    write_text(out_dir / "stats.json", json.dumps(stats, indent=2) + "\n")
    return stats


def preprocess_monolingual(lang: str, source: Path, out: Path, truecase_model: Path, max_sentences: int | None, threads: int = 1) -> int:
    with open_text(source) as f:
        lines = (line for line in f if line.strip())
        tokenized = list(tokenize_all(itertools.islice(lines, max_sentences), lang, threads))
    truecaser = train_truecaser(tokenized, truecase_model)
    write_lines(out, (truecase(truecaser, line) for line in tokenized))
    return len(tokenized)


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
        print(json.dumps(preprocess_parallel(args.pair, args.raw_dir, args.out_dir, args.max_len, args.threads), indent=2))
    elif args.command == "monolingual":
        n = preprocess_monolingual(args.lang, args.input, args.out, args.truecase_model, args.max_sentences, args.threads)
        print(f"{args.lang}: {n} sentences")
    else:
        write_lines(args.out, postprocess(read_lines(args.input), args.lang))


if __name__ == "__main__":
    main()
