"""Render one artefact of a paper: a table (CSV, Markdown, HTML) or a figure (PNG, PDF).

`python -m workflow_src.report.render --paper vmf --artefact table1 --context JSON --data-note TEXT
 --out-prefix results/vmf/table1`

`--context` is the configuration as the artefact sees it (`layout.context`): seeds, configured
pairs, selected rows. The files it reads are `layout.inputs(...)`, the same list the Snakefile
makes the rule depend on. Every table shows the paper's number beside ours; a cell we did not
compute is empty and its row's `note` says why. Metric signatures travel with the numbers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
from pathlib import Path

from workflow_src import artefact_cells, artefacts, layout, registry
from workflow_src.atomic import described, one_line_faults
from workflow_src.paper_records import Check
from workflow_src.report import analysis, deviations, plateau, table_evidence
from workflow_src.score import evidence, inference, significance
from workflow_src.tables import to_markdown, write_table


def context_argument(config: dict, paper: str, artefact_id: str) -> str:
    """The `--context` JSON of a configured artefact (used by the Snakefile)."""
    return json.dumps(dataclasses.asdict(layout.context(config, paper, artefact_id)))


def report_label(artefact_id: str) -> str:
    """An artefact's name in the report's menu, its number zero-padded so that the report's text
    sort puts them in order: "table 02" before "table 10"."""
    kind, number = re.fullmatch(r"([a-z]+)(\d+)", artefact_id).groups()
    return f"{kind} {int(number):02d}"


def millions(count: float | None) -> str | None:
    """A parameter count in millions, the unit the papers print |Θ| in, to 4 significant digits."""
    return None if count is None else f"{count / 1e6:.4g}"


def read_scores(jobs: list[artefacts.Job], search: str, metric: str) -> list[dict]:
    return [
        json.loads(Path(layout.score_path(j.dataset, j.pair, j.experiment, j.seed, search, metric)).read_text())
        for j in jobs
    ]


def score_table(
    table: artefacts.ScoreTable, ctx: artefacts.Context
) -> tuple[list[str], list[dict], list[str], list[evidence.Cell]]:
    """The table's columns, rows and footer, and its evidence (`score_evidence`, and each row's |Θ|
    as a count where the table has them): each chosen seed's hypotheses are read and scored per
    sentence once, for the significance marks and the evidence."""
    columns = ["experiment", *table.label_columns]
    for column in table.columns:
        columns += [f"{column.name} paper"]
        if any(row.paper_printed for row in table.rows):
            columns += [f"{column.name} paper as printed"]
        columns += [f"{column.name} ours"]
        if table.spread:
            columns += [f"{column.name} sd"]
        if table.significance_levels:
            columns += [f"{column.name} Δ"]
        if table.significance or table.significance_levels:
            columns += [f"{column.name} significance"]
        columns += analysis.diff_column(ctx, column.name)
        if table.parameters:
            columns += [f"{artefacts.parameter_column(column.name)} {whose} (M)" for whose in ("paper", "ours")]
    columns += ["seeds", "signature", "note"]
    rows, chosen, sentence_scores, counted = [], {}, {}, []
    for row in layout.selected_rows(ctx, table):
        out = {"experiment": row.experiment, **row.label}
        signatures, notes, seeds = set(), [row.note] if row.note else [], set()
        if row.search != "greedy":
            notes.append(f"decoded with {row.search.replace('beam', 'beam size ')}")
        for column in table.columns:
            paper_value = row.paper.get(column.name)
            out[f"{column.name} paper"] = paper_value
            out[f"{column.name} paper as printed"] = row.paper_printed.get(column.name)
            jobs, tuning = analysis.chosen_jobs(ctx, column, row.experiment, row.tune)
            chosen[row.experiment, column] = jobs
            if not jobs:
                notes.append(ctx.status(column))
                continue
            notes += [tuning] if tuning else []
            notes += (
                [note] if (note := plateau.learning_note([(j.seed, analysis.read_metrics(j)) for j in jobs])) else []
            )
            scored = read_scores(jobs, row.search, column.metric)
            sentence_scores[row.experiment, column] = [s.get("sentence_scores") for s in scored]
            scores = [s["score"] for s in scored]
            ours = round(statistics.fmean(scores), 2)
            out[f"{column.name} ours"] = ours
            out[f"{column.name} sd"] = round(statistics.stdev(scores), 2) if len(scores) > 1 else None
            out[f"{column.name} diff"] = round(ours - paper_value, 2) if paper_value is not None else None
            signatures |= {f"{s['metric']}: {s['signature']}" for s in scored}
            seeds |= {j.seed for j in jobs}
            if table.parameters:
                parameters = analysis.read_metrics(jobs[0])[-1]["parameters"]
                parameter_key = artefacts.parameter_column(column.name)
                out[f"{parameter_key} paper (M)"] = millions(row.paper.get(parameter_key))
                out[f"{parameter_key} ours (M)"] = millions(parameters)
                counted.append(
                    evidence.Cell(row.experiment, parameter_key, "count", (float(parameters),), evidence.COUNTED)
                )
        out["seeds"] = " ".join(str(s) for s in sorted(seeds))
        out["signature"] = " | ".join(sorted(signatures))
        out["note"] = "; ".join(notes)
        rows.append(out)
    footer = [
        "Ours: the mean over the listed seeds"
        + (", sd: their sample standard deviation" if table.spread else "")
        + ("." if ctx.synthetic else "; diff = ours - paper."),
        *analysis.diff_footer(ctx),
    ]
    search = {row.experiment: row.search for row in table.rows}
    by_column = {
        column: table_evidence.sentence_statistics_by_seed(column, chosen, search)
        for column in table.columns
        if not ctx.status(column) and column.metric != "meteor"
    }
    if table.significance:
        significance_marks(table, rows, by_column, chosen)
        marks = ", ".join(f"{mark} over {baseline}" for mark, baseline in table.significance)
        footer.append(
            f"Significant gains ({marks}), p < {inference.ALPHA:g}: the test of results/claims.md, so that the "
            f"two pages give one answer for a pair both test: a paired bootstrap over the test sentences "
            f"({significance.RESAMPLES} resamples), each system's seeds resampled too and its BLEU the mean "
            "over its drawn seeds."
        )
    if table.significance_levels:
        significance_levels(table, ctx, rows, by_column, chosen)
        marks = ", ".join(f"{mark} p < {level:g}" for level, mark in table.significance_levels)
        footer.append(
            f"Δ: ours - the row's baseline's (its block's first row); significant differences, either way "
            f"({marks}): sacrebleu's paired bootstrap over the test sentences ({significance.RESAMPLES} "
            "resamples), each system's BLEU the mean over its seeds, which are held (the paper's test). "
            "results/claims.md tests gains one-sided with the seeds resampled too; where the two answer a "
            "pair differently at p < 0.05, the row's note gives the other test's p, and the claim says so."
        )
    if table.parameters:
        footer.append(
            "|Θ| (M): trainable parameters in millions, the paper's unit (to 4 significant digits), ours at "
            "the configured sizes (a shared matrix counts once)."
        )
    return (
        columns,
        rows,
        footer,
        [*score_evidence(table, ctx, chosen, by_column), *mean_evidence(sentence_scores, chosen), *counted],
    )


def score_evidence(
    table: artefacts.ScoreTable, ctx: artefacts.Context, chosen: dict, by_column: dict
) -> list[evidence.Cell]:
    """Per row and configured BLEU column, each chosen seed's BLEU statistics per test sentence: what
    the claims' bootstrap resamples (`workflow_src/report/claims.py`). `chosen`: (experiment, column) ->
    its jobs; `by_column`: column -> `sentence_statistics_by_seed`'s pair."""
    return [
        table_evidence.bleu_cell(row.experiment, column, statistics_of, chosen)
        for column, (_, statistics_of) in by_column.items()
        for row in layout.selected_rows(ctx, table)
        if chosen[row.experiment, column]
    ]


def mean_evidence(sentence_scores: dict, chosen: dict) -> list[evidence.Cell]:
    """Per row and METEOR column, each chosen seed's per-sentence scores (nltk's METEOR is their
    mean; `score.meteor.meteor_nltk` records them), kind `mean`; none where a score file has no
    sentence scores (the jar's, or one scored before they were recorded)."""
    return [
        evidence.Cell(
            experiment,
            column.name,
            "mean",
            tuple([[v, 1] for v in scores] for scores in per_seed),
            evidence.seed_labels(j.seed for j in chosen[experiment, column]),
            unsettled=table_evidence.still_learning(chosen[experiment, column]),
        )
        for (experiment, column), per_seed in sentence_scores.items()
        if column.metric == "meteor" and all(scores is not None for scores in per_seed)
    ]


def configured_columns(rows: list[dict], by_column: dict):
    """(column, statistics_of, resample indices, experiment -> our mean) of each configured column
    (the keys of `by_column`, as `score_table` reads them): what a significance test over its test
    sentences needs."""
    for column, (sentences, statistics_of) in by_column.items():
        yield (
            column,
            statistics_of,
            significance.resample_indices(sentences),
            {out["experiment"]: out[f"{column.name} ours"] for out in rows},
        )


def gain_test(experiment: str, than: str, column: artefacts.Column, statistics_of, chosen: dict) -> inference.Test:
    """The claims' test of "`experiment` scores above `than`" in `column` (results/claims.md)."""
    check = Check("table", column.name, experiment, than=than)
    return inference.by_bootstrap(
        check, *(table_evidence.bleu_cell(e, column, statistics_of, chosen) for e in (experiment, than))
    )


def significance_levels(
    table: artefacts.ScoreTable, ctx: artefacts.Context, rows: list[dict], by_column: dict, chosen: dict
) -> None:
    """Fill each row's `<column> Δ` and `<column> significance` against its baseline row; where the
    claims' one-sided test (seeds resampled) answers the pair differently at ALPHA, the row's note
    gives its p."""
    baseline_of = {row.experiment: row.baseline for row in layout.selected_rows(ctx, table)}
    for column, statistics_of, indices, mean_of in configured_columns(rows, by_column):
        for out in rows:
            baseline = baseline_of[out["experiment"]]
            if baseline is None or baseline == out["experiment"] or mean_of.get(baseline) is None:
                continue
            out[f"{column.name} Δ"] = round(mean_of[out["experiment"]] - mean_of[baseline], 2)
            p = significance.difference_p(statistics_of(out["experiment"]), statistics_of(baseline), indices)
            out[f"{column.name} significance"] = next(
                (mark for level, mark in table.significance_levels if p < level), ""
            )
            better, worse = (
                (out["experiment"], baseline) if out[f"{column.name} Δ"] >= 0 else (baseline, out["experiment"])
            )
            one_sided = gain_test(better, worse, column, statistics_of, chosen).p_claim
            if (p < inference.ALPHA) != (one_sided < inference.ALPHA):
                out["note"] = "; ".join(
                    filter(
                        None,
                        [
                            out["note"],
                            (
                                f"{column.name}: results/claims.md's test (one-sided, seeds resampled) gives p = "
                                f"{one_sided:.3g} "
                                f"for {better} above {worse}"
                            ),
                        ],
                    )
                )


def significance_marks(table: artefacts.ScoreTable, rows: list[dict], by_column: dict, chosen: dict) -> None:
    """Fill each row's `<column> significance` with the marks of the baselines it beats, by the
    claims' test (`gain_test`), so that a mark and a claim on the same pair agree."""
    for column, statistics_of, _, mean_of in configured_columns(rows, by_column):
        for out in rows:
            marks = [
                mark
                for mark, baseline in table.significance
                if baseline in mean_of
                and baseline != out["experiment"]
                and mean_of[out["experiment"]] > mean_of[baseline]
                and gain_test(out["experiment"], baseline, column, statistics_of, chosen).p_claim < inference.ALPHA
            ]
            out[f"{column.name} significance"] = "".join(marks)


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--paper", required=True)
    parser.add_argument("--artefact", required=True)
    parser.add_argument("--context", type=json.loads, required=True)
    parser.add_argument("--data-note", required=True)
    parser.add_argument("--out-prefix", type=Path, required=True)
    args = parser.parse_args(argv)
    from workflow_src.report import figures

    artefact = registry.artefact(args.paper, args.artefact)
    ctx = artefacts.Context(**args.context)
    title = f"{args.paper} {args.artefact}: {artefact.title}"
    if isinstance(artefact, artefacts.Figure):  # its title is the paper's; its panels say what this run trained
        figures.draw(
            artefact,
            ctx,
            args.paper,
            args.artefact,
            f"{args.paper} {args.artefact}, the paper's figure: {artefact.title}",
            args.data_note,
            args.out_prefix,
        )
        return
    if isinstance(artefact, artefacts.ScoreTable):
        columns, rows, footer, cells = score_table(artefact, ctx)
    else:
        columns, rows, footer = analysis.table(artefact, ctx, args.paper, args.artefact)
        cells = table_evidence.cells(artefact, ctx, args.paper, args.artefact)
    footer = [
        *footer,
        *plateau.footer(rows),
        *deviations.footer(args.paper, args.artefact),
        *artefact_cells.experiments_footer(artefact, args.paper, args.artefact, rows),
        *artefact_cells.left_out_footer(artefact, ctx, args.paper, args.artefact),
    ]
    prefix = args.out_prefix
    why = artefact_cells.left_out_reason(args.paper, args.artefact)
    evidence.write(
        prefix.with_suffix(".evidence.json"),
        cells,
        {row: why for row in artefact_cells.left_out_rows(artefact, ctx)},
        artefact_cells.left_out_columns(artefact, ctx),
    )
    write_table(
        prefix.with_suffix(".csv"),
        prefix.with_suffix(".md"),
        prefix.with_suffix(".html"),
        title,
        args.data_note,
        columns,
        rows,
        footer,
    )
    print(to_markdown(title, args.data_note, columns, rows, footer))


if __name__ == "__main__":
    main()
