"""Writing a table: CSV, Markdown and HTML from columns and rows of dicts. Every rendered table,
the claims and the deviations ledger are written through it.

The CSV keeps every column on every row, for machines. The Markdown and HTML are for readers
(`for_reading`): what is the same on every row (a metric's signature, a note, the seeds) is said
once under the table, so the table itself holds only what differs between rows and fits a page."""

from __future__ import annotations

import csv
import dataclasses
import html
import io
import re
from pathlib import Path

from workflow_src.atomic import write_text

# columns a reader does not need in the table: the CSV's key (the label columns name the row), the
# data note (said above the table) and the signatures (said once under it)
NOT_SHOWN = ("experiment", "data", "signature")
NOTE_SEPARATOR = "; "
LONG_WORD = 20  # characters: a longer word may break after its separators
SHORT_WORD = 12  # characters: a cell of one word this short never breaks ("de-en", "VD-LSTM+RE", "NMT-tied")
SHARED_MIN_LENGTH = 16  # a shorter text on every row ("yes", a verdict, seeds "1 2 3") stays in the table


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


@dataclasses.dataclass(frozen=True)
class ReadingView:
    """A table as a reader sees it: the columns that differ between rows, the rows' cells as text,
    what every row shares (lines for under the table) and the metrics' signatures."""

    columns: list[str]
    rows: list[dict[str, str]]
    shared: list[str]
    signatures: list[str]


def for_reading(columns: list[str], rows: list[dict]) -> ReadingView:
    """Every text column that holds the same long text on every row (of two or more) goes under the
    table once, as do the parts of the `note` every row shares; numbers always stay in the table. A
    column empty on every row (ours, of a pair this run did not configure) is named under it."""
    cells = [{c: fmt(row.get(c)) for c in columns} for row in rows]
    shown = [c for c in columns if c not in NOT_SHOWN]
    empty = [c for c in shown if rows and not any(cell[c] for cell in cells)]
    shown = [c for c in shown if c not in empty]
    shared = [f"Empty on every row, so not shown: {', '.join(empty)}."] if empty else []
    if len(rows) > 1:
        for column in list(shown):
            values = {cell[column] for cell in cells}
            if (
                len(values) == 1
                and len(next(iter(values))) >= SHARED_MIN_LENGTH
                and not any(isinstance(row.get(column), (int, float)) for row in rows)
            ):
                shared.append(f"{column}, every row: {values.pop()}")
                shown.remove(column)
        if "note" in shown:
            common = shared_note_parts([cell["note"] for cell in cells])
            if common:
                shared.append(f"note, every row: {NOTE_SEPARATOR.join(common)}")
                for cell in cells:
                    cell["note"] = NOTE_SEPARATOR.join(p for p in cell["note"].split(NOTE_SEPARATOR) if p not in common)
    signatures = sorted({s for row in rows for s in (row.get("signature") or "").split(" | ") if s})
    return ReadingView(shown, cells, shared, signatures)


def shared_note_parts(notes: list[str]) -> list[str]:
    """The parts of a note (joined by '; ') that every row's note has, in the first row's order."""
    parts = [note.split(NOTE_SEPARATOR) if note else [] for note in notes]
    return [p for p in parts[0] if all(p in other for other in parts[1:])] if parts else []


def markdown_cell(text: str) -> str:
    """A table cell's text as Markdown reads it back: `|` escaped (`|Θ|`, `|V|` would end the cell;
    GitHub's tables unescape it, in code spans too) and line breaks as spaces (one would end the row)."""
    return " ".join(str(text).replace("|", "\\|").split("\n"))


def markdown_row(cells) -> str:
    return "| " + " | ".join(markdown_cell(cell) for cell in cells) + " |"


def markdown_table(columns: list[str], cells: list[dict[str, str]]) -> list[str]:
    """A GitHub-flavoured Markdown table, every header and cell through `markdown_cell`."""
    return [
        markdown_row(columns),
        "|" + "---|" * len(columns),
        *(markdown_row(cell[c] for c in columns) for cell in cells),
    ]


def to_markdown(
    title: str, data_note: str, columns: list[str], rows: list[dict], footer: list[str] = (), before: list[str] = ()
) -> str:
    """`before`: Markdown lines between the data note and the table (the claims' tally)."""
    view = for_reading(columns, rows)
    lines = [f"# {title}", "", f"Data: {data_note}", "", *before, *markdown_table(view.columns, view.rows), ""]
    lines += [f"{line}  " for line in [*footer, *view.shared]] + [f"Signature: `{s}`  " for s in view.signatures]
    return "\n".join(lines) + "\n"


STYLE = """
body{font-family:sans-serif;font-size:14px;margin:16px;max-width:1360px}
h1{font-size:20px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
td,th{border:1px solid #999;padding:2px 5px;text-align:right;vertical-align:top}
th{background:#eee;font-weight:600;text-align:left}
td.text{text-align:left}
td.note{min-width:14em}
td.word{white-space:nowrap}
p.under{margin:2px 0;font-size:13px;color:#333;overflow-wrap:anywhere}
"""


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def breakable(text: str) -> str:
    """Escaped HTML, a long identifier (a path, a config key, a signature) allowed to break after
    its separators, so that one word does not set a column's width."""
    return re.sub(
        r"\S{%d,}" % LONG_WORD, lambda word: re.sub(r"([/:_|.,])", r"\1<wbr>", word.group()), html.escape(text)
    )


def html_table(columns: list[str], cells: list[dict[str, str]], cell_class=None) -> str:
    """`cell_class(column, text)`: an extra class for a cell (a verdict's colour). A cell that is
    not a number is a `text` cell (left-aligned); a `note` cell keeps 14em, so that the numbers'
    columns do not squeeze it to a word a line; a `word` cell, one short word, is not broken at its
    hyphen ("de-\nen")."""

    def classes(column: str, text: str) -> str:
        kind = "" if not text or is_number(text) else "text note" if column == "note" else "text"
        kind += " word" if kind == "text" and len(text) <= SHORT_WORD and " " not in text else ""
        names = [n for n in (kind, cell_class and cell_class(column, text)) if n]
        return f" class='{' '.join(names)}'" if names else ""

    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td{classes(c, cell[c])}>{breakable(cell[c])}</td>" for c in columns) + "</tr>"
        for cell in cells
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def to_html(
    title: str,
    data_note: str,
    columns: list[str],
    rows: list[dict],
    footer: list[str] = (),
    before: str = "",
    cell_class=None,
    style: str = "",
) -> str:
    """`before`: HTML between the data note and the table (the claims' tally); `cell_class`: as
    `html_table`'s, its classes styled by `style`."""
    view = for_reading(columns, rows)
    under = "".join(
        f"<p class='under'>{html.escape(line)}</p>"
        for line in [*footer, *view.shared, *(f"Signature: {s}" for s in view.signatures)]
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}{style}</style></head>"
        f"<body><h1>{html.escape(title)}</h1><p>Data: {html.escape(data_note)}</p>{before}"
        f"{html_table(view.columns, view.rows, cell_class)}{under}</body></html>\n"
    )


def write_table(
    out_csv: Path,
    out_md: Path,
    out_html: Path,
    title: str,
    data_note: str,
    columns: list[str],
    rows: list[dict],
    footer: list[str] = (),
) -> None:
    """The CSV repeats the data note on every row, so the file alone says where its numbers come from."""
    write_text(out_csv, to_csv(columns + ["data"], [{**row, "data": data_note} for row in rows]))
    write_text(out_md, to_markdown(title, data_note, columns, rows, footer))
    write_text(out_html, to_html(title, data_note, columns, rows, footer))
