"""Render one paper table: the paper's number, ours and the difference, per row and pair.

`python -m workflow_src.render --paper vmf --table table1 --jobs JSON --data-note TEXT
 --out-csv T.csv --out-md T.md --out-html T.html`

`--jobs` lists the trained (dataset, pair, experiment, seed) of the table; their score files are
found through `layout.score_path`. Our value is the mean over seeds. A cell we did not compute is
empty, and the row's `note` says why. The metric's signature travels with every row.
"""

from __future__ import annotations

import argparse
import csv
import html
import io
import json
import statistics
from pathlib import Path

from workflow_src import layout, registry
from workflow_src.atomic import write_text


def build_rows(paper: str, table_id: str, jobs: list[layout.Job], data_note: str) -> tuple[list[str], list[dict]]:
    table = registry.table(paper, table_id)
    by_cell: dict[tuple[str, str], list[layout.Job]] = {}
    for job in jobs:
        by_cell.setdefault((job.experiment, job.pair), []).append(job)
    columns = list(table.label_columns)
    for pair in table.pairs:
        columns += [f"{pair} paper", f"{pair} ours", f"{pair} diff"]
    columns += ["seeds", "signature", "data", "note"]
    rows = []
    for row in table.rows:
        trained = [pair for pair in table.pairs if (row.experiment, pair) in by_cell]
        if not trained:
            continue  # not configured: the table shows the rows this configuration trains
        out = {**row.label, "experiment": row.experiment}
        signatures, notes, seeds = set(), [], set()
        for pair in table.pairs:
            paper_value = row.paper.get(pair)
            out[f"{pair} paper"] = paper_value
            cell_jobs = by_cell.get((row.experiment, pair), [])
            if not cell_jobs:
                out[f"{pair} ours"] = out[f"{pair} diff"] = None
                notes.append(f"{pair}: not run (the pair is not configured)")
                continue
            scores = [json.loads(Path(layout.score_path(j.dataset, j.pair, j.experiment, j.seed)).read_text()) for j in cell_jobs]
            ours = round(statistics.fmean(s["score"] for s in scores), 2)
            out[f"{pair} ours"] = ours
            out[f"{pair} diff"] = round(ours - paper_value, 2) if paper_value is not None else None
            signatures |= {s["signature"] for s in scores}
            seeds |= {j.seed for j in cell_jobs}
        out["seeds"] = " ".join(str(s) for s in sorted(seeds))
        out["signature"] = " | ".join(sorted(signatures))
        out["data"] = data_note
        out["note"] = "; ".join(notes)
        rows.append(out)
    return ["experiment"] + columns, rows


def fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def to_csv(columns: list[str], rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: fmt(row.get(c)) for c in columns})
    return buffer.getvalue()


def to_markdown(title: str, data_note: str, columns: list[str], rows: list[dict]) -> str:
    shown = [c for c in columns if c not in ("signature", "experiment", "data")]
    lines = [f"# {title}", "", f"Data: {data_note}", "",
             "| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
    lines += ["| " + " | ".join(fmt(row.get(c)) for c in shown) + " |" for row in rows]
    signatures = sorted({row["signature"] for row in rows if row["signature"]})
    lines += ["", "Ours: the mean over the listed seeds; diff = ours - paper."]
    lines += [f"Signature: `{s}`" for s in signatures]
    return "\n".join(lines) + "\n"


def to_html(title: str, data_note: str, columns: list[str], rows: list[dict]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(fmt(row.get(c)))}</td>" for c in columns) + "</tr>" for row in rows)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px}</style></head>"
            f"<body><h1>{html.escape(title)}</h1><p>Data: {html.escape(data_note)}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--jobs", type=json.loads, required=True, help="[[dataset, pair, experiment, seed], ...]")
    parser.add_argument("--data-note", required=True)
    parser.add_argument("--out-csv", type=Path, required=True)
    parser.add_argument("--out-md", type=Path, required=True)
    parser.add_argument("--out-html", type=Path, required=True)
    args = parser.parse_args(argv)
    jobs = [layout.Job(*j) for j in args.jobs]
    columns, rows = build_rows(args.paper, args.table, jobs, args.data_note)
    title = f"{args.paper} {args.table}: {registry.table(args.paper, args.table).title}"
    write_text(args.out_csv, to_csv(columns, rows))
    write_text(args.out_md, to_markdown(title, args.data_note, columns, rows))
    write_text(args.out_html, to_html(title, args.data_note, columns, rows))
    print(to_markdown(title, args.data_note, columns, rows))


if __name__ == "__main__":
    main()
