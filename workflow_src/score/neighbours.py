"""Where a continuous-output model's predictions land among the target embeddings (syn-margin
paper Table 2), on a test set with teacher forcing.

`python -m workflow_src.score.neighbours --model model.pt --src test.fr --tgt test.en --out test.neighbours.json`

For every reference word w with its own vector (not `<unk>`), the prediction u_hat = e_hat /
||e_hat|| is correct when its nearest neighbour by cosine among the unit target vectors
(padding and the start symbol excluded, as in decoding) is u = e(w). Reported: the mean
cos(u_hat, NN) over correct and over wrong predictions, the mean cos(u_hat, u) over wrong ones,
and accuracy@k, the share of words whose vector is among the k nearest to u_hat.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F

from workflow_src.atomic import described, one_line_faults, read_lines, write_text
from workflow_src.model.gpu import job_device
from workflow_src.model.nmt_data import batch_indices, load_model, source_batch, target_batch

TOP_K = (1, 2, 5, 10)


@torch.no_grad()
def neighbour_statistics(
    model, src_vocab, tgt_vocab, sources: list[str], targets: list[str], device, batch_size: int = 64
) -> dict:
    table = getattr(model.output, "table", None)
    if table is None:
        raise ValueError("nearest-neighbour statistics need a continuous output layer")
    candidates = torch.ones(len(table), dtype=torch.bool, device=device)
    candidates[[tgt_vocab.pad, tgt_vocab.bos]] = False
    src_ids = [src_vocab.encode(line, eos=False) for line in sources]
    tgt_ids = [tgt_vocab.encode(line, eos=True) for line in targets]
    sums = {"correct": 0, "wrong": 0, "correct_nn": 0.0, "wrong_nn": 0.0, "wrong_target": 0.0}
    hits = dict.fromkeys(TOP_K, 0)
    for idx in batch_indices([len(s) for s in src_ids], batch_size, rng=None):
        src, lengths = source_batch(src_ids, idx, src_vocab, device)
        tgt_in, tgt_out = target_batch(tgt_ids, idx, tgt_vocab, device)
        e_hat, _ = model(src, lengths, tgt_in)
        keep = (tgt_out != tgt_vocab.pad) & (tgt_out != tgt_vocab.unk)
        unit_hat, target = F.normalize(e_hat[keep], dim=-1), tgt_out[keep]
        cosines = (unit_hat @ table.T).masked_fill(~candidates, float("-inf"))
        to_target = cosines.gather(1, target[:, None]).squeeze(1)
        nearest, nearest_id = cosines.max(-1)
        rank = (cosines > to_target[:, None]).sum(-1)  # words strictly closer than the target
        correct = nearest_id == target
        sums["correct"] += int(correct.sum())
        sums["wrong"] += int((~correct).sum())
        sums["correct_nn"] += float(nearest[correct].sum())
        sums["wrong_nn"] += float(nearest[~correct].sum())
        sums["wrong_target"] += float(to_target[~correct].sum())
        for k in TOP_K:
            hits[k] += int((rank < k).sum())
    words = sums["correct"] + sums["wrong"]
    share = lambda total, n: total / n if n else None  # noqa: E731
    return {
        "correct: similarity to nearest neighbour": share(sums["correct_nn"], sums["correct"]),
        "wrong: similarity to nearest neighbour": share(sums["wrong_nn"], sums["wrong"]),
        "wrong: similarity to target": share(sums["wrong_target"], sums["wrong"]),
        **{f"accuracy@{k} (%)": share(100 * hits[k], words) for k in TOP_K},
        "words": words,
    }


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--src", type=Path, required=True, help="test source in the model's units")
    parser.add_argument("--tgt", type=Path, required=True, help="test reference, tokenized words")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sources, targets = read_lines(args.src), read_lines(args.tgt)
    if len(sources) != len(targets):
        raise SystemExit(f"{args.src} has {len(sources)} lines but {args.tgt} has {len(targets)}")
    with job_device(args.device) as device:
        model, spec, src_vocab, tgt_vocab = load_model(args.model, device)
        if spec.output_layer != "continuous":
            raise SystemExit(f"{args.model}: experiment {spec.experiment} has no continuous output layer")
        result = neighbour_statistics(model, src_vocab, tgt_vocab, sources, targets, device, args.batch_size)
    print(json.dumps(result, indent=2))
    write_text(args.out, json.dumps({"experiment": spec.experiment, **result}, indent=2) + "\n")


if __name__ == "__main__":
    main()
