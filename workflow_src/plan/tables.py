"""The plan's tables: every job (`<prefix>.jobs.csv`), hours per table, paper and in total
(`<prefix>.csv`), every family (`<prefix>.families.csv`), as CSV and as the Markdown of `<prefix>.md`."""

from __future__ import annotations

import csv
import io
import json

from workflow_src import layout
from workflow_src.plan.costmodel import MODES, CostModel
from workflow_src.tables import markdown_table
from workflow_src.plan.jobs import PlannedJob, family_label, metrics_file
from workflow_src.plan.timing import (
    GPU_COUNTS,
    JOBS_PER_DEVICE_CHOICES,
    Timing,
    job_seconds,
    modelled_precision,
    modelled_wall_hours,
    wall_hours,
)

# The modelled columns of a job, eager; as graphs each is named by `named` (h100_graphs_...)
MODELLED = [
    "h100_modelled_hours",
    "h100_busy_hours",
    "h100_launch_bound_hours",
    "h100_flop_hours",
    "h100_memory_hours",
    "h100_latency_hours",
    "h100_recurrent_hours",
]
JOB_COLUMNS = [
    "kind",
    "dataset",
    "pair",
    "experiment",
    "seed",
    "artefacts",
    "searches",
    "exclusive",
    "family",
    "corpus_source",
    "steps_per_epoch",
    "epochs",
    "step_seconds",
    "train_hours",
    "validation_hours",
    "decoding_hours",
    "device_hours",
    *MODELLED,
    "h100_floor_hours",
    "flops",
    "bytes",
    *(f"h100_graphs_{c.removeprefix('h100_')}" for c in MODELLED),
    "metrics",
    "note",
]
SUMMARY_COLUMNS = [
    "level",
    "paper",
    "artefact",
    "jobs",
    "jobs_without_size",
    "device_hours",
    "h100_modelled_hours",
    "h100_busy_hours",
    "h100_floor_hours",
    *(f"wall_hours_gpu{n}" for n in GPU_COUNTS),
    *(f"h100_wall_hours_gpu{n}" for n in GPU_COUNTS),
    "h100_graphs_modelled_hours",
    "h100_graphs_busy_hours",
    *(f"h100_graphs_wall_hours_gpu{n}" for n in GPU_COUNTS),
]
FAMILY_COLUMNS = [
    "family",
    "target_tokens_per_step",
    "step_seconds",
    "tokens_per_second",
    "forward_seconds",
    "decode_seconds",
    "step_gflop",
    "step_kernels",
    "step_operators",
    "step_views",
    "step_optimiser_mb",
    "step_syncs",
    "h100_step_seconds_modelled",
    "h100_step_busy_seconds_modelled",
    "h100_step_host_seconds_modelled",
    "h100_tokens_per_second_modelled",
    "h100_step_bound",
    "h100_graphs_step_seconds_modelled",
    "h100_graphs_step_busy_seconds_modelled",
    "jobs",
    "h100_hours",
    "h100_launch_bound_hours",
    "h100_device_bound_hours",
    "h100_flop_hours",
    "h100_memory_hours",
    "h100_latency_hours",
    "h100_recurrent_hours",
    "h100_floor_hours",
    "h100_graphs_hours",
    "h100_graphs_busy_hours",
    "h100_graphs_flop_hours",
    "h100_graphs_memory_hours",
    "h100_graphs_latency_hours",
    "h100_graphs_recurrent_hours",
]


def named(column: str, mode: str) -> str:
    """A modelled column's name in `mode`: as it is eager, h100_graphs_... as graphs."""
    return column if mode == "eager" else column.replace("h100_", "h100_graphs_", 1)


# -- formats -----------------------------------------------------------------------------------------
def cell(value) -> str:
    if value is None:
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def seconds_cell(value: float | None) -> str:
    return "not timed" if value is None else f"{value:.4f}"


def to_csv(columns: list[str], rows: list[dict]) -> str:
    """Every value as computed (hours of seconds-long demo jobs keep their digits)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def to_markdown(columns: list[str], rows: list[dict]) -> list[str]:
    return markdown_table(columns, [{c: cell(row.get(c)) for c in columns} for row in rows])


# -- jobs ----------------------------------------------------------------------------------------------
def modelled_totals(
    config: dict, job: PlannedJob, corpus, timing: Timing, precision: str, model: CostModel
) -> dict[str, float]:
    """A job's modelled hours, eager and as graphs (alone, busy, launch-bound; busy split into
    FLOPs, memory traffic and kernel latency), its floor, FLOPs and bytes, summed over its
    training, validation and decoding."""
    measures = {
        "flops": lambda part: timing.counts[part].flops,
        "bytes": lambda part: timing.counts[part].bytes,
        "h100_floor_hours": lambda part: timing.floor(part, precision, model) / 3600,
    }
    for mode in MODES:
        measures |= {
            named("h100_modelled_hours", mode): lambda part, m=mode: timing.modelled(part, precision, model, m) / 3600,
            named("h100_busy_hours", mode): lambda part, m=mode: timing.modelled_device(part, precision, model, m)
            / 3600,
            named("h100_launch_bound_hours", mode): lambda part, m=mode: (
                timing.modelled(part, precision, model, m) / 3600
                if timing.launch_bound(part, precision, model, m)
                else 0.0
            ),
            named("h100_flop_hours", mode): lambda part, m=mode: timing.flop_seconds(part, precision, model, m) / 3600,
            named("h100_memory_hours", mode): lambda part, m=mode: timing.memory_seconds(part, model, m) / 3600,
            named("h100_latency_hours", mode): lambda part, m=mode: timing.latency_seconds(part, model, m) / 3600,
            named("h100_recurrent_hours", mode): lambda part, m=mode: timing.recurrent_seconds(part, model, m) / 3600,
        }
    out = {}
    for name, per_part in measures.items():
        seconds = job_seconds(config, job, corpus, timing, per_part)
        out[name] = seconds["train"] + seconds["validation"] + seconds["decoding"]
    return out


def job_rows(
    config: dict, jobs: list[PlannedJob], corpora: dict, families: dict, timings_by_family: dict, model: CostModel
) -> list[dict]:
    precision = modelled_precision(config)
    rows = []
    for job in jobs:
        key = (job.kind, job.dataset, job.pair, job.experiment, job.seed)
        row = {
            "kind": job.kind,
            "dataset": job.dataset,
            "pair": job.pair,
            "experiment": job.experiment,
            "seed": job.seed,
            "artefacts": " ".join(sorted(f"{p}/{a}" for p, a in job.artefacts)),
            "searches": " ".join(sorted(job.searches)),
            "exclusive": job.exclusive,
            "metrics": metrics_file(job),
        }
        corpus = corpora[key]
        if corpus is None:
            row["note"] = "no size: the data are not prepared yet and the papers state none" + (
                " (the demo's plan waits for its data)" if "demo" in config else ""
            )
            rows.append(row)
            continue
        timing = timings_by_family[families[key]]
        parts = ("train", "validation", "decoding")
        schedule = job_seconds(config, job, corpus, timing, lambda part: 0.0)
        row |= {
            "family": family_label(families[key]),
            "corpus_source": corpus.source,
            "steps_per_epoch": schedule["steps_per_epoch"],
            "epochs": schedule["epochs"],
            **modelled_totals(config, job, corpus, timing, precision, model),
        }
        if timing.step is None:
            row["note"] = "model only: counted, not timed (--model-only)"
        else:
            measured = job_seconds(config, job, corpus, timing)
            row |= {
                "step_seconds": round(timing.step, 5),
                **{f"{part}_hours": measured[part] / 3600 for part in parts},
                "device_hours": sum(measured[p] for p in parts) / 3600,
            }
        rows.append(row)
    return rows


# -- hours per table, paper and in total ---------------------------------------------------------------------
def modelled_hours(rows: list[dict], mode: str = "eager") -> tuple[list[dict], list[float], list[float], list[bool]]:
    """The rows with a size, their modelled H100 hours alone and busy in `mode`, and which are exclusive."""
    sized = [row for row in rows if "h100_modelled_hours" in row]
    return (
        sized,
        [row[named("h100_modelled_hours", mode)] for row in sized],
        [row[named("h100_busy_hours", mode)] for row in sized],
        [bool(row.get("exclusive")) for row in sized],
    )


def paper_member(row: dict, paper: str) -> bool:
    """Whether a job row serves one of `paper`'s artefacts."""
    return any(a.startswith(f"{paper}/") for a in row["artefacts"].split())


def summary_rows(config: dict, rows: list[dict], slowdown: float | None = None) -> list[dict]:
    """Hours per artefact (table or figure), per paper (each job once) and in total, with the wall hours on N GPUs:
    each job's measured hours times `slowdown` (`timing.sharing_slowdown`; None: not measured, taken as 1)."""
    per_device = config.get("gpu", {}).get("jobs_per_device", 1)
    groups = [("artefact", paper, artefact_id) for paper, artefact_id in layout.configured_artefacts(config)]
    groups += [("paper", paper, "") for paper in config["papers"]] + [("total", "", "")]

    def member(row, level, paper, artefact_id):
        if level == "artefact":
            return f"{paper}/{artefact_id}" in row["artefacts"].split()
        return level == "total" or paper_member(row, paper)

    out = []
    for level, paper, artefact_id in groups:
        members = [row for row in rows if member(row, level, paper, artefact_id)]
        sized = modelled_hours(members)[0]
        # a job and its decodes run one after the other: one item per job
        durations = [row["device_hours"] for row in sized if "device_hours" in row]
        summary = {
            "level": level,
            "paper": paper,
            "artefact": artefact_id,
            "jobs": len(members),
            "jobs_without_size": len(members) - len(sized),
            "h100_floor_hours": sum(row.get("h100_floor_hours", 0.0) for row in sized),
        }
        for mode in MODES:
            _, alone, busy, exclusive = modelled_hours(members, mode)
            summary |= {
                named("h100_modelled_hours", mode): sum(alone),
                named("h100_busy_hours", mode): sum(busy),
                **{
                    named(f"h100_wall_hours_gpu{n}", mode): modelled_wall_hours(alone, busy, n, per_device, exclusive)
                    if sized
                    else 0.0
                    for n in GPU_COUNTS
                },
            }
        if len(durations) == len(sized):  # timed (not --model-only)
            summary |= {
                "device_hours": sum(durations),
                **{
                    f"wall_hours_gpu{n}": wall_hours([d * (slowdown or 1.0) for d in durations], n * per_device)
                    if durations
                    else 0.0
                    for n in GPU_COUNTS
                },
            }
        out.append(summary)
    return out


def h100_days(rows: list[dict], per_device: int, mode: str = "eager") -> float:
    """Modelled days of every sized job on one H100 at `per_device` jobs at a time."""
    _, alone, busy, exclusive = modelled_hours(rows, mode)
    return modelled_wall_hours(alone, busy, 1, per_device, exclusive) / 24


def h100_days_by_jobs_per_device(rows: list[dict], mode: str = "eager") -> dict[int, float]:
    """Modelled days of every sized job on one H100 for each gpu.jobs_per_device choice."""
    return {n: h100_days(rows, n, mode) for n in JOBS_PER_DEVICE_CHOICES}


def recommended_jobs_per_device(days: dict[int, float], within: float = 0.02) -> int:
    """The fewest jobs per device within `within` of the best modelled days (fewer processes:
    less memory, and less reliance on the sharing that the model assumes)."""
    best = min(days.values())
    return min(n for n, d in days.items() if d <= best * (1 + within))


# -- families --------------------------------------------------------------------------------------------
def family_rows(config: dict, timings_by_family: dict, model: CostModel, rows: list[dict] | None = None) -> list[dict]:
    """Per family: its step's target tokens (batch × mean target length; LM: batch × bptt), the
    step seconds measured here and the tokens per second they give, the modelled step (eager and
    as graphs), and (with the job `rows`) the modelled hours of its jobs, launch-bound and device-bound."""
    precision = modelled_precision(config)
    out = []
    for family, timing in timings_by_family.items():
        kind, shape, *_, length = family
        s = json.loads(shape)
        tokens = s["batch_size"] * (
            s["bptt"] if kind == "lm" else length
        )  # translation: `length` units (</s> included)
        counts = timing.counts["step"]
        modelled = timing.modelled("step", precision, model)
        label = family_label(family)
        members = [row for row in rows or [] if row.get("family") == label and "h100_modelled_hours" in row]
        hours = {
            name: sum(row[name] for row in members)
            for name in [*MODELLED, *(named(c, "graphs") for c in MODELLED), "h100_floor_hours"]
        }
        out.append(
            {
                "family": label,
                "target_tokens_per_step": tokens,
                "step_seconds": timing.step,
                "tokens_per_second": tokens / timing.step if timing.step else None,
                "forward_seconds": timing.forward,
                "decode_seconds": timing.decode,
                "step_gflop": counts.flops / 1e9,
                "step_kernels": counts.kernels,
                "step_operators": counts.operators,
                "step_views": counts.views,
                "step_optimiser_mb": counts.bytes / 1e6,
                "step_syncs": counts.syncs,
                "h100_step_seconds_modelled": modelled,
                "h100_step_busy_seconds_modelled": timing.modelled_device("step", precision, model),
                "h100_step_host_seconds_modelled": timing.host_seconds("step", model),
                "h100_tokens_per_second_modelled": tokens / modelled,
                "h100_step_bound": "launch" if timing.launch_bound("step", precision, model) else "device",
                "h100_graphs_step_seconds_modelled": timing.modelled("step", precision, model, "graphs"),
                "h100_graphs_step_busy_seconds_modelled": timing.modelled_device("step", precision, model, "graphs"),
                "jobs": len(members),
                "h100_hours": hours["h100_modelled_hours"],
                "h100_launch_bound_hours": hours["h100_launch_bound_hours"],
                "h100_device_bound_hours": hours["h100_modelled_hours"] - hours["h100_launch_bound_hours"],
                **{
                    name: hours[name]
                    for name in (
                        "h100_flop_hours",
                        "h100_memory_hours",
                        "h100_latency_hours",
                        "h100_recurrent_hours",
                        "h100_floor_hours",
                        "h100_graphs_busy_hours",
                        "h100_graphs_flop_hours",
                        "h100_graphs_memory_hours",
                        "h100_graphs_latency_hours",
                        "h100_graphs_recurrent_hours",
                    )
                },
                "h100_graphs_hours": hours["h100_graphs_modelled_hours"],
            }
        )
    return out
