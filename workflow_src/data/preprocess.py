"""Moses-faithful tokenization, truecasing and cleaning (sacremoses), one truecaser per language.

Every language has one truecasing model, `results/truecase/<lang>.model`, shared by all the
parallel text of that language (source or target side, every data set and pair) and by its
monolingual embedding corpus, so that a target word is cased alike in both and finds its vector.

`tokenize-parallel --pair fr-en --raw-dir RAW --out-dir TOKENIZED` tokenizes every split
 (tokenizer.perl without escaping); any whitespace inside a line becomes a space, so a tokenized
 line holds no character that a reader could take for a line break.
`tokenize-monolingual --lang en --input SOURCE... --out F [--max-sentences N]` streams the
 sources (`PATH`, plain or gzip, or `ARCHIVE::MEMBER` of a tar archive), split on "\\n" only,
 undecodable bytes replaced (counted in `F.stats.json`), drops blank lines and tokenizes.
`truecaser --input TOKENIZED... --out MODEL` learns truecase.perl's model from tokenized text.
`parallel --pair fr-en --tokenized-dir T --out-dir TOK --truecase-model-src M --truecase-model-tgt M
 --max-len 100 [--max-ratio 9]` truecases every split with `use_known=True` (what truecase.perl
 does; sacremoses' command line cannot set it) and drops training pairs with an empty side, a side
 longer than `--max-len` tokens or a length ratio above `--max-ratio` (clean-corpus-n.perl).
 Development and test sets are never filtered.
`monolingual --lang en --input TOKENIZED --truecase-model M --out corpus.txt` truecases the
 embedding corpus.
`postprocess --lang en --input hyp.tok --out hyp.txt` undoes both for decoder output.

Everything streams: corpora of millions of lines never sit in memory.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import multiprocessing
import tarfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from sacremoses import MosesDetokenizer, MosesDetruecaser, MosesTokenizer, MosesTruecaser

from workflow_src.atomic import atomic_output, described, read_lines, stream_lines, write_lines, write_text
from workflow_src.data.archives import MEMBER_SEPARATOR, UNDECODABLE_POLICY, Undecodable, member_name, split_lines

SPLITS = ("train", "dev", "test")

_TOKENIZERS: dict[str, MosesTokenizer] = {}


def tokenize(line: str, lang: str) -> str:
    tokenizer = _TOKENIZERS.get(lang) or _TOKENIZERS.setdefault(lang, MosesTokenizer(lang=lang))
    # str.split() also splits on \r, U+0085, U+2028, ...: none of them survives inside a line
    return " ".join(tokenizer.tokenize(line.strip(), escape=False, return_str=True).split())


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


# -- reading monolingual sources ---------------------------------------------------------------
def _maybe_gunzip(f: BinaryIO, name: str) -> BinaryIO:
    return gzip.GzipFile(fileobj=f) if name.endswith(".gz") else f


def read_source(spec: str, report: Undecodable | None = None) -> Iterator[str]:
    """The lines of `PATH` (gzip when named .gz) or of `ARCHIVE::MEMBER` (a tar archive, any
    compression, read as a stream; a member named .gz is gunzipped), as `archives` splits them."""
    report = report or Undecodable()
    path, sep, member = spec.partition(MEMBER_SEPARATOR)
    if not sep:
        with open(path, "rb") as raw, _maybe_gunzip(raw, path) as f:
            yield from split_lines(f, path, report)
        return
    with tarfile.open(path, "r|*") as archive:
        for info in archive:
            if member_name(info.name) == member_name(member):
                f = archive.extractfile(info)
                if f is None:
                    raise ValueError(f"{path}: {member} is not a regular file")
                yield from split_lines(_maybe_gunzip(f, member), spec, report)
                return
    raise ValueError(f"{path}: no member {member!r}")


def tokenize_monolingual(
    lang: str, sources: list[str], out: Path, max_sentences: int | None = None, threads: int = 1
) -> dict:
    """Tokenize the non-blank lines of the sources, in order, up to `max_sentences`."""
    report = Undecodable()
    lines = (line for spec in sources for line in read_source(spec, report) if line.strip())
    write_lines(out, tokenize_all(itertools.islice(lines, max_sentences), lang, threads))
    stats = {
        "sources": sources,
        "undecodable_lines": report.lines,
        "first_undecodable": report.first,
        "policy": UNDECODABLE_POLICY,
    }
    write_text(out.with_name(out.name + ".stats.json"), json.dumps(stats, indent=2) + "\n")
    return stats


def tokenize_parallel(
    pair: str, raw_dir: Path, out_dir: Path, threads: int = 1, splits: Iterable[str] = SPLITS
) -> None:
    for split in splits:
        for lang in pair.split("-"):
            write_lines(
                out_dir / f"{split}.{lang}", tokenize_all(stream_lines(raw_dir / f"{split}.{lang}"), lang, threads)
            )


# -- truecasing --------------------------------------------------------------------------------
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


def load_truecaser(model_path: Path) -> MosesTruecaser:
    truecaser = MosesTruecaser()
    # sacremoses refuses models over 2M entries (untrusted files); ours come from train_truecaser,
    # and News Crawl has more types than that
    truecaser.MAX_MODEL_ENTRIES = float("inf")
    truecaser.model = truecaser._load_model(str(model_path))
    return truecaser


def truecase(truecaser: MosesTruecaser, line: str) -> str:
    return truecaser.truecase(line, return_str=True, use_known=True)


# -- cleaning and statistics -------------------------------------------------------------------
def keep_pair(src: str, tgt: str, max_len: int | None, max_ratio: float | None = None) -> bool:
    """Moses' clean-corpus-n: both sides 1..max_len tokens (no limit: None), and their length ratio
    <= max_ratio."""
    n_src, n_tgt = len(src.split()), len(tgt.split())
    if not (0 < n_src <= (max_len or n_src) and 0 < n_tgt <= (max_len or n_tgt)):
        return False
    return max_ratio is None or max(n_src / n_tgt, n_tgt / n_src) <= max_ratio


class SideStats:
    def __init__(self):
        self.tokens, self.types = 0, set()

    def add(self, line: str) -> None:
        words = line.split()
        self.tokens += len(words)
        self.types.update(words)


def preprocess_parallel(
    pair: str,
    tokenized_dir: Path,
    out_dir: Path,
    truecasers: dict[str, MosesTruecaser],
    max_len: int | None,
    max_ratio: float | None = None,
    splits: Iterable[str] = SPLITS,
    stats_path: Path | None = None,
) -> dict:
    """Truecase the tokenized `splits` of a pair with each language's shared truecaser and clean
    the training pairs, line by line; returns (and writes to `stats_path`, by default
    `out_dir/stats.json`) the counts."""
    src_lang, tgt_lang = pair.split("-")
    stats = {}
    for split in splits:
        counts = {"sentences_raw": 0, "sentences": 0}
        sides = {src_lang: SideStats(), tgt_lang: SideStats()}
        with (
            atomic_output(out_dir / f"{split}.{src_lang}") as s_tmp,
            atomic_output(out_dir / f"{split}.{tgt_lang}") as t_tmp,
            open(s_tmp, "w", encoding="utf-8", newline="\n") as s_out,
            open(t_tmp, "w", encoding="utf-8", newline="\n") as t_out,
        ):
            pairs = itertools.zip_longest(
                stream_lines(tokenized_dir / f"{split}.{src_lang}"), stream_lines(tokenized_dir / f"{split}.{tgt_lang}")
            )
            for number, (s, t) in enumerate(pairs, start=1):
                if s is None or t is None:
                    raise ValueError(
                        f"{tokenized_dir}/{split}.{src_lang} and {split}.{tgt_lang} differ in length "
                        f"(one ends after line {number - 1})"
                    )
                counts["sentences_raw"] += 1
                s, t = truecase(truecasers[src_lang], s), truecase(truecasers[tgt_lang], t)
                if split == "train" and not keep_pair(s, t, max_len, max_ratio):
                    continue
                counts["sentences"] += 1
                s_out.write(s + "\n")
                t_out.write(t + "\n")
                sides[src_lang].add(s)
                sides[tgt_lang].add(t)
        stats[split] = {
            **counts,
            **{f"tokens_{lang}": side.tokens for lang, side in sides.items()},
            **{f"types_{lang}": len(side.types) for lang, side in sides.items()},
        }
    write_text(stats_path or out_dir / "stats.json", json.dumps(stats, indent=2) + "\n")
    return stats


def preprocess_monolingual(lang: str, tokenized: Path, out: Path, truecaser: MosesTruecaser) -> dict:
    """Truecase a tokenized monolingual corpus; returns its statistics (also written to
    `<out>.stats.json`, with the reading report of `<tokenized>.stats.json` when there is one)."""
    side, sentences = SideStats(), 0
    with atomic_output(out) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for line in stream_lines(tokenized):
            line = truecase(truecaser, line)
            side.add(line)
            sentences += 1
            f.write(line + "\n")
    reading = tokenized.with_name(tokenized.name + ".stats.json")
    stats = {
        "sentences": sentences,
        f"tokens_{lang}": side.tokens,
        f"types_{lang}": len(side.types),
        **(json.loads(reading.read_text()) if reading.exists() else {}),
    }
    write_text(out.with_name(out.name + ".stats.json"), json.dumps(stats, indent=2) + "\n")
    return stats


def postprocess(lines: Iterable[str], lang: str) -> Iterator[str]:
    """Detruecase (capitalise sentence starts) and detokenize decoder output."""
    detruecaser, detokenizer = MosesDetruecaser(), MosesDetokenizer(lang=lang)
    for line in lines:
        tokens = detruecaser.detruecase(line)
        yield detokenizer.detokenize(tokens)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    sub = parser.add_subparsers(dest="command", required=True)
    tp = sub.add_parser("tokenize-parallel")
    tp.add_argument("--pair", required=True)
    tp.add_argument("--raw-dir", type=Path, required=True)
    tp.add_argument("--out-dir", type=Path, required=True)
    tp.add_argument("--threads", type=int, default=1)
    tp.add_argument("--splits", nargs="+", choices=SPLITS, default=SPLITS)
    tm = sub.add_parser("tokenize-monolingual")
    tm.add_argument("--lang", required=True)
    tm.add_argument("--input", nargs="+", required=True, help="PATH (plain or .gz) or ARCHIVE::MEMBER, in order")
    tm.add_argument("--out", type=Path, required=True)
    tm.add_argument("--max-sentences", type=int, default=None)
    tm.add_argument("--threads", type=int, default=1)
    tc = sub.add_parser("truecaser")
    tc.add_argument("--input", type=Path, nargs="+", required=True, help="tokenized text")
    tc.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("parallel")
    p.add_argument("--pair", required=True)
    p.add_argument("--tokenized-dir", type=Path, required=True)
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--truecase-model-src", type=Path, required=True)
    p.add_argument("--truecase-model-tgt", type=Path, required=True)
    p.add_argument(
        "--max-len",
        type=int,
        default=None,
        help="drop training pairs with a side longer (words); none when the limit counts pieces at training",
    )
    p.add_argument("--max-ratio", type=float, default=None, help="drop training pairs whose length ratio exceeds it")
    p.add_argument("--splits", nargs="+", choices=SPLITS, default=SPLITS)
    p.add_argument("--stats", type=Path, default=None, help="the counts (default: OUT_DIR/stats.json)")
    m = sub.add_parser("monolingual")
    m.add_argument("--lang", required=True)
    m.add_argument("--input", type=Path, required=True, help="tokenized text")
    m.add_argument("--truecase-model", type=Path, required=True)
    m.add_argument("--out", type=Path, required=True)
    d = sub.add_parser("postprocess")
    d.add_argument("--lang", required=True)
    d.add_argument("--input", type=Path, required=True)
    d.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "tokenize-parallel":
        tokenize_parallel(args.pair, args.raw_dir, args.out_dir, args.threads, args.splits)
    elif args.command == "tokenize-monolingual":
        print(
            json.dumps(
                tokenize_monolingual(args.lang, args.input, args.out, args.max_sentences, args.threads), indent=2
            )
        )
    elif args.command == "truecaser":
        train_truecaser((line for path in args.input for line in stream_lines(path)), args.out)
    elif args.command == "parallel":
        src, tgt = args.pair.split("-")
        truecasers = {src: load_truecaser(args.truecase_model_src), tgt: load_truecaser(args.truecase_model_tgt)}
        print(
            json.dumps(
                preprocess_parallel(
                    args.pair,
                    args.tokenized_dir,
                    args.out_dir,
                    truecasers,
                    args.max_len,
                    args.max_ratio,
                    args.splits,
                    args.stats,
                ),
                indent=2,
            )
        )
    elif args.command == "monolingual":
        print(
            json.dumps(
                preprocess_monolingual(args.lang, args.input, args.out, load_truecaser(args.truecase_model)), indent=2
            )
        )
    else:
        write_lines(args.out, postprocess(read_lines(args.input), args.lang))


if __name__ == "__main__":
    main()
