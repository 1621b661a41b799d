"""Figures: learning curves from the training logs, throughput from a benchmark, subspace
distances from the language models' results, scores against a model setting and METEOR by
frequency bin from the models' scores (matplotlib).

Beside its PNG and PDF, a figure writes its data as CSV (`evidence.figure_csv`): one line per
replicate of each point it plots, `panel` the panel's title, `series` the system's name (a
subspace sweep's: `SUBSPACE_SERIES`), `x` the epoch, batch size, β or τ, the swept setting or
the frequency bin's index (none for a baseline's horizontal line), `y` the plotted value,
`replicate` "seed N" or (benchmarks) "repeat N". An empty panel writes no lines. Every figure also
writes `<figure>.evidence.json`: the per-unit evidence of its points, where its claims resample
units (METEOR by frequency bin: each seed's per-sentence statistics), else no cells."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from workflow_src.score import evidence  # noqa: E402
from workflow_src.report import table_evidence  # noqa: E402
from workflow_src.report.analysis import chosen_jobs, chosen_lm_jobs, read_metrics, read_perplexity  # noqa: E402
from workflow_src.atomic import atomic_output, write_text  # noqa: E402
from workflow_src.layout import benchmark_path, lm_dir, meteor_bins_path, score_path  # noqa: E402
from workflow_src.artefacts import (
    Context,
    Figure,
    LearningCurves,
    MeteorByFrequency,
    PerplexityCurves,
    ScoreAgainst,
    SubspaceSweep,
    Throughput,
)


SUBSPACE_SERIES = "d(Lᵀ, W)"
# one look per series of a panel (colour, line style, marker, bar hatch), all different, in the order
# the panel names its systems, so a system looks the same in every panel of a figure
SERIES_LOOKS = (
    ("C0", "-", "o", ""),
    ("C1", "--", "s", "//"),
    ("C2", ":", "^", ".."),
    ("C3", "-.", "D", "xx"),
    ("C4", (0, (5, 1, 1, 1, 1, 1)), "v", "\\\\"),
    ("C5", (0, (1, 3)), "P", "++"),
)
NOTE_FONTSIZE = 7
PANEL_WIDTH = 6  # inches


def line_look(k: int) -> dict:
    """The plot() arguments of a panel's k-th series."""
    colour, linestyle, marker, _ = SERIES_LOOKS[k % len(SERIES_LOOKS)]
    return {"color": colour, "linestyle": linestyle, "marker": marker}


def bar_look(k: int) -> dict:
    """The bar() arguments of a panel's k-th series."""
    colour, _, _, hatch = SERIES_LOOKS[k % len(SERIES_LOOKS)]
    return {"color": colour, "hatch": hatch, "edgecolor": "white"}


def runs_label(name: str, runs: int, unit: str = "run", spread: str = "range shaded") -> str:
    """A series' legend entry: its name, how many runs it is the mean of and how their spread is
    drawn (`spread`, '' when it is not)."""
    if runs == 1:
        return f"{name} (1 {unit})"
    return f"{name} (mean of {runs} {unit}s{', ' + spread if spread else ''})"


def wrap(text: str, fontsize: float = NOTE_FONTSIZE, width_inches: float = PANEL_WIDTH - 1.2) -> str:
    """Text broken into lines that fit a panel's width (about 0.55 em a character)."""
    return "\n".join(
        textwrap.fill(paragraph, max(20, int(width_inches * 72 / (0.55 * fontsize)))) for paragraph in text.split("\n")
    )


def point(panel, series: str, x: float | None, y: float, replicate: str) -> dict:
    """One line of a figure's CSV."""
    return {"panel": panel.title, "series": series, "x": x, "y": y, "replicate": replicate}


def seed_points(panel, series: str, x, jobs, values) -> list[dict]:
    """A point per job (a seed) at `x`."""
    return [point(panel, series, x, y, f"seed {j.seed}") for j, y in zip(jobs, values, strict=True)]


def curve_points(panel, series: str, jobs, values: np.ndarray) -> list[dict]:
    """Every seed's value at each epoch of a curve (seeds x epochs, epochs from 1)."""
    return [
        p for epoch in range(values.shape[1]) for p in seed_points(panel, series, epoch + 1, jobs, values[:, epoch])
    ]


def empty_panel(ax, why: str) -> None:
    """Say in the panel why it has no data (its data set or pair is not configured), inside it."""
    ax.text(0.5, 0.5, wrap(why, 9, PANEL_WIDTH - 2), ha="center", va="center", fontsize=9, transform=ax.transAxes)


def finish_panel(ax, notes: list[str]) -> None:
    """The legend (when the panel has labelled data) under the plot, where it covers no data, and
    the panel's notes under that, wrapped to the panel's width; a panel with no data has no ticks."""
    if not ax.has_data():
        ax.set_xticks([])
        ax.set_yticks([])
    below = ax.xaxis.label
    if ax.get_legend_handles_labels()[0]:
        below = ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8, frameon=False)
    if notes:  # x: the panel's left edge; y: under the legend (or the axis label)
        ax.annotate(
            wrap("\n".join(notes)),
            xy=(0, 0),
            xycoords=("axes fraction", below),
            xytext=(0, -4),
            textcoords="offset points",
            va="top",
            ha="left",
            fontsize=NOTE_FONTSIZE,
            annotation_clip=False,
        )


def learning_curves(ax, panel: LearningCurves, ctx: Context) -> tuple[list[dict], list[str]]:
    """Development BLEU against epoch: the mean over seeds, and their range when there are several
    (the legend says how many), up to the last epoch every seed trained."""
    if ctx.status(panel.column):
        empty_panel(ax, ctx.status(panel.column))
    points = []
    for k, system in enumerate(panel.systems):
        jobs = ctx.system_jobs(panel.column, system)
        histories = [read_metrics(j) for j in jobs]
        if not histories:
            continue
        epochs = min(len(h) for h in histories)
        values = np.array([[r["dev_bleu"] for r in h[:epochs]] for h in histories])
        curve(ax, k, runs_label(system.name, len(values)), values)
        points += curve_points(panel, system.name, jobs, values)
    ax.set(title=panel.title, xlabel="epoch", ylabel="development BLEU")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    return points, []


def perplexity_curves(ax, panel: PerplexityCurves, ctx: Context) -> tuple[list[dict], list[str]]:
    """Validation perplexity against epoch: the mean over seeds, and their range when there are
    several. The title says the width this run trained (each model's perplexity.json)."""
    if ctx.corpus_status(panel.corpus):
        empty_panel(ax, ctx.corpus_status(panel.corpus))
    points, units = [], set()
    for k, system in enumerate(panel.systems):
        jobs, _ = chosen_lm_jobs(ctx, panel.corpus, system.experiment, system.tune)  # γ chosen on validation
        histories = [read_metrics(j) for j in jobs]
        if histories:
            units |= {read_perplexity(j)["units"] for j in jobs}
            values = np.array([[r["valid_perplexity"] for r in h[: min(map(len, histories))]] for h in histories])
            curve(ax, k, runs_label(system.name, len(values)), values)
            points += curve_points(panel, system.name, jobs, values)
    trained = f"\nthis run: {' / '.join(map(str, sorted(units)))} units" if units else ""
    ax.set(title=f"{panel.title} in the paper{trained}", xlabel="epoch", ylabel="validation perplexity")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    return points, []


def subspace_sweep(ax, panel: SubspaceSweep, ctx: Context) -> tuple[list[dict], list[str]]:
    """d(L^T, W) against the swept parameter: the mean over seeds, with the range and each run."""
    if ctx.corpus_status(panel.corpus):
        empty_panel(ax, ctx.corpus_status(panel.corpus))
    jobs = {value: ctx.lm_jobs(panel.corpus, name) for value, name in ctx.sweep(panel)}
    results = [
        (value, [json.loads(Path(f"{lm_dir(j)}/perplexity.json").read_text()) for j in jobs[value]])
        for value, _ in ctx.sweep(panel)
    ]
    results = [(value, runs) for value, runs in results if runs]
    points = [
        p
        for value, runs in results
        for p in seed_points(panel, SUBSPACE_SERIES, value, jobs[value], [r["subspace_distance"] for r in runs])
    ]
    title = panel.title
    if results:
        x = np.array([value for value, _ in results])
        runs = [np.array([r["subspace_distance"] for r in rs]) for _, rs in results]
        sizes = sorted({(r["units"], r["train_tokens"]) for _, rs in results for r in rs})
        fewest = min(map(len, runs))
        title += "\nthis run: " + "; ".join(f"{u} units, {t} training words" for u, t in sizes)
        look = line_look(0)
        ax.plot(x, [r.mean() for r in runs], **look, label=runs_label(SUBSPACE_SERIES, fewest))
        if fewest > 1 or any(len(r) > 1 for r in runs):
            ax.fill_between(x, [r.min() for r in runs], [r.max() for r in runs], alpha=0.2, color=look["color"])
        for value, r in zip(x, runs):
            ax.scatter([value] * len(r), r, s=6, color=look["color"], alpha=0.5)
            ax.annotate(
                f"{r.mean():.2f}", (value, r.mean()), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7
            )
    symbol = {"beta": "β", "tau": "τ"}.get(panel.parameter, panel.parameter)
    ax.set(title=title, xlabel=symbol, ylabel="subspace distance d(Lᵀ, W)", ylim=(0, 1.05))
    return points, [f"paper: {panel.paper}"] if panel.paper else []


def score_against(ax, panel: ScoreAgainst, ctx: Context) -> tuple[list[dict], list[str], list[evidence.Cell]]:
    """The swept system's test score at each point (mean over seeds, and their range), the
    baselines' as horizontal lines; its evidence (`score_cells`) at the same (series, panel, x)."""
    if ctx.status(panel.column):
        empty_panel(ax, ctx.status(panel.column))

    data = []

    def scores(experiment: str, series: str, x: float | None) -> list[float]:
        jobs = ctx.jobs(panel.column, experiment)
        values = [
            json.loads(
                Path(score_path(j.dataset, j.pair, j.experiment, j.seed, panel.search, panel.column.metric)).read_text()
            )["score"]
            for j in jobs
        ]
        data.extend(seed_points(panel, series, x, jobs, values))
        return values

    points = [(x, scores(e, panel.name, x)) for x, e in panel.points]
    points = [(x, s) for x, s in points if s]
    if points:
        x = [p for p, _ in points]
        runs = min(len(s) for _, s in points)
        look = line_look(0)
        ax.plot(x, [np.mean(s) for _, s in points], **look, label=runs_label(panel.name, runs))
        if runs > 1:
            ax.fill_between(x, [min(s) for _, s in points], [max(s) for _, s in points], alpha=0.2, color=look["color"])
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [f"{p:g}" for p in x])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    for k, system in enumerate(panel.baselines, start=1):
        s = scores(system.experiment, system.name, None)
        if s:
            look = line_look(k)
            ax.axhline(
                np.mean(s),
                color=look["color"],
                linestyle=look["linestyle"],
                label=runs_label(system.name, len(s), spread=""),
            )
    ax.set(title=panel.title, xlabel=panel.xlabel, ylabel=panel.column.metric.replace("bleu_tok", "BLEU (tokenized)"))
    return data, [], score_cells(panel, ctx)


def score_cells(panel: ScoreAgainst, ctx: Context) -> list[evidence.Cell]:
    """Each point's (and baseline's) `bleu` evidence, as a table's (`table_evidence.bleu_cell`): each seed's
    BLEU statistics per test sentence, at (series, panel, x; a baseline's x None)."""
    if ctx.status(panel.column):
        return []
    series = [(panel.name, x, e) for x, e in panel.points] + [(s.name, None, s.experiment) for s in panel.baselines]
    chosen = {(e, panel.column): ctx.jobs(panel.column, e) for _, _, e in series}
    _, statistics_of = table_evidence.sentence_statistics_by_seed(
        panel.column, chosen, {e: panel.search for _, _, e in series}
    )
    return [
        dataclasses.replace(
            table_evidence.bleu_cell(e, panel.column, statistics_of, chosen), row=name, column=panel.title, x=x
        )
        for name, x, e in series
        if chosen[e, panel.column]
    ]


def meteor_cells(
    panel: MeteorByFrequency, system: str, jobs, results: list[dict], paths: list[str]
) -> list[evidence.Cell]:
    """Per bin (x: its index), a system's `meteor` evidence: each seed's per-sentence statistics
    (`meteor.binned_meteor`), with the parameters they were scored with."""
    for path, result in zip(paths, results, strict=True):
        if any("sentences" not in result["bins"][b] for b in panel.bins):
            raise ValueError(
                f"{path} has no per-sentence statistics (written before they were kept): "
                "rerun it with `snakemake --forcerun meteor_by_frequency ...`"
            )
    return [
        evidence.Cell(
            system,
            panel.title,
            "meteor",
            tuple(r["bins"][b]["sentences"] for r in results),
            evidence.seed_labels(j.seed for j in jobs),
            float(x),
            results[0]["parameters"],
        )
        for x, b in enumerate(panel.bins)
    ]


def meteor_by_frequency(
    ax, panel: MeteorByFrequency, ctx: Context, paper: str, artefact_id: str
) -> tuple[list[dict], list[str], list[evidence.Cell]]:
    """Bars per frequency bin, one per system: METEOR (%) as the mean over seeds, with their range;
    a tuned system is its candidate with the best development BLEU. Its data's x: the bin's index
    in `panel.bins` (0: high); its evidence (`meteor_cells`) is at the same (system, panel, x)."""
    if ctx.status(panel.column):
        empty_panel(ax, ctx.status(panel.column))
    width = 0.8 / len(panel.systems)
    notes, signature, points, cells = [], "", [], []
    for k, system in enumerate(panel.systems):
        jobs, tuning = chosen_jobs(ctx, panel.column, system.experiment_for(panel.column), system.tune)
        notes += [tuning] if tuning else []
        paths = [meteor_bins_path(j, paper, artefact_id, panel.search) for j in jobs]
        results = [json.loads(Path(path).read_text()) for path in paths]
        if not results:
            continue
        signature = results[0]["signature"]
        scores = np.array([[100 * r["bins"][b]["score"] for b in panel.bins] for r in results])
        points += [p for b in range(len(panel.bins)) for p in seed_points(panel, system.name, b, jobs, scores[:, b])]
        cells += meteor_cells(panel, system.name, jobs, results, paths)
        x = np.arange(len(panel.bins)) + (k - (len(panel.systems) - 1) / 2) * width
        mean = scores.mean(0)
        ax.bar(
            x,
            mean,
            width,
            yerr=[mean - scores.min(0), scores.max(0) - mean] if len(scores) > 1 else None,
            label=runs_label(system.name, len(scores), spread="range as error bars"),
            capsize=2,
            **bar_look(k),
        )
        for xi, value in zip(x, mean):
            ax.annotate(f"{value:.1f}", (xi, value), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=6)
    ax.set_xticks(np.arange(len(panel.bins)), panel.bins)
    ax.set(title=panel.title, xlabel="output frequency bin", ylabel="METEOR (%)")
    return points, [signature, *notes] if signature else [], cells


def curve(ax, k: int, label: str, values: np.ndarray) -> None:
    """A panel's k-th system over epochs (seeds x epochs): the mean, and the range over seeds."""
    x = np.arange(1, values.shape[1] + 1)
    look = line_look(k)
    ax.plot(x, values.mean(0), **look, label=label)
    if len(values) > 1:
        ax.fill_between(x, values.min(0), values.max(0), alpha=0.2, color=look["color"])


def throughput(ax, panel: Throughput, benchmark: dict) -> tuple[list[dict], list[str]]:
    """Training samples per second against batch size, up to the largest batch each model fits
    (the mean over the benchmark's timed repeats; its data: each repeat's)."""
    data = []
    for k, system in enumerate(panel.systems):
        points = benchmark["systems"][system.experiment]
        sizes = sorted(int(b) for b in points)
        repeats = benchmark.get("repeats", {}).get(system.experiment, {})
        timed = min((len(r) for r in repeats.values()), default=1)
        ax.plot(
            sizes,
            [points[str(b)] for b in sizes],
            **line_look(k),
            label=runs_label(system.name, timed, unit="timed repeat", spread=""),
        )
        data += [
            point(panel, system.name, b, y, label)
            for b in sizes
            for y, label in zip(repeats.get(str(b), []), evidence.repeat_labels(len(repeats.get(str(b), []))))
        ]
    ax.set(title=panel.title, xlabel="batch size", ylabel="samples per second")
    ax.set_xscale("log", base=2)
    ax.set_xticks(benchmark["batch_sizes"], [str(b) for b in benchmark["batch_sizes"]])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    return data, [benchmark["note"]]


def make_figure(figure: Figure, ctx: Context, paper: str, artefact_id: str, title: str, data_note: str):
    """(the matplotlib figure, its data's lines, its per-unit evidence cells): one panel beside the
    other, each with its legend and notes under it."""
    width = PANEL_WIDTH * len(figure.panels)
    fig, axes = plt.subplots(1, len(figure.panels), figsize=(width, 5.5), squeeze=False)
    points, cells = [], []
    for ax, panel in zip(axes[0], figure.panels, strict=True):
        if isinstance(panel, Throughput):
            panel_points, notes = throughput(
                ax, panel, json.loads(Path(benchmark_path(paper, artefact_id)).read_text())
            )
        elif isinstance(panel, PerplexityCurves):
            panel_points, notes = perplexity_curves(ax, panel, ctx)
        elif isinstance(panel, SubspaceSweep):
            panel_points, notes = subspace_sweep(ax, panel, ctx)
        elif isinstance(panel, ScoreAgainst):
            panel_points, notes, panel_cells = score_against(ax, panel, ctx)
            cells += panel_cells
        elif isinstance(panel, MeteorByFrequency):
            panel_points, notes, panel_cells = meteor_by_frequency(ax, panel, ctx, paper, artefact_id)
            cells += panel_cells
        else:
            panel_points, notes = learning_curves(ax, panel, ctx)
        points += panel_points
        finish_panel(ax, notes)
    fig.suptitle(wrap(title, 8, width) + "\n" + wrap(data_note, 8, width), fontsize=8)
    fig.tight_layout()
    return fig, points, cells


def draw(figure: Figure, ctx: Context, paper: str, artefact_id: str, title: str, data_note: str, prefix: Path) -> None:
    """The figure as PNG and PDF, its data as CSV and its per-unit evidence as .evidence.json."""
    fig, points, cells = make_figure(figure, ctx, paper, artefact_id, title, data_note)
    for extension in ("png", "pdf"):
        with atomic_output(prefix.with_suffix(f".{extension}")) as tmp:
            fig.savefig(tmp, format=extension, dpi=120, bbox_inches="tight")
    plt.close(fig)
    write_text(prefix.with_suffix(".csv"), evidence.figure_csv(points))
    evidence.write(prefix.with_suffix(".evidence.json"), cells)
