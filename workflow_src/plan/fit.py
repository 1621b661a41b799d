"""The cost model fitted to what a GPU measured: a GPU check's step times (its `gpu_check.json`,
or the H200's of 2026-11-26 entered by hand in the same layout, `MEASURED`) against the plan's
counts of the same steps at the same shapes (`count_measured`; the H200's stored in `COUNTED`).

Fitted (`FITTED`): the host's seconds per operator and per view, and the GPU's seconds per kernel
of a fused LSTM layer, to the smallest worst-case ratio between modelled and measured step times,

    min over θ of  max_i |log(alone_i(θ) / measured_i)|        (costmodel.CostModel.alone, eager)

the criterion a budget is judged by; of the terms that reach it (within TIE), those with the
least squares of the log ratios. Not fitted (`PRIOR`): the GPU's seconds per other kernel
and the achieved share of the peak. An eager step on a GPU is host-bound wherever it runs many
small kernels, so its time bounds them from above (`kernel_bound`) but does not fix them; a step
replayed as CUDA graphs, whose time is the GPU's, would.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from workflow_src.plan.costmodel import CostModel, Device, device_named
from workflow_src.plan.counting import Counts

REPO = Path(__file__).resolve().parents[2]
MEASURED = REPO / "docs" / "gpu_check" / "h200_2026-11-26_steps.json"
COUNTED = REPO / "docs" / "gpu_check" / "h200_2026-11-26_counts.json"
FITTED = ("host_operator", "host_view", "recurrent_kernel")
# The priors of the terms no measurement here fixes: 2.5 µs of GPU time per small kernel (its launch
# latency and run), and 30% of the peak for the products of batch 64 x 512-1024
PRIOR = {"kernel": 2.5e-6, "achieved": 0.3}
START = {"host_operator": 8e-6, "host_view": 2e-6, "recurrent_kernel": 2.5e-6}
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


def measured_steps(report: dict) -> list[Measured]:
    """The step times of a GPU check's report (its `families`' speed entries): a gpu_check.json, whose
    speed entries carry their precision and length, or the 2026-11-26 H200 record, whose length is
    its `batch`'s."""
    return [Measured(name, family["experiment"], speed["step_seconds"], speed["target_tokens_per_step"],
                     speed["precision"], speed.get("length") or report["batch"]["length"])
            for name, family in report["families"].items()
            if "step_seconds" in (speed := family.get("speed") or {})]


def read(path: Path) -> dict:
    return json.loads(Path(path).read_text())


# -- counting the measured steps (slow: each family at its full size) ------------------------------------
def count_measured(config: dict, report: dict) -> dict[str, Counts]:
    """Each measured family's step counted as the plan counts steps, at the shapes the check timed:
    translation, batch x `length` target positions all in the loss (the check's `benchmarks.length`;
    its sources run from `length` down to 2/3 of it, here all at `length`: the same kernels, a few
    more encoder FLOPs); language models, their own batch x bptt."""
    import torch

    from workflow_src.plan import jobs as planned, steps

    jobs = planned.planned_jobs(config)
    out = {}
    for m in measured_steps(report):
        job = next((j for j in jobs if j.experiment == m.experiment), None)
        if job is None:
            raise ValueError(f"{m.name}: no configured job trains {m.experiment} (the check measured another config)")
        as_measured = {**config, "train": {**config["train"], "precision": m.precision}}
        if job.kind == "lm":
            family = planned.lm_family(config, job, planned.lm_corpus(config, job.dataset))
            timing = steps.time_lm(as_measured, job, family, torch.device("cpu"), model_only=True)
        else:
            family = planned.nmt_family(config, job, planned.parallel_corpus(config, job.dataset, job.pair))
            timing = steps.count_nmt(as_measured, job, family, torch.device("cpu"), batch=m.target_tokens // m.length,
                                     shapes=[(m.length, m.length)])
        out[m.name] = timing.counts["step"]
        print(f"{m.name} ({m.experiment}): {out[m.name]}", flush=True)
    return out


def write_counts(counts: dict[str, Counts], measured: Path, path: Path) -> None:
    from workflow_src.atomic import write_text

    write_text(path, json.dumps({"about": f"the plan's counts of the steps {measured.name} times, at its shapes, "
                                          "counted on the CPU as CUDA runs them (python -m workflow_src.plan "
                                          "count-measured) with the config the check ran (the H200's: config.yaml, "
                                          "whose sizes for these families are those of 2026-11-26)",
                                 "counts": {name: dataclasses.asdict(c) for name, c in counts.items()}},
                                indent=1) + "\n")


def read_counts(path: Path) -> dict[str, Counts]:
    return {name: Counts(**fields) for name, fields in read(path)["counts"].items()}


# -- the fit -----------------------------------------------------------------------------------------
def modelled(model: CostModel, measured: list[Measured], counts: dict[str, Counts]) -> dict[str, float]:
    """Each measured family's modelled eager step seconds."""
    return {m.name: model.alone(counts[m.name], m.precision) for m in measured}


def worst_ratio(model: CostModel, measured: list[Measured], counts: dict[str, Counts]) -> float:
    """max over the families of modelled / measured or its inverse, whichever is larger."""
    predicted = modelled(model, measured, counts)
    return max(max(predicted[m.name] / m.seconds, m.seconds / predicted[m.name]) for m in measured)


def fit(report: dict, counts: dict[str, Counts]) -> CostModel:
    """The cost model of the report's device, its `FITTED` terms fitted (module docstring) and the
    others `PRIOR`: least squares of the log ratios first, then their worst case (Nelder-Mead from
    there), over the logarithms of the terms, which keeps them positive."""
    import numpy as np
    from scipy.optimize import least_squares, minimize

    device = device_named(report["device_name"])
    measured = measured_steps(report)
    missing = [m.name for m in measured if m.name not in counts]
    if missing:
        raise ValueError(f"no counts of the measured families {', '.join(missing)}")

    def model(theta) -> CostModel:
        return CostModel(device, **dict(zip(FITTED, np.exp(theta))), **PRIOR)

    def log_ratios(theta):
        predicted = modelled(model(theta), measured, counts)
        return np.array([math.log(predicted[m.name] / m.seconds) for m in measured])

    start = np.log([START[name] for name in FITTED])
    smooth = least_squares(log_ratios, start).x
    minimax = minimize(lambda theta: np.abs(log_ratios(theta)).max(), smooth, method="Nelder-Mead",
                       options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 20_000})
    # many terms reach that worst case: of them, the one with the least squares of the log ratios
    bound = minimax.fun + TIE
    chosen = minimize(lambda theta: np.sum(log_ratios(theta) ** 2), minimax.x, method="SLSQP",
                      constraints=[{"type": "ineq", "fun": lambda theta: bound - np.abs(log_ratios(theta))}]).x
    if np.abs(log_ratios(chosen)).max() > bound + 1e-9:
        chosen = minimax.x
    names = ", ".join(m.name for m in measured)
    return dataclasses.replace(model(chosen), fitted=FITTED,
                               source=f"fitted to {report['device_name']}'s step times of {report['date'][:10]} "
                                      f"({len(measured)} families: {names})")


def kernel_bound(model: CostModel, report: dict, counts: dict[str, Counts]) -> float | None:
    """The most GPU seconds per small kernel that leaves the modelled GPU time of every measured
    step without fused LSTM layers within its measured time: the measurements' upper bound on
    the prior `kernel` (None: no such step measured)."""
    bounds = [(m.seconds - model.flop_seconds(c, m.precision) - model.memory_seconds(c)) / c.kernels
              for m in measured_steps(report) if not (c := counts[m.name]).recurrent_kernels and c.kernels]
    return max(0.0, min(bounds)) if bounds else None


@dataclasses.dataclass(frozen=True)
class Fitting:
    """A fit and what the plan's report says of it: the measurement, its counts, the model fitted
    on the measured device and the model carried to the planned one."""

    report: dict
    counts: dict
    fitted: CostModel
    model: CostModel

    def rows(self) -> list[dict]:
        """Per measured family: measured and modelled step seconds on the measured device, their
        ratio, the modelled host and GPU seconds, and the counts behind them."""
        out = []
        for m in measured_steps(self.report):
            c = self.counts[m.name]
            modelled_seconds = self.fitted.alone(c, m.precision)
            out.append({"family": m.name, "experiment": m.experiment, "measured": m.seconds,
                        "modelled": modelled_seconds, "ratio": modelled_seconds / m.seconds,
                        "host": self.fitted.host(c), "busy": self.fitted.busy(c, m.precision), "operators": c.operators,
                        "views": c.views, "kernels": c.kernels, "recurrent_kernels": c.recurrent_kernels})
        return out

    def kernel_bound(self) -> float:
        return kernel_bound(self.fitted, self.report, self.counts)


def load(measured: Path = MEASURED, counted: Path = COUNTED) -> tuple[dict, dict[str, Counts], CostModel]:
    """(the report, its counts, the model fitted to them) of a measurement and its stored counts."""
    report, counts = read(measured), read_counts(counted)
    return report, counts, fit(report, counts)


def describe(device: Device) -> str:
    return (f"{device.name}: bf16 {device.peak_flops['bf16'] / 1e12:g} TFLOP/s dense, "
            f"HBM {device.hbm_bytes_per_second / 1e12:g} TB/s")
