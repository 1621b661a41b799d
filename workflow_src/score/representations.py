"""The words nearest to query words among a softmax model's input and output representations
(the joint paper's Table 1).

`python -m workflow_src.score.representations --model model.pt --queries visited generous friend --top 5 --out JSON`

Input representations are the rows of the decoder's input embedding E; output representations
the rows of g_out(E) (`JointOutput.output_representations`: W for NMT, E itself when tied). For each
query, a word that is one piece of the target vocabulary (sentencepiece's word-initial `▁word`,
or the piece itself), the `top` other pieces by cosine similarity (special tokens left out), as
sentencepiece writes them (`▁` starts a word): `{"experiment", "queries": {query: {"input":
[[piece, cosine], ...], "output": [...]}}, "missing": [queries that are not one piece]}`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F

from workflow_src.atomic import described, one_line_faults, write_text
from workflow_src.data.bpe import WORD_BOUNDARY
from workflow_src.data.vocab import SPECIALS
from workflow_src.model.joint import JointOutput
from workflow_src.model.nmt_data import load_model


def nearest(vectors: torch.Tensor, query: int, top: int, excluded: list[int]) -> list[tuple[int, float]]:
    """The `top` rows most similar to row `query` by cosine, itself and `excluded` left out."""
    unit = F.normalize(vectors.double(), dim=-1)
    cosine = unit @ unit[query]
    cosine[[query, *excluded]] = float("-inf")
    best = cosine.topk(top)
    return list(zip(best.indices.tolist(), best.values.tolist()))


def representations(model, itos: list[str], queries: list[str], top: int) -> dict:
    if not isinstance(model.output, JointOutput) or not isinstance(model.decoder.embed, torch.nn.Embedding):
        raise ValueError("input and output representations are those of a softmax model with its own input embedding")
    index = {piece: i for i, piece in enumerate(itos)}
    excluded = [index[s] for s in SPECIALS if s in index]
    sides = {"input": model.decoder.embed.weight.detach(), "output": model.output.output_representations()}
    found = {}
    for query in queries:
        piece = next((p for p in (WORD_BOUNDARY + query, query) if p in index), None)
        if piece is not None:
            found[query] = {
                side: [[itos[i], round(c, 4)] for i, c in nearest(vectors, index[piece], top, excluded)]
                for side, vectors in sides.items()
            }
    return {"queries": found, "missing": [q for q in queries if q not in found]}


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--queries", nargs="+", required=True, help="target-vocabulary pieces")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    model, spec, _, tgt_vocab = load_model(args.model, torch.device("cpu"))
    try:
        result = representations(model, tgt_vocab.itos, args.queries, args.top)
    except ValueError as error:
        parser.exit(1, f"representations: error: {args.model}: {error}\n")
    write_text(args.out, json.dumps({"experiment": spec.experiment, **result}, indent=2) + "\n")


if __name__ == "__main__":
    main()
