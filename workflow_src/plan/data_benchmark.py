"""Speed and peak memory of data preparation on a generated corpus of N parallel lines.

`python -m workflow_src.plan.data_benchmark --lines N --out results/benchmarks/data.json
 [--threads T] [--merges K] [--workdir DIR]`

The demo world (`demo_language.World`) realises a pool of German-English sentence pairs; each line
is two of them joined, about 24 words, near news text's mean. The two sides are packed into a
.tgz, then each stage runs over both languages (2N lines) in a fresh process of its own (its libraries
imported before the clock starts):

    extraction     `wmt.Members` + `wmt.write_train`: the archive decompressed, both members streamed
    tokenisation   `preprocess.tokenize_all` with T worker processes
    truecasing     `preprocess.train_truecaser` on the tokenized text, then `truecase` on every line
    bpe            `bpe.train` with K merges (T threads), then `bpe.encode` on every line

    lines_per_second = 2N / seconds
    peak_rss_mb      = the stage process's maximum resident set (ru_maxrss), interpreter included;
                       baseline_rss_mb is its maximum before the stage began, and
                       peak_rss_mb_workers the largest of its worker processes (tokenisation)

stamped with the host, its CPU count, the date (UTC) and N.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import multiprocessing
import os
import platform
import random
import resource
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from workflow_src.atomic import described, stream_lines, write_lines, write_text
from workflow_src.data import bpe as sentencepiece_bpe
from workflow_src.data.demo_language import World, WorldSize
from workflow_src.data.preprocess import tokenize_all, train_truecaser, truecase
from workflow_src.data.wmt import Members, write_train

LANGUAGES = ("de", "en")
POOL = 100_000  # distinct sentence pairs realised; lines join two of them
LONGER = WorldSize(two_clause_rate=0.6, pp_rate=0.6)  # 12 words a sentence, 24 a line


def generated_lines(n: int, seed: int = 1):
    """n (German, English) lines, each two demo-world sentence pairs joined."""
    world = World(list(LANGUAGES), LONGER, seed=seed)
    pool = world.parallel(list(LANGUAGES), min(n, POOL), "benchmark")
    rng = random.Random(seed)
    for _ in range(n):
        a, b = rng.choice(pool), rng.choice(pool)
        yield tuple(f"{a[lang]} {b[lang]}" for lang in LANGUAGES)


def write_archive(n: int, workdir: Path) -> Path:
    """workdir/corpus.tgz with the members corpus/benchmark.de-en.{de,en}, N lines each."""
    plain = {lang: workdir / f"benchmark.de-en.{lang}" for lang in LANGUAGES}
    files = [open(plain[lang], "w", encoding="utf-8", newline="\n") for lang in LANGUAGES]
    try:
        for pair in generated_lines(n):
            for f, line in zip(files, pair):
                f.write(line + "\n")
    finally:
        for f in files:
            f.close()
    archive = workdir / "corpus.tgz"
    with tarfile.open(archive, "w:gz", compresslevel=6) as tar:
        for path in plain.values():
            tar.add(path, arcname=f"corpus/{path.name}")
            path.unlink()
    return archive


def stage_files(workdir: Path, stage: str) -> dict[str, Path]:
    return {lang: workdir / f"{stage}.{lang}" for lang in LANGUAGES}


def extraction(workdir: Path, threads: int, merges: int) -> dict:
    entry = {
        "archive": str(workdir / "corpus.tgz"),
        "source": "corpus/benchmark.de-en.de",
        "target": "corpus/benchmark.de-en.en",
    }
    out = stage_files(workdir, "raw")
    with tempfile.TemporaryDirectory(dir=workdir) as members_dir:
        write_train(Members({"train": [entry]}, Path(members_dir)), [entry], out["de"], out["en"])
    return {}


def tokenisation(workdir: Path, threads: int, merges: int) -> dict:
    raw, out = stage_files(workdir, "raw"), stage_files(workdir, "tok")
    for lang in LANGUAGES:
        write_lines(out[lang], tokenize_all(stream_lines(raw[lang]), lang, threads))
    return {}


def truecasing(workdir: Path, threads: int, merges: int) -> dict:
    tok, out = stage_files(workdir, "tok"), stage_files(workdir, "tc")
    seconds = {"train_seconds": 0.0, "apply_seconds": 0.0}
    for lang in LANGUAGES:
        started = time.perf_counter()
        truecaser = train_truecaser(stream_lines(tok[lang]), workdir / f"truecase.{lang}")
        applied = time.perf_counter()
        write_lines(out[lang], (truecase(truecaser, line) for line in stream_lines(tok[lang])))
        seconds["train_seconds"] += applied - started
        seconds["apply_seconds"] += time.perf_counter() - applied
    return seconds


def bpe(workdir: Path, threads: int, merges: int) -> dict:
    tc, out = stage_files(workdir, "tc"), stage_files(workdir, "bpe")
    result = {"train_seconds": 0.0, "apply_seconds": 0.0, "merges": merges, "pieces": {}}
    for lang in LANGUAGES:
        started = time.perf_counter()
        processor = sentencepiece_bpe.train(tc[lang], workdir / "bpe" / lang, merges, threads)
        applied = time.perf_counter()
        write_lines(out[lang], (sentencepiece_bpe.encode(processor, line) for line in stream_lines(tc[lang])))
        result["train_seconds"] += applied - started
        result["apply_seconds"] += time.perf_counter() - applied
        result["pieces"][lang] = processor.get_piece_size()
    return result


STAGES = {"extraction": extraction, "tokenisation": tokenisation, "truecasing": truecasing, "bpe": bpe}


def peak_mb(who: int) -> float:
    return round(resource.getrusage(who).ru_maxrss / 1024, 1)  # ru_maxrss is in KiB on Linux


def run_stage(stage: str, workdir: Path, threads: int, merges: int, lines: int) -> dict:
    """One stage, timed, in the process that calls it (a fresh one: its peak is the stage's)."""
    baseline = peak_mb(resource.RUSAGE_SELF)
    started = time.perf_counter()
    details = STAGES[stage](workdir, threads, merges)
    seconds = time.perf_counter() - started
    for key in ("train_seconds", "apply_seconds"):
        if key in details:
            details[key] = round(details[key], 3)
    return {
        "lines": lines,
        "seconds": round(seconds, 3),
        "lines_per_second": round(lines / seconds, 1),
        "peak_rss_mb": peak_mb(resource.RUSAGE_SELF),
        "baseline_rss_mb": baseline,
        "peak_rss_mb_workers": peak_mb(resource.RUSAGE_CHILDREN),
        **details,
    }


def benchmark(n: int, threads: int, merges: int, workdir: Path) -> dict:
    started = time.perf_counter()
    write_archive(n, workdir)
    result = {
        "host": platform.node(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "lines": n,
        "languages": list(LANGUAGES),
        "threads": threads,
        "python": platform.python_version(),
        "corpus": {
            "generator": "workflow_src.data.demo_language.World, two sentences a line",
            "seconds": round(time.perf_counter() - started, 3),
            "archive_bytes": (workdir / "corpus.tgz").stat().st_size,
        },
        "stages": {},
    }
    for stage in STAGES:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            result["stages"][stage] = pool.submit(
                run_stage, stage, workdir, threads, merges, n * len(LANGUAGES)
            ).result()
        print(f"{stage}: {json.dumps(result['stages'][stage])}", file=sys.stderr, flush=True)
    words = sum(len(line.split()) for line in stream_lines(stage_files(workdir, "raw")["en"]))
    result["corpus"]["mean_words_en"] = round(words / n, 1)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--lines", type=int, required=True, help="parallel lines to generate (each language)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=1, help="tokenisation processes and sentencepiece threads")
    parser.add_argument("--merges", type=int, default=32000)
    parser.add_argument(
        "--workdir",
        type=Path,
        help="where the generated corpus and each stage's output go "
        "(default: a temporary folder beside --out, removed after)",
    )
    args = parser.parse_args(argv)
    if args.lines < 1:
        parser.error("--lines must be positive")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir or args.out.parent, prefix=".data-benchmark-") as workdir:
        result = benchmark(args.lines, args.threads, args.merges, Path(workdir))
    write_text(args.out, json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
