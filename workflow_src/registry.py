"""The experiment registry: model configurations, and the papers' tables and figures, as data.

A paper module (`workflow_src/papers/<id>.py`) declares `EXPERIMENTS` (name -> Experiment) and
`ARTEFACTS` (id -> a table or figure). An experiment name is global: two papers naming the same
experiment mean the same model, trained once (`all_experiments` checks their definitions agree).
The Snakefile expands its targets from here, the training rule resolves a name to a spec, and
the renderers read results back by the same names.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Mapping

PAPERS = ("vmf",)

UNITS = ("word", "bpe", "emb")
OUTPUT_LAYERS = ("softmax", "continuous")


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One model configuration (independent of data set, pair and seed)."""

    source_unit: str  # word | bpe
    target_unit: str  # word | bpe | emb
    output_layer: str  # softmax | continuous
    loss: str  # ce, or a key of workflow_src.model.losses.CONTINUOUS_LOSSES
    loss_params: Mapping[str, float] = dataclasses.field(default_factory=dict)
    negative: str | None = None  # margin losses: a key of workflow_src.model.losses.NEGATIVES
    embeddings: str | None = None  # word2vec | fasttext: the target table (continuous / tied)
    tied: bool = False  # decoder input embeddings = frozen target table through a projection

    def __post_init__(self):
        if self.source_unit not in ("word", "bpe") or self.target_unit not in UNITS:
            raise ValueError(f"unknown units {self.source_unit}->{self.target_unit}")
        if self.output_layer not in OUTPUT_LAYERS:
            raise ValueError(f"unknown output layer {self.output_layer}")
        if (self.output_layer == "continuous") != (self.target_unit == "emb"):
            raise ValueError("continuous output layers predict embeddings (target_unit 'emb'), and only they do")
        if (self.target_unit == "emb" or self.tied) and self.embeddings is None:
            raise ValueError("continuous or tied models need target embeddings")


@dataclasses.dataclass(frozen=True)
class Column:
    """One column of test scores: a metric on the test set of one pair of one data set."""

    dataset: str
    pair: str
    metric: str = "bleu"
    header: str = ""

    @property
    def name(self) -> str:
        return self.header or self.pair


@dataclasses.dataclass(frozen=True)
class Row:
    experiment: str
    paper: Mapping[str, float]  # column name -> the number the paper reports
    label: Mapping[str, str]  # the row's descriptive columns, as the paper prints them
    note: str = ""
    search: str = "greedy"  # greedy, or beam<K>


@dataclasses.dataclass(frozen=True)
class Job:
    """One trained model."""

    dataset: str
    pair: str
    experiment: str
    seed: int


@dataclasses.dataclass(frozen=True)
class Context:
    """What an artefact needs to know of the configuration: seeds, configured pairs, its rows."""

    seeds: tuple[int, ...]
    pairs: Mapping[str, tuple[str, ...]]  # configured data set -> its pairs
    rows: tuple[str, ...] | None = None  # the rows (experiments) selected, None for all

    def status(self, column: Column) -> str:
        """'' when the column's data set and pair are configured, else why the column is empty."""
        if column.dataset not in self.pairs:
            return f"{column.name}: data set {column.dataset} not configured"
        if column.pair not in self.pairs[column.dataset]:
            return f"{column.name}: pair {column.pair} not configured for {column.dataset}"
        return ""

    def jobs(self, column: Column, experiment: str) -> list[Job]:
        if self.status(column):
            return []
        return [Job(column.dataset, column.pair, experiment, seed) for seed in self.seeds]

    def system_jobs(self, column: Column, system: "System") -> list[Job]:
        return self.jobs(column, system.experiment_for(column))


@dataclasses.dataclass(frozen=True)
class System:
    """A model as an analysis names it (the paper's column header) and the experiment behind it,
    which may differ by data set (the vMF paper's WMT models read BPE sources)."""

    name: str
    experiment: str
    per_dataset: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def experiment_for(self, column: Column) -> str:
        return self.per_dataset.get(column.dataset, self.experiment)


@dataclasses.dataclass(frozen=True)
class ScoreTable:
    """Test scores: one row per experiment, one column per (data set, pair, metric)."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    label_columns: tuple[str, ...]

    def row_experiments(self) -> list[str]:
        return [row.experiment for row in self.rows]


@dataclasses.dataclass(frozen=True)
class ConvergenceTable:
    """Training time until the best development score, per pair (rows) and system (columns)."""

    title: str
    columns: tuple[Column, ...]  # one table row per data set and pair
    systems: tuple[System, ...]
    paper_hours: Mapping[str, Mapping[str, float]]  # column name -> system name -> hours


@dataclasses.dataclass(frozen=True)
class RareWordTable:
    """Unigram F1 of test words binned by their training frequency, per system, on one pair."""

    title: str
    column: Column
    systems: tuple[System, ...]
    bins: tuple[tuple[int, int | None], ...]  # inclusive bounds; None: no upper bound
    paper: Mapping[str, Mapping[str, float]]  # bin label -> system name -> F1


@dataclasses.dataclass(frozen=True)
class ExampleTable:
    """One test sentence translated by every system."""

    title: str
    column: Column
    systems: tuple[System, ...]
    min_length: int = 10  # the first test sentence at least this long (in tokens) is shown


@dataclasses.dataclass(frozen=True)
class LearningCurves:
    """A figure panel: development BLEU against epoch, one line per system (mean and spread)."""

    title: str
    column: Column
    systems: tuple[System, ...]


@dataclasses.dataclass(frozen=True)
class Throughput:
    """A figure panel: training samples per second against batch size (a benchmark)."""

    title: str
    systems: tuple[System, ...]


@dataclasses.dataclass(frozen=True)
class Figure:
    title: str
    panels: tuple[LearningCurves | Throughput, ...]


@dataclasses.dataclass(frozen=True)
class ParameterTable:
    """Parameters of the input and output layers, and training time per batch, of each row's
    model at the paper's size, as ratios to the first row (a benchmark)."""

    title: str
    rows: tuple[Row, ...]  # paper: {"input": params, "output": params, "ms": time per batch}
    label_columns: tuple[str, ...]


def paper_module(paper: str):
    if paper not in PAPERS:
        raise KeyError(f"unknown paper {paper!r}; known: {', '.join(PAPERS)}")
    return importlib.import_module(f"workflow_src.papers.{paper}")


def all_experiments() -> dict[str, Experiment]:
    merged: dict[str, Experiment] = {}
    for paper in PAPERS:
        for name, experiment in paper_module(paper).EXPERIMENTS.items():
            if name in merged and merged[name] != experiment:
                raise ValueError(f"experiment {name!r} is defined differently by two papers")
            merged[name] = experiment
    return merged


def artefact(paper: str, artefact_id: str):
    artefacts = paper_module(paper).ARTEFACTS
    if artefact_id not in artefacts:
        raise KeyError(f"paper {paper} has no {artefact_id}; it has {', '.join(artefacts)}")
    return artefacts[artefact_id]
