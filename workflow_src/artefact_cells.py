"""The cells of every artefact and the experiment behind each: what `python -m workflow_src.registry
explain` looks a table cell up in, and the experiments a rendered table's footer names.

A cell is named by the texts a reader sees: the row's labels, the column's header, a system's
name, a panel's title, and the experiment's own name.
"""

from __future__ import annotations

import dataclasses
import functools

from workflow_src import artefacts, layout, registry


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell (or row, panel line) of an artefact and the experiment behind it. `keys`: the texts
    that name it; `candidates`: the experiments a tuned cell chooses among; `dataset` and `pair`:
    where its models train (pair "lm" for a language model), None for a benchmark."""

    paper: str
    artefact: str
    row: str
    column: str
    experiment: str
    keys: frozenset[str]
    candidates: tuple[str, ...] = ()
    dataset: str | None = None
    pair: str | None = None

    def describe(self) -> str:
        where = " / ".join(part for part in (self.row, self.column) if part)
        tuned = f" (chooses among {', '.join(self.candidates)})" if self.candidates else ""
        return f"{self.paper} {self.artefact}: {where}{tuned}"


def make_cell(
    paper: str,
    artefact_id: str,
    row: str,
    column: str,
    experiment: str,
    texts,
    tune=None,
    place: artefacts.Column | artefacts.Corpus | None = None,
) -> Cell:
    if isinstance(place, artefacts.Corpus):
        dataset, pair = place.dataset, "lm"
    else:
        dataset, pair = (place.dataset, place.pair) if place else (None, None)
    return Cell(
        paper,
        artefact_id,
        row,
        column,
        experiment,
        frozenset(t for t in (*texts, experiment) if t),
        tune if isinstance(tune, tuple) else (),
        dataset,
        pair,
    )


def row_text(row: artefacts.Row) -> str:
    return " | ".join(row.label.values())


def system_cells(paper, artefact_id, title: str, systems, place) -> list[Cell]:
    """A cell per system (a column of an analysis table, a line of a figure panel)."""
    return [
        make_cell(
            paper,
            artefact_id,
            title,
            s.name,
            s.experiment_for(place) if isinstance(place, artefacts.Column) else s.experiment,
            (title, s.name),
            s.tune,
            place,
        )
        for s in systems
    ]


@functools.singledispatch
def artefact_cells(table, paper: str, artefact_id: str) -> list[Cell]:
    raise TypeError(f"{paper} {artefact_id}: no cells defined for {type(table).__name__}")


@artefact_cells.register
def _(table: artefacts.ScoreTable, paper, artefact_id):
    return [
        make_cell(
            paper,
            artefact_id,
            row_text(row),
            column.name,
            row.experiment,
            (*row.label.values(), column.name),
            row.tune,
            column,
        )
        for row in table.rows
        for column in table.columns
    ]


@artefact_cells.register
def _(table: artefacts.PerplexityTable, paper, artefact_id):
    return [
        make_cell(
            paper,
            artefact_id,
            row_text(row),
            corpus.name,
            row.experiment,
            (*row.label.values(), corpus.name),
            row.tune,
            corpus,
        )
        for row in table.rows
        if row.experiment
        for corpus in table.columns
        if any(key.startswith(f"{corpus.name} ") for key in row.paper)
    ]


@artefact_cells.register(artefacts.ParameterTable)
@artefact_cells.register(artefacts.SamplingTable)
def _(table, paper, artefact_id):
    place = getattr(table, "column", None)
    return [
        make_cell(paper, artefact_id, row_text(row), "", row.experiment, row.label.values(), row.tune, place)
        for row in table.rows
    ]


@artefact_cells.register
def _(table: artefacts.ConvergenceTable, paper, artefact_id):
    return [
        cell
        for column in table.columns
        for cell in system_cells(paper, artefact_id, column.name, table.systems, column)
    ]


@artefact_cells.register(artefacts.RareWordTable)
@artefact_cells.register(artefacts.NeighbourTable)
@artefact_cells.register(artefacts.ExampleTable)
def _(table, paper, artefact_id):
    return system_cells(paper, artefact_id, "", table.systems, table.column)


@artefact_cells.register
def _(table: artefacts.NextWordTable, paper, artefact_id):
    return system_cells(paper, artefact_id, "", table.systems, table.corpus)


@artefact_cells.register
def _(table: artefacts.RepresentationTable, paper, artefact_id):
    return [
        make_cell(paper, artefact_id, "", header, experiment, (header,), place=table.column)
        for header, experiment, _ in table.sides
    ]


@artefact_cells.register
def _(figure: artefacts.Figure, paper, artefact_id):
    cells = []
    for panel in figure.panels:
        place = getattr(panel, "column", None) or getattr(panel, "corpus", None)
        if isinstance(panel, artefacts.ScoreAgainst):
            cells += [
                make_cell(
                    paper,
                    artefact_id,
                    panel.title,
                    f"{panel.name} {x:g}",
                    experiment,
                    (panel.title, panel.name, f"{x:g}"),
                    place=place,
                )
                for x, experiment in panel.points
            ]
        elif isinstance(panel, artefacts.SubspaceSweep):
            cells.append(
                make_cell(paper, artefact_id, panel.title, panel.model, panel.model, (panel.title,), place=place)
            )
        systems = getattr(panel, "systems", getattr(panel, "baselines", ()))
        cells += system_cells(paper, artefact_id, panel.title, systems, place)
    return cells


def all_cells() -> list[Cell]:
    return [
        cell
        for paper in registry.PAPERS
        for artefact_id, table in registry.paper_module(paper).ARTEFACTS.items()
        for cell in artefact_cells(table, paper, artefact_id)
    ]


def base_name(name: str) -> str:
    return name.partition("@")[0]


def uses(name: str) -> list[Cell]:
    """Every cell whose experiment, or one of whose candidates, is `name` (variants: their base)."""
    return [cell for cell in all_cells() if base_name(name) in (cell.experiment, *cell.candidates)]


def matching_cells(paper: str, artefact_id: str, texts: list[str]) -> list[Cell]:
    """The cells of one artefact that every text names; KeyError listing what names them otherwise."""
    cells = artefact_cells(registry.artefact(paper, artefact_id), paper, artefact_id)
    found = [cell for cell in cells if set(texts) <= cell.keys]
    if not found:
        names = sorted({key for cell in cells for key in cell.keys})
        raise KeyError(
            f"{paper} {artefact_id}: no cell is named by all of {', '.join(map(repr, texts))}; "
            f"its cells are named by: {'; '.join(names)}"
        )
    return found


EXPLAIN = "python -m workflow_src.registry explain NAME"


def left_out_rows(table, ctx: artefacts.Context) -> list[str]:
    """The experiments of the paper's rows that the config's `papers.<paper>.<artefact>.rows` leaves
    out of this run (`layout.selected_rows`)."""
    if not hasattr(table, "rows"):  # a kind of artefact without rows of experiments (a figure, a table of bins)
        return []
    kept = layout.selected_rows(ctx, table)
    return [row.experiment for row in table.rows if row not in kept]


def left_out_reason(paper: str, artefact_id: str) -> str:
    return f"not run here (config papers.{paper}.{artefact_id}.rows leaves them out)"


def left_out_columns(table, ctx: artefacts.Context) -> dict[str, str]:
    """The table's columns (translation pairs, language-modelling corpora) whose data set or pair
    the config leaves out of this run, each with why (`Context.status`, `Context.corpus_status`)."""
    if isinstance(table, artefacts.ScoreTable):
        status = {column.name: ctx.status(column) for column in table.columns}
    elif isinstance(table, artefacts.PerplexityTable):
        status = {corpus.name: ctx.corpus_status(corpus) for corpus in table.columns}
    else:
        return {}
    return {name: why.removeprefix(f"{name}: ") for name, why in status.items() if why}


def left_out_footer(table, ctx: artefacts.Context, paper: str, artefact_id: str) -> list[str]:
    """The footer line naming the paper's rows that the config leaves out of this run
    (`left_out_rows`), so that a shorter table says it is shorter."""
    left_out = left_out_rows(table, ctx)
    if not left_out:
        return []
    return [f"Rows of the paper's table {left_out_reason(paper, artefact_id)}: {', '.join(left_out)}."]


def experiments_footer(table, paper: str, artefact_id: str, rows: list[dict]) -> list[str]:
    """The footer line that names the experiment behind each rendered row (the CSV's `experiment`
    column, which the Markdown and HTML leave out), or behind each system of a table whose rows
    are pairs, bins or queries: the name grep finds in the paper module and `explain` takes."""
    if any(row.get("experiment") for row in rows):
        empty = " ('-': not run here)" if not all(row.get("experiment") for row in rows) else ""
        return [
            f"Experiments, row by row{empty} ({EXPLAIN} follows one to its code): "
            f"{', '.join(row.get('experiment') or '-' for row in rows)}."
        ]
    by_system = {}
    for cell in artefact_cells(table, paper, artefact_id):
        by_system.setdefault(cell.column, {})[cell.experiment] = None
    systems = "; ".join(f"{system}: {' / '.join(names)}" for system, names in by_system.items())
    return [f"Experiments ({EXPLAIN} follows one to its code): {systems}."] if by_system else []
