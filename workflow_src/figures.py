"""Figures: learning curves from the training logs, throughput from a benchmark, subspace
distances from the language models' results, scores against a model setting and METEOR by
frequency bin from the models' scores (matplotlib)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from workflow_src.analysis import chosen_jobs, chosen_lm_jobs, read_metrics  # noqa: E402
from workflow_src.atomic import atomic_output  # noqa: E402
from workflow_src.layout import benchmark_path, lm_dir, meteor_bins_path, score_path  # noqa: E402
from workflow_src.registry import (Context, Figure, LearningCurves, MeteorByFrequency, PerplexityCurves,  # noqa: E402
                                   ScoreAgainst, SubspaceSweep, Throughput)


def empty_panel(ax, why: str) -> None:
    """Say in the panel why it has no data (its data set or pair is not configured)."""
    ax.text(0.5, 0.5, why, ha="center", va="center", wrap=True, transform=ax.transAxes)


def learning_curves(ax, panel: LearningCurves, ctx: Context) -> None:
    """Development BLEU against epoch: the mean over seeds, and their range when there are several
    (the legend says how many), up to the last epoch every seed trained."""
    if ctx.status(panel.column):
        empty_panel(ax, ctx.status(panel.column))
    for system in panel.systems:
        histories = [read_metrics(j) for j in ctx.system_jobs(panel.column, system)]
        if not histories:
            continue
        epochs = min(len(h) for h in histories)
        label = system.name if len(histories) == 1 else f"{system.name} (mean of {len(histories)} seeds, range shaded)"
        curve(ax, label, np.array([[r["dev_bleu"] for r in h[:epochs]] for h in histories]))
    ax.set(title=panel.title, xlabel="epoch", ylabel="development BLEU")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.legend()


def perplexity_curves(ax, panel: PerplexityCurves, ctx: Context) -> None:
    """Validation perplexity against epoch: the mean over seeds, and their range when there are several."""
    if ctx.corpus_status(panel.corpus):
        empty_panel(ax, ctx.corpus_status(panel.corpus))
    for system in panel.systems:
        jobs, _ = chosen_lm_jobs(ctx, panel.corpus, system.experiment, system.tune)  # γ chosen on validation
        histories = [[json.loads(line) for line in Path(f"{lm_dir(j)}/metrics.jsonl").read_text().splitlines()]
                     for j in jobs]
        if histories:
            curve(ax, system.name, np.array([[r["valid_perplexity"] for r in h[:min(map(len, histories))]] for h in histories]))
    ax.set(title=panel.title, xlabel="epoch", ylabel="validation perplexity")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.legend()


def subspace_sweep(ax, panel: SubspaceSweep, ctx: Context) -> None:
    """d(L^T, W) against the swept parameter: the mean over seeds, with the range and each run."""
    if ctx.corpus_status(panel.corpus):
        empty_panel(ax, ctx.corpus_status(panel.corpus))
    results = [(value, [json.loads(Path(f"{lm_dir(j)}/perplexity.json").read_text())
                        for j in ctx.lm_jobs(panel.corpus, name)]) for value, name in ctx.sweep(panel)]
    results = [(value, runs) for value, runs in results if runs]
    if results:
        x = np.array([value for value, _ in results])
        runs = [np.array([r["subspace_distance"] for r in rs]) for _, rs in results]
        sizes = sorted({(r["units"], r["train_tokens"]) for _, rs in results for r in rs})
        ax.text(0, -0.27, "ours: " + "; ".join(f"{u} units, {t} training words" for u, t in sizes),
                transform=ax.transAxes, fontsize=7, va="top")
        line, = ax.plot(x, [r.mean() for r in runs], marker="o", label=f"mean of {min(map(len, runs))} runs")
        ax.fill_between(x, [r.min() for r in runs], [r.max() for r in runs], alpha=0.2, color=line.get_color(),
                        label="range")
        for value, r in zip(x, runs):
            ax.scatter([value] * len(r), r, s=6, color=line.get_color(), alpha=0.5)
            ax.annotate(f"{r.mean():.2f}", (value, r.mean()), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize=7)
        ax.legend()
    symbol = {"beta": "β", "tau": "τ"}.get(panel.parameter, panel.parameter)
    ax.set(title=panel.title, xlabel=symbol, ylabel="subspace distance d(Lᵀ, W)", ylim=(0, 1.05))
    if panel.paper:
        ax.text(0, -0.2, f"paper: {panel.paper}", transform=ax.transAxes, fontsize=7, va="top")


def score_against(ax, panel: ScoreAgainst, ctx: Context) -> None:
    """The swept system's test score at each point (mean over seeds, and their range), the
    baselines' as horizontal lines."""
    if ctx.status(panel.column):
        empty_panel(ax, ctx.status(panel.column))

    def scores(experiment: str) -> list[float]:
        return [json.loads(Path(score_path(j.dataset, j.pair, j.experiment, j.seed, panel.search, panel.column.metric)).read_text())["score"]
                for j in ctx.jobs(panel.column, experiment)]

    points = [(x, scores(e)) for x, e in panel.points]
    points = [(x, s) for x, s in points if s]
    if points:
        x = [p for p, _ in points]
        line, = ax.plot(x, [np.mean(s) for _, s in points], marker="o", label=panel.name)
        ax.fill_between(x, [min(s) for _, s in points], [max(s) for _, s in points], alpha=0.2, color=line.get_color())
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [f"{p:g}" for p in x])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    for system in panel.baselines:
        s = scores(system.experiment)
        if s:
            ax.axhline(np.mean(s), linestyle="--", label=system.name)
    ax.set(title=panel.title, xlabel=panel.xlabel, ylabel=panel.column.metric.replace("bleu_tok", "BLEU (tokenized)"))
    ax.legend()


def meteor_by_frequency(ax, panel: MeteorByFrequency, ctx: Context, paper: str, artefact_id: str) -> None:
    """Bars per frequency bin, one per system: METEOR (%) as the mean over seeds, with their range;
    a tuned system is its candidate with the best development BLEU."""
    if ctx.status(panel.column):
        empty_panel(ax, ctx.status(panel.column))
    width = 0.8 / len(panel.systems)
    notes, signature = [], ""
    for k, system in enumerate(panel.systems):
        jobs, tuning = chosen_jobs(ctx, panel.column, system.experiment_for(panel.column), system.tune)
        notes += [tuning] if tuning else []
        results = [json.loads(Path(meteor_bins_path(j, paper, artefact_id, panel.search)).read_text()) for j in jobs]
        if not results:
            continue
        signature = results[0]["signature"]
        scores = np.array([[100 * r["bins"][b]["score"] for b in panel.bins] for r in results])
        x = np.arange(len(panel.bins)) + (k - (len(panel.systems) - 1) / 2) * width
        mean = scores.mean(0)
        ax.bar(x, mean, width, yerr=[mean - scores.min(0), scores.max(0) - mean] if len(scores) > 1 else None,
               label=system.name, capsize=2)
        for xi, value in zip(x, mean):
            ax.annotate(f"{value:.1f}", (xi, value), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=6)
    ax.set_xticks(np.arange(len(panel.bins)), panel.bins)
    ax.set(title=panel.title, xlabel="output frequency bin", ylabel="METEOR (%)")
    if signature:
        ax.legend()
        ax.text(0, -0.2, textwrap.fill("; ".join([signature, *notes]), 90), transform=ax.transAxes, fontsize=6, va="top")


def curve(ax, label: str, values: np.ndarray) -> None:
    """One line per system over epochs (seeds x epochs): the mean, and the range over seeds."""
    x = np.arange(1, values.shape[1] + 1)
    line, = ax.plot(x, values.mean(0), marker="o", label=label)
    if len(values) > 1:
        ax.fill_between(x, values.min(0), values.max(0), alpha=0.2, color=line.get_color())


def throughput(ax, panel: Throughput, benchmark: dict) -> None:
    """Training samples per second against batch size, up to the largest batch each model fits."""
    for system in panel.systems:
        points = benchmark["systems"][system.experiment]
        sizes = sorted(int(b) for b in points)
        ax.plot(sizes, [points[str(b)] for b in sizes], marker="o", label=system.name)
    ax.set(title=panel.title, xlabel="batch size", ylabel="samples per second")
    ax.set_xscale("log", base=2)
    ax.set_xticks(benchmark["batch_sizes"], [str(b) for b in benchmark["batch_sizes"]])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.legend()


def draw(figure: Figure, ctx: Context, paper: str, artefact_id: str, title: str, data_note: str, prefix: Path) -> None:
    width = 6 * len(figure.panels)
    fig, axes = plt.subplots(1, len(figure.panels), figsize=(width, 4.5), squeeze=False)
    for ax, panel in zip(axes[0], figure.panels, strict=True):
        if isinstance(panel, Throughput):
            benchmark = json.loads(Path(benchmark_path(paper, artefact_id)).read_text())
            throughput(ax, panel, benchmark)
            ax.text(0, -0.18, textwrap.fill(benchmark["note"], 12 * 6), transform=ax.transAxes, fontsize=7, va="top")
        elif isinstance(panel, PerplexityCurves):
            perplexity_curves(ax, panel, ctx)
        elif isinstance(panel, SubspaceSweep):
            subspace_sweep(ax, panel, ctx)
        elif isinstance(panel, ScoreAgainst):
            score_against(ax, panel, ctx)
        elif isinstance(panel, MeteorByFrequency):
            meteor_by_frequency(ax, panel, ctx, paper, artefact_id)
        else:
            learning_curves(ax, panel, ctx)
    fig.suptitle(textwrap.fill(title, 14 * width) + "\n" + textwrap.fill(data_note, 14 * width), fontsize=8)
    fig.tight_layout()
    for extension in ("png", "pdf"):
        with atomic_output(prefix.with_suffix(f".{extension}")) as tmp:
            fig.savefig(tmp, format=extension, dpi=120)
    plt.close(fig)
