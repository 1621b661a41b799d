"""The evidence behind the analysis tables' numbers (`workflow_src/score/evidence.py`): per seed, or per
timed repeat, the measurements that a claim on the table is decided by. A table type without a
builder here writes no evidence (its claims, if any, say so): examples, representations and
next-word predictions are read, not tested (a next-word table's mean probabilities of words are);
parameter counts are exact (kind `count`).

Each builder reads what its table (`workflow_src/report/analysis.py`) reads, through the same helpers,
so that a cell's replicates give the table's number; a cell whose runs had not plateaued says so
(`still_learning`), and no claim is decided on it:

    table            row                 column                      kind        a replicate
    PerplexityTable  experiment          "<corpus> test|valid"       perplexity  a chosen seed's NLL blocks
    ConvergenceTable pair                "<system> ours"             value       a seed's seconds to convergence
                     pair                "<system> <BEST_BLEU_EPOCH>" value     a seed's epoch of best dev BLEU
    RareWordTable    "training frequency" <system>                   f1          a seed's per-sentence counts
    NeighbourTable   statistic           <system>                    value       a chosen seed's value
    ParameterTable   experiment          "ms per batch"              value       a timed repeat's ms
                     experiment          DECODING_MS                 value       a timed repeat's ms
                     experiment          LAYER_PARAMETERS            count       the trained model's count
    SamplingTable    experiment          "<share:.0%>"               value       a timed repeat's tokens/s
    NextWordTable    experiment          "p(<word>)"                 probability a chosen seed's per-block sums
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

from workflow_src import layout
from workflow_src.atomic import read_lines
from workflow_src.artefacts import (
    BEST_BLEU_EPOCH,
    LAYER_PARAMETERS,
    PARAMETER_TABLE_TIMINGS,
    Column,
    Context,
    ConvergenceTable,
    Job,
    NeighbourTable,
    NextWordTable,
    ParameterTable,
    PerplexityTable,
    RareWordTable,
    SamplingTable,
    mean_probability_column,
)
from workflow_src.report import analysis, plateau
from workflow_src.score import significance
from workflow_src.score.evidence import COUNTED, Cell, repeat_labels, seed_labels
from workflow_src.train.divergence import diverged


def still_learning(jobs: list[Job]) -> str:
    """Why these runs do not show what their method learns: those that had not plateaued when their
    training stopped (`plateau.unsettled`: a row ranked by how far its budget let it get, issue 23);
    '' when every one had. A diverged run is a result (the row holds its best epoch), not this."""
    moving = [
        f"seed {job.seed}: {how}"
        for job in jobs
        if (how := plateau.unsettled(history := analysis.read_metrics(job))) and not diverged(history)
    ]
    return f"not plateaued when its training stopped ({'; '.join(moving)})" if moving else ""


@functools.singledispatch
def cells(artefact, ctx: Context, paper: str, artefact_id: str) -> list[Cell]:
    return []


@cells.register
def _(artefact: PerplexityTable, ctx: Context, paper: str, artefact_id: str) -> list[Cell]:
    """Per computed cell, each chosen seed's [NLL, tokens] per block of test (valid) tokens, as
    train_lm writes them in perplexity.json (`test_blocks`, `valid_blocks`)."""
    out = []
    for (experiment, corpus), (jobs, _, results) in analysis.chosen_perplexities(artefact, ctx).items():
        for split in ("test", "valid"):
            if not jobs:
                continue
            missing = [j.seed for j, r in zip(jobs, results) if f"{split}_blocks" not in r]
            if missing:  # written before train_lm recorded its blocks: score model.pt again to add them
                print(
                    f"evidence: {experiment}, {corpus.name} {split}: perplexity.json of seed "
                    f"{' '.join(map(str, missing))} has no {split}_blocks (rerun train_lm); no evidence",
                    file=sys.stderr,
                )
                continue
            out.append(
                Cell(
                    experiment,
                    f"{corpus.name} {split}",
                    "perplexity",
                    tuple(r[f"{split}_blocks"] for r in results),
                    seed_labels(j.seed for j in jobs),
                    unsettled=still_learning(jobs),
                )
            )
    return out


@cells.register
def _(artefact: NextWordTable, ctx: Context, paper: str, artefact_id: str) -> list[Cell]:
    """Per system and word of `mean_probability_of`, each chosen seed's [sum of p(word), positions] per
    block of the context text, over the positions where another word comes next (`lm_predict
    --mean-probability-of`)."""
    if not artefact.mean_probability_of or ctx.corpus_status(artefact.corpus):
        return []
    out = []
    for system in artefact.systems:
        jobs, _ = analysis.chosen_lm_jobs(ctx, artefact.corpus, system.experiment, system.tune)
        blocks = analysis.word_probability_blocks(jobs, artefact.mean_probability_of, paper, artefact_id)
        out += [
            Cell(
                system.experiment,
                mean_probability_column(word),
                "probability",
                seeds,
                seed_labels(j.seed for j in jobs),
                unsettled=still_learning(jobs),
            )
            for word, seeds in blocks.items()
        ]
    return out


@cells.register
def _(artefact: ConvergenceTable, ctx: Context, paper: str, artefact_id: str) -> list[Cell]:
    """Per pair and system, each seed's training seconds until convergence (`time_to_convergence`)
    and the epoch of its best development BLEU (`epoch_of_best_bleu`)."""
    out = []
    for column in artefact.columns:
        if ctx.status(column):
            continue
        for system in artefact.systems:
            jobs = ctx.system_jobs(column, system)
            histories = [analysis.read_metrics(j) for j in jobs]
            if jobs:
                out += [
                    Cell(
                        column.name,
                        f"{system.name} {stem}",
                        "value",
                        replicates,
                        seed_labels(j.seed for j in jobs),
                        unsettled=still_learning(jobs),
                    )
                    for stem, replicates in (
                        ("ours", tuple(analysis.time_to_convergence(h)[0] for h in histories)),
                        (BEST_BLEU_EPOCH, tuple(float(analysis.epoch_of_best_bleu(h)) for h in histories)),
                    )
                ]
    return out


@cells.register
def _(artefact: RareWordTable, ctx: Context, paper: str, artefact_id: str) -> list[Cell]:
    """Per frequency bin and system, each seed's [matched, hypothesis, reference] words of the
    bin per test sentence (`analysis.sentence_bin_counts`, binned_f1's counting)."""
    if ctx.status(artefact.column):
        return []
    out = []
    for name, runs in analysis.rare_word_counts(artefact, ctx).items():
        if not runs:
            continue
        for b, label in enumerate(analysis.rare_word_bins(artefact)):
            out.append(
                Cell(
                    label,
                    name,
                    "f1",
                    tuple([sentence[b] for sentence in counts] for _, counts in runs),
                    seed_labels(j.seed for j, _ in runs),
                    unsettled=still_learning([j for j, _ in runs]),
                )
            )
    return out


@cells.register
def _(artefact: NeighbourTable, ctx: Context, paper: str, artefact_id: str) -> list[Cell]:
    """Per statistic and system, each chosen seed's value (seeds without one left out)."""
    if ctx.status(artefact.column):
        return []
    out = []
    for name, (jobs, results, _) in analysis.neighbour_measurements(artefact, ctx).items():
        for statistic in artefact.paper:
            measured = [(j.seed, r[statistic]) for j, r in zip(jobs, results) if r.get(statistic) is not None]
            if measured:
                out.append(
                    Cell(
                        statistic,
                        name,
                        "value",
                        tuple(v for _, v in measured),
                        seed_labels(s for s, _ in measured),
                        unsettled=still_learning(jobs),
                    )
                )
    return out


def benchmark(paper: str, artefact_id: str) -> dict:
    return json.loads(Path(layout.benchmark_path(paper, artefact_id)).read_text())


@cells.register
def _(artefact: ParameterTable, ctx: Context, paper: str, artefact_id: str) -> list[Cell]:
    """Per row, each timed repeat's ms per training batch and per decoded batch (the benchmark's
    `ms_repeats`, `decode_ms_repeats`), and the input and output layers' parameters together as
    counted in the table's trained model (exact: no spread)."""
    rows = benchmark(paper, artefact_id)["rows"]
    timed = [
        Cell(row.experiment, column, "value", tuple(repeats), repeat_labels(len(repeats)))
        for row in artefact.rows
        for key, column in PARAMETER_TABLE_TIMINGS
        if (repeats := rows[row.experiment].get(f"{key}_repeats"))
    ]
    counted = [
        Cell(row.experiment, LAYER_PARAMETERS, "count", (float(counts["input"] + counts["output"]),), COUNTED)
        for row in artefact.rows
        if (counts := analysis.trained_layer_parameters(ctx, artefact.column, row.experiment)[0])
    ]
    return timed + counted


@cells.register
def _(artefact: SamplingTable, ctx: Context, paper: str, artefact_id: str) -> list[Cell]:
    """Per row and sampled share, each timed repeat's target tokens per second (the benchmark's `repeats`)."""
    repeated = benchmark(paper, artefact_id).get("repeats", {})
    return [
        Cell(row.experiment, f"{share:.0%}", "value", tuple(repeats), repeat_labels(len(repeats)))
        for row in artefact.rows
        for share in artefact.shares
        if (repeats := repeated.get(row.experiment, {}).get(f"{share:g}"))
    ]


def sentence_statistics_by_seed(column: Column, chosen: dict, search: dict[str, str]):
    """experiment -> its seeds' BLEU statistics per test sentence in `column` (of its `search`'s
    output), as the column's metric scores them (`bleu_tok`: tokenized text, no tokenizer of
    sacrebleu's own)."""
    tokenized = column.metric == "bleu_tok"
    references = read_lines(Path(layout.references_path(column)))
    return len(references), functools.cache(
        lambda experiment: [
            significance.sentence_statistics(
                read_lines(
                    Path(layout.hypothesis_path(j.dataset, j.pair, j.experiment, j.seed, search[experiment], tokenized))
                ),
                references,
                tokenize="none" if tokenized else None,
            )
            for j in chosen[experiment, column]
        ]
    )


def bleu_cell(experiment: str, column: Column, statistics_of, chosen: dict) -> Cell:
    """A row's evidence in a BLEU column: each chosen seed's BLEU statistics per test sentence."""
    return Cell(
        experiment,
        column.name,
        "bleu",
        tuple(s.tolist() for s in statistics_of(experiment)),
        seed_labels(j.seed for j in chosen[experiment, column]),
        unsettled=still_learning(chosen[experiment, column]),
    )
