"""The plan's prediction against the actual training time (`python -m workflow_src.plan compare`)."""

from __future__ import annotations

import csv
from pathlib import Path

from workflow_src.atomic import read_lines, read_metrics, write_text
from workflow_src.plan.tables import to_csv, to_markdown
from workflow_src.tables import to_html


def actual_seconds(kind: str, records: list[dict]) -> float:
    """Training and validation seconds a metrics.jsonl records (language models record training only)."""
    if kind == "lm":
        return sum(r["seconds"] for r in records)
    return sum(r["train_seconds"] + r["validation_seconds"] for r in records)


def predicted_seconds(row: dict) -> float:
    """The plan's seconds for what metrics.jsonl measures: training and validation (LM: training)."""
    hours = float(row["train_hours"]) + (float(row["validation_hours"]) if row["kind"] == "nmt" else 0.0)
    return hours * 3600


COMPARE_COLUMNS = [
    "kind",
    "dataset",
    "pair",
    "experiment",
    "seed",
    "epochs_planned",
    "epochs_run",
    "predicted_seconds",
    "predicted_seconds_run",
    "actual_seconds",
    "actual / predicted",
]


def compare(plan_rows: list[dict], read_metrics) -> tuple[list[dict], dict]:
    """Per planned job with a size, predicted against actual seconds; and the total row.
    `read_metrics(path)` gives a metrics.jsonl's records. The plan predicts `epochs_planned` epochs,
    an upper bound where the early stop may end a run sooner, so the ratio is taken against its
    prediction for the epochs the run ran:

        predicted_seconds_run = predicted_seconds · epochs_run / epochs_planned
    """
    rows = []
    for row in plan_rows:
        if not row.get("train_hours"):
            continue
        records = read_metrics(row["metrics"])
        planned, actual = predicted_seconds(row), actual_seconds(row["kind"], records)
        run = planned * len(records) / int(row["epochs"])
        rows.append(
            {
                **{k: row[k] for k in ("kind", "dataset", "pair", "experiment", "seed")},
                "epochs_planned": int(row["epochs"]),
                "epochs_run": len(records),
                "predicted_seconds": round(planned, 2),
                "predicted_seconds_run": round(run, 2),
                "actual_seconds": round(actual, 2),
                "actual / predicted": round(actual / run, 3) if run else None,
            }
        )
    totals = {
        key: sum(r[key] for r in rows)
        for key in ("epochs_planned", "epochs_run", "predicted_seconds", "predicted_seconds_run", "actual_seconds")
    }
    run = totals["predicted_seconds_run"]
    total = {
        "kind": "total",
        "dataset": "",
        "pair": "",
        "experiment": f"{len(rows)} jobs",
        "seed": "",
        **{key: round(value, 2) for key, value in totals.items()},
        "actual / predicted": round(totals["actual_seconds"] / run, 3) if run else None,
    }
    return rows, total


def within_factor(total: dict, factor: float = 2.0) -> bool:
    ratio = total["actual / predicted"]
    return ratio is not None and 1 / factor <= ratio <= factor


def write_comparison(jobs_csv: Path, out_prefix: Path) -> dict:
    plan_rows = list(csv.DictReader(read_lines(jobs_csv, "the plan's <prefix>.jobs.csv")))

    rows, total = compare(plan_rows, read_metrics)
    verdict = "within" if within_factor(total) else "NOT within"
    footer = [
        f"Total: actual / predicted = {total['actual / predicted']}, {verdict} a factor of 2. "
        "Actual: the sum over epochs of train_seconds + validation_seconds of each model's metrics.jsonl "
        "(language models: seconds, training only; their prediction is training only too). The plan predicts "
        "`train.max_epochs` epochs (predicted_seconds), an upper bound: a run that stopped early ran fewer "
        "(epochs_run), and the ratio is against the plan's cost of the epochs it ran (predicted_seconds_run)."
    ]
    write_text(out_prefix.with_suffix(".csv"), to_csv(COMPARE_COLUMNS, rows + [total]))
    title = "The cost plan's prediction against the actual training time"
    lines = [f"# {title}", "", f"Plan: {jobs_csv}", "", *to_markdown(COMPARE_COLUMNS, rows + [total]), "", *footer]
    write_text(out_prefix.with_suffix(".md"), "\n".join(lines) + "\n")
    write_text(
        out_prefix.with_suffix(".html"),
        to_html(title, f"plan: {jobs_csv}. {footer[0]}", COMPARE_COLUMNS, rows + [total]),
    )
    return total
