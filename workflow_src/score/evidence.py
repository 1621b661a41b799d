"""The evidence a claim is decided by, written with each artefact it reads.

A table writes `results/<paper>/<table>.evidence.json`; a figure writes its data as
`results/<paper>/<figure>.csv`, and its per-unit evidence (Figure 3's per-sentence METEOR
statistics; none for a figure of values) as `results/<paper>/<figure>.evidence.json`. They hold
`Cell`s: the measurements behind one number of the artefact, one replicate per seed (or per timed
repeat), so that a claim's test can count the variance between seeds and within the test set,
not only compare two means:

    kind        replicate                                        the number it gives
    bleu        BLEU's sufficient statistics per test sentence   corpus BLEU of the summed statistics
                (10 integers each, sacrebleu's order)
    perplexity  [negative log-likelihood in nats, tokens] per    exp(sum of NLL / sum of tokens)
                fixed block of test tokens (`BLOCK_TOKENS`)
    f1          [matched, hypothesis, reference] word counts     2 matched / (hypothesis + reference)
                per test sentence (one frequency bin's words)
    meteor      Meteor's sufficient statistics per test sentence  100 x METEOR of the summed statistics
                (`meteor.statistics_vector`, one bin's function   with the cell's `parameters` (alpha, beta,
                words)                                            gamma, delta, weights)
    mean        [score, 1] per test sentence (a metric that      the mean of the sentences' scores
                averages sentence scores: nltk's METEOR in %)
    probability [sum of a word's probability, positions] per    the mean probability the model gives
                fixed block of test tokens (`BLOCK_TOKENS`), at   the word where another word comes next
                the positions where another word comes next       (`decode/lm_predict.py`)
    value       one number (a timing, a ratio, a distance)       the number itself
    count       an exact count (a layer's parameters): one       the number itself, with no spread: a
                replicate, "counted"                             claim on it is decided exactly

A figure's CSV has one line per replicate of each point: `panel, series, x, y, replicate` (the
replicate "seed 3" or "repeat 2"); its cells are kind `value`, addressed by (series, panel, x), as
are the cells of a figure's evidence file.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

from workflow_src.atomic import write_text

KINDS = ("bleu", "perplexity", "f1", "meteor", "mean", "probability", "value", "count")
COUNTED = ("counted",)  # the one label of a count cell
BLOCK_TOKENS = 1000  # a perplexity block: long enough that neighbouring blocks are nearly independent
FIGURE_COLUMNS = ("panel", "series", "x", "y", "replicate")


@dataclasses.dataclass(frozen=True)
class Cell:
    """The replicates behind the number of `row` (the artefact's row key) in `column` (its column
    stem, "fr-en", "PTB test", or a figure's panel) at `x` (a figure's x; None in a table)."""

    row: str
    column: str
    kind: str
    replicates: tuple  # bleu, perplexity, f1, meteor, mean: per-unit lists per replicate; value, count: floats
    labels: tuple[str, ...]  # "seed 1", "repeat 3", ... one per replicate
    x: float | None = None
    parameters: dict | None = None  # meteor: its MeteorParameters' fields (alpha, beta, gamma, delta, weights)
    # why the runs behind it do not show what their method learns (a run still improving when its
    # training stopped, `workflow_src.report.table_evidence.still_learning`); a claim is not decided on it
    unsettled: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(
                f"evidence of {self.row}, {self.column}: kind {self.kind!r} is not one of {', '.join(KINDS)}"
            )
        if (self.parameters is not None) != (self.kind == "meteor"):
            raise ValueError(f"evidence of {self.row}, {self.column}: a meteor cell, and only one, has parameters")
        if self.kind == "count" and len(self.replicates) != 1:
            raise ValueError(
                f"evidence of {self.row}, {self.column}: a count has one replicate, not {len(self.replicates)}"
            )
        if len(self.replicates) != len(self.labels):
            raise ValueError(
                f"evidence of {self.row}, {self.column}: {len(self.replicates)} replicates, {len(self.labels)} labels"
            )

    @property
    def key(self) -> tuple[str, str, float | None]:
        return self.row, self.column, self.x


def seed_labels(seeds) -> tuple[str, ...]:
    return tuple(f"seed {s}" for s in seeds)


def repeat_labels(count: int) -> tuple[str, ...]:
    return tuple(f"repeat {i}" for i in range(1, count + 1))


def perplexity_blocks(token_nll: list[float], block: int = BLOCK_TOKENS) -> list[list[float]]:
    """[NLL sum, tokens] of consecutive blocks of `block` tokens (the last may be shorter)."""
    return [
        [float(sum(token_nll[i : i + block])), len(token_nll[i : i + block])] for i in range(0, len(token_nll), block)
    ]


class Evidence(dict):
    """An evidence file's cells by (row, column, x), and the cells of its artefact that the run's
    config leaves out, with why (a claim on one says so): `left_out_rows`, row -> why;
    `left_out_columns`, column -> why, which holds for the columns named `<column>` and
    `<column> <more>` (a table's "De→En |Θ|" beside its "De→En", "PTB test" of corpus "PTB")."""

    def __init__(self, cells=(), left_out_rows: dict | None = None, left_out_columns: dict | None = None):
        super().__init__(cells)
        self.left_out_rows = dict(left_out_rows or {})
        self.left_out_columns = dict(left_out_columns or {})

    def why_left_out(self, row: str, column: str) -> str | None:
        """Why the config leaves the cell of `row` in `column` out of this run; None where it does not."""
        if row in self.left_out_rows:
            return self.left_out_rows[row]
        return next(
            (why for name, why in self.left_out_columns.items() if column == name or column.startswith(f"{name} ")),
            None,
        )


def as_evidence(cells: dict) -> Evidence:
    return cells if isinstance(cells, Evidence) else Evidence(cells)


def to_json(cells: list[Cell], left_out_rows: dict | None = None, left_out_columns: dict | None = None) -> str:
    data = {"cells": [dataclasses.asdict(c) for c in cells]}
    data |= {"left_out_rows": left_out_rows} if left_out_rows else {}
    data |= {"left_out_columns": left_out_columns} if left_out_columns else {}
    return json.dumps(data, separators=(",", ":")) + "\n"


def write(
    path: str | Path, cells: list[Cell], left_out_rows: dict | None = None, left_out_columns: dict | None = None
) -> None:
    """The cells, and the rows and columns the config leaves out (each -> why), where there are any."""
    write_text(path, to_json(cells, left_out_rows, left_out_columns))


def read(path: str | Path) -> Evidence:
    """An evidence file, keyed by (row, column, x): a table's x is None."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        cells = [
            Cell(**{**c, "replicates": tuple(c["replicates"]), "labels": tuple(c["labels"])}) for c in data["cells"]
        ]
        left_out = [
            {str(name): str(why) for name, why in data.get(key, {}).items()}
            for key in ("left_out_rows", "left_out_columns")
        ]
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path}: not an evidence file ({error})") from error
    return Evidence({c.key: c for c in cells}, *left_out)


def figure_csv(points: list[dict]) -> str:
    """A figure's data: `points` are dicts of FIGURE_COLUMNS, one per replicate of a point."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIGURE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for point in points:
        writer.writerow({c: "" if point.get(c) is None else point[c] for c in FIGURE_COLUMNS})
    return buffer.getvalue()


def read_figure(path: str | Path) -> dict[tuple, Cell]:
    """A figure's CSV as `value` cells keyed by (series, panel, x); points without a y are left out."""
    grouped: dict[tuple, list[tuple[str, float]]] = {}
    with Path(path).open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != FIGURE_COLUMNS:
            raise ValueError(f"{path}: columns {reader.fieldnames}, expected {', '.join(FIGURE_COLUMNS)}")
        for line, point in enumerate(reader, start=2):
            if point["y"] == "":
                continue
            try:
                x = float(point["x"]) if point["x"] != "" else None
                grouped.setdefault((point["series"], point["panel"], x), []).append(
                    (point["replicate"], float(point["y"]))
                )
            except ValueError as error:
                raise ValueError(f"{path}, line {line}: {error}") from error
    return {
        key: Cell(key[0], key[1], "value", tuple(y for _, y in points), tuple(r for r, _ in points), key[2])
        for key, points in grouped.items()
    }
