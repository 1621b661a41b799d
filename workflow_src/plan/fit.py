"""The cost model fitted to what a GPU measured: a GPU check's step times (its `gpu_check.json`s,
`MEASURED`: the H200's of 2026-11-27) against the plan's counts of the same steps at the same
shapes (`count_measured`; stored in `COUNTED`).

Measurements (`measurements`), each a family's step at the shape it was timed, and the terms
each fixes (costmodel.py's equations):

    eager   the check's training step of each family (`families[name]["speed"]`), and the graph
            check's own eager step of its targets (`compile[i]["phases"]["graphs against eager"]
            ["eager_step_seconds"]`, at graph_check's length): costmodel's eager `alone`,
                max(host, busy) + syncs · (host_operator + kernel),
                host = operators · host_operator + views · host_view
                       + fused LSTM kernels · host_recurrent_kernel.
            A step timed in rounds (`step_seconds_rounds`, `model.timing.ROUNDS`) is read as
            the report keeps it, its fastest round's median; a step that several reports timed,
            likewise (`fastest_of_rounds`).
            Every measured eager step is host-bound (its graphs step is 2.5-7x faster), so these
            fix the host terms `host_operator`, `host_view` and `host_recurrent_kernel` (cuDNN
            launching a fused layer's time steps), and bound the GPU terms from above only.
    graphs  the graph check's captured step replayed (`...["step_seconds"]`): `alone` with one
            replay of `as_graphs` counts, whose host is a replay's few operators, so the time is
            busy = FLOPs / (achieved · peak) + bytes / HBM + (kernels - recurrent) · kernel
                   + recurrent kernels · recurrent_kernel,
            the GPU's own: these fix `kernel`, `recurrent_kernel` and `achieved` (the language
            models' FLOPs grow 20x from 200 to 1,500 units at the same kernels; a cuDNN language
            model is mostly fused LSTM kernels; translation's grow with its layers).

Fitted (`fitted_terms`): all five and the launch term where graphs steps were measured; from
eager steps alone (the 2026-11-26 record) the host terms and `recurrent_kernel`, which then
stands for a fused kernel's launching or running, whichever is longer, and `PRIOR` for the
others. The fit is to the smallest worst-case ratio between modelled and measured step times
over all measurements,

    min over θ of  max_i |log(modelled_i(θ) / measured_i)|

the criterion a budget is judged by; of the terms that reach it (within TIE), those with the
smallest worst case over the graphs steps (reproducible: the graph check's repeat of four targets
agreed within 2%, where their eager steps spread 1.5x), and of those (within TIE) the least
squares of the log ratios. The searches for the worst cases stop at corners that depend on where
they start (and, before 2026-11-28, the fit moved with the BLAS threads' rounding: 4.7% or 5.4% of
the peak): they start from several points (`starts`), the best of each tier over all of them sets
its bound, and the least squares holds each measurement within the bounds (smooth constraints,
where a tier's worst case is not). `worst_ratio_floor` bounds from below what any setting of the
terms can reach on a set of measurements.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from workflow_src.plan.costmodel import CostModel, Device, as_graphs, device_named
from workflow_src.plan.counting import Counts

REPO = Path(__file__).resolve().parents[2]
CHECKED = REPO / "docs" / "gpu_check" / "2026-11-27-h200"
# the whole check, the graph check of its 30 targets, and its repeat of four of them (their second rounds)
MEASURED = tuple(CHECKED / run / "gpu_check.json" for run in ("check", "graphs", "graphs-fp64"))
COUNTED = REPO / "docs" / "gpu_check" / "h200_2026-11-27_counts.json"
HOST_TERMS = ("host_operator", "host_view")
GPU_TERMS = ("kernel", "recurrent_kernel", "achieved")
# Eager, a fused LSTM kernel's time is its host's launching or the GPU's running, whichever is longer: the graphs
# steps tell the two apart
LAUNCH_TERM = "host_recurrent_kernel"
# The priors of the terms no measurement fixes (no graphs step measured): 2.5 µs of GPU time per small
# kernel (its launch latency and run), and 30% of the peak for the products of batch 64 x 512-1024
PRIOR = {"kernel": 2.5e-6, "achieved": 0.3}
START = {"host_operator": 8e-6, "host_view": 2e-6, "host_recurrent_kernel": 2.5e-6, "recurrent_kernel": 2.5e-6, **PRIOR}
TIE = 1e-3  # of the log ratio: how far from the smallest worst case the least-squares choice may go


@dataclasses.dataclass(frozen=True)
class Measured:
    """One family's step as a GPU check timed it."""

    name: str  # the check's family name
    experiment: str  # the configured job it was built from (the first of its family)
    seconds: float
    target_tokens: int  # per step: batch x target positions (language models: batch x bptt)
    precision: str
    length: int  # target positions per sentence (language models: bptt)
    kind: str = "nmt"  # nmt | lm
    mode: str = "eager"  # eager | graphs (replayed as a CUDA graph)
    width_ratio: float = 1.0  # the timed target positions over the counted `length`
    source: str = "check"  # check | graph check
    rounds: tuple[float, ...] = ()  # each round's median, where timed in rounds (`seconds`: the fastest)

    @property
    def label(self) -> str:
        return self.name if self.source == "check" else f"{self.name}, {self.source} {self.mode}"


def environment(report: dict) -> dict:
    """Device name and date: a gpu_check.json's `environment`, or the 2026-11-26 record's top level."""
    return report.get("environment", report)


def measured_steps(report: dict) -> list[Measured]:
    """The eager step times of a GPU check's report (its `families`' speed entries): a gpu_check.json,
    whose speed entries carry their precision and length, or the 2026-11-26 H200 record, whose
    length is its `batch`'s."""
    return [
        Measured(
            name,
            family["experiment"],
            speed["step_seconds"],
            speed["target_tokens_per_step"],
            speed["precision"],
            speed.get("length") or report["batch"]["length"],
            family.get("kind") or ("lm" if name.startswith("LM") else "nmt"),
            rounds=tuple(speed.get("step_seconds_rounds", ())),
        )
        for name, family in report["families"].items()
        if "step_seconds" in (speed := family.get("speed") or {})
    ]


def graph_steps(report: dict, eager: dict[str, Measured]) -> list[Measured]:
    """The graph check's steps (its `compile` entries of mode graphs), eager and replayed, of the
    families `eager` (the check's steps) holds: translation timed at graph_check's middle length,
    `length` x batch (the counted length's share of it scales FLOPs and kernels), a language
    model at its own segment."""
    from workflow_src.train.graph_check import LENGTHS

    out = []
    for entry in report.get("compile", []):
        phase = entry["phases"].get("graphs against eager", {})
        if entry["mode"] != "graphs" or "step_seconds" not in phase or entry["family"] not in eager:
            continue
        m = eager[entry["family"]]
        width = 1.0 if m.kind == "lm" else LENGTHS[1] / m.length
        precision = report["precision"]["resolved"]
        out += [
            dataclasses.replace(
                m,
                seconds=phase[key],
                precision=precision,
                mode=mode,
                width_ratio=width,
                source="graph check",
                rounds=tuple(phase.get(f"{key}_rounds", ())),
            )
            for key, mode in (("eager_step_seconds", "eager"), ("step_seconds", "graphs"))
        ]
    return out


def measurements(reports: list[dict]) -> list[Measured]:
    """Every step the reports timed (module docstring): the checks' eager steps, then the graph
    checks' eager and replayed steps of the families a check among them timed; a step that several
    reports timed, once (`fastest_of_rounds`)."""
    eager = [m for report in reports for m in measured_steps(report)]
    by_name = {m.name: m for m in eager}
    return fastest_of_rounds(eager + [m for report in reports for m in graph_steps(report, by_name)])


def fastest_of_rounds(measured: list[Measured]) -> list[Measured]:
    """One measurement per step (its family, source, mode and shape): where reports timed a step
    more than once, each timing is a round of it, and the fastest is kept with every round beside
    it, as the GPU check keeps a step's rounds (`model.timing.ROUNDS`)."""
    kept: dict[tuple, Measured] = {}
    for m in measured:
        key = (m.label, m.precision, m.length, m.width_ratio, m.target_tokens)
        if key in kept:
            rounds = (kept[key].rounds or (kept[key].seconds,)) + (m.rounds or (m.seconds,))
            m = dataclasses.replace(min(kept[key], m, key=lambda x: x.seconds), rounds=rounds)
        kept[key] = m
    return list(kept.values())


def read(path: Path) -> dict:
    return json.loads(Path(path).read_text())


# -- counting the measured steps (slow: each family at its full size) ------------------------------------
def count_measured(
    config: dict, report: dict, first: tuple = (), counted: dict | None = None, on_counted=None
) -> dict[str, Counts]:
    """Each measured family's step counted as the plan counts steps, at the shapes the check timed:
    translation, batch x `length` target positions all in the loss (the check's `benchmarks.length`;
    its sources run from `length` down to 2/3 of it, here all at `length`: the same kernels, a few
    more encoder FLOPs); language models, their own batch x bptt. The families named in `first`
    are counted first; those in `counted` are kept, not counted again; `on_counted(counts so far)`
    after each (a long count written as it goes)."""
    import torch

    from workflow_src.plan import jobs as planned, steps

    jobs = planned.planned_jobs(config)
    out = dict(counted or {})
    order = sorted(measured_steps(report), key=lambda m: m.name not in first)
    for m in (m for m in order if m.name not in out):
        job = next((j for j in jobs if j.experiment == m.experiment), None)
        if job is None:
            raise ValueError(f"{m.name}: no configured job trains {m.experiment} (the check measured another config)")
        as_measured = {**config, "train": {**config["train"], "precision": m.precision}}
        if job.kind == "lm":
            family = planned.lm_family(config, job, planned.lm_corpus(config, job.dataset))
            timing = steps.time_lm(as_measured, job, family, torch.device("cpu"), model_only=True)
        else:
            family = planned.nmt_family(config, job, planned.parallel_corpus(config, job.dataset, job.pair))
            timing = steps.count_nmt(
                as_measured,
                job,
                family,
                torch.device("cpu"),
                batch=m.target_tokens // m.length,
                shapes=[(m.length, m.length)],
            )
        out[m.name] = timing.counts["step"]
        print(f"{m.name} ({m.experiment}): {out[m.name]}", flush=True)
        if on_counted:
            on_counted(out)
    return out


def write_counts(counts: dict[str, Counts], measured: Path, path: Path) -> None:
    from workflow_src.atomic import write_text

    where = measured.resolve()
    where = where.relative_to(REPO) if where.is_relative_to(REPO) else where
    write_text(
        path,
        json.dumps(
            {
                "about": f"the plan's counts of the steps {where} times, at its shapes, "
                "counted on the CPU as CUDA runs them (python -m workflow_src.plan "
                "count-measured) with the config the check ran",
                "counts": {name: dataclasses.asdict(c) for name, c in counts.items()},
            },
            indent=1,
        )
        + "\n",
    )


def read_counts(path: Path) -> dict[str, Counts]:
    return {name: Counts(**fields) for name, fields in read(path)["counts"].items()}


# -- the fit -----------------------------------------------------------------------------------------
def step_counts(m: Measured, counts: Counts) -> Counts:
    """The counts of a measured step at its timed width: replayed, `as_graphs` (no host sync but a
    language model's two per-epoch reads, which its timed epoch makes too); eager, scaled alike."""
    if m.width_ratio == 1.0 and m.mode == "eager":
        return counts
    return as_graphs(counts, m.width_ratio, keep_syncs=m.mode == "eager" or m.kind == "lm")


def replays(m: Measured) -> int | None:
    return 1 if m.mode == "graphs" else None


def modelled_step(model: CostModel, m: Measured, counts: dict[str, Counts]) -> float:
    return model.alone(step_counts(m, counts[m.name]), m.precision, replays(m))


def modelled(model: CostModel, measured: list[Measured], counts: dict[str, Counts]) -> dict[str, float]:
    """Each measurement's modelled step seconds, by its label."""
    return {m.label: modelled_step(model, m, counts) for m in measured}


def worst_ratio(model: CostModel, measured: list[Measured], counts: dict[str, Counts]) -> float:
    """max over the measurements of modelled / measured or its inverse, whichever is larger."""
    predicted = modelled(model, measured, counts)
    return max(max(predicted[m.label] / m.seconds, m.seconds / predicted[m.label]) for m in measured)


def worst_ratio_floor(measured: list[Measured], counts: dict[str, Counts]) -> tuple[float, Measured, Measured]:
    """The smallest worst ratio any setting of the terms can reach, and the two measurements that
    force it. costmodel's `alone` does not decrease in any of FLOPs, bytes, kernels outside fused
    LSTM layers, theirs, operators, views and syncs, and is at most λ times as long for counts at
    most λ >= 1 times as many in each: so where A's counts are at most λ times B's (same mode and
    precision), alone(A) <= λ · alone(B) whatever the terms, and any model is off by at least
    sqrt(t_A / (λ · t_B)) on A or on B."""

    def components(m: Measured) -> tuple:
        c = step_counts(m, counts[m.name])
        return (c.flops, c.bytes, c.kernels - c.recurrent_kernels, c.recurrent_kernels, c.operators, c.views, c.syncs)

    def at_most(a: tuple, b: tuple) -> float:
        return max(1.0, *(x / y if y else (math.inf if x else 0.0) for x, y in zip(a, b)))

    counted = [(m, components(m)) for m in measured]
    return max(
        (
            (math.sqrt(a.seconds / (at_most(ca, cb) * b.seconds)), a, b)
            for a, ca in counted
            for b, cb in counted
            if (a.mode, a.precision) == (b.mode, b.precision)
        ),
        key=lambda found: found[0],
    )


def fitted_terms(measured: list[Measured]) -> tuple[str, ...]:
    """The terms the measurements fix (module docstring)."""
    graphs = any(m.mode == "graphs" for m in measured)
    return HOST_TERMS + ((LAUNCH_TERM, *GPU_TERMS) if graphs else ("recurrent_kernel",))


def starts(terms: tuple[str, ...]) -> list[dict]:
    """Where the fit's searches start: START, and START with each fitted term 3 times larger and 3
    times smaller."""
    return [START] + [{**START, name: START[name] * factor} for name in terms for factor in (3, 1 / 3)]


def fit(reports: list[dict], counts: dict[str, Counts]) -> CostModel:
    """The cost model of the reports' device, its `fitted_terms` fitted (module docstring) and the
    others `PRIOR`: from the least squares of the log ratios, the worst case over all measurements,
    then over the graphs steps within it, then least squares within both (module docstring), over
    the logarithms of the terms, which keeps them positive."""
    import numpy as np
    from scipy.optimize import least_squares, minimize

    devices = {environment(r)["device_name"] for r in reports}
    if len(devices) != 1:
        raise ValueError(
            f"the reports measured {len(devices)} devices ({', '.join(sorted(devices))}): fit one at a time"
        )
    measured_on = devices.pop()
    device = device_named(measured_on)
    measured = measurements(reports)
    missing = sorted({m.name for m in measured if m.name not in counts})
    if missing:
        raise ValueError(f"no counts of the measured families {', '.join(missing)}")
    terms = fitted_terms(measured)

    def model(theta) -> CostModel:
        return CostModel(device, **{**PRIOR, **{name: float(v) for name, v in zip(terms, np.exp(theta))}})

    # the steps of each precision and mode as one Counts of arrays, for `alone` to model them at once
    logged = np.log([m.seconds for m in measured])
    groups = []
    for precision, mode in {(m.precision, m.mode) for m in measured}:
        index = np.array([i for i, m in enumerate(measured) if (m.precision, m.mode) == (precision, mode)])
        at_width = [step_counts(measured[i], counts[measured[i].name]) for i in index]
        stacked = Counts(
            **{f.name: np.array([getattr(c, f.name) for c in at_width], float) for f in dataclasses.fields(Counts)}
        )
        groups.append((index, stacked, precision, replays(measured[index[0]])))

    def log_ratios(theta):
        out = np.empty(len(measured))
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # the search's far corners: as 1e6
            fitted = model(theta)
            for index, stacked, precision, n in groups:
                out[index] = np.log(fitted.alone(stacked, precision, n)) - logged[index]
        return np.nan_to_num(out, nan=1e6, posinf=1e6, neginf=-1e6)

    def exceeding(theta, bounds) -> np.ndarray:
        """How far each tier's worst |log ratio| is within its bound (>= 0: within)."""
        r = np.abs(log_ratios(theta))
        return np.array([bound - r[tier].max() for tier, bound in bounds])

    def smallest_worst(theta, tier, bounds):
        """θ with the smallest worst |log ratio| over `tier` (a mask), every tier of `bounds` within
        its bound: as min t subject to |log ratio_i| <= t (SLSQP), then polished by Nelder-Mead on the
        max itself, which has corners SLSQP may stop at."""

        def within(x):
            r = np.abs(log_ratios(x[:-1]))
            return np.concatenate([x[-1] - r[tier], *(bound - r[t] for t, bound in bounds)])

        start = np.append(theta, np.abs(log_ratios(theta))[tier].max())
        found = minimize(
            lambda x: x[-1],
            start,
            method="SLSQP",
            constraints=[{"type": "ineq", "fun": within}],
            options={"maxiter": 500},
        ).x[:-1]

        def penalised(x):
            return np.abs(log_ratios(x))[tier].max() + 1e3 * max(0.0, -exceeding(x, bounds).min(initial=0.0))

        candidates = [x for x in (theta, found) if exceeding(x, bounds).min(initial=0.0) >= -1e-9]
        polished = minimize(
            penalised,
            min(candidates, key=penalised),
            method="Nelder-Mead",
            options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 5_000},
        ).x
        return min([*candidates, polished], key=penalised)

    tiers = [t for t in (np.ones(len(measured), bool), np.array([m.mode == "graphs" for m in measured])) if t.any()]

    def search(start) -> np.ndarray:
        """From `start`: the smallest worst case over every measurement; then, within it, over the
        graphs steps (reproducible where eager ones spread, so fitted as closely as the eager worst
        case allows)."""
        theta = least_squares(log_ratios, np.log([start[name] for name in terms])).x
        bounds = []
        for tier in tiers:
            theta = smallest_worst(theta, tier, bounds)
            bounds.append((tier, np.abs(log_ratios(theta))[tier].max() + TIE))
        return theta

    # the searches stop at corners of the worst case that depend on where they start (and on the BLAS
    # threads' rounding): from every start, each tier within TIE of the best any search reached, then
    # least squares within those bounds from each search that is within them
    candidates = [search(start) for start in starts(terms)]
    bounds = []
    for tier in tiers:
        worst = [np.abs(log_ratios(theta))[tier].max() for theta in candidates]
        bounds.append((tier, min(worst) + TIE))
        candidates = [theta for theta, w in zip(candidates, worst) if w <= min(worst) + TIE]

    def each_within(theta) -> np.ndarray:
        """bound ∓ log ratio of each measurement in each tier (>= 0: within): smooth, where a tier's
        worst case is not."""
        r = log_ratios(theta)
        return np.concatenate([np.concatenate([bound - r[tier], bound + r[tier]]) for tier, bound in bounds])

    def sum_of_squares(theta) -> float:
        return np.sum(log_ratios(theta) ** 2)

    squares = [
        minimize(
            sum_of_squares,
            theta,
            method="SLSQP",
            constraints=[{"type": "ineq", "fun": each_within}],
            options={"ftol": 1e-10, "maxiter": 1000},
        ).x
        for theta in candidates
    ]
    within = [theta for theta in candidates + squares if exceeding(theta, bounds).min() >= -1e-9]
    chosen = min(within, key=sum_of_squares)
    dates = sorted({environment(r)["date"][:10] for r in reports})
    kinds = ", ".join(f"{sum(m.mode == mode for m in measured)} {mode}" for mode in ("eager", "graphs"))
    return dataclasses.replace(
        model(chosen),
        fitted=terms,
        source=f"fitted to {measured_on}'s step times of {', '.join(dates)} "
        f"({len({m.name for m in measured})} families; {kinds} steps)",
    )


def kernel_bound(model: CostModel, reports: list[dict], counts: dict[str, Counts]) -> float | None:
    """The most GPU seconds per small kernel that leaves the modelled GPU time of every measured
    eager step without fused LSTM layers within its measured time: the eager measurements' upper
    bound on `kernel` (None: no such step measured)."""
    bounds = [
        (m.seconds - model.flop_seconds(c, m.precision) - model.memory_seconds(c)) / c.kernels
        for m in measurements(reports)
        if m.mode == "eager" and not (c := step_counts(m, counts[m.name])).recurrent_kernels and c.kernels
    ]
    return max(0.0, min(bounds)) if bounds else None


@dataclasses.dataclass(frozen=True)
class Fitting:
    """A fit and what the plan's report says of it: the measurements, their counts, the model fitted
    on the measured device and the model carried to the planned one."""

    reports: list
    counts: dict
    fitted: CostModel
    model: CostModel

    def rows(self) -> list[dict]:
        """Per measurement: measured and modelled step seconds on the measured device, their ratio,
        the modelled host and GPU seconds, and the counts behind them."""
        out = []
        for m in measurements(self.reports):
            c = step_counts(m, self.counts[m.name])
            replays = 1 if m.mode == "graphs" else None
            modelled_seconds = modelled_step(self.fitted, m, self.counts)
            out.append(
                {
                    "family": m.label,
                    "experiment": m.experiment,
                    "mode": m.mode,
                    "measured": m.seconds,
                    "modelled": modelled_seconds,
                    "ratio": modelled_seconds / m.seconds,
                    "host": self.fitted.host(c, replays),
                    "busy": self.fitted.busy(c, m.precision),
                    "operators": c.operators,
                    "views": c.views,
                    "kernels": c.kernels,
                    "recurrent_kernels": c.recurrent_kernels,
                    "rounds": m.rounds,
                }
            )
        return out

    def kernel_bound(self) -> float | None:
        return kernel_bound(self.fitted, self.reports, self.counts)


def load(
    measured: tuple[Path, ...] = MEASURED, counted: Path = COUNTED
) -> tuple[list[dict], dict[str, Counts], CostModel]:
    """(the reports, their counts, the model fitted to them) of a measurement and its stored counts.
    Families the counts file names under `not_counted` (with why) are left out of the reports."""
    skipped = read(counted).get("not_counted", {})
    reports = [
        {
            **report,
            "families": {k: v for k, v in report["families"].items() if k not in skipped},
            "compile": [e for e in report.get("compile", []) if e["family"] not in skipped],
        }
        for report in (read(path) for path in measured)
    ]
    counts = read_counts(counted)
    model = fit(reports, counts)
    if skipped:
        model = dataclasses.replace(
            model,
            source=f"{model.source}; not fitted, not counted: {', '.join(skipped)} "
            f"({'; '.join(sorted(set(skipped.values())))})",
        )
    return reports, counts, model


def describe(device: Device) -> str:
    return (
        f"{device.name}: bf16 {device.peak_flops['bf16'] / 1e12:g} TFLOP/s dense, "
        f"HBM {device.hbm_bytes_per_second / 1e12:g} TB/s"
    )
