"""Where every artefact lives, and what each table needs: shared by the Snakefile and the tools.

resources/<source key>                              downloads (config `sources`)
results/data/<dataset>/<pair>/raw/<split>.<lang>    extracted text
results/data/<dataset>/<pair>/tok/<split>.<lang>    tokenized, truecased, cleaned
results/data/<dataset>/<pair>/vocab/<lang>.tsv      training word counts
results/data/<dataset>/<pair>/bpe<K>/...            sentencepiece BPE model and encoded text
results/data/<dataset>/<pair>/emb/<kind>.vec        the target table of continuous models
results/embeddings/<lang>/<kind>.vec                target embeddings
results/align/<dataset>/<pair>/dict.tsv             bilingual dictionary
results/models/<dataset>/<pair>/<experiment>/seed<N>/   model, metrics, decodes, scores
results/data/<corpus>/{train,valid,test}.txt        language-modelling text (and <corpus>part<k>/)
results/lm/<corpus>/<language model>/seed<N>/       model, metrics, perplexity.json, next words
results/benchmarks/<paper>/<artefact>.json          benchmark measurements
results/<paper>/<table>.{csv,md,html}, <figure>.{png,pdf}   rendered tables and figures
"""

from __future__ import annotations

import dataclasses
import functools
import re

from workflow_src.artefacts import (
    Column,
    Context,
    ConvergenceTable,
    Corpus,
    ExampleTable,
    Figure,
    Job,
    MeteorByFrequency,
    NeighbourTable,
    NextWordTable,
    ParameterTable,
    PerplexityCurves,
    PerplexityTable,
    RareWordTable,
    RepresentationTable,
    Row,
    SamplingTable,
    ScoreAgainst,
    ScoreTable,
    SubspaceSweep,
    Throughput,
)
from workflow_src.registry import Experiment, all_experiments, artefact, experiment as registry_experiment, paper_module
from workflow_src.specs import LengthLimit, ModelShape, TrainSettings, TrainSpec, VocabSizes, document
from workflow_src.step_mode import compile_setting, length_buckets

RESULTS = "results"


def data_dir(dataset: str, pair: str) -> str:
    return f"{RESULTS}/data/{dataset}/{pair}"


def model_dir(dataset: str, pair: str, experiment: str, seed: int | str) -> str:
    return f"{RESULTS}/models/{dataset}/{pair}/{experiment}/seed{seed}"


def hypothesis_path(
    dataset: str, pair: str, experiment: str, seed: int | str, search: str = "greedy", tokenized: bool = False
) -> str:
    return f"{model_dir(dataset, pair, experiment, seed)}/test.{search}.hyp{'.tok' if tokenized else ''}"


def score_path(
    dataset: str, pair: str, experiment: str, seed: int | str, search: str = "greedy", metric: str = "bleu"
) -> str:
    return f"{model_dir(dataset, pair, experiment, seed)}/test.{search}.{metric}.json"


def bpe_merges(config: dict, dataset: str, side: str, bpe: str | None = None) -> int:
    """The merges of one side's BPE: the data set's `bpe_sizes[bpe]` for both sides, or its
    `bpe_merges[side]`."""
    d = config["datasets"][dataset]
    if bpe is None:
        return d["bpe_merges"][side]
    if bpe not in d.get("bpe_sizes", {}):
        raise ValueError(f"datasets.{dataset}.bpe_sizes: no BPE vocabulary {bpe!r} configured")
    return d["bpe_sizes"][bpe]


def swapped(entry: dict) -> dict:
    """A training corpus entry read the other way round."""
    if "delimited" in entry:
        return {**entry, "source_column": entry["target_column"], "target_column": entry["source_column"]}
    return {**entry, "source": entry["target"], "target": entry["source"]}


def training_pair(config: dict, dataset: str, pair: str) -> str:
    """The direction whose folder holds a pair's training text, vocabularies and BPE models: the
    first of the pair and its reverse in `pairs` when both read the same training members the
    other way round (WMT17 en-de and de-en), so that they are extracted, tokenized, truecased
    and segmented once; else the pair itself (IWSLT's directions have archives of their own)."""
    d = config["datasets"][dataset]
    reverse = "-".join(reversed(pair.split("-")))
    sources = d.get("sources", {})
    if d.get("kind") != "wmt" or reverse not in d.get("pairs", ()) or pair not in sources or reverse not in sources:
        return pair
    if [swapped(e) for e in sources[pair]["train"]] != sources[reverse]["train"]:
        return pair
    return next(p for p in d["pairs"] if p in (pair, reverse))


def unit_files(dataset: str, pair: str, unit: str, side: str, config: dict, bpe: str | None = None) -> dict[str, str]:
    """The token files and vocabulary a model reads for one side ('src' or 'tgt') in one unit:
    its training text, vocabulary and BPE model from the corpus's `training_pair`, its
    evaluation sets from its own direction."""
    base, corpus = data_dir(dataset, pair), data_dir(dataset, training_pair(config, dataset, pair))
    lang = pair.split("-")[0 if side == "src" else 1]
    if unit == "bpe":
        folder = f"bpe{bpe_merges(config, dataset, side, bpe)}"
        return {
            "train": f"{corpus}/{folder}/train.{lang}",
            "dev": f"{base}/{folder}/dev.{lang}",
            "test": f"{base}/{folder}/test.{lang}",
            "vocab": f"{corpus}/{folder}/vocab.{lang}.tsv",
            "model": f"{corpus}/{folder}/{lang}.model",
        }
    return {
        "train": f"{corpus}/tok/train.{lang}",
        "dev": f"{base}/tok/dev.{lang}",
        "test": f"{base}/tok/test.{lang}",
        "vocab": f"{corpus}/vocab/{lang}.tsv",
    }


def corpus_bpe_file(config: dict, dataset: str, pair: str, merges: int | str, name: str) -> str:
    """A file of the BPE with `merges` learnt on the pair's corpus: `<lang>.model`, `vocab.<lang>.tsv`."""
    return f"{data_dir(dataset, training_pair(config, dataset, pair))}/bpe{merges}/{name}"


def parallel_stats_paths(config: dict, dataset: str, pair: str) -> list[str]:
    """The cleaning counts of a pair's train, dev and test splits (train: its corpus's)."""

    def pair_of(split: str) -> str:
        return training_pair(config, dataset, pair) if split == "train" else pair

    return [f"{data_dir(dataset, pair_of(split))}/tok/stats.{split}.json" for split in ("train", "dev", "test")]


def requested_spec_path(folder: str) -> str:
    """The spec a config asks of a training (model folder `folder`), written by a job of its own before
    the training reads it: a changed spec reruns that job, and so the training, however Snakemake
    treats the jobs between (docs/architecture.md, "A changed config reruns what it changes")."""
    return f"{folder}/spec.requested.json"


def metrics_path(job: Job) -> str:
    return f"{model_dir(job.dataset, job.pair, job.experiment, job.seed)}/metrics.jsonl"


def neighbours_path(job: Job) -> str:
    return f"{model_dir(job.dataset, job.pair, job.experiment, job.seed)}/test.neighbours.json"


def representations_path(job: Job, paper: str, artefact_id: str) -> str:
    """A softmax model's nearest pieces to the queries of one artefact."""
    return f"{model_dir(job.dataset, job.pair, job.experiment, job.seed)}/{paper}-{artefact_id}.representations.json"


def meteor_bins_path(job: Job, paper: str, artefact_id: str, search: str) -> str:
    """A model's METEOR by output-frequency bin with one artefact's parameters."""
    return (
        f"{model_dir(job.dataset, job.pair, job.experiment, job.seed)}/{paper}-{artefact_id}.{search}.meteor_bins.json"
    )


def lm_dir(job: Job) -> str:
    """A language model's folder: model.pt, metrics.jsonl, perplexity.json."""
    return f"{RESULTS}/lm/{job.dataset}/{job.experiment}/seed{job.seed}"


def next_words_path(job: Job, paper: str, artefact_id: str) -> str:
    """A language model's predictions after the phrases of one artefact."""
    return f"{lm_dir(job)}/{paper}-{artefact_id}.next_words.json"


def mean_probability_path(job: Job, paper: str, artefact_id: str) -> str:
    """A language model's per-block sums of the probability of an artefact's `mean_probability_of` words."""
    return f"{lm_dir(job)}/{paper}-{artefact_id}.mean_probability.json"


def lm_data_dir(dataset: str) -> str:
    return f"{RESULTS}/data/{dataset}"


def benchmark_path(paper: str, artefact_id: str) -> str:
    return f"{RESULTS}/benchmarks/{paper}/{artefact_id}.json"


def configured_artefacts(config: dict) -> list[tuple[str, str]]:
    return [(paper, artefact_id) for paper, artefacts in config["papers"].items() for artefact_id in artefacts]


def timed_training_jobs(config: dict) -> frozenset[Job]:
    """The training jobs whose training time a configured artefact reports (convergence tables):
    each holds a whole device (rules/common.smk), so that its time is its own."""
    jobs = set()
    for paper, artefact_id in configured_artefacts(config):
        table = artefact(paper, artefact_id)
        if isinstance(table, ConvergenceTable):
            ctx = context(config, paper, artefact_id)
            jobs |= {
                job for column in table.columns for system in table.systems for job in ctx.system_jobs(column, system)
            }
    return frozenset(jobs)


# A file of a translation model's folder (`model_dir`): dataset, pair, experiment, seed, file name;
# of a language model's (`lm_dir`): dataset, experiment, seed, file name.
MODEL_FILE = re.compile(rf"^{RESULTS}/models/([^/]+)/([^/]+)/([^/]+)/seed(\d+)/([^/]+)$")
LM_FILE = re.compile(rf"^{RESULTS}/lm/([^/]+)/([^/]+)/seed(\d+)/([^/]+)$")


def trained_job(path: str) -> tuple[Job, str] | None:
    """The model whose folder holds the file `path` (a language model's pair is "lm"), and the
    file's name; None for a path outside every model's folder."""
    if m := MODEL_FILE.match(path):
        return Job(m[1], m[2], m[3], int(m[4])), m[5]
    if m := LM_FILE.match(path):
        return Job(m[1], "lm", m[2], int(m[3])), m[4]
    return None


def translation_models(config: dict) -> list[Job]:
    """Every translation model a configured artefact is rendered from, in the artefacts' order."""
    jobs = {}
    for paper, artefact_id in configured_artefacts(config):
        for path in inputs(artefact(paper, artefact_id), context(config, paper, artefact_id), paper, artefact_id):
            if (found := trained_job(path)) and found[0].pair != "lm":
                jobs.setdefault(found[0], None)
    return list(jobs)


def selection_problem(paper: str, artefact_id: str, settings: dict) -> str | None:
    """What is wrong with an artefact the `papers` block names (`settings`: its block), in one
    line from its key; None when its paper has it and it has every row `rows` selects."""
    known_ids = paper_module(paper).ARTEFACTS
    if artefact_id not in known_ids:
        return f"papers.{paper}.{artefact_id}: {paper} has no {artefact_id}; it has {', '.join(known_ids)}"
    rows = (settings or {}).get("rows", "all")
    known = [row.experiment for row in getattr(known_ids[artefact_id], "rows", ())]
    unknown = sorted(set(rows) - set(known)) if rows != "all" else []
    if unknown:
        return (
            f"papers.{paper}.{artefact_id}.rows: {', '.join(unknown)} not rows of {paper} {artefact_id} "
            f"(rows: {', '.join(known) or 'it has none to choose'})"
        )
    return None


def context(config: dict, paper: str, artefact_id: str) -> Context:
    """The configuration as one artefact sees it: seeds, configured pairs, selected rows."""
    if problem := selection_problem(paper, artefact_id, config["papers"][paper][artefact_id]):
        raise ValueError(problem)
    rows = config["papers"][paper][artefact_id].get("rows", "all")
    settings = config["papers"][paper][artefact_id]
    seeds = settings.get("seeds", config["train"]["seeds"])
    return Context(
        seeds=tuple(config["train"]["seeds"] if isinstance(seeds, dict) else seeds),
        seeds_by_dataset={dataset: tuple(values) for dataset, values in seeds.items()}
        if isinstance(seeds, dict)
        else {},
        pairs={
            name: tuple(pair for pair in d["pairs"] if pair in settings.get("pairs", {}).get(name, d["pairs"]))
            for name, d in config["datasets"].items()
            if "pairs" in d
        },
        rows=None if rows == "all" else tuple(rows),
        grid={
            name: {dataset: tuple(v) for dataset, v in values.items()} if isinstance(values, dict) else tuple(values)
            for name, values in settings.get("tune", {}).items()
        },
        corpora=tuple(name for name, d in config["datasets"].items() if d["kind"] == "lm"),
        sweeps={name: tuple(values) for name, values in settings.get("sweep", {}).items()},
        queries=tuple(settings["queries"]) if "queries" in settings else None,
        synthetic="demo" in config,
    )


def selected_rows(ctx: Context, table) -> list[Row]:
    return [row for row in table.rows if ctx.rows is None or row.experiment in ctx.rows]


def references_path(column: Column) -> str:
    """The test references a BLEU column is scored against: tokenized text for `bleu_tok`, raw otherwise."""
    tokenized = column.metric == "bleu_tok"
    return f"{data_dir(column.dataset, column.pair)}/{'tok' if tokenized else 'raw'}/test.{column.pair.split('-')[1]}"


def scored_sentence_files(column: Column, jobs: list[Job], search: str) -> list[str]:
    """The test sentences a BLEU column's evidence resamples: each job's `search` output (tokenized for
    `bleu_tok`) and the references; none without jobs."""
    tokenized = column.metric == "bleu_tok"
    hypotheses = [hypothesis_path(j.dataset, j.pair, j.experiment, j.seed, search, tokenized) for j in jobs]
    return hypotheses + [references_path(column)] if jobs else []


@functools.singledispatch
def inputs(table, ctx: Context, paper: str, artefact_id: str) -> list[str]:
    """Every file an artefact is rendered from."""
    raise TypeError(f"{paper} {artefact_id}: no inputs defined for {type(table).__name__}")


@inputs.register
def _(table: ScoreTable, ctx, paper, artefact_id):
    files = []
    for row in selected_rows(ctx, table):
        for column in table.columns:
            jobs = ctx.row_jobs(column, row.experiment, row.tune)
            files += [score_path(j.dataset, j.pair, j.experiment, j.seed, row.search, column.metric) for j in jobs]
            if row.tune or table.parameters:  # the development scores that choose among the candidates, |Θ|
                files += [metrics_path(j) for j in jobs]
            files += scored_sentence_files(column, jobs, row.search)  # the significance marks and claims resample them
    return files


@inputs.register
def _(table: ConvergenceTable, ctx, paper, artefact_id):
    return [metrics_path(j) for column in table.columns for s in table.systems for j in ctx.system_jobs(column, s)]


@inputs.register
def _(table: RareWordTable, ctx, paper, artefact_id):
    column = table.column
    if ctx.status(column):
        return []
    tgt = column.pair.split("-")[1]
    data = data_dir(column.dataset, column.pair)
    return [f"{data}/tok/test.{tgt}", f"{data}/vocab/{tgt}.tsv"] + [
        hypothesis_path(j.dataset, j.pair, j.experiment, j.seed, tokenized=True)
        for s in table.systems
        for j in ctx.system_jobs(column, s)
    ]


@inputs.register
def _(table: NeighbourTable, ctx, paper, artefact_id):
    files = []
    for system in table.systems:
        jobs = ctx.system_jobs(table.column, system)
        files += [neighbours_path(j) for j in jobs] + ([metrics_path(j) for j in jobs] if system.tune else [])
    return files


@inputs.register
def _(table: RepresentationTable, ctx, paper, artefact_id):
    return [
        representations_path(j, paper, artefact_id)
        for _, experiment, _ in table.sides
        for j in ctx.jobs(table.column, experiment)[:1]
    ]


def computed_cells(table: PerplexityTable, ctx: Context) -> list[tuple[Row, Corpus, list[Job]]]:
    """(row, corpus, its jobs: every seed of every candidate of a tuned row) of every cell we
    compute: rows with an experiment, where the paper reports a number."""
    return [
        (row, corpus, ctx.lm_row_jobs(corpus, row.experiment, row.tune))
        for row in selected_rows(ctx, table)
        if row.experiment
        for corpus in table.columns
        if any(key.startswith(f"{corpus.name} ") for key in row.paper)
    ]


@inputs.register
def _(table: PerplexityTable, ctx, paper, artefact_id):
    return [f"{lm_dir(j)}/perplexity.json" for _, _, jobs in computed_cells(table, ctx) for j in jobs]


@inputs.register
def _(table: NextWordTable, ctx, paper, artefact_id):
    jobs = [j for s in table.systems for j in ctx.lm_row_jobs(table.corpus, s.experiment, s.tune)]
    probabilities = [mean_probability_path(j, paper, artefact_id) for j in jobs if table.mean_probability_of]
    return (
        [next_words_path(j, paper, artefact_id) for j in jobs]
        + probabilities
        + [f"{lm_dir(j)}/perplexity.json" for j in jobs]
    )


@inputs.register
def _(table: ExampleTable, ctx, paper, artefact_id):
    column = table.column
    if ctx.status(column):
        return []
    src, tgt = column.pair.split("-")
    data = data_dir(column.dataset, column.pair)
    return [f"{data}/raw/test.{src}", f"{data}/raw/test.{tgt}", f"{data}/tok/test.{src}"] + [
        hypothesis_path(j.dataset, j.pair, j.experiment, j.seed)
        for s in table.systems
        for j in ctx.system_jobs(column, s)
    ]


@inputs.register
def _(figure: Figure, ctx, paper, artefact_id):
    files = []
    for panel in figure.panels:
        if isinstance(panel, Throughput):
            files.append(benchmark_path(paper, artefact_id))
        elif isinstance(panel, PerplexityCurves):
            jobs = [j for s in panel.systems for j in ctx.lm_row_jobs(panel.corpus, s.experiment, s.tune)]
            files += [f"{lm_dir(j)}/{name}" for j in jobs for name in ("metrics.jsonl", "perplexity.json")]
        elif isinstance(panel, ScoreAgainst):
            experiments = [e for _, e in panel.points] + [s.experiment for s in panel.baselines]
            jobs = [j for e in experiments for j in ctx.jobs(panel.column, e)]
            files += [
                score_path(j.dataset, j.pair, j.experiment, j.seed, panel.search, panel.column.metric) for j in jobs
            ]
            files += [metrics_path(j) for j in jobs]  # whether each had plateaued, which its evidence says
            files += scored_sentence_files(panel.column, jobs, panel.search)  # the claims resample them
        elif isinstance(panel, SubspaceSweep):
            files += [
                f"{lm_dir(j)}/perplexity.json" for _, name in ctx.sweep(panel) for j in ctx.lm_jobs(panel.corpus, name)
            ]
        elif isinstance(panel, MeteorByFrequency):
            for system in panel.systems:
                jobs = ctx.system_jobs(panel.column, system)
                files += [meteor_bins_path(j, paper, artefact_id, panel.search) for j in jobs]
                files += [metrics_path(j) for j in jobs] if system.tune else []
        else:
            files += [metrics_path(j) for s in panel.systems for j in ctx.system_jobs(panel.column, s)]
    return files


@inputs.register(ParameterTable)
def _(table, ctx, paper, artefact_id):
    return [benchmark_path(paper, artefact_id)] + [
        metrics_path(j) for row in table.rows for j in ctx.jobs(table.column, row.experiment)[:1]
    ]


@inputs.register(SamplingTable)
def _(table, ctx, paper, artefact_id):
    return [benchmark_path(paper, artefact_id)]


def model_settings(config: dict, experiment: Experiment) -> dict:
    """Config `model`, changed by the experiment's architecture (config `architectures`) and depth."""
    settings = dict(config["model"])
    if experiment.architecture is not None:
        if experiment.architecture not in config.get("architectures", {}):
            raise ValueError(
                f"architectures: no {experiment.architecture!r} configured (experiments of the "
                f"joint paper use it; config.yaml has one to copy)"
            )
        settings |= config["architectures"][experiment.architecture]
    if experiment.layers is not None:
        settings |= {"encoder_layers": experiment.layers, "decoder_layers": experiment.layers}
    return settings


def vocab_sizes(data: dict, experiment: Experiment) -> dict:
    """Each side's vocabulary cap: the configured word vocabulary of a word (or embedding) side;
    none on a BPE side, whose vocabulary is every piece of its encoded training text (the vMF
    paper's 100,000 source merges, the joint paper's |V| of 32K, 64K, 128K)."""
    target_words = "emb_vocab_size" if experiment.target_unit == "emb" else "tgt_vocab_size"
    return {
        "src_size": None if experiment.source_unit == "bpe" else data["src_vocab_size"],
        "tgt_size": None if experiment.target_unit == "bpe" else data[target_words],
    }


MAX_LEN_UNITS = ("word", "piece")


def length_limit(data: dict, dataset: str) -> dict:
    """max_len and what it counts: words at tokenisation (Moses' clean-corpus-n), or the units a
    model reads and writes, BPE pieces included, at training (OpenNMT's -src/-tgt_seq_length)."""
    for key, expected in (("max_len", "the longest training sentence kept"), ("max_len_unit", "word or piece")):
        if key not in data:
            raise ValueError(f"datasets.{dataset}.{key}: missing ({expected})")
    if data["max_len_unit"] not in MAX_LEN_UNITS:
        raise ValueError(f"datasets.{dataset}.max_len_unit: {data['max_len_unit']!r} is not word or piece")
    return {"max_len": data["max_len"], "max_len_unit": data["max_len_unit"]}


def training_group(experiment: Experiment) -> str:
    """The key of config train.lr (and of the settings kept per group) an experiment trains under."""
    return experiment.lr_group or experiment.output_layer


def by_group(train: dict, key: str) -> dict:
    """Config `train.<key>`: training group (a key of train.lr) -> its value; ValueError naming
    the key and any group that is not one."""
    settings = train.get(key, {})
    unknown = sorted(set(settings) - set(train.get("lr", {})))
    if unknown:
        raise ValueError(f"train.{key}: {', '.join(unknown)} not training groups (keys of train.lr)")
    return settings


def batch_size(train: dict, group: str) -> int:
    """Sentences per batch of a training group: its `train.batch_size_by_group` entry, else
    `train.batch_size` (the joint paper's released train.py trains on 96, joint ledger D21)."""
    return by_group(train, "batch_size_by_group").get(group, train["batch_size"])


def schedule(train: dict, name: str) -> dict:
    """max_epochs and patience of experiment `name` (a variant takes its base's): config `train`,
    its training group's `train.max_epochs_by_group`, or what `train.overrides` sets for it."""
    overrides = train.get("overrides", {})
    unknown = sorted(set(overrides) - set(all_experiments()))
    if unknown:
        raise ValueError(f"train.overrides: {', '.join(unknown)} not experiments of any paper")
    max_epochs = by_group(train, "max_epochs_by_group")
    group = training_group(registry_experiment(name))
    return (
        {key: train[key] for key in ("max_epochs", "patience")}
        | ({"max_epochs": max_epochs[group]} if group in max_epochs else {})
        | overrides.get(name.partition("@")[0], {})
    )


def train_spec(config: dict, dataset: str, pair: str, name: str, seed: int) -> TrainSpec:
    """The full training spec of one job: the experiment plus the configured sizes and schedule."""
    experiment: Experiment = registry_experiment(name)
    data = config["datasets"][dataset]
    train = config["train"]
    group = training_group(experiment)
    model = model_settings(config, experiment)
    return TrainSpec(
        experiment=name,
        **{
            **dataclasses.asdict(experiment),
            "loss_params": dict(experiment.loss_params),
            "joint_dim": joint_dim(train, experiment, model["hidden"]),
        },
        tgt_lang=pair.split("-")[1],
        device=train["device"],
        precision=train.get("precision", "auto"),
        compile=compile_setting(train),
        length_buckets=length_buckets(train),
        model=ModelShape(**model),
        vocab=VocabSizes(**vocab_sizes(data, experiment)),
        data=LengthLimit(**length_limit(data, dataset)),
        train=TrainSettings(
            seed=seed,
            lr=train["lr"][group],
            batch_size=batch_size(train, group),
            selection=train["selection"],
            clip=train["clip"],
            init_scale=init_scale(train, experiment, model["hidden"]),
            **schedule(train, name),
            **schedule_settings(train, group),
        ),
    )


def resolve_spec(config: dict, dataset: str, pair: str, name: str, seed: int) -> dict:
    """`train_spec`'s JSON document (`specs.document`): the train rule's --spec, `explain`'s
    print-out and the plan's family key; code that builds or trains a model takes `train_spec`."""
    return document(train_spec(config, dataset, pair, name, seed))


# The decoder widths at which the papers draw every weight from U(-0.1, 0.1): the vMF paper's Table 7
# (1024; the syn-margin paper trains the same models) and the joint paper's §4.2 (512), keyed by
# the experiment's architecture (registry Experiment.architecture).
PAPER_WIDTHS = {None: 1024, "joint": 512}


def init_scale(train: dict, experiment: Experiment, width: int) -> float:
    """s of U(-s, s) for every learned weight: config train.init_scale, or, with
    train.scale_init_to_width, s √(paper width / width). The spread of W h at initialisation
    (about s √width) then stays where it is at the paper's width; at that width s is unchanged.

        s_width = s √(PAPER_WIDTHS[architecture] / width)
    """
    if not train.get("scale_init_to_width", False):
        return train["init_scale"]
    if experiment.architecture not in PAPER_WIDTHS:
        raise ValueError(
            f"train.scale_init_to_width: no paper width known for architecture "
            f"{experiment.architecture!r} (layout.PAPER_WIDTHS)"
        )
    return train["init_scale"] * (PAPER_WIDTHS[experiment.architecture] / width) ** 0.5


def joint_dim(train: dict, experiment: Experiment, width: int) -> int | None:
    """d_j: the experiment's (the paper's, at 512 units), or with train.scale_joint_dim_to_width the
    paper's multiple of the width (joint D23):  d_j,width = d_j · width / PAPER_WIDTHS["joint"]"""
    if experiment.joint_dim is None or not train.get("scale_joint_dim_to_width", False):
        return experiment.joint_dim
    return max(1, round(experiment.joint_dim * width / PAPER_WIDTHS["joint"]))


def schedule_settings(train: dict, group: str) -> dict:
    """A training group's (config train.lr's key) learning-rate decay and loss normalisation:
    config train.lr_decay, train.lr_decay_start, train.lr_decay_on_rise and train.loss_normalisation,
    each keyed by group. A group they leave out keeps its rate constant, starts decaying once its
    development perplexity rises, and averages its loss over target tokens."""
    return {
        "lr_decay": train.get("lr_decay", {}).get(group),
        "lr_decay_start": train.get("lr_decay_start", {}).get(group),
        "lr_decay_on_rise": train.get("lr_decay_on_rise", {}).get(group) is not False,
        "loss_normalisation": train.get("loss_normalisation", {}).get(group, "token"),
    }
