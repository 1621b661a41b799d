"""Writing a table: CSV, Markdown and HTML from columns and rows of dicts. Every rendered table,
the claims and the deviations ledger are written through it."""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path

from workflow_src.atomic import write_text


def fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() and abs(value) >= 1000 else f"{value:.2f}"
    return str(value)


def to_csv(columns: list[str], rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: fmt(row.get(c)) for c in columns})
    return buffer.getvalue()


def to_markdown(title: str, data_note: str, columns: list[str], rows: list[dict], footer: list[str] = ()) -> str:
    shown = [c for c in columns if c not in ("signature", "experiment", "data")]
    lines = [f"# {title}", "", f"Data: {data_note}", "",
             "| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
    lines += ["| " + " | ".join(fmt(row.get(c)) for c in shown) + " |" for row in rows]
    lines += [""] + list(footer)
    signatures = sorted({s for row in rows for s in row.get("signature", "").split(" | ") if s})
    lines += [f"Signature: `{s}`" for s in signatures]
    return "\n".join(lines) + "\n"


def to_html(title: str, data_note: str, columns: list[str], rows: list[dict]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(fmt(row.get(c)))}</td>" for c in columns) + "</tr>" for row in rows)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px}</style></head>"
            f"<body><h1>{html.escape(title)}</h1><p>Data: {html.escape(data_note)}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>\n")


def write_table(out_csv: Path, out_md: Path, out_html: Path, title: str, data_note: str, columns: list[str],
                rows: list[dict], footer: list[str] = ()) -> None:
    """The CSV repeats the data note on every row, so the file alone says where its numbers come from."""
    write_text(out_csv, to_csv(columns + ["data"], [{**row, "data": data_note} for row in rows]))
    write_text(out_md, to_markdown(title, data_note, columns, rows, footer))
    write_text(out_html, to_html(title, data_note, columns, rows))
