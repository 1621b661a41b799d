"""The plan itself: every job's family timed (or counted) once, the jobs' hours, the files."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from workflow_src.atomic import one_line_faults, write_text
from workflow_src.config_check import read_checked
from workflow_src.plan import fit, jobs as planned, steps
from workflow_src.plan.compare import write_comparison
from workflow_src.plan.costmodel import H100
from workflow_src.plan.report import markdown
from workflow_src.plan.tables import (
    FAMILY_COLUMNS,
    JOB_COLUMNS,
    SUMMARY_COLUMNS,
    family_rows,
    job_rows,
    seconds_cell,
    summary_rows,
    to_csv,
)
from workflow_src.plan.timing import modelled_precision, sharing_slowdown


def plan(
    config: dict,
    out_prefix: Path,
    threads: int,
    model_only: bool = False,
    gpu_check: Path | None = None,
    measured: tuple[Path, ...] = fit.MEASURED,
    counted: Path = fit.COUNTED,
) -> None:
    """Write `<prefix>.csv`, `.jobs.csv`, `.families.csv` and `.md`. `model_only`: count each family
    on the CPU as CUDA runs it (translation models at two small batches, extrapolated) without timing.
    `gpu_check`: the GPU check's JSON, whose measured slowdown of jobs sharing a device scales the
    wall hours (read when it exists: a plan made before the check, or without it, says so).
    `measured`, `counted`: the GPU step times the H100 model is fitted to and the plan's counts of
    those steps (`fit`)."""
    write(config, families_timed(config, threads, model_only), out_prefix, model_only, gpu_check, measured, counted)


@dataclasses.dataclass
class Families:
    """The planned jobs, their corpora and families, each family's timing, and the device."""

    jobs: list
    corpora: dict
    families: dict
    timings: dict
    device_name: str


def families_timed(config: dict, threads: int, model_only: bool) -> Families:
    """Every job's family timed (or, `model_only`, counted as on CUDA) once."""
    import torch

    from workflow_src.plan import benchmark
    from workflow_src.model.gpu import job_device

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    jobs = planned.planned_jobs(config)
    corpora, families = {}, {}
    for job in jobs:
        key = (job.kind, job.dataset, job.pair, job.experiment, job.seed)
        corpora[key] = (
            planned.lm_corpus(config, job.dataset)
            if job.kind == "lm"
            else planned.parallel_corpus(config, job.dataset, job.pair)
        )
        if corpora[key] is not None:
            families[key] = (planned.lm_family if job.kind == "lm" else planned.nmt_family)(config, job, corpora[key])
    representative = {}
    for job in jobs:
        key = (job.kind, job.dataset, job.pair, job.experiment, job.seed)
        if key in families:
            representative.setdefault(families[key], job)
    timings_by_family = {}
    # --model-only counts in the precision a CUDA job runs in (bf16 autocast's casts are kernels too)
    as_on_cuda = {**config, "train": {**config["train"], "precision": modelled_precision(config)}}
    with job_device("cpu" if model_only else config["train"]["device"]) as device:
        device_name = benchmark.device_name(device)
        print(f"plan: {len(jobs)} jobs in {len(representative)} families on {device_name}", flush=True)
        for family, job in representative.items():
            if job.kind == "lm":
                timing = steps.time_lm(as_on_cuda if model_only else config, job, family, device, model_only)
            elif model_only:
                timing = steps.count_nmt(as_on_cuda, job, family, device)
            else:
                timing = steps.time_nmt(config, job, family, device)
            timings_by_family[family] = timing
            counts = timing.counts["step"]
            print(
                f"{planned.family_label(family)}: step {seconds_cell(timing.step)} s, {counts.flops / 1e9:.1f} GFLOP, "
                f"{counts.kernels} kernels, {counts.syncs} syncs",
                flush=True,
            )
    return Families(jobs, corpora, families, timings_by_family, device_name)


def write(
    config: dict,
    timed: Families,
    out_prefix: Path,
    model_only: bool = False,
    gpu_check: Path | None = None,
    measured: tuple[Path, ...] = fit.MEASURED,
    counted: Path = fit.COUNTED,
) -> None:
    """The plan's files from its families' timings (`plan`)."""
    reports, measured_counts, fitted = fit.load(measured, counted)
    model = fitted.on(H100)
    timings_by_family = {family: steps.as_graphs(config, family, timing) for family, timing in timed.timings.items()}
    rows = job_rows(config, timed.jobs, timed.corpora, timed.families, timings_by_family, model)
    checked = json.loads(gpu_check.read_text()) if gpu_check is not None and gpu_check.exists() else None
    slowdown = sharing_slowdown(checked, config.get("gpu", {}).get("jobs_per_device", 1))
    summary = summary_rows(config, rows, slowdown)
    write_text(out_prefix.with_suffix(".jobs.csv"), to_csv(JOB_COLUMNS, rows))
    write_text(
        out_prefix.with_suffix(".families.csv"),
        to_csv(FAMILY_COLUMNS, family_rows(config, timings_by_family, model, rows)),
    )
    write_text(
        out_prefix.with_suffix(".csv"),
        to_csv(SUMMARY_COLUMNS + ["device"], [{**row, "device": timed.device_name} for row in summary]),
    )
    fitting = fit.Fitting(reports, measured_counts, fitted, model)
    write_text(
        out_prefix.with_suffix(".md"),
        markdown(config, timed.device_name, summary, rows, timings_by_family, fitting, model_only, slowdown),
    )


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="The cost plan: what every table will cost on this device, before the "
        "run (and, after it, how close the prediction came)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("plan")
    p.add_argument(
        "--config",
        type=read_checked,
        required=True,
        help="the workflow's resolved config: a JSON file (rules/plan.smk writes results/config/<hash>.json) "
        "or a JSON object",
    )
    p.add_argument("--out-prefix", type=Path, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--gpu-check", type=Path, help="results/gpu_check.json: its measured slowdown of jobs sharing a device"
    )
    p.add_argument(
        "--model-only",
        action="store_true",
        help="count FLOPs, kernels, syncs and optimiser traffic on the CPU without timing: the H100 model alone",
    )
    p.add_argument(
        "--fit-to",
        type=Path,
        nargs="+",
        default=fit.MEASURED,
        help="GPU checks' gpu_check.json (eager steps; graphs steps of --checks compile) to fit the H100 "
        "model to (default the H200's of 2026-11-27, docs/gpu_check/)",
    )
    p.add_argument(
        "--fit-counts",
        type=Path,
        default=fit.COUNTED,
        help="the plan's counts of those steps (python -m workflow_src.plan count-measured)",
    )
    m = commands.add_parser("count-measured")
    m.add_argument("--config", type=read_checked, required=True, help="the config the GPU check measured")
    m.add_argument("--measured", type=Path, default=fit.MEASURED[0], help="the GPU check's gpu_check.json")
    m.add_argument("--out", type=Path, default=fit.COUNTED)
    m.add_argument("--first", type=Path, help="a gpu_check.json whose compile targets' families are counted first")
    m.add_argument("--resume", action="store_true", help="keep the families --out already holds")
    c = commands.add_parser("compare")
    c.add_argument("--jobs", type=Path, required=True, help="the plan's <prefix>.jobs.csv")
    c.add_argument("--out-prefix", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "plan":
        plan(args.config, args.out_prefix, args.threads, args.model_only, args.gpu_check, args.fit_to, args.fit_counts)
    elif args.command == "count-measured":
        first = tuple(entry["family"] for entry in fit.read(args.first)["compile"]) if args.first else ()
        counted = fit.read_counts(args.out) if args.resume and args.out.exists() else None
        fit.count_measured(
            args.config,
            fit.read(args.measured),
            first,
            counted,
            lambda counts: fit.write_counts(counts, args.measured, args.out),
        )
    else:
        total = write_comparison(args.jobs, args.out_prefix)
        print(f"actual / predicted: {total['actual / predicted']}")
