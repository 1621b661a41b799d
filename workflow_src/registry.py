"""The experiment registry: model configurations, and the papers' tables that use them, as data.

A paper module (`workflow_src/papers/<id>.py`) declares `EXPERIMENTS` (name -> Experiment) and
`TABLES` (id -> Table). An experiment name is global: two papers naming the same experiment mean
the same model, trained once (`all_experiments` checks their definitions agree). The Snakefile
expands its targets from here, the training rule resolves a name to a spec, and the renderer
reads scores back by the same names.
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
    loss: str  # a key of workflow_src.model.losses.LOSSES
    loss_params: Mapping[str, float] = dataclasses.field(default_factory=dict)
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
class Row:
    experiment: str
    paper: Mapping[str, float]  # pair (or column) -> the number the paper reports
    label: Mapping[str, str]  # the row's descriptive columns, as the paper prints them


@dataclasses.dataclass(frozen=True)
class Table:
    title: str
    dataset: str
    pairs: tuple[str, ...]
    metric: str
    rows: tuple[Row, ...]
    label_columns: tuple[str, ...]

    def row_experiments(self) -> list[str]:
        return [row.experiment for row in self.rows]


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


def table(paper: str, table_id: str) -> Table:
    tables = paper_module(paper).TABLES
    if table_id not in tables:
        raise KeyError(f"paper {paper} has no {table_id}; it has {', '.join(tables)}")
    return tables[table_id]
