"""The analysis tables: convergence time, rare-word F1, example translations, model size and
speed, nearest neighbours, perplexities and next-word predictions.

Each builder takes its registry entry, the configuration's `Context` and the artefact's paper and
id, and returns (columns, rows, footer) for `render.write_table`.
"""

from __future__ import annotations

import functools
import json
import statistics
from pathlib import Path

from workflow_src import layout, registry
from workflow_src.artefacts import (
    DECODING_MS,
    PARAMETER_TABLE_TIMINGS,
    Context,
    ConvergenceTable,
    ExampleTable,
    Job,
    NeighbourTable,
    NextWordTable,
    ParameterTable,
    PerplexityTable,
    RareWordTable,
    RepresentationTable,
    SamplingTable,
)
from workflow_src.atomic import read_lines, read_metrics as read_metrics_file
from workflow_src.data.vocab import read_counts
from workflow_src.report import plateau
from workflow_src.score.evidence import Cell, seed_labels
from workflow_src.score.inference import observed
from workflow_src.score.rare_words import bin_label, bin_scores, sentence_bin_counts
from workflow_src.train.divergence import diverged


def read_metrics(job: Job) -> list[dict]:
    """A training job's metrics.jsonl, a translation model's or a language model's."""
    path = f"{layout.lm_dir(job)}/metrics.jsonl" if job.pair == "lm" else layout.metrics_path(job)
    return read_metrics_file(path)


def time_to_convergence(history: list[dict]) -> tuple[float, int, bool]:
    """(training seconds until the end of the converged epoch, that epoch, whether the run shows
    convergence), from metrics.jsonl, by the vMF paper's criterion (§4.1): "until convergence on
    the validation perplexity" (softmax baselines) or "on the validation loss" (continuous models).
    Both are the epoch with the lowest development loss per token (perplexity = exp of it). The run
    shows convergence when a later epoch failed to lower that loss; when the lowest is its last
    epoch, the loss was still falling where training stopped, and the time is a lower bound."""
    lowest = min(history, key=lambda r: (r["dev_loss"], r["epoch"]))
    return lowest["train_seconds_total"], lowest["epoch"], lowest is not history[-1]


def epoch_of_best_bleu(history: list[dict]) -> int:
    """The first epoch with the highest development BLEU: where a run's curve of Figure 1 (right)
    converges, by the vMF paper's "speed of convergence, using BLEU scores on dev data" (§5)."""
    return max(history, key=lambda r: (r["dev_bleu"], -r["epoch"]))["epoch"]


def convergence_times(ctx: Context, column, system) -> tuple[list[Job], list[tuple[float, int, bool]]]:
    """A system's jobs on one pair, and each one's `time_to_convergence`."""
    jobs = ctx.system_jobs(column, system)
    return jobs, [time_to_convergence(read_metrics(j)) for j in jobs]


def development_bleu(job: Job) -> float:
    """The development BLEU of the epoch training kept (the last that improved)."""
    return [r for r in read_metrics(job) if r.get("best")][-1]["dev_bleu"]


def validation_perplexity(job: Job) -> float:
    """The validation perplexity of the epoch a language model's training kept."""
    return read_perplexity(job)["valid_perplexity"]


def chosen_jobs(ctx: Context, column, experiment: str, tune: str | tuple[str, ...] | None) -> tuple[list[Job], str]:
    """The seeds of the candidate with the best mean development BLEU, and a note saying which
    it is (empty for a row that is not tuned)."""
    jobs = {candidate: ctx.jobs(column, candidate) for candidate in ctx.candidates(experiment, tune, column.dataset)}
    return choose(jobs, tune, column.name, "development BLEU", development_bleu, registry.experiment)


def chosen_lm_jobs(ctx: Context, corpus, experiment: str, tune: str | None) -> tuple[list[Job], str]:
    """The seeds of the language model with the lowest mean validation perplexity among a row's
    candidates (the tying paper's γ), and a note saying which it is (empty if not tuned)."""
    jobs = {candidate: ctx.lm_jobs(corpus, candidate) for candidate in ctx.candidates(experiment, tune, corpus.base)}
    return choose(
        jobs,
        tune,
        corpus.name,
        "validation perplexity",
        lambda job: -validation_perplexity(job),
        registry.language_model,
    )


def choose(jobs: dict[str, list[Job]], tune, where: str, measure: str, score, configuration) -> tuple[list[Job], str]:
    """The jobs of the candidate (a key of `jobs`) with the highest mean `score`, and a note (one
    candidate: nothing was chosen, and the note says so)."""
    candidates = list(jobs)
    if tune is None or not jobs[candidates[0]]:
        return jobs[candidates[0]], ""
    mean_score = {c: statistics.fmean(score(j) for j in js) for c, js in jobs.items()}
    best = max(candidates, key=lambda c: mean_score[c])
    chosen = best if isinstance(tune, tuple) else f"{tune} = {configuration(best).loss_params[tune]:g}"
    if len(candidates) == 1:
        return jobs[best], f"{where}: {chosen}, the one value configured, not tuned"
    values = ", ".join(
        candidates if isinstance(tune, tuple) else (f"{configuration(c).loss_params[tune]:g}" for c in candidates)
    )
    return jobs[best], f"{where}: {chosen}, chosen on {measure} among {values}"


NO_DIFF = (
    "No diff column: on synthetic data our numbers and the paper's measure different data, so their "
    "difference means nothing; the paper's are shown for the table's layout."
)


def diff_column(ctx: Context, name: str) -> list[str]:
    """`<name> diff` (ours - paper) as a column, except on synthetic data (`NO_DIFF`)."""
    return [] if ctx.synthetic else [f"{name} diff"]


def diff_footer(ctx: Context) -> list[str]:
    return [NO_DIFF] if ctx.synthetic else []


def mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def ratio(value: float | None, reference: float | None) -> float | None:
    return value / reference if value is not None and reference else None


@functools.singledispatch
def table(artefact, ctx: Context, paper: str, artefact_id: str):
    raise TypeError(f"no table builder for {type(artefact).__name__}")


@table.register
def convergence(artefact: ConvergenceTable, ctx: Context, paper: str, artefact_id: str):
    """vMF Table 3: training time until convergence (`time_to_convergence`). The paper's times are
    in hours, ours in seconds (toy models train in seconds); the ratio to the first system compares
    the two across scales."""
    columns = ["pair"]
    for s in artefact.systems:
        columns += [
            f"{s.name} paper (h)",
            f"{s.name} ours (s)",
            f"{s.name} converged epoch",
            f"{s.name} paper ratio",
            f"{s.name} ours ratio",
        ]
    columns += ["seeds", "note"]
    rows = []
    reference = artefact.systems[0].name
    for column in artefact.columns:
        out, notes = {"pair": column.name}, []
        for s in artefact.systems:
            out[f"{s.name} paper (h)"] = artefact.paper_hours.get(column.name, {}).get(s.name)
            if ctx.status(column):
                notes.append(ctx.status(column))
                break
            jobs, measured = convergence_times(ctx, column, s)
            out[f"{s.name} ours (s)"] = mean([seconds for seconds, _, _ in measured])
            out[f"{s.name} converged epoch"] = " ".join(
                f"{epoch}{'' if converged else '+'}" for _, epoch, converged in measured
            )
            out["seeds"] = " ".join(str(j.seed) for j in jobs)
            still_falling = [str(j.seed) for j, (_, _, converged) in zip(jobs, measured) if not converged]
            if still_falling:
                notes.append(
                    f"{s.name}: development loss still falling when training stopped (seed "
                    f"{' '.join(still_falling)}): a lower bound"
                )
        for s in artefact.systems:
            for kind, unit in (("paper", "h"), ("ours", "s")):
                value = out.get(f"{s.name} {kind} ({unit})")
                out[f"{s.name} {kind} ratio"] = ratio(value, out.get(f"{reference} {kind} ({unit})"))
        out["note"] = "; ".join(n for n in notes if n)
        rows.append(out)
    footer = [
        "Training time (validation excluded) until convergence by the paper's criterion (§4.1): the "
        "epoch with the lowest development perplexity (softmax) or development loss (continuous models), "
        "both the lowest development loss per token, from metrics.jsonl; an epoch marked + was the last "
        "trained, the loss still falling (training stops by train.patience on train.selection). "
        f"The paper's times in hours, ours in seconds; ratio: to {reference}."
    ]
    return columns, rows, footer


def rare_word_bins(artefact: RareWordTable) -> list[str]:
    """The table's bin labels, as its "training frequency" column writes them: unseen words first."""
    return ["0 (unseen)"] + [bin_label(*bounds) for bounds in artefact.bins]


def rare_word_counts(artefact: RareWordTable, ctx: Context) -> dict[str, list[tuple[Job, list]]]:
    """System name -> (job, `sentence_bin_counts` of its test output) per job (its seeds), from
    the tokenized, truecased references and output after <unk> replacement."""
    column = artefact.column
    tgt = column.pair.split("-")[1]
    data = layout.data_dir(column.dataset, column.pair)
    references = read_lines(Path(f"{data}/tok/test.{tgt}"))
    counts = dict(read_counts(Path(f"{data}/vocab/{tgt}.tsv")))
    return {
        s.name: [
            (
                j,
                sentence_bin_counts(
                    references,
                    read_lines(Path(layout.hypothesis_path(j.dataset, j.pair, j.experiment, j.seed, tokenized=True))),
                    counts,
                    artefact.bins,
                ),
            )
            for j in ctx.system_jobs(column, s)
        ]
        for s in artefact.systems
    }


@table.register
def rare_words(artefact: RareWordTable, ctx: Context, paper: str, artefact_id: str):
    """vMF Table 5."""
    systems = artefact.systems
    columns = ["training frequency"]
    for s in systems:
        columns += [f"{s.name} paper", f"{s.name} ours", *diff_column(ctx, s.name)]
    columns += ["test words", "note"]
    column = artefact.column
    if ctx.status(column):
        return columns, [{"training frequency": bin_label(*b), "note": ctx.status(column)} for b in artefact.bins], []
    labels = rare_word_bins(artefact)
    results = {
        name: [bin_scores(counts, len(labels)) for _, counts in runs]
        for name, runs in rare_word_counts(artefact, ctx).items()
    }
    rows = []
    for b, label in enumerate(labels):
        out = {"training frequency": label, "note": "not in the paper" if b == 0 else ""}
        for s in systems:
            paper = artefact.paper.get(label, {}).get(s.name)
            ours = mean([per_seed[b]["f1"] for per_seed in results[s.name]])
            out |= {
                f"{s.name} paper": paper,
                f"{s.name} ours": ours,
                f"{s.name} diff": ours - paper if paper is not None and ours is not None else None,
            }
        out["test words"] = results[systems[0].name][0][b]["reference_words"]
        rows.append(out)
    footer = [
        f"Unigram F1 of test-set words ({column.dataset} {column.pair}) by their frequency in the training "
        "target text; matches are clipped per sentence; tokenized, truecased text after <unk> replacement.",
        *diff_footer(ctx),
    ]
    return columns, rows, footer


def neighbour_measurements(artefact: NeighbourTable, ctx: Context) -> dict[str, tuple[list[Job], list[dict], str]]:
    """System name -> (its chosen jobs, each one's neighbour statistics, the tuning note)."""
    out = {}
    for s in artefact.systems:
        jobs, tuning = chosen_jobs(ctx, artefact.column, s.experiment_for(artefact.column), s.tune)
        out[s.name] = (jobs, [json.loads(Path(layout.neighbours_path(j)).read_text()) for j in jobs], tuning)
    return out


@table.register
def neighbours(artefact: NeighbourTable, ctx: Context, paper: str, artefact_id: str):
    """Syn-margin Table 2: per statistic (rows), each system's value, the paper's beside ours."""
    columns = ["statistic"]
    for s in artefact.systems:
        columns += [f"{s.name} paper", f"{s.name} ours"]
    columns += ["note"]
    column = artefact.column
    if ctx.status(column):
        return columns, [{"statistic": statistic, "note": ctx.status(column)} for statistic in artefact.paper], []
    chosen = neighbour_measurements(artefact, ctx)
    measured = {name: results for name, (_, results, _) in chosen.items()}
    notes = [f"{name} {tuning}" for name, (_, _, tuning) in chosen.items() if tuning]
    rows = []
    for statistic in artefact.paper:
        out = {"statistic": statistic}
        for s in artefact.systems:
            out[f"{s.name} paper"] = artefact.paper[statistic].get(s.name)
            out[f"{s.name} ours"] = mean([m[statistic] for m in measured[s.name] if m[statistic] is not None])
        rows.append(out)
    seeds = sorted({j.seed for s in artefact.systems for j in ctx.system_jobs(column, s)})
    words = measured[artefact.systems[0].name][0]["words"]
    footer = [
        f"Teacher-forced predictions on the {column.dataset} {column.pair} test set ({words} reference words "
        f"with their own vector), cosine similarities; ours: the mean over seeds {' '.join(map(str, seeds))}.",
        "Teacher-forced, not free-running: the paper does not say which. Its statistics compare each predicted "
        "embedding with its target word, and only teacher forcing (each step reads the reference prefix) pairs "
        "every prediction with one reference word; a free-running translation has its own length and words. "
        "Expected effect: higher accuracies than a position-by-position comparison of free-running output would "
        "give (the paper's accuracy@1, about 24%, may be such a comparison).",
        *notes,
    ]
    return columns, rows, footer


def read_perplexity(job: Job) -> dict:
    return json.loads(Path(f"{layout.lm_dir(job)}/perplexity.json").read_text())


def chosen_perplexities(
    artefact: PerplexityTable, ctx: Context
) -> dict[tuple[str, object], tuple[list[Job], str, list[dict]]]:
    """(row experiment, corpus) -> (the chosen jobs, the tuning note, each one's perplexity.json)
    of every cell we compute (`layout.computed_cells`)."""
    out = {}
    for row, corpus, _ in layout.computed_cells(artefact, ctx):
        jobs, tuning = chosen_lm_jobs(ctx, corpus, row.experiment, row.tune)
        out[row.experiment, corpus] = (jobs, tuning, [read_perplexity(j) for j in jobs])
    return out


@table.register
def perplexities(artefact: PerplexityTable, ctx: Context, paper: str, artefact_id: str):
    """Tying Tables 1-3: validation and test perplexity, the paper's beside ours (mean over seeds),
    and the number of parameters; rows of other papers as the paper reports them."""
    columns = ["experiment", *artefact.label_columns]
    for corpus in artefact.columns:
        for split in ("valid", "test"):
            columns += [
                f"{corpus.name} {split} paper",
                f"{corpus.name} {split} ours",
                *diff_column(ctx, f"{corpus.name} {split}"),
            ]
    columns += ["units ours"] + [f"{corpus.name} parameters ours" for corpus in artefact.columns] + ["seeds", "note"]
    computed = chosen_perplexities(artefact, ctx)
    rows, row_notes, trained = [], [], {}  # trained: (block, corpus) -> {row: the epochs its runs ran}
    for row in layout.selected_rows(ctx, artefact):
        out, notes = {"experiment": row.experiment, **row.label}, [row.note] if row.note else []
        block = row.label.get(artefact.label_columns[0], "") if artefact.label_columns else ""
        for corpus in artefact.columns:
            jobs, tuning, results = computed.get((row.experiment, corpus), ([], "", []))
            notes.append(tuning)
            histories = [(j.seed, read_metrics(j)) for j in jobs]
            if learning := plateau.learning_note(histories):
                notes.append(f"{corpus.name}: {learning}")
            if (ran := [h[-1]["epoch"] for _, h in histories if h and not diverged(h)]) and len(ran) == len(histories):
                trained.setdefault((block, corpus), {})[row.experiment] = max(ran)  # a diverged run's note says why
            if row.experiment and (row.experiment, corpus) in computed and not jobs:
                notes.append(ctx.corpus_status(corpus))
            for split in ("valid", "test"):
                paper, ours = row.paper.get(f"{corpus.name} {split}"), mean([r[f"{split}_perplexity"] for r in results])
                out |= {
                    f"{corpus.name} {split} paper": paper,
                    f"{corpus.name} {split} ours": ours,
                    f"{corpus.name} {split} diff": ours - paper if None not in (ours, paper) else None,
                }
            if results:  # the vocabulary, and so the size, is the corpus's
                out[f"{corpus.name} parameters ours"] = results[0]["parameters"]
                out["units ours"] = results[0]["units"]  # config lm.sizes: the paper's, or toy ones
                out["seeds"] = " ".join(str(j.seed) for j in jobs)
        if row.experiment and not any(key in computed for key in ((row.experiment, c) for c in artefact.columns)):
            notes.append("not in the paper for these corpora")
        rows.append(out)
        row_notes.append(notes)
    for (block, corpus), epochs in trained.items():  # compared rows that trained unequal lengths
        for out, notes in zip(rows, row_notes):
            if note := plateau.unequal_epochs(epochs, block).get(out["experiment"]):
                notes.append(f"{corpus.name}: {note}")
    for out, notes in zip(rows, row_notes):
        out["note"] = "; ".join(n for n in notes if n)
    footer = [
        "Perplexity exp(mean negative log-likelihood per token, <eos> included) of the epoch with the best "
        "validation perplexity; ours: the mean over seeds. A cell is computed where the paper reports one.",
        *diff_footer(ctx),
    ]
    return columns, rows, footer


@table.register
def next_words(artefact: NextWordTable, ctx: Context, paper: str, artefact_id: str):
    """Tying Table 4: per phrase, each system's top predictions, the paper's beside ours, and
    the probability and rank our models give the word that follows (bold in the paper)."""
    columns = ["phrase", "next word(s)"]
    for s in artefact.systems:
        columns += [f"{s.name} paper", f"{s.name} ours", f"{s.name} ours p(next)", f"{s.name} ours rank of next"]
    columns += ["note"]
    if ctx.corpus_status(artefact.corpus):
        return (
            columns,
            [{"phrase": p, "next word(s)": f, "note": ctx.corpus_status(artefact.corpus)} for p, f in artefact.phrases],
            [],
        )
    chosen = {s.name: chosen_lm_jobs(ctx, artefact.corpus, s.experiment, s.tune) for s in artefact.systems}
    predictions = {
        name: json.loads(Path(layout.next_words_path(jobs[0], paper, artefact_id)).read_text())
        for name, (jobs, _) in chosen.items()
    }
    rows = []
    for i, (phrase, following) in enumerate(artefact.phrases):
        out = {"phrase": phrase, "next word(s)": following}
        unknown = set()
        for s in artefact.systems:
            ours = predictions[s.name][i]
            out |= {
                f"{s.name} paper": artefact.paper.get(phrase, {}).get(s.name),
                f"{s.name} ours": ", ".join(f"{p['word']} {p['probability']:.2g}" for p in ours["predictions"]),
                f"{s.name} ours p(next)": f"{ours['next_probability']:.3g}",
                f"{s.name} ours rank of next": ours["next_rank"],
            }
            unknown.update(ours.get("unknown", ()))
        notes = [f"not in the vocabulary, read as <unk>: {', '.join(sorted(unknown))}"] if unknown else []
        if artefact.context and any("not found" in predictions[s.name][i]["context"] for s in artefact.systems):
            notes.append(f"not in the {artefact.context} text: read from the start of a sentence")
        out["note"] = "; ".join(notes)
        rows.append(out)
    seed = ctx.seeds[0]
    reading = (
        f"in the {artefact.context} text, after the text before it (a phrase it lacks: from the start of a "
        "sentence, and its note says so)"
        if artefact.context
        else "from the start of a sentence"
    )
    footer = [
        f"Top {artefact.top} predictions, most probable first, after reading each phrase {reading} "
        f"(seed {seed}); the paper's as its Table 4 prints them.",
        *(f"{name}: {tuning}" for name, (_, tuning) in chosen.items() if tuning),
        *mean_probability_footer(artefact, chosen, paper, artefact_id),
    ]
    return columns, rows, footer


def word_probability_blocks(jobs: list[Job], words: tuple[str, ...], paper: str, artefact_id: str) -> dict:
    """word -> per seed of `jobs`, [sum of p(word), positions] per block of the context text, over the
    positions where another word comes next (`lm_predict --mean-probability-of`), for the words in
    every seed's vocabulary."""
    read = [json.loads(Path(layout.mean_probability_path(j, paper, artefact_id)).read_text()) for j in jobs]
    return {w: tuple(r["words"][w] for r in read) for w in words if read and all(w in r["words"] for r in read)}


def mean_probability_footer(artefact: NextWordTable, chosen: dict, paper: str, artefact_id: str) -> list[str]:
    """Each system's mean probability of the `mean_probability_of` words where another word comes next
    in the context text: the mean over its seeds of sum(p) / positions, the number its claims read
    (`inference.observed` of the same blocks)."""
    if not artefact.mean_probability_of:
        return []
    means = {}
    for name, (jobs, _) in chosen.items():
        for word, seeds in word_probability_blocks(jobs, artefact.mean_probability_of, paper, artefact_id).items():
            mean = observed(Cell(name, word, "probability", seeds, seed_labels(j.seed for j in jobs)))
            means.setdefault(word, []).append(f"{name} {mean:.4g}")
    absent = [w for w in artefact.mean_probability_of if w not in means]
    return [
        f"Mean probability each model gives a word where another word comes next in the {artefact.context} text, "
        "p(w | the text before it) at each position whose next token is not w, the mean over its seeds (the claims' "
        "evidence, per block of test tokens): "
        + "; ".join(f"{word}: {', '.join(values)}" for word, values in means.items())
        + (f"; not in the vocabulary: {', '.join(absent)}" if absent else "")
        + "."
    ]


def same_text(a: str, b: str) -> bool:
    """Equal once reduced to their ASCII letters and digits, lower-cased: blind to tokenization,
    punctuation, quote styles and to accented letters (which the paper's text extraction lost)."""

    def reduce(text: str) -> str:
        return "".join(c for c in text.lower() if c.isascii() and c.isalnum())

    return reduce(a) == reduce(b)


@table.register
def examples(artefact: ExampleTable, ctx: Context, paper: str, artefact_id: str):
    """vMF Table 10: the paper's example when the test set holds it (by source or reference,
    `same_text`), else the first test sentence of at least `min_length` tokens, by every system,
    the paper's translations beside ours."""
    columns = ["", "text", "paper", "note"]
    column = artefact.column
    if ctx.status(column):
        return columns, [{"": "Input", "note": ctx.status(column)}], []
    src, tgt = column.pair.split("-")
    data = layout.data_dir(column.dataset, column.pair)
    sources, references = read_lines(Path(f"{data}/raw/test.{src}")), read_lines(Path(f"{data}/raw/test.{tgt}"))
    found = next(
        (
            i
            for i, (s, r) in enumerate(zip(sources, references, strict=True))
            if artefact.paper and (same_text(s, artefact.paper["Input"]) or same_text(r, artefact.paper["Reference"]))
        ),
        None,
    )
    if found is not None:
        index = found
        shown = (
            f"Test sentence {index + 1} of {column.dataset} {column.pair}: the paper's own example, found by "
            "its text (ASCII letters and digits, lower-cased; the paper's text extraction lost its accents)."
        )
    else:
        tokenized = read_lines(Path(f"{data}/tok/test.{src}"))
        index = next((i for i, line in enumerate(tokenized) if len(line.split()) >= artefact.min_length), 0)
        shown = (
            f"Test sentence {index + 1} of {column.dataset} {column.pair}: the first with at least "
            f"{artefact.min_length} tokens, because this test set does not hold the paper's example"
            + (" (its column: the paper's sentence and translations, for comparison only)." if artefact.paper else ".")
        )
    rows = [
        {"": "Input", "text": sources[index], "paper": artefact.paper.get("Input")},
        {"": "Reference", "text": references[index], "paper": artefact.paper.get("Reference")},
    ]
    for s in artefact.systems:
        job = ctx.system_jobs(column, s)[0]
        rows.append(
            {
                "": f"Predicted ({s.name})",
                "text": read_lines(Path(layout.hypothesis_path(job.dataset, job.pair, job.experiment, job.seed)))[
                    index
                ],
                "paper": artefact.paper.get(s.name),
                "note": f"seed {job.seed}",
            }
        )
    return columns, rows, [shown]


@table.register
def representations(artefact: RepresentationTable, ctx: Context, paper: str, artefact_id: str):
    """Joint Table 1: per query and rank, each column's nearest piece (and its cosine), the
    paper's beside ours."""
    headers = list(dict.fromkeys(header for header, _, _ in artefact.sides))
    columns = ["query", "rank"] + [f"{h} {kind}" for h in headers for kind in ("paper", "ours")] + ["note"]
    queries = ctx.queries or artefact.queries
    if ctx.status(artefact.column):
        return columns, [{"query": q, "note": ctx.status(artefact.column)} for q in queries], []
    found = {}
    for header, experiment, side in artefact.sides:
        job = ctx.jobs(artefact.column, experiment)[0]
        result = json.loads(Path(layout.representations_path(job, paper, artefact_id)).read_text())
        found[header] = {
            q: [f"{piece} ({cosine:.2f})" for piece, cosine in words[side]] for q, words in result["queries"].items()
        }
    rows = []
    for query in queries:
        label = f"{query} ({artefact.labels[query]})" if query in artefact.labels else query
        missing = all(query not in words for words in found.values())
        for rank in range(1, artefact.top + 1):
            out = {"query": label, "rank": rank}
            for header in headers:
                paper_words, ours = artefact.paper.get(query, {}).get(header, ()), found[header].get(query, [])
                out[f"{header} paper"] = paper_words[rank - 1] if rank <= len(paper_words) else None
                out[f"{header} ours"] = ours[rank - 1] if rank <= len(ours) else None
            if missing and rank == 1:
                out["note"] = "not one piece of the target vocabulary"
            rows.append(out)
    footer = [
        f"Nearest pieces by cosine (ours: seed {ctx.seeds[0]}, special tokens left out; sentencepiece's ▁ starts "
        "a word, the paper's @@ marks a piece that does not end one); input: the decoder's input embedding E; "
        "output: g_out(E), what the context is scored against (W for NMT)."
    ]
    return columns, rows, footer


@table.register
def sampling_speed(artefact: SamplingTable, ctx: Context, paper: str, artefact_id: str):
    """Joint Table 4, from the sampling benchmark: tokens per second, and as ratios to the first
    row, which compare across scales (the paper's are on a GPU at 512 units and |V| = 128K)."""
    measured = json.loads(Path(layout.benchmark_path(paper, artefact_id)).read_text())
    columns = ["experiment", *artefact.label_columns]
    for share in artefact.shares:
        columns += [
            f"{share:.0%} paper",
            f"{share:.0%} ours",
            f"{share:.0%} ours sd",
            f"{share:.0%} paper ratio",
            f"{share:.0%} ours ratio",
        ]
    first = artefact.rows[0]
    rows = []
    for row in artefact.rows:
        out = {"experiment": row.experiment, **row.label}
        for share in artefact.shares:
            key = f"{share:g}"
            ours, base = measured["rows"][row.experiment].get(key), measured["rows"][first.experiment].get(key)
            out |= {
                f"{share:.0%} paper": row.paper.get(key),
                f"{share:.0%} ours": ours,
                f"{share:.0%} ours sd": measured.get("sd", {}).get(row.experiment, {}).get(key),
                f"{share:.0%} paper ratio": ratio(row.paper.get(key), first.paper.get(key)),
                f"{share:.0%} ours ratio": ratio(ours, base),
            }
        rows.append(out)
    settings = ", ".join(f"{k} {v}" for k, v in measured["settings"].items())
    footer = [
        f"Target tokens per second over one training step (forward, backward, Adam) of untrained models fed "
        f"random batches, each share of a {measured['sampling_vocab']}-piece vocabulary sampled per batch, timed in "
        f"one run ({settings}); ours: the mean over the timed repeats (each the mean over its steps), sd: their "
        f"sample standard deviation; ratios to {first.experiment}."
    ]
    return columns, rows, footer


def trained_layer_parameters(ctx: Context, column, experiment: str) -> tuple[dict, str]:
    """({"input": n, "output": m} of an experiment's first seed trained on `column`, or {}) and
    why it is empty."""
    jobs = ctx.jobs(column, experiment)[:1]
    if not jobs:
        return {}, ctx.status(column)
    counts = read_metrics(jobs[0])[-1].get("layer_parameters")
    return (counts, "") if counts else ({}, f"{layout.metrics_path(jobs[0])} predates per-layer counts: retrain it")


@table.register
def parameters(artefact: ParameterTable, ctx: Context, paper: str, artefact_id: str):
    """vMF Table 4: the layers of the models trained on the table's column (their metrics), and
    the output-layer benchmark's timings at the paper's size: a training step's, and greedy
    decoding's (an extra column, `DECODING_MS`)."""
    measured = json.loads(Path(layout.benchmark_path(paper, artefact_id)).read_text())
    trained = {row.experiment: trained_layer_parameters(ctx, artefact.column, row.experiment) for row in artefact.rows}
    columns = ["experiment", *artefact.label_columns]
    quantities = (("input", "input layer parameters"), ("output", "output layer parameters"), *PARAMETER_TABLE_TIMINGS)
    timings = dict(PARAMETER_TABLE_TIMINGS)
    for key, name in quantities:
        columns += [
            f"{name} paper",
            f"{name} ours",
            *([f"{name} ours sd"] if key in timings else []),
            f"{name} paper ratio",
            f"{name} ours ratio",
        ]
    columns += ["note"]
    first = artefact.rows[0]
    rows = []
    for row in artefact.rows:
        counts, why = trained[row.experiment]
        timed = measured["rows"][row.experiment]
        ours = {**counts, **{key: timed.get(key) for key in timings}}
        reference = {
            **trained[first.experiment][0],
            **{key: measured["rows"][first.experiment].get(key) for key in timings},
        }
        out = {"experiment": row.experiment, **row.label, "note": "; ".join(n for n in (row.note, why) if n)}
        for key, name in quantities:
            out[f"{name} paper"] = row.paper.get(key)
            out[f"{name} ours"] = ours.get(key)
            out[f"{name} paper ratio"] = ratio(row.paper.get(key), first.paper.get(key))
            out[f"{name} ours ratio"] = ratio(ours.get(key), reference.get(key))
            if key in timings:
                out[f"{name} ours sd"] = timed.get(f"{key}_sd")
        rows.append(out)
    settings = ", ".join(f"{k} {v}" for k, v in measured["settings"].items())
    column = artefact.column
    footer = [
        f"Parameters: counted in the models trained on {column.dataset} {column.pair} (seed {ctx.seeds[0]}, their "
        "vocabularies), with the layers' biases, which the paper's counts leave out. ms per batch: untrained models "
        f"at the paper's sizes, timed in one run ({settings}), the mean over the timed repeats (each the mean over "
        f"its steps), sd: their sample standard deviation. {DECODING_MS} (not in the paper, whose §5 says only that "
        "translating 'takes similar time as that of softmax-based models'): greedy decoding of one batch of the "
        "same size, as many steps as the benchmark's length, </s> banned, in fp32 as decode jobs run, timed in the "
        f"same run and repeats; empty where the benchmark predates it. Ratios to {first.experiment}."
    ]
    return columns, rows, footer
