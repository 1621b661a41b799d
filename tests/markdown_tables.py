"""The Markdown tables of a page as GitHub renders them (markdown-it-py, CommonMark with GFM tables),
for the tests of every page that holds one (tests/test_pages.py, and the demo's pages in
tests/test_demo.py)."""

import re

from markdown_it import MarkdownIt

PARSER = MarkdownIt("commonmark").enable("table")
DELIMITER_ROW = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def rendered_tables(text: str) -> list[list[list[str]]]:
    """Each table the parser finds: its rows (the header first), each a list of its cells' text."""
    tables, rows, cells = [], None, None
    for token in PARSER.parse(text):
        if token.type == "table_open":
            rows = []
        elif token.type == "tr_open":
            cells = []
        elif token.type == "inline" and cells is not None:
            cells.append(token.content)
        elif token.type == "tr_close":
            rows.append(cells)
            cells = None
        elif token.type == "table_close":
            tables.append(rows)
    return tables


def check_tables(text: str, where: str) -> list[list[list[str]]]:
    """The page's tables (`rendered_tables`), after asserting that each table written in it renders
    as one: as many tables as delimiter rows (a header whose cells the delimiter row does not
    match is no table at all), and every row of as many cells as its header, counted on the
    source line (the parser pads a short row and drops a long row's extra cells silently)."""
    lines = text.splitlines()
    written = [k for k, line in enumerate(lines) if DELIMITER_ROW.match(line)]
    tables = rendered_tables(text)
    assert len(tables) == len(written), f"{where}: {len(written)} tables written, {len(tables)} rendered"
    for start, table in zip(written, tables):
        header = lines[start - 1]
        width = len(UNESCAPED_PIPE.findall(lines[start])) - 1
        for line in [header] + lines[start + 1 : start + len(table)]:
            assert len(UNESCAPED_PIPE.findall(line)) - 1 == width, f"{where}: {width} columns, but {line[:120]!r}"
        assert all(len(row) == width for row in table), where
    return tables
