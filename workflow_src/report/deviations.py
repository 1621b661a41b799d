"""The deviations ledger: where a paper module's setup differs from the paper, as data.

`python -m workflow_src.report.deviations --paper vmf --data-note TEXT --out-prefix results/vmf/deviations`

Each paper module lists `DEVIATIONS`, a tuple of `Deviation` records (`workflow_src/paper_records.py`):
what the paper says, what we do, why, the expected effect, and the setting that switches it (a dotted
config key such as `train.lr_decay`) or the code that implements it
(`workflow_src/model/lm_losses.py:augmented_loss`).
The ledger is rendered to `results/<paper>/deviations.{csv,md,html}`, and every table an entry
affects names it in its footer ("Deviations: see deviations.md, entries D3, D5").
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from workflow_src.atomic import described
from workflow_src.paper_records import STATES, Deviation

COLUMNS = ("id", "state", "topic", "paper", "ours", "why", "effect", "setting", "artefacts")


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
    from workflow_src import tables

    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--paper", required=True)
    parser.add_argument("--data-note", required=True)
    parser.add_argument("--out-prefix", type=Path, required=True)
    args = parser.parse_args(argv)
    prefix = args.out_prefix
    footer_lines = [
        f"State: {', '.join(STATES)} (our default against the paper). Setting: the config key that "
        "switches it, or the code that implements it. Artefacts: the tables and figures it affects."
    ]
    tables.write_table(
        prefix.with_suffix(".csv"),
        prefix.with_suffix(".md"),
        prefix.with_suffix(".html"),
        f"{args.paper}: deviations from the paper",
        args.data_note,
        list(COLUMNS),
        rows(args.paper),
        footer_lines,
    )


if __name__ == "__main__":
    main()
