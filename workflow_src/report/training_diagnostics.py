"""results/training_diagnostics.{csv,md,html}: for every trained translation model, what its
metrics.jsonl records besides its scores, and at the top, loudly, the models that went wrong.

    python -m workflow_src.report.training_diagnostics --config results/config/<hash>.json \\
        --data-note TEXT --out-prefix results/training_diagnostics

reads the metrics.jsonl of every translation model the configured artefacts need
(`layout.translation_models`).

The measures (`workflow_src.train.bigram`, `workflow_src.model.diagnostics`):
- every softmax model: its first epoch's development perplexity beside the target-side bigram's;
  above it, the model learned nothing from the source in an epoch; still above it at the kept epoch, a
  problem; below it there, a slow start, listed apart (the training log warned at epoch 1 either way);
- every continuous model: how crowded its target table is (the median nearest-neighbour cosine,
  and how many words lie above 0.9 of a word);
- margin models, at the kept epoch: the development tokens whose loss is zero, and those of them
  whose nearest word is wrong, which the loss no longer corrects;
- the joint paper's Eq. 7a and Eq. 15 layers, at the kept epoch: how saturated g_out(E) is;
- every model: how its last epoch moved its development BLEU if it had not plateaued when training
  stopped (`workflow_src.report.plateau`), which the tables that rank it also say.
"""

from __future__ import annotations

import argparse
import html
import json
import math
from pathlib import Path

from workflow_src import layout
from workflow_src.artefacts import Job
from workflow_src.atomic import described, one_line_faults, write_text
from workflow_src.report import analysis, plateau
from workflow_src.tables import to_csv, to_html, to_markdown

# What the page flags. The demo's failures that these measures traced (2 x 128 models) sat far past
# each: a median nearest-neighbour cosine of 0.96, 42% of the tokens uncorrected, a mean |tanh|
# of 0.97 with one row holding 91-98% of g_out(E)'s squared norm.
CROWDED_MEDIAN_COSINE = 0.9
UNCORRECTED_SHARE = 0.1
SATURATED_MEAN_ABS = 0.9
SHARED_ROW_SHARE = 0.5

COLUMNS = [
    "dataset",
    "pair",
    "model",
    "seed",
    "epochs",
    "kept epoch",
    "epoch 1 dev ppl",
    "kept epoch dev ppl",
    "bigram dev ppl",
    "table NN cosine (median)",
    "words above 0.9 (mean)",
    "zero margin loss %",
    "of which wrong word %",
    "mean |g_out(E)|",
    "b_u rms",
    "shared row share",
    "not plateaued",
]


def kept(records: list[dict]) -> dict:
    """The epoch training kept: the last one marked best."""
    return [r for r in records if r.get("best")][-1] if any(r.get("best") for r in records) else records[-1]


def rounded(value, digits: int = 3):
    return None if value is None else round(value, digits)


def row_of(job: Job, records: list[dict]) -> dict:
    first, best = records[0], kept(records)
    margin_zero, margin_wrong = best.get("margin_zero_loss_share"), best.get("margin_zero_loss_wrong_share")
    return {
        "dataset": job.dataset,
        "pair": job.pair,
        "model": job.experiment,
        "seed": job.seed,
        "epochs": len(records),
        "kept epoch": best["epoch"],
        "epoch 1 dev ppl": rounded(math.exp(first["dev_loss"]), 2) if "bigram_dev_loss" in first else None,
        "kept epoch dev ppl": rounded(math.exp(best["dev_loss"]), 2) if "bigram_dev_loss" in first else None,
        "bigram dev ppl": rounded(math.exp(first["bigram_dev_loss"]), 2) if "bigram_dev_loss" in first else None,
        "table NN cosine (median)": rounded(first.get("table_nn_cosine_median")),
        "words above 0.9 (mean)": rounded(first.get("table_neighbours_above_0_9"), 2),
        "zero margin loss %": rounded(100 * margin_zero, 1) if margin_zero is not None else None,
        "of which wrong word %": rounded(100 * margin_wrong, 1) if margin_wrong is not None else None,
        "mean |g_out(E)|": rounded(best.get("g_out_mean_abs")),
        "b_u rms": rounded(best.get("g_out_bias_rms")),
        "shared row share": rounded(best.get("g_out_shared_share")),
        "not plateaued": plateau.unsettled(records),
    }


def above_the_bigram(row: dict) -> bool:
    """A softmax model whose first epoch's development perplexity was not below the target-side bigram's."""
    return row["bigram dev ppl"] is not None and row["epoch 1 dev ppl"] >= row["bigram dev ppl"]


def first_epoch_text(row: dict) -> str:
    return (
        f"after epoch 1 its development perplexity ({row['epoch 1 dev ppl']}) was not below the target-side "
        f"bigram's ({row['bigram dev ppl']})"
    )


def slow_start(row: dict) -> str | None:
    """A first epoch above the bigram that the kept epoch left behind: the model learned, later."""
    if not above_the_bigram(row) or row["kept epoch dev ppl"] >= row["bigram dev ppl"]:
        return None
    return f"{first_epoch_text(row)}; at its kept epoch {row['kept epoch']} it was {row['kept epoch dev ppl']}"


def problems(row: dict) -> list[str]:
    """What the page flags about one model, in words."""
    found = []
    if above_the_bigram(row) and slow_start(row) is None:
        found.append(
            f"{first_epoch_text(row)}, and at its kept epoch {row['kept epoch']} still {row['kept epoch dev ppl']}: "
            "it learned nothing from the source"
        )
    if (row["table NN cosine (median)"] or 0) > CROWDED_MEDIAN_COSINE:
        found.append(
            f"its target table is crowded (median nearest-neighbour cosine {row['table NN cosine (median)']} "
            f"> {CROWDED_MEDIAN_COSINE})"
        )
    if (row["of which wrong word %"] or 0) > 100 * UNCORRECTED_SHARE:
        found.append(
            f"{row['of which wrong word %']}% of its development tokens have a zero margin loss and a wrong "
            f"nearest word (> {100 * UNCORRECTED_SHARE:g}%): the margin is too small for its table"
        )
    if (row["mean |g_out(E)|"] or 0) > SATURATED_MEAN_ABS or (row["shared row share"] or 0) > SHARED_ROW_SHARE:
        found.append(
            f"its word side g_out(E) is saturated (mean |g_out| {row['mean |g_out(E)|']}, shared row "
            f"{row['shared row share']}; flagged above {SATURATED_MEAN_ABS} or {SHARED_ROW_SHARE})"
        )
    return found


def model_name(row: dict) -> str:
    return f"{row['dataset']} {row['pair']} {row['model']} seed {row['seed']}"


def read_metrics(job: Job) -> list[dict]:
    records = analysis.read_metrics(job)
    if not records:
        raise ValueError(f"{layout.metrics_path(job)}: no epoch recorded")
    return records


def write(jobs: list[Job], data_note: str, out_prefix: Path) -> list[str]:
    """Writes the three files from the jobs' metrics; returns the flagged lines."""
    rows = [row_of(job, read_metrics(job)) for job in jobs]
    flagged = [f"{model_name(r)}: {p}" for r in rows for p in problems(r)]
    slow = [f"{model_name(r)}: {text}" for r in rows if (text := slow_start(r))]
    summary = (
        [f"**{len(flagged)} problem(s) in {len(rows)} models:**", "", *(f"- {line}" for line in flagged), ""]
        if flagged
        else [f"No problem flagged in {len(rows)} models.", ""]
    )
    if slow:
        summary += [
            f"{len(slow)} slow start(s), not problems: above the bigram after epoch 1, below it at the kept epoch:",
            "",
            *(f"- {line}" for line in slow),
            "",
        ]
    title = "Training diagnostics"
    footer = [
        f"Flagged: a first epoch not below the target-side bigram (workflow_src/train/bigram.py) and a kept epoch "
        f"not below it either (below it there: a slow start, listed apart); a median "
        f"nearest-neighbour cosine above {CROWDED_MEDIAN_COSINE}; more than {100 * UNCORRECTED_SHARE:g}% of the "
        f"development tokens with a zero margin loss and a wrong nearest word; a mean |g_out(E)| above "
        f"{SATURATED_MEAN_ABS} or a shared row above {SHARED_ROW_SHARE} of its squared norm "
        f"(workflow_src/model/diagnostics.py). Empty cells: the measure does not apply to the model's layer."
    ]
    write_text(out_prefix.with_suffix(".csv"), to_csv(COLUMNS, rows))
    write_text(out_prefix.with_suffix(".md"), to_markdown(title, data_note, COLUMNS, rows, footer, before=summary))
    html_summary = "".join(f"<p class='under'><b>{html.escape(line)}</b></p>" for line in (flagged or summary[:1]))
    html_summary += "".join(f"<p class='under'>slow start, not a problem: {html.escape(line)}</p>" for line in slow)
    write_text(out_prefix.with_suffix(".html"), to_html(title, data_note, COLUMNS, rows, footer, before=html_summary))
    return flagged


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--config", type=Path, required=True, help="the workflow's resolved config (JSON)")
    parser.add_argument("--data-note", required=True)
    parser.add_argument("--out-prefix", type=Path, required=True)
    args = parser.parse_args(argv)
    jobs = layout.translation_models(json.loads(args.config.read_text()))
    for line in write(jobs, args.data_note, args.out_prefix):
        print(f"WARNING: {line}")


if __name__ == "__main__":
    main()
