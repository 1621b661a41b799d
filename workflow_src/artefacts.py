"""What a paper's tables and figures are, as data: their columns, rows and panels, the jobs
behind a cell, and the configuration an artefact is rendered in (`Context`).

A paper module (`workflow_src/papers/<id>.py`) lists these in `ARTEFACTS` (id -> a table or
figure); the models its rows name are the registry's (`workflow_src/registry.py`).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from workflow_src.registry import variant


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
    # chosen on the development set: a loss parameter, from the configured grid, or (a tuple) one
    # of these experiments (the joint paper's d_j)
    tune: str | tuple[str, ...] | None = None
    paper_printed: Mapping[str, str] = dataclasses.field(default_factory=dict)  # column -> the cell as printed
    baseline: str | None = None  # the row (experiment) its difference and significance are against


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
    # tuned parameter -> values, or data set -> values (the tying paper's γ ranges per corpus)
    grid: Mapping[str, tuple[float, ...] | Mapping[str, tuple[float, ...]]] = dataclasses.field(default_factory=dict)
    corpora: tuple[str, ...] = ()  # configured language-modelling data sets
    sweeps: Mapping[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)  # swept parameter -> values
    queries: tuple[str, ...] | None = None  # the words a representation table asks about, if configured
    seeds_by_dataset: Mapping[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)  # else `seeds`
    synthetic: bool = False  # the demo's data: ours and the paper's numbers measure different data

    def dataset_seeds(self, dataset: str) -> tuple[int, ...]:
        return tuple(self.seeds_by_dataset.get(dataset, self.seeds))

    def sweep(self, panel: "SubspaceSweep") -> list[tuple[float, str]]:
        """(value, language model) at each point of a sweep: the configured values of its
        parameter (the artefact's `sweep`), else the panel's own."""
        return [
            (value, variant(panel.model, panel.parameter, value))
            for value in self.sweeps.get(panel.parameter, panel.values)
        ]

    def corpus_status(self, corpus: "Corpus") -> str:
        """'' when the corpus (or the data set it partitions) is configured, else why it is empty."""
        return "" if corpus.base in self.corpora else f"{corpus.name}: data set {corpus.base} not configured"

    def lm_jobs(self, corpus: "Corpus", experiment: str) -> list[Job]:
        return (
            []
            if self.corpus_status(corpus)
            else [Job(corpus.dataset, "lm", experiment, seed) for seed in self.dataset_seeds(corpus.base)]
        )

    def lm_row_jobs(self, corpus: "Corpus", experiment: str, tune: str | None) -> list[Job]:
        """Every job behind a language model's cell: each seed of each of its candidates (none
        when its corpus is not configured, whose tuning grid then need not be either)."""
        if self.corpus_status(corpus):
            return []
        return [
            job
            for candidate in self.candidates(experiment, tune, corpus.base)
            for job in self.lm_jobs(corpus, candidate)
        ]

    def candidates(self, experiment: str, tune: str | tuple[str, ...] | None, dataset: str | None = None) -> list[str]:
        """The experiments a row chooses among on the development set: itself, the experiments
        `tune` lists, or one variant per configured value of its tuned parameter (per data set,
        where the grid is configured per data set)."""
        if tune is None:
            return [experiment]
        if isinstance(tune, tuple):
            return list(tune)
        if tune not in self.grid:
            raise ValueError(f"{experiment} is tuned over {tune!r}: configure its values (tune: {{{tune}: [...]}})")
        values = self.grid[tune]
        if isinstance(values, Mapping):
            if dataset not in values:
                raise ValueError(
                    f"{experiment} is tuned over {tune!r} per data set: configure its values for "
                    f"{dataset} (tune: {{{tune}: {{{dataset}: [...]}}}})"
                )
            values = values[dataset]
        return [variant(experiment, tune, value) for value in values]

    def status(self, column: Column) -> str:
        """'' when the column's data set and pair are configured, else why the column is empty."""
        if column.dataset not in self.pairs:
            return f"{column.name}: data set {column.dataset} not configured"
        if column.pair not in self.pairs[column.dataset]:
            return (
                f"{column.name}: pair {column.pair} not configured for {column.dataset} "
                "(datasets, or this artefact's pairs)"
            )
        return ""

    def jobs(self, column: Column, experiment: str) -> list[Job]:
        if self.status(column):
            return []
        return [Job(column.dataset, column.pair, experiment, seed) for seed in self.dataset_seeds(column.dataset)]

    def row_jobs(self, column: Column, experiment: str, tune: str | tuple[str, ...] | None) -> list[Job]:
        """Every job behind a row: each seed of each of its candidates."""
        return [
            job
            for candidate in self.candidates(experiment, tune, column.dataset)
            for job in self.jobs(column, candidate)
        ]

    def system_jobs(self, column: Column, system: "System") -> list[Job]:
        return self.row_jobs(column, system.experiment_for(column), system.tune)


@dataclasses.dataclass(frozen=True)
class System:
    """A model as an analysis names it (the paper's column header) and the experiment behind it,
    which may differ by data set (the vMF paper's WMT models read BPE sources)."""

    name: str
    experiment: str
    per_dataset: Mapping[str, str] = dataclasses.field(default_factory=dict)
    tune: str | tuple[str, ...] | None = None  # as Row.tune

    def experiment_for(self, column: Column) -> str:
        return self.per_dataset.get(column.dataset, self.experiment)


@dataclasses.dataclass(frozen=True)
class ScoreTable:
    """Test scores: one row per experiment, one column per (data set, pair, metric)."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    label_columns: tuple[str, ...]
    spread: bool = False  # also the standard deviation over seeds
    # (mark, baseline experiment): a row's mean is marked when it beats the baseline's by a paired
    # bootstrap over the test sentences with p < 0.05 (`workflow_src.score.significance`)
    significance: tuple[tuple[str, str], ...] = ()
    # (p, mark), strictest first: a row is marked when it differs from its `baseline` row, better
    # or worse, with p below the level (the joint paper's *, †, ‡ at .05, .01, .001)
    significance_levels: tuple[tuple[float, str], ...] = ()
    parameters: bool = False  # also |Θ|, the trainable parameters of each row's model (`parameter_column`)

    def row_experiments(self) -> list[str]:
        return [row.experiment for row in self.rows]


BEST_BLEU_EPOCH = "epoch of the best development BLEU"  # a ConvergenceTable's claims column, after "<system> "


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
class NeighbourTable:
    """Teacher-forced predictions on one pair's test set, per system: cosine similarity of the
    predicted embeddings to their nearest neighbour (correct and wrong predictions) and to the
    target (wrong ones), and accuracy@k (`workflow_src.score.neighbours`)."""

    title: str
    column: Column
    systems: tuple[System, ...]
    paper: Mapping[str, Mapping[str, float]]  # statistic -> system name -> value


@dataclasses.dataclass(frozen=True)
class ExampleTable:
    """One test sentence translated by every system: the paper's own example when the test set
    holds it (found by `workflow_src.report.analysis.same_text`), else the first test sentence of at
    least `min_length` tokens."""

    title: str
    column: Column
    systems: tuple[System, ...]
    min_length: int = 10
    paper: Mapping[str, str] = dataclasses.field(
        default_factory=dict
    )  # "Input", "Reference", system name -> as printed


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
class ScoreAgainst:
    """A figure panel: a system's test score (mean over seeds) against a setting of its model (an
    experiment per point), with other systems' scores as horizontal lines."""

    title: str
    column: Column
    xlabel: str
    points: tuple[tuple[float, str], ...]  # (x, experiment)
    name: str  # the swept system's
    baselines: tuple[System, ...] = ()
    search: str = "greedy"  # the decoding scored, as Row.search


@dataclasses.dataclass(frozen=True)
class MeteorByFrequency:
    """A figure panel: each system's test METEOR once per bin of the output vocabulary by training
    frequency (thirds: high, medium, low), with the bin's units as Meteor's function words and
    delta 0, so that only they count in precision and recall (`workflow_src.score.meteor.binned_meteor`)."""

    title: str
    column: Column
    systems: tuple[System, ...]
    parameters: Mapping[str, tuple[float, float, float, float]]  # target language -> alpha, beta, gamma, delta
    bins: tuple[str, ...] = ("high", "medium", "low")
    search: str = "greedy"


@dataclasses.dataclass(frozen=True)
class Figure:
    title: str
    panels: tuple  # LearningCurves | Throughput | PerplexityCurves | SubspaceSweep | ScoreAgainst | MeteorByFrequency

    @property
    def unit_evidence(self) -> bool:
        """Whether its claims resample units (test sentences: METEOR's by frequency bin, BLEU's of a score
        against a setting) from `<figure>.evidence.json` rather than compare the values of its CSV."""
        return any(isinstance(panel, (MeteorByFrequency, ScoreAgainst)) for panel in self.panels)


LAYER_PARAMETERS = "input and output layer parameters"  # a ParameterTable's claims column: the two layers' sum
DECODING_MS = "decoding ms per batch"  # a ParameterTable's column the paper does not print (§5 says "similar time")
# a ParameterTable's timings: (the benchmark's key, with `_sd` and `_repeats` beside it; the table's column)
PARAMETER_TABLE_TIMINGS = (("ms", "ms per batch"), ("decode_ms", DECODING_MS))


def parameter_column(column: str) -> str:
    """A score table's |Θ| beside `column` (a Column's name): a row's paper key, and its claims column."""
    return f"{column} |Θ|"


@dataclasses.dataclass(frozen=True)
class ParameterTable:
    """Parameters of the input and output layers of each row's model as trained on `column` (seed
    1 of the artefact's seeds), and training time per batch at the paper's size (a benchmark), as
    ratios to the first row."""

    title: str
    rows: tuple[Row, ...]  # paper: {"input": params, "output": params, "ms": time per batch}
    label_columns: tuple[str, ...]
    column: Column  # the trained models whose layers are counted


@dataclasses.dataclass(frozen=True)
class RepresentationTable:
    """The `top` pieces nearest by cosine to each query among the input (E) or output (g_out(E))
    representations of models trained on `column`'s pair (`workflow_src.score.representations`)."""

    title: str
    column: Column
    sides: tuple[tuple[str, str, str], ...]  # (header, experiment, input | output)
    queries: tuple[str, ...]  # the default queries; an artefact's config `queries` replaces them
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)  # query -> as the paper labels it
    paper: Mapping[str, Mapping[str, tuple[str, ...]]] = dataclasses.field(
        default_factory=dict
    )  # query -> header -> words
    top: int = 5


@dataclasses.dataclass(frozen=True)
class SamplingTable:
    """Target tokens per second in training with each sampled share of a large vocabulary, per
    row's model (a benchmark), beside the paper's and as ratios to the first row."""

    title: str
    rows: tuple[Row, ...]  # paper: {"<share>": tokens per second}, share as in `shares`
    label_columns: tuple[str, ...]
    shares: tuple[float, ...]


@dataclasses.dataclass(frozen=True)
class Corpus:
    """A column of language-modelling results: one corpus (`datasets` key, or a partition of
    one: `<dataset>part<k>`, the k-th of `parts` equal line ranges of its training text)."""

    dataset: str
    header: str

    @property
    def name(self) -> str:
        return self.header

    @property
    def base(self) -> str:
        return self.dataset.split("part")[0]


@dataclasses.dataclass(frozen=True)
class PerplexityTable:
    """Validation and test perplexity per language model (rows) and corpus (columns). A row
    without an experiment is another paper's result, shown as the paper reports it; a cell is
    computed where the paper reports one."""

    title: str
    columns: tuple[Corpus, ...]
    rows: tuple[Row, ...]  # paper: {"<corpus> valid": ppl, "<corpus> test": ppl}
    label_columns: tuple[str, ...]

    def row_experiments(self) -> list[str]:
        return [row.experiment for row in self.rows]


@dataclasses.dataclass(frozen=True)
class PerplexityCurves:
    """A figure panel: validation perplexity against epoch, one line per language model."""

    title: str
    corpus: Corpus
    systems: tuple[System, ...]


@dataclasses.dataclass(frozen=True)
class SubspaceSweep:
    """A figure panel: d(L^T, W) (appendix B) of a language model against one of its loss
    parameters; the mean over seeds and its spread."""

    title: str
    corpus: Corpus
    model: str  # the language model whose `parameter` is swept
    parameter: str  # beta | tau
    values: tuple[float, ...]  # the default points; an artefact's config `sweep` overrides them
    paper: str = ""  # what the paper says of its curve


@dataclasses.dataclass(frozen=True)
class NextWordTable:
    """The top next-word predictions of language models (columns) after phrases of a corpus
    (rows), with the probability of the word that actually follows."""

    title: str
    corpus: Corpus
    systems: tuple[System, ...]
    phrases: tuple[tuple[str, str], ...]  # (phrase, the words that follow it)
    paper: Mapping[str, Mapping[str, str]]  # phrase -> system name -> the paper's predictions as printed
    top: int = 10
    # the split of the corpus whose text each phrase is read in (`workflow_src.decode.lm_predict --context`),
    # or None: from a sentence start
    context: str | None = "test"
    # words whose mean probability where another word comes next in that text each model reports
    # (`lm_predict --mean-probability-of`), the evidence (kind "probability") of the table's column "p(<word>)"
    mean_probability_of: tuple[str, ...] = ()


def mean_probability_column(word: str) -> str:
    """A `NextWordTable`'s evidence column of the mean probability of `word`: "p(<unk>)"."""
    return f"p({word})"
