"""The claims table: each paper's headline claims, and whether our run reproduces them.

`python -m workflow_src.claims --papers vmf joint --tables results/joint/table2.csv ... --data-notes JSON
 --out-prefix results/claims`

A paper module lists `CLAIMS`, each a statement with one or more `Check`s on the tables it
renders (their CSVs). A check says that `row` beats `than` (or a threshold) in one column; it is
decided by the statistics the table already computes, never by comparing two numbers by eye:

- `marks`: the table's paired-bootstrap mark for a gain over `than` (p < 0.05) is in the row's
  `<column> significance` cell: reproduced. Without it the claim is not shown; a loss beyond the
  seed spread (below) is a clear loss.
- `levels`: the row's `<column> Δ` against its baseline `than`, with a significance mark
  (p < 0.05, either way): the sign of Δ decides; no mark is within noise.
- `spread`: with d = row - than (+ margin), sign-adjusted so that positive is the claim's
  direction, and se = sqrt(sd_a²/n_a + sd_b²/n_b) from the table's `<column> sd` over its n seeds,

      reproduced if d > 2 se,  not reproduced if d < -2 se,  inconclusive otherwise

  (a threshold has sd_b = 0). One seed, or a table without an sd column, is inconclusive.

A claim is reproduced when all its checks are, not reproduced when any is not, and inconclusive
otherwise; a table that was not built (not configured, or a figure) is inconclusive with the reason.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import os
from pathlib import Path

from workflow_src.atomic import write_text

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
TESTS = ("spread", "marks", "levels")
Z = 2.0  # a difference beyond 2 standard errors of the seed means (about 95%)


@dataclasses.dataclass(frozen=True)
class Check:
    """`row` beats `than` (or `threshold`) in the CSV column `ours` of `artefact` (by `margin`:
    "within margin of" is `margin` > 0)."""

    artefact: str  # table1, ... of the claim's paper
    ours: str  # the column of our value, "<column> ours"; its sd, Δ and significance columns share the stem
    row: str  # the value of `key` that names the row (the experiment)
    than: str | None = None  # the row compared with; None: `threshold`
    threshold: float | None = None
    lower_is_better: bool = False
    margin: float = 0.0
    test: str = "spread"
    mark: str = ""  # `marks`: the table's mark for a significant gain over `than`
    key: str = "experiment"

    def __post_init__(self):
        if (self.than is None) == (self.threshold is None):
            raise ValueError(f"check of {self.row}: give `than` or `threshold`, not both")
        if self.test not in TESTS or (self.test == "marks") != bool(self.mark):
            raise ValueError(f"check of {self.row}: test {self.test!r} (one of {', '.join(TESTS)}; marks need a mark)")
        if self.test != "spread" and (self.threshold is not None or self.margin):
            raise ValueError(f"check of {self.row}: a bootstrap test compares two rows without a margin")

    @property
    def stem(self) -> str:
        return self.ours.removesuffix(" ours")


@dataclasses.dataclass(frozen=True)
class Claim:
    id: str  # C1, C2, ... within its paper
    statement: str
    measure: str
    paper: str  # the paper's numbers, as it prints them
    checks: tuple[Check, ...]


@dataclasses.dataclass(frozen=True)
class Outcome:
    verdict: str
    ours: str
    reason: str


def number(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


def find_row(table: list[dict], check: Check, name: str) -> dict | None:
    return next((r for r in table if r.get(check.key) == name), None)


def column_note(row: dict, check: Check) -> str:
    """The parts of a row's note about the check's column ("De→En: ..."), else 'not computed'."""
    parts = [part for part in row.get("note", "").split("; ") if part.startswith(f"{check.stem}:")]
    return "; ".join(parts) or "not computed"


def seed_count(row: dict) -> int:
    return len(row.get("seeds", "").split())


def spread(row: dict, check: Check) -> tuple[float, float | None, int]:
    """(value, sd or None, seeds) of our number in a row."""
    sd_column = f"{check.stem} sd"
    return number(row[check.ours]), number(row.get(sd_column)), seed_count(row)


def by_spread(check: Check, a: dict, b: dict | None) -> Outcome:
    value_a, sd_a, n_a = spread(a, check)
    if b is None:
        value_b, sd_b, n_b = check.threshold, 0.0, math.inf
        shown = f"{value_a:g} (seeds: {n_a}) against {check.threshold:g}"
    else:
        value_b, sd_b, n_b = spread(b, check)
        shown = f"{value_a:g} against {value_b:g} (seeds: {n_a}, {n_b})"
    sign = -1 if check.lower_is_better else 1
    d = sign * (value_a - value_b) + check.margin
    if f"{check.stem} sd" not in a:
        return Outcome(INCONCLUSIVE, shown, f"{check.artefact} has no '{check.stem} sd' column: no spread over seeds")
    if sd_a is None or sd_b is None or min(n_a, n_b) < 2:
        return Outcome(INCONCLUSIVE, shown, f"{check.artefact}: fewer than 2 seeds, no spread to decide by")
    se = math.sqrt(sd_a ** 2 / n_a + (sd_b ** 2 / n_b if b is not None else 0.0))
    shown = f"{shown}; d = {d:+.2f}, 2 se = {Z * se:.2f}"
    if d > Z * se:
        return Outcome(REPRODUCED, shown, "beyond 2 standard errors of the seed means")
    if d < -Z * se:
        return Outcome(NOT_REPRODUCED, shown, "the opposite, beyond 2 standard errors of the seed means")
    return Outcome(INCONCLUSIVE, shown, "within 2 standard errors of the seed means")


def by_marks(check: Check, a: dict, b: dict) -> Outcome:
    cell = a.get(f"{check.stem} significance")
    if cell is None:
        return Outcome(INCONCLUSIVE, "", f"{check.artefact} has no '{check.stem} significance' column")
    shown = f"{number(a[check.ours]):g} against {number(b[check.ours]):g}, marks '{cell}'"
    if check.mark in cell:
        return Outcome(REPRODUCED, shown, f"{check.mark}: paired bootstrap p < 0.05")
    loss = by_spread(check, a, b)
    if loss.verdict == NOT_REPRODUCED:
        return Outcome(NOT_REPRODUCED, shown, f"no {check.mark}, and {loss.reason} ({loss.ours})")
    return Outcome(INCONCLUSIVE, shown, f"no {check.mark}: paired bootstrap p >= 0.05")


def by_levels(check: Check, a: dict, b: dict) -> Outcome:
    delta, cell = number(a.get(f"{check.stem} Δ")), a.get(f"{check.stem} significance")
    if cell is None or f"{check.stem} Δ" not in a:
        return Outcome(INCONCLUSIVE, "", f"{check.artefact} has no '{check.stem} Δ' and significance columns")
    if delta is None:
        return Outcome(INCONCLUSIVE, "", f"{check.artefact}: no Δ against {check.than} ({a.get('note', '')})")
    shown = f"{number(a[check.ours]):g} against {number(b[check.ours]):g}, Δ = {delta:+g} {cell}".rstrip()
    if not cell:
        return Outcome(INCONCLUSIVE, shown, "the difference is not significant (paired bootstrap p >= 0.05)")
    better = delta < 0 if check.lower_is_better else delta > 0
    return Outcome(REPRODUCED if better else NOT_REPRODUCED, shown, f"{cell}: paired bootstrap, p < 0.05")


def decide(check: Check, table: list[dict] | None, missing: str = "") -> Outcome:
    """A check's verdict on its table (None: not built, `missing` says why)."""
    if table is None:
        return Outcome(INCONCLUSIVE, "", missing)
    a = find_row(table, check, check.row)
    b = find_row(table, check, check.than) if check.than is not None else None
    for name, row in ((check.row, a), (check.than, b)):
        if name is not None and row is None:
            return Outcome(INCONCLUSIVE, "", f"{check.artefact} has no row {name} (not selected in the config)")
        if name is not None and number(row.get(check.ours)) is None:
            return Outcome(INCONCLUSIVE, "", f"{check.artefact}, {name}: no '{check.ours}' ({column_note(row, check)})")
    if check.test == "marks":
        return by_marks(check, a, b)
    if check.test == "levels":
        return by_levels(check, a, b)
    return by_spread(check, a, b)


def verdict(outcomes: list[Outcome]) -> str:
    verdicts = {o.verdict for o in outcomes}
    if verdicts == {REPRODUCED}:
        return REPRODUCED
    return NOT_REPRODUCED if NOT_REPRODUCED in verdicts else INCONCLUSIVE


def read_table(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def table_path(paper: str, artefact: str) -> str:
    return f"results/{paper}/{artefact}.csv"


def paper_claims(paper: str) -> tuple[Claim, ...]:
    from workflow_src import registry

    return tuple(getattr(registry.paper_module(paper), "CLAIMS", ()))


def table_paths(configured: list[tuple[str, str]]) -> list[str]:
    """The table CSVs the claims of the configured artefacts ((paper, artefact) pairs) read."""
    papers = {paper for paper, _ in configured}
    needed = {(paper, c.artefact) for paper in papers for claim in paper_claims(paper) for c in claim.checks}
    return sorted(table_path(p, a) for p, a in needed if (p, a) in set(configured) and a.startswith("table"))


def claim_rows(papers: list[str], tables: dict[str, list[dict]], data_notes: dict[str, str]) -> list[dict]:
    rows = []
    for paper in papers:
        for claim in paper_claims(paper):
            outcomes = []
            for check in claim.checks:
                path = table_path(paper, check.artefact)
                why = (f"{check.artefact} is a figure: it writes no table to decide by" if check.artefact.startswith("figure")
                       else f"{path} is not built in this run (papers.{paper}.{check.artefact} not configured)")
                outcomes.append(decide(check, tables.get(path), why))
            rows.append({"id": f"{paper}:{claim.id}", "paper": paper, "claim": claim.statement, "measure": claim.measure,
                         "paper's numbers": claim.paper, "ours": "; ".join(o.ours for o in outcomes if o.ours),
                         "verdict": verdict(outcomes), "decided by": "; ".join(o.reason for o in outcomes),
                         "data": data_notes.get(paper, "")})
    return rows


COLUMNS = ["id", "claim", "measure", "paper's numbers", "ours", "verdict", "decided by"]


def main(argv: list[str] | None = None) -> None:
    from workflow_src import render

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", nargs="+", required=True)
    parser.add_argument("--tables", nargs="*", default=[], help="the table CSVs built in this run")
    parser.add_argument("--data-notes", type=json.loads, required=True, help="JSON: paper -> its data note")
    parser.add_argument("--out-prefix", type=Path, required=True)
    args = parser.parse_args(argv)
    tables = {os.path.normpath(path): read_table(Path(path)) for path in args.tables if path}
    rows = claim_rows(args.papers, tables, args.data_notes)
    notes = sorted(set(args.data_notes.values()))
    data_note = notes[0] if len(notes) == 1 else "per row (the CSV's data column)"
    title = "Headline claims of the papers, and whether this run reproduces them"
    footer = ["Verdicts from the tables' own statistics (paired bootstrap marks, or 2 standard errors of the seed "
              "means), never by eye; see workflow_src/claims.py. Inconclusive rows say what is missing."]
    prefix = args.out_prefix
    write_text(prefix.with_suffix(".csv"), render.to_csv(COLUMNS + ["data"], rows))
    write_text(prefix.with_suffix(".md"), render.to_markdown(title, data_note, COLUMNS, rows, footer))
    write_text(prefix.with_suffix(".html"), render.to_html(title, data_note, COLUMNS, rows))
    print(render.to_markdown(title, data_note, COLUMNS, rows, footer))


if __name__ == "__main__":
    main()
