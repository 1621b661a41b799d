"""Score detokenized system output against untokenized references with sacrebleu.

`python -m workflow_src.score.score bleu --hyp test.hyp --ref test.en [--tokenize none] --out test.bleu.json`
`python -m workflow_src.score.score meteor --hyp ... --ref ... --lang en [--nltk-data DIR | --jar JAR] --out ...`

`--tokenize none` scores text that is tokenized already, as multi-bleu.perl does (the joint paper's
BLEU); the signature says `tok:none`. The JSON keeps the metric's signature (sacrebleu's for BLEU,
the implementation and modules for METEOR, see `meteor.py`), so every number in a table says how it
was computed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sacrebleu.metrics import BLEU

from workflow_src.atomic import described, read_lines, write_text
from workflow_src.score import meteor


def read_parallel(hyp: Path, ref: Path) -> tuple[list[str], list[str]]:
    hyps, refs = read_lines(hyp), read_lines(ref)
    if len(hyps) != len(refs):
        raise ValueError(f"{hyp} has {len(hyps)} lines but the reference {ref} has {len(refs)}")
    return hyps, refs


def bleu(hyps: list[str], refs: list[str], **options) -> dict:
    metric = BLEU(**options)
    result = metric.corpus_score(hyps, [refs])
    return {
        "metric": "bleu",
        "score": round(result.score, 2),
        "signature": str(metric.get_signature()),
        "precisions": [round(p, 2) for p in result.precisions],
        "brevity_penalty": round(result.bp, 4),
        "sys_len": result.sys_len,
        "ref_len": result.ref_len,
        "sentences": len(hyps),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("metric", choices=("bleu", "meteor"))
    parser.add_argument("--hyp", type=Path, required=True)
    parser.add_argument("--ref", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--lang", help="target language (meteor)")
    parser.add_argument("--tokenize", help="sacrebleu's tokenizer (bleu; default its 13a): none for tokenized text")
    parser.add_argument("--nltk-data", type=Path, help="nltk data with corpora/wordnet (meteor's synonyms)")
    parser.add_argument("--jar", type=Path, help="the official METEOR 1.5 jar, used instead of nltk's")
    args = parser.parse_args(argv)
    hyps, refs = read_parallel(args.hyp, args.ref)
    if args.metric == "bleu":
        result = bleu(hyps, refs, **({"tokenize": args.tokenize} if args.tokenize else {}))
    elif args.jar:
        result = meteor.meteor_jar(args.hyp, args.ref, args.lang, args.jar)
    else:
        result = meteor.meteor_nltk(hyps, refs, args.lang, args.nltk_data)
    write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(f"{args.metric} {result['score']} ({result['signature']})")


if __name__ == "__main__":
    main()
