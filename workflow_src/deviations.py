"""The deviations ledger: where a paper module's setup differs from the paper, as data.

`python -m workflow_src.deviations --paper vmf --data-note TEXT --out-prefix results/vmf/deviations`

Each paper module lists `DEVIATIONS`, a tuple of `Deviation` records: what the paper says, what we
do, why, the expected effect, and the setting that switches it (a dotted config key such as
`train.lr_decay`) or the code that implements it (`workflow_src/model/lm_losses.py:augmented_loss`).
The ledger is rendered to `results/<paper>/deviations.{csv,md,html}`, and every table an entry
affects names it in its footer ("Deviations: see deviations.md, entries D3, D5").
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

# What our default is, against the paper:
#   deviation: our default differs from the paper (or the paper is silent and we had to choose)
#   faithful:  our default follows the paper; the setting offers the other reading (or a fix has landed)
#   extra:     something the paper does not have, added beside its results and named as such
STATES = ("deviation", "faithful", "extra")


@dataclasses.dataclass(frozen=True)
class Deviation:
    """One entry of a paper's ledger; `id` (D1, D2, ...) is what table footers cite."""

    id: str
    topic: str
    paper: str  # what the paper says (or "silent")
    ours: str  # what we do by default
    why: str
    effect: str  # the expected effect on the numbers
    setting: str  # a dotted config key, or a code path `workflow_src/<module>.py:<attribute>`
    artefacts: tuple[str, ...] = ()  # the artefacts it affects (table1, figure2, ...); () for none in particular
    state: str = "deviation"

    def __post_init__(self):
        if self.state not in STATES:
            raise ValueError(f"deviation {self.id}: state {self.state!r} is not one of {', '.join(STATES)}")
        if not self.id.startswith("D") or not self.id[1:].isdigit():
            raise ValueError(f"deviation {self.id!r}: ids are D1, D2, ...")


COLUMNS = ("id", "state", "topic", "paper", "ours", "why", "effect", "setting", "artefacts")


def mixed_precision(entry_id: str, artefacts: tuple[str, ...]) -> Deviation:
    """The entry every paper's ledger carries: the papers trained in fp32, our GPU default is bf16
    autocast around the output layers (`workflow_src/precision.py`)."""
    return Deviation(
        entry_id, "arithmetic precision", "fp32 (silent: no mixed precision is mentioned, and the GPUs of the time "
        "trained in fp32)", "train.precision auto: on CUDA, bf16 autocast around the output layers' products only "
        "(hidden x vocabulary, the joint layer's g_out(E)); the LSTMs, attention, losses, log C_m and softmax "
        "normalisation in fp32 or wider; on the CPU (the demo) fp32 throughout",
        "the output layers' products are most of a step's FLOPs at the papers' vocabularies, and bf16 runs them "
        "several times faster on tensor cores; the LSTMs stay fp32 because CUDA autocast would run cuDNN's in fp16",
        "logits and predicted vectors rounded to bf16 (8 significant bits) before an fp32 loss; expected within "
        "seed noise, not measured at scale here (results/gpu_check.md compares losses and gradients with fp32 on "
        "your GPU before training)", "train.precision", artefacts)


def ledger(paper: str) -> tuple[Deviation, ...]:
    """A paper's deviations, checked for unique ids."""
    from workflow_src import registry

    entries = tuple(getattr(registry.paper_module(paper), "DEVIATIONS", ()))
    ids = [d.id for d in entries]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"workflow_src/papers/{paper}.py DEVIATIONS: ids used twice: {', '.join(duplicates)}")
    return entries


def footer(paper: str, artefact_id: str) -> list[str]:
    """The footer line of an artefact that some entries affect (none when no entry does)."""
    ids = [d.id for d in ledger(paper) if artefact_id in d.artefacts]
    return [f"Deviations: see deviations.md, entries {', '.join(ids)}."] if ids else []


def rows(paper: str) -> list[dict]:
    return [{**dataclasses.asdict(d), "artefacts": " ".join(d.artefacts)} for d in ledger(paper)]


def main(argv: list[str] | None = None) -> None:
    from workflow_src import render

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", required=True)
    parser.add_argument("--data-note", required=True)
    parser.add_argument("--out-prefix", type=Path, required=True)
    args = parser.parse_args(argv)
    prefix = args.out_prefix
    footer_lines = [f"State: {', '.join(STATES)} (our default against the paper). Setting: the config key that "
                    "switches it, or the code that implements it. Artefacts: the tables and figures it affects."]
    render.write_table(prefix.with_suffix(".csv"), prefix.with_suffix(".md"), prefix.with_suffix(".html"),
                       f"{args.paper}: deviations from the paper", args.data_note, list(COLUMNS), rows(args.paper),
                       footer_lines)


if __name__ == "__main__":
    main()
