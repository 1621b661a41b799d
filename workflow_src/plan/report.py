"""The plan's Markdown (`<prefix>.md`): the H100 model's totals, eager and as CUDA graphs, the floor
and the recommended jobs per device and threads, the fit behind the model, hours per table, the
families, and how all of it is computed."""

from __future__ import annotations

import statistics

from workflow_src.plan.costmodel import (
    BATCH_OPERATORS,
    FLOOR_FRACTION,
    MODES,
    REPLAY_OPERATORS,
    THREADS_PER_JOB,
    CostModel,
)
from workflow_src.plan.counting import CLIPPING_ACCESSES, OPTIMISER_ACCESSES, RECURRENT_KERNELS_PER_STEP
from workflow_src.plan.fit import Fitting, describe, measurements, step_counts
from workflow_src.plan.steps import COUNTING_BATCH, GRAPH_GRANULE
from workflow_src.plan.tables import (
    SUMMARY_COLUMNS,
    cell,
    family_rows,
    h100_days,
    h100_days_by_jobs_per_device,
    modelled_hours,
    named,
    paper_member,
    recommended_jobs_per_device,
    seconds_cell,
    to_markdown,
)
from workflow_src.plan.timing import (
    DEV_DECODE_BATCH,
    LENGTH_SPREAD,
    STEPS,
    WARMUP,
    modelled_precision,
    wall_hours,
)

GOAL_DAYS = 5  # issue 21: `all` within 5 H100-days
# A family whose step has more than this many times the FLOPs of every step a GPU timed as a graph: the
# fitted share of the peak its products run at is carried beyond what was measured
BEYOND_TIMED = 2
MODE_NAMES = {"eager": "eager (`train.compile: off`)", "graphs": "CUDA graphs (`train.compile: graphs`)"}
# The busy time's terms, and what would cut each
CURES = {
    "FLOPs": "fewer epochs or a smaller sampled share",
    "optimiser and clipping traffic": "fewer, larger batches (the traffic is per step, not per sentence)",
    "small kernels' latency": "fewer kernels (inductor fusing the step's pointwise operators inside the graph: "
    "`fuse` under the graph, not modelled here), or the kernels of jobs sharing a device "
    "running side by side under MPS (the model adds them up)",
    "the LSTM layers' time steps": "fewer, larger batches (each batch runs as many time steps, one after another, "
    "whatever its size), the time steps of jobs sharing a device running side by side "
    "under MPS (the model adds them up), or, if the fitted time of a fused LSTM's "
    "kernel is its host's launching (the fit cannot tell), graphs alone",
}


def busy_terms(row: dict, mode: str) -> dict[str, float]:
    """The busy hours of a family (a `family_rows` row) or a job (a `job_rows` row) in `mode`, by term."""
    latency, recurrent = (row[named(c, mode)] for c in ("h100_latency_hours", "h100_recurrent_hours"))
    return {
        "FLOPs": row[named("h100_flop_hours", mode)],
        "optimiser and clipping traffic": row[named("h100_memory_hours", mode)],
        "small kernels' latency": latency - recurrent,
        "the LSTM layers' time steps": recurrent,
    }


def with_flop_share(rows: list[dict], families: set[str], share: float, achieved: float, mode: str) -> list[dict]:
    """The rows with the FLOPs of `families`' jobs at `share` of the peak instead of the fitted
    `achieved`: their busy hours lose Δ = FLOP hours · (1 - achieved / share), and so do their hours
    alone unless the host bounds them (launch-bound hours: unchanged)."""
    out = []
    for row in rows:
        if row.get("family") not in families:
            out.append(row)
            continue
        delta = row[named("h100_flop_hours", mode)] * (1 - achieved / share)
        alone, busy = named("h100_modelled_hours", mode), named("h100_busy_hours", mode)
        launch_bound = row[named("h100_launch_bound_hours", mode)] > 0
        out.append({**row, busy: row[busy] - delta, alone: row[alone] - (0.0 if launch_bound else delta)})
    return out


def largest_timed_graph_flops(fitting: Fitting) -> float | None:
    """The FLOPs of the largest step the fit's GPU timed replayed as a graph (the GPU's own time)."""
    return max(
        (step_counts(m, fitting.counts[m.name]).flops for m in measurements(fitting.reports) if m.mode == "graphs"),
        default=None,
    )


def flop_share_sentence(rows: list[dict], families: list[dict], fitting: Fitting, per_device: int, mode: str) -> str:
    """Which families carry the fitted share of the peak beyond the steps the GPU timed as graphs
    (more than BEYOND_TIMED times their largest step's FLOPs), their FLOP hours, and the days if
    their products ran at the floor's share instead: how far the fitted share decides the total."""
    achieved = fitting.model.achieved
    timed = largest_timed_graph_flops(fitting)
    fitted = f"The FLOPs run at the fitted {achieved:.1%} of the peak, the share the timed steps' products reached"
    if timed is None:
        return fitted + " (no step was timed as a graph: the share is a prior)."
    beyond = sorted(
        (f for f in families if f["step_gflop"] * 1e9 > BEYOND_TIMED * timed and f["jobs"]),
        key=lambda f: f[named("h100_flop_hours", mode)],
        reverse=True,
    )
    fitted += f" (the largest step timed as a graph: {timed / 1e9:.0f} GFLOP)"
    if not beyond:
        return fitted + f"; no family's step has more than {BEYOND_TIMED} times its FLOPs."
    names = {f["family"] for f in beyond}
    hours = sum(f[named("h100_flop_hours", mode)] for f in beyond)
    faster = h100_days(with_flop_share(rows, names, FLOOR_FRACTION, achieved, mode), per_device, mode)
    return (
        fitted + f". {len(beyond)} {'family has a step' if len(beyond) == 1 else 'families have steps'} of more than "
        f"{BEYOND_TIMED} times that, whose larger products no GPU has timed ("
        + "; ".join(f"`{f['family']}`, {f['step_gflop'] / 1e3:.2g} TFLOP a step" for f in beyond)
        + f"): {hours:.4g} hours of FLOPs at the fitted share; at the floor's {FLOOR_FRACTION:.0%} of the peak "
        f"they would be {hours * achieved / FLOOR_FRACTION:.3g}, and the whole run {faster:.3g} days. "
        "A GPU check timing their step as a graph settles it (docs/cluster.md)."
    )


def goal_sentence(
    rows: list[dict], families: list[dict], summary: list[dict], per_device: int, days: float, mode: str
) -> str:
    """Whether `all` fits GOAL_DAYS H100-days at `per_device` in `mode`, and if not, what bounds it:
    the busy time's terms, the paper and family with the largest share, and how far the largest
    term would have to fall."""
    if days <= GOAL_DAYS:
        return f"At {per_device} job(s) per device the modelled {days:.3g} days are within the {GOAL_DAYS}-day goal."
    sized, alone, busy, exclusive = modelled_hours(rows, mode)
    held = sum(a for a, e in zip(alone, exclusive) if e)
    shared_alone = [a for a, e in zip(alone, exclusive) if not e]
    shared_busy = sum(b for b, e in zip(busy, exclusive) if not e)
    above = f"At {per_device} job(s) per device the modelled {days:.3g} days are above the {GOAL_DAYS}-day goal: "
    held_clause = (
        f"; the {sum(exclusive)} exclusive jobs among them hold the device for their time alone, "
        f"{held:.4g} hours, not only for their busy time"
        if held
        else ""
    )
    launch_bound = sum(row[named("h100_launch_bound_hours", mode)] for row in sized)
    if shared_busy < wall_hours(shared_alone, per_device) and launch_bound > sum(alone) / 2:
        longest = max(sized, key=lambda r: r[named("h100_modelled_hours", mode)])
        return (
            above + f"the jobs' own (host-bound) times bound them{held_clause}; the longest, {longest['dataset']} "
            f"{longest['pair']} {longest['experiment']}, takes {longest[named('h100_modelled_hours', mode)]:.4g} "
            "hours alone."
        )
    terms = {term: sum(busy_terms(row, mode)[term] for row in sized) for term in CURES}
    papers = [row for row in summary if row["level"] == "paper"]
    paper = max(papers, key=lambda row: row[named("h100_busy_hours", mode)])
    top = max(families, key=lambda f: sum(busy_terms(f, mode).values()))
    largest, second = sorted(terms, key=terms.get, reverse=True)[:2]
    excess = days * 24 - GOAL_DAYS * 24
    cut = (
        f"the largest term, {largest}, would have to lose {excess:.4g} of its {terms[largest]:.4g} hours: "
        f"{CURES[largest]}"
        if excess < terms[largest]
        else f"more than its largest term, {largest}, so no one change suffices: {largest} would fall with "
        f"{CURES[largest]}; {second} with {CURES[second]}"
    )
    return (
        above
        + f"the GPU's busy time bounds them ({sum(busy):.4g} hours: "
        + ", ".join(f"{hours:.4g} of {term}" for term, hours in terms.items())
        + f"){held_clause}. "
        f"The {paper['paper']} paper's {paper['jobs']} models are {paper[named('h100_busy_hours', mode)]:.4g} "
        f"hours of it (its largest family `{top['family']}`, {top['jobs']} jobs, "
        f"{sum(busy_terms(top, mode).values()):.4g} hours); without them the other papers' jobs would take "
        f"{h100_days([r for r in sized if not paper_member(r, paper['paper'])], per_device, mode):.3g} days. "
        f"To reach {GOAL_DAYS} days the modelled time must lose {excess:.4g} hours, {cut}."
    )


def sharing_sentence(per_device: int, slowdown: float | None) -> str:
    """How the wall hours account for jobs sharing a device."""
    if per_device == 1:
        return "one job per device."
    if slowdown is None:
        return (
            f"the {per_device} jobs sharing a device assumed to run at their own speed: an optimistic bound "
            f"(results/gpu_check.json has no measurement of {per_device} processes on this device; it measures "
            "2 and 4 on CUDA)."
        )
    return (
        f"each job {slowdown:.3g} times as long as alone: the median slowdown the GPU check measured with "
        f"{per_device} processes on the device (results/gpu_check.json)."
    )


def microseconds(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} µs"


def fit_section(fitting: Fitting) -> list[str]:
    """The fitted model: its terms on the measured and the planned device, and each measurement
    against its modelled step."""
    fitted, model = fitting.fitted, fitting.model
    rows = fitting.rows()
    worst = {
        mode: max((max(r["ratio"], 1 / r["ratio"]) for r in rows if r["mode"] == mode), default=None) for mode in MODES
    }
    terms = [
        ("host_operator", "host, per dispatched operator"),
        ("host_view", "host, per dispatched view"),
        ("recurrent_kernel", "GPU, per kernel of a fused LSTM layer (per time step, layer, direction)"),
        ("kernel", "GPU, per other kernel"),
        ("achieved", "share of the peak the FLOPs run at"),
    ]

    def value(m: CostModel, name: str) -> str:
        return f"{getattr(m, name):.3g}" if name == "achieved" else microseconds(getattr(m, name))

    abouts = " ".join(r["about"] for r in fitting.reports if "about" in r)
    lines = [
        "## The fit: the model against what a GPU measured",
        "",
        f"{fitted.source}. {abouts}".strip(),
        "",
        f"| term | {fitted.device.name} | {model.device.name} (carried) | |",
        "|---|---|---|---|",
    ]
    for name, what in terms:
        lines.append(
            f"| {what} | {value(fitted, name)} | {value(model, name)} | "
            f"{'fitted' if name in fitted.fitted else 'prior, not fitted'} |"
        )
    lines += [
        "",
        f"Devices: {describe(fitted.device)}; {describe(model.device)} (NVIDIA's datasheets, SXM).",
        "",
        "| measured family (experiment) | measured s / step | modelled s / step | modelled / measured "
        "| host s | GPU busy s | operators | views | kernels (of fused LSTMs) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['family']} ({r['experiment']}) | {r['measured']:.4f} | {r['modelled']:.4f} | "
            f"{r['ratio']:.2f} | {r['host']:.4f} | {r['busy']:.4f} | {r['operators']} | {r['views']} | "
            f"{r['kernels']} ({r['recurrent_kernels']}) |"
        )
    eager = [r for r in rows if r["mode"] == "eager"]
    groups = count_groups(eager)
    spread = max(max(r["measured"] for r in g) / min(r["measured"] for r in g) for g in groups)
    device_bound = [r["family"] for r in eager if r["busy"] >= r["host"]]
    graphs_fitted = "achieved" in fitted.fitted
    lines += [
        "",
        "Every measured step within "
        + " and ".join(f"{worst[m]:.3g}x ({m})" for m in MODES if worst[m])
        + " of its modelled step (fitted to the smallest worst case). "
        f"The eager steps fall in {len(groups)} groups of counts within 5% of each other, and the spread of "
        f"measured times within a group (up to {spread:.3g}x) is what the counts do not explain: run-to-run "
        "spread of a host-bound step, which no setting of the terms removes. "
        + rounds_sentence(rows)
        + (f"Device-bound at the fit, eager: {', '.join(device_bound)}. " if device_bound else "")
        + (
            "A view costs the fit more than an operator: the host's Python work between operators grows with "
            "the views in these steps (the translation decoder slices and reshapes at every target position), "
            "and the view term carries it; it is a fit across kinds of step, not a measured cost of a view. "
            if fitted.host_view > fitted.host_operator
            else ""
        )
        + (
            "The GPU's terms (per kernel, per fused LSTM kernel, the achieved share of the peak) are fitted to "
            "the steps replayed as CUDA graphs, whose time is the GPU's own; the eager steps fix the host's. "
            if graphs_fitted
            else "Not fitted: a step with many small kernels is host-bound, so its time bounds the GPU's "
            "time per small "
            + (
                f"kernel, at most {microseconds(bound)} by these measurements, "
                if (bound := fitting.kernel_bound()) is not None
                else "kernel (no measured step without fused LSTM layers bounds it here) "
            )
            + f"without fixing it; it stays at the prior {microseconds(fitted.kernel)}, and the achieved share of "
            "the peak at its prior too. The graphs column rests on these two priors: a GPU check of `graphs` "
            "(whose step is the GPU's time) would fit them. "
        ),
        "",
        f"Carried to the {model.device.name}: the host terms unchanged (the same host CPU class; a slower host "
        "CPU lengthens every eager step in proportion); the GPU's per-kernel terms by the ratio of the devices' "
        f"bf16 peaks ({fitted.device.peak_flops['bf16'] / model.device.peak_flops['bf16']:.3g}: the same SMs and "
        f"clocks); FLOPs and memory traffic at the {model.device.name}'s own peaks (HBM "
        f"{fitted.device.hbm_bytes_per_second / model.device.hbm_bytes_per_second:.3g}x slower). Measured: only "
        "the families listed; the others are modelled from their counts.",
        "",
    ]
    return lines


def rounds_sentence(rows: list[dict]) -> str:
    """How far apart the rounds of one step lay, where the GPU check timed steps in rounds
    (`model.timing.ROUNDS`: built afresh and timed again, the fastest median kept)."""
    timed = [r for r in rows if len(r["rounds"]) > 1]
    if not timed:
        return (
            "Each step here is one round's median (the reports predate the GPU check's rounds, "
            "`model.timing.ROUNDS`), so how far one step's time moves between moments of a run shows here only "
            "across steps of equal counts. "
        )
    spreads = {mode: sorted(max(r["rounds"]) / min(r["rounds"]) for r in timed if r["mode"] == mode) for mode in MODES}
    apart = " and ".join(
        f"{found[-1]:.3g}x {mode} (median {statistics.median(found):.3g}x over {len(found)} "
        f"step{'s' * (len(found) > 1)})"
        for mode, found in spreads.items()
        if found
    )
    return (
        f"{len(timed)} of the {len(rows)} steps were timed in rounds (each from a fresh build, in one run or in "
        f"several reports), and the fastest kept: one step's rounds lay apart by up to {apart}, the spread of its "
        "time between moments of a run or between runs. "
    )


def count_groups(rows: list[dict], within: float = 0.05) -> list[list[dict]]:
    """The measured families grouped by their counts (operators, views, kernels within `within`)."""
    groups: list[list[dict]] = []
    for row in rows:
        for group in groups:
            if all(
                abs(row[k] - group[0][k]) <= within * max(group[0][k], 1) for k in ("operators", "views", "kernels")
            ):
                group.append(row)
                break
        else:
            groups.append([row])
    return groups


def markdown(
    config: dict,
    device_name: str,
    summary: list[dict],
    rows: list[dict],
    timings_by_family: dict,
    fitting: Fitting,
    model_only: bool = False,
    slowdown: float | None = None,
) -> str:
    model = fitting.model
    precision = modelled_precision(config)
    total = next(row for row in summary if row["level"] == "total")
    per_device = config.get("gpu", {}).get("jobs_per_device", 1)
    by_mode = {mode: h100_days_by_jobs_per_device(rows, mode) for mode in MODES}
    recommended = {mode: recommended_jobs_per_device(days) for mode, days in by_mode.items()}
    family_table = family_rows(config, timings_by_family, model, rows)
    sized = modelled_hours(rows)[0]
    exaflop = sum(row["flops"] for row in sized) / 1e18
    terabytes = sum(row["bytes"] for row in sized) / 1e12
    exclusive = sum(bool(row.get("exclusive")) for row in rows)
    measured = (
        "Counted, **not timed** (`--model-only`): the FLOPs, kernels, operators, views, syncs and optimiser "
        f"traffic of every family on {device_name}"
        if model_only
        else f"Measured on **{device_name}** (config `train.device`: {config['train']['device']}): "
        f"{total['device_hours']:.4g} device-hours on this device"
    )
    columns = [c for c in SUMMARY_COLUMNS if not (model_only and (c == "device_hours" or c.startswith("wall_")))]
    choices = list(by_mode["eager"])
    h100_lines = [
        f"**H100, modelled, not measured on an H100** ({precision}; config `train.precision`: "
        f"{config['train'].get('precision', 'unset')}): a model fitted to the step times a GPU measured "
        f"({fitting.fitted.device.name}, below), {exaflop:.3g} EFLOP and {terabytes:.3g} TB of optimiser and clipping "
        f"memory traffic. **Floor: {total['h100_floor_hours'] / 24:.3g} days** (the FLOPs at {FLOOR_FRACTION:.0%} of "
        "the peak plus the optimiser and clipping traffic at HBM bandwidth; no launches, no host)."
        + (
            f" The {total['jobs_without_size']} jobs without a size are in none of the numbers below."
            if total["jobs_without_size"]
            else ""
        ),
        "",
        "| days on one H100 (modelled) | " + " | ".join(MODE_NAMES[mode] for mode in MODES) + " |",
        "|---|" + "---|" * len(MODES),
        "| every job one at a time | "
        + " | ".join(f"{total[named('h100_modelled_hours', m)] / 24:.3g}" for m in MODES)
        + " |",
        "| the GPU busy | " + " | ".join(f"{total[named('h100_busy_hours', m)] / 24:.3g}" for m in MODES) + " |",
        *(
            f"| at `gpu.jobs_per_device: {n}` | " + " | ".join(f"{by_mode[m][n]:.3g}" for m in MODES) + " |"
            for n in choices
        ),
        "| **recommended** `gpu.jobs_per_device` | "
        + " | ".join(f"**{recommended[m]}** ({by_mode[m][recommended[m]]:.3g} days)" for m in MODES)
        + " |",
        "",
        f"Config `gpu.jobs_per_device` is {per_device}, `train.compile` {config['train'].get('compile', 'off')!r}. "
        "Recommended: the fewest jobs per device within 2% of the best modelled days (fewer processes: less "
        f"memory, and less reliance on the sharing the model assumes), and `threads.train: {THREADS_PER_JOB}`: a GPU "
        "job keeps one host thread issuing its steps (the fitted host terms) and one preparing its batches, and "
        "intra-op threads beyond them run none of its kernels, so "
        f"{THREADS_PER_JOB} × jobs per device × GPUs cores keep every job fed.",
        "",
        *(
            f"- {MODE_NAMES[m]}: "
            + goal_sentence(rows, family_table, summary, recommended[m], by_mode[m][recommended[m]], m)
            + (
                " " + flop_share_sentence(rows, family_table, fitting, recommended[m], m)
                if by_mode[m][recommended[m]] > GOAL_DAYS
                else ""
            )
            for m in MODES
        ),
        "",
    ]
    unsized_line = (
        f"**H100: nothing modelled**: none of the {total['jobs']} training jobs has a size (prepared data's "
        "statistics, or for the full run's corpora the sizes the papers state); rerun the plan once the data is "
        "prepared."
    )
    lines = [
        "# Cost plan",
        "",
        f"{measured}; {total['jobs']} training jobs ({total['jobs_without_size']} without a size; {exclusive} "
        "exclusive: their training time is reported, so each holds a whole device).",
        "",
        *(h100_lines if sized else [unsized_line, ""]),
        "Sharing a device: the model adds up the busy times of jobs sharing a GPU (their kernels never overlap in "
        "it), so what it credits to sharing is only one job's host time filled with another's kernels. NVIDIA MPS "
        "(one context for all the jobs) gives that; plain time-slicing between processes is not modelled and may "
        "give less. Run several jobs per device under MPS (docs/cluster.md). Exclusive jobs hold a whole device "
        "whatever `gpu.jobs_per_device` says.",
        "",
        *fit_section(fitting),
        "## Predicted hours per table, per paper and in total",
        "",
        *to_markdown(columns, summary),
        "",
        "A job shared by several tables or figures counts in each one's row, once in its paper's and the total. "
        + (
            ""
            if model_only
            else f"wall_hours_gpuN: `--resources gpu=N` with {per_device} job(s) per device "
            "(config `gpu.jobs_per_device`), "
            "a job and its decodes one after the other, dependencies ignored, "
            + sharing_sentence(per_device, slowdown)
            + " "
        )
        + "h100_modelled_hours: each job alone on an H100, one after another, eager; h100_busy_hours: the GPU's "
        "busy time in them; h100_floor_hours: the floor; h100_wall_hours_gpuN: N H100s at the configured jobs per "
        "device; h100_graphs_...: the same as CUDA graphs. Per job: plan.jobs.csv.",
        "",
        "## Families",
        "",
        "Per step: GFLOP, kernels, host operators and views, optimiser and clipping traffic (MB), host syncs, the "
        "H100's modelled seconds eager (alone, GPU busy, host issuing) and which bounds it, and as CUDA graphs "
        "(alone, GPU busy). Over the family's jobs (training, validation, decoding): modelled hours alone, eager and "
        "as graphs, the eager busy hours split into FLOPs, memory traffic and kernel latency (of which the fused "
        "LSTM layers'), and the floor.",
        "",
        "| family | step s (measured) | step GFLOP | step kernels | step operators, views | step MB | step syncs "
        "| H100 eager step s (alone, busy, host) | bound | H100 graphs step s (alone, busy) | jobs | eager hours "
        "| graphs hours | FLOP h | memory h | latency h (LSTM) | floor h |",
        "|---|" + "---|" * 16,
    ]
    for row in family_table:
        lines.append(
            f"| {row['family']} | {seconds_cell(row['step_seconds'])} | {row['step_gflop']:.2f} | "
            f"{row['step_kernels']} "
            f"| {row['step_operators']}, {row['step_views']} | {row['step_optimiser_mb']:.0f} | {row['step_syncs']} | "
            f"{row['h100_step_seconds_modelled']:.4f}, {row['h100_step_busy_seconds_modelled']:.4f}, "
            f"{row['h100_step_host_seconds_modelled']:.4f} | {row['h100_step_bound']} | "
            f"{row['h100_graphs_step_seconds_modelled']:.4f}, {row['h100_graphs_step_busy_seconds_modelled']:.4f} | "
            f"{row['jobs']} | "
            + " | ".join(
                cell(float(row[name]))
                for name in ("h100_hours", "h100_graphs_hours", "h100_flop_hours", "h100_memory_hours")
            )
            + f" | {cell(float(row['h100_latency_hours']))} ({cell(float(row['h100_recurrent_hours']))}) | "
            f"{cell(float(row['h100_floor_hours']))} |"
        )
    sources = sorted({row["corpus_source"] for row in rows if "corpus_source" in row})
    counted_as = (
        f"counted at batches of {COUNTING_BATCH} and {2 * COUNTING_BATCH} sentences at the mean target "
        "length and the FLOPs extrapolated to the job's batch (`train.batch_size`, or its group's "
        "`train.batch_size_by_group`), affine in the batch: per-sentence work times the batch, per-batch "
        "work (the joint paper's g_out(E) over the vocabulary or its sample, the `output` form's) once "
        "(language models: at their own batch)"
        if model_only
        else f"timed after {WARMUP} warm-up steps, the mean of {STEPS} steps at "
        f"{', '.join(f'{f:g}' for f in LENGTH_SPREAD)} × the corpus's mean target length (both sides: "
        "bucketed batches change shape from step to step), then counted once more at the mean length"
    )
    buckets = config["train"].get("length_buckets")
    lines += [
        "",
        "## How it is computed",
        "",
        "- Steps: untrained models of each family at the configured sizes, random batches of the job's "
        f"sentences per batch, {counted_as}; a step is forward, backward, gradient clipping and "
        "the optimiser. Batches are padded as `nmt_data.length_multiple` pads them on the device modelled "
        "(the mean padded width: length + (granule − 1) / 2), the loss over the real tokens only.",
        "- Training: step × ⌈training pairs / batch⌉ × `train.max_epochs` (or the experiment's `train.overrides`; "
        "an upper bound: patience may stop earlier); language models: step × ⌈tokens / (batch × bptt)⌉ × their "
        "fixed schedule's epochs.",
        f"- Validation, each epoch: the development set's loss (a forward per batch) and its greedy BLEU "
        f"(batches of {DEV_DECODE_BATCH}, decoding as many steps as the mean target length). The joint layer's "
        "g_out(E) over all of V is computed once per pass (it is cached while no parameter changes), not per batch.",
        "- Decoding (an estimate): a greedy decode of each test batch of `decode.batch_size`, "
        "K times that for beam K; decoding runs the mean target length, as trained models stop at </s>.",
        "- Not planned: data preparation, embeddings, alignment, benchmarks and rendering (CPU jobs, or "
        "benchmarks of a few hundred timed steps each, which hold a whole device while they run).",
        "- Corpus sizes used: " + "; ".join(sources) + ".",
        f"- **The model** (`workflow_src/plan/costmodel.py`), per step, forward or decode on the "
        f"{model.device.name}: the GPU is busy FLOPs / ({model.achieved:.3g} × peak) + bytes / "
        f"{model.device.hbm_bytes_per_second / 1e12:g} TB/s + kernels × {microseconds(model.kernel)} + the fused "
        f"LSTM layers' kernels × {microseconds(model.recurrent_kernel)}, the peak at {precision} "
        f"{model.device.peak_flops[precision] / 1e12:g} TFLOP/s (dense); eager, the host dispatches each operator "
        f"in {microseconds(model.host_operator)} and each view in {microseconds(model.host_view)}; a job alone "
        "takes the larger of host and GPU (the host queues kernels ahead) plus, at each host sync, a drained and "
        f"refilled queue ({microseconds(model.host_operator + model.kernel)}). Jobs sharing a device run at their "
        "own speed until the GPU's busy time is the bound: max(Σ busy / GPUs, the longest-first schedule of the "
        "jobs' alone times on GPUs × jobs per device slots); exclusive jobs hold a device each.",
        "- **As CUDA graphs** (`train.compile: graphs`: each training step, validation forward and decoding step "
        f"replayed as one captured graph): the host launches a replay and copies its batch and rate "
        f"({REPLAY_OPERATORS} operators) per step, forward or decoding step, and prepares each batch "
        f"({BATCH_OPERATORS} operators: its tensors built, pinned and copied); the GPU runs the eager step's "
        "kernels at the bucket-padded shapes: FLOPs and kernels scaled by the padded width over the mean length "
        + (
            f"(`train.length_buckets`: {buckets})"
            if buckets
            else f"(config `train.length_buckets` unset: S and T padded to multiples of {GRAPH_GRANULE}, "
            f"length + {(GRAPH_GRANULE - 1) / 2:g} on average)"
        )
        + ", every padded position computed and the loss masked; no host sync in a step or a forward, "
        "decoding's finished checks kept. The captured step is the eager step at those shapes: the graph-safe "
        "step's own operators (an unpacked encoder, the sampling on the device) are not counted.",
        f"- Bytes: the optimiser's and gradient clipping's memory traffic, numel × itemsize per parameter times "
        f"{OPTIMISER_ACCESSES['Adam']} accesses for Adam (param, grad, exp_avg, exp_avg_sq read; three written), "
        f"{OPTIMISER_ACCESSES['SGD']} for SGD, plus {CLIPPING_ACCESSES} for clipping (the norm reads the "
        "gradients, the scaling reads and writes them). Activations' traffic is in the FLOP and kernel terms.",
        "- Kernels: one per tensor operator (views excluded); a fused "
        f"LSTM layer (oneDNN on the CPU, cuDNN on CUDA) counts {RECURRENT_KERNELS_PER_STEP['forward']} per time "
        f"step forward and {RECURRENT_KERNELS_PER_STEP['backward']} backward, and its FLOPs are added "
        "(FlopCounterMode counts neither). Translation steps are counted on the decoder's CUDA path (two "
        "products and one fused cell operator per layer and step, `workflow_src/model/lstm_cell.py`) and, off "
        "CUDA, dropout as CUDA's one kernel each way and the joint layer's sampled vocabulary as CUDA draws it; "
        "the language models' hand-unrolled cells are elementwise operators on every device.",
        "- Host syncs: operators whose result the host waits for on CUDA (a value read, nonzero, a boolean "
        "index, unique). A language model's counted step is train_lm's epoch over one segment, so its two "
        "per-epoch reads count in every step.",
        "- Fitted, not assumed: "
        + ", ".join(fitting.fitted.fitted)
        + " (above). Assumed: "
        + (
            ""
            if "achieved" in fitting.fitted.fitted
            else "the GPU's time per small kernel and the achieved share of the peak (bounded, not fixed, by eager "
            "measurements), "
        )
        + "the fused LSTM's kernels per step, the graph's replay and batch operators, and the sharing of a device. "
        "A plan run on a GPU measures its own step times (device_hours), and those are the ones to trust.",
        f"- `train.compile` is {config['train'].get('compile', 'off')!r}: "
        + (
            "the kernels are counted as eager PyTorch runs them (the counting runs the step eagerly), so "
            "the model ignores what compiling fuses; the measured step times include it."
            if config["train"].get("compile", "off") != "off"
            else "eager PyTorch, as counted."
        ),
        "",
    ]
    return "\n".join(lines) + "\n"
