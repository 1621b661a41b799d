"""Decoding on the device against the CPU (`workflow_src.gpu_check`): greedy and beam search (the
widest beam the family's jobs decode with) of one family per output layer, at its configured
sizes, as the decode jobs run them: fp32 tensors, torch's default TF32 switches (decode.py sets
none: matmuls in fp32, cuDNN's LSTMs in TF32 on a GPU that has it); the same words on a fixed
batch as the CPU's, and the seconds per sentence at decode.batch_size."""

from __future__ import annotations

import functools

import torch

from workflow_src.gpu_check.device import free, step_seconds
from workflow_src.gpu_check.families import Family, batch, compared, searched_words
from workflow_src.gpu_check.measures import agreement
from workflow_src.gpu_check.references import CHECK_BATCH

WORDS = 0.9  # the share of words equal to the CPU's, at least (a flipped near-tie changes the rest of its sentence)
DECODE_SWITCHES = {"matmul": False, "cudnn": True}  # torch's defaults, which decode jobs keep


def searches(family: Family) -> dict[str, int]:
    return {"greedy" if beam == 1 else f"beam{beam}": beam for beam in sorted({1, family.beam})}


def check(
    family: Family, reference: dict, device: torch.device, decode_batch: int, check_every: int
) -> tuple[dict, list]:
    """{search: words agreeing, seconds per sentence} and [(search, problem, setting)]."""
    torch.backends.cuda.matmul.allow_tf32 = DECODE_SWITCHES["matmul"]
    torch.backends.cudnn.allow_tf32 = DECODE_SWITCHES["cudnn"]
    model = compared(family).to(device)
    fixed, timed = batch(family, CHECK_BATCH, True, device), batch(family, decode_batch, False, device, seed=2)
    entry, problems = {}, []
    for name, beam in searches(family).items():
        words = agreement(searched_words(model, fixed, beam, family.length, check_every), reference[beam])
        seconds = step_seconds(
            functools.partial(searched_words, model, timed, beam, family.length, check_every), device, 1, 2
        )
        entry[name] = {"words": words, "seconds_per_sentence": seconds / decode_batch, "beam": beam}
        if words < WORDS:
            problems.append(
                (
                    name,
                    f"{words:.0%} of the {name} words agree with the CPU's (< {WORDS:.0%})",
                    "train.device: cpu (fp32 decoding on the device disagrees with the CPU's: a fault to report)",
                )
            )
    del model
    free(device)
    return entry, problems
