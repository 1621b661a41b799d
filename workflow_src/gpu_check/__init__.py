"""The GPU check: every model family the configured run trains, on the training device, against a
CPU fp32 reference, before any long training starts (`snakemake results/gpu_check.md`, the first
job of `all`; on a bare GPU machine `scripts/gpu_check_on_device.sh`, i.e.
`python3 -m workflow_src.gpu_check --config config.yaml --out DIR --deadline SECONDS`).

In this order, each item reported as it ends (`report.Report`: a console line `passed` or
`FAILED: <reason> (avoid with <setting>)`, and `DIR/gpu_check.{json,md}` rewritten atomically):

    families     every family of the plan (`families.families`: one per architecture, output layer
                 and loss, vocabulary sizes, joint dimension, sampling, LM width, corpus and dropout
                 among the trainings of `snakemake all`), at its configured sizes, once:
                   its training step (`families.training_step`) at train.batch_size x its length
                   (language models: their batch x bptt): peak memory against the device's with
                   the configured jobs per device and HEADROOM left (CUDA), median seconds, host
                   syncs (CUDA: none allowed);
                   correctness against the CPU fp32 reference from the same weights, batch and random
                   draws: for one family per (architecture, output layer, loss) loss, gradients'
                   cosine per parameter group, greedy words and every module's output dtype, in
                   fp32 and train.precision; for the others the loss alone, in train.precision, at
                   REDUCED_WIDTH hidden units (vocabularies kept);
                   beside it, the plan's modelled H100 step (`plan.steps`) and measured / modelled;
    decoding     greedy and beam search of one family per output layer against the CPU's words, and
                 the seconds per sentence (`decoding`);
    sharing      (CUDA) the configured gpu.jobs_per_device processes at once on three representative
                 families, with MPS's state, against each step timed alone just before, and the
                 GPU's busy share of a step alone (torch.profiler);
    compile      train.compile's configured mode (every mode with --compile all), per architecture in
                 a fresh dynamo state, training and evaluation as a job runs them (`compile_check`);
    retime       every family's step timed again (to `model.timing.ROUNDS` timings), built afresh,
                 minutes after its first: its `step_seconds` is the fastest median, each kept in
                 `step_seconds_rounds` (a host-bound step's time varies between moments of a run).

The CPU's work (references, decoding references, the plan's counts) runs in worker processes beside
the device's (`references`), stopped while the device is timed (a family's step and its second
timing, sharing, compile items), so that an eager step's host runs on a quiet CPU. With a deadline,
an item that would not end before it is not started: the report names it and everything after it,
and the check exits 1 (as on a failure).

Imports: torch, numpy and this package only (no Snakemake, gensim, fastText, eflomal, tqdm,
sacremoses, PyYAML), so that it runs as plain Python on a bare GPU machine. The JSON's
`step_seconds` ({family: seconds per step, alone}) and `jobs_per_device` are the cost plan's hooks.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import torch

from workflow_src.gpu_check import compile_check, decoding, device as measured, sharing
from workflow_src.gpu_check.families import (
    REDUCED_WIDTH,
    Family,
    at_width,
    batch,
    compared,
    decoded,
    families,
    fully_compared,
    representative,
    selected,
)
from workflow_src.gpu_check.measures import SharedDraws, compare, compare_loss, dtype_problems, dtype_table, run_once
from workflow_src.gpu_check.references import CHECK_BATCH, decoding_reference, executor, modelled_step, reference
from workflow_src.gpu_check.report import CHECKS, Report, one_line, refused, verdict
from workflow_src.model import compilation, precision as precisions
from workflow_src.model.seq2seq import finished_check_interval
from workflow_src.model.timing import ROUNDS

# Tolerances against the CPU fp32 reference, per precision of the device run. fp32: the same
# arithmetic in another order (cuDNN, cuBLAS); tf32: 10-bit mantissas in the products; bf16:
# 8-bit mantissas in the output layer's products (the recurrent layers run in fp32 there).
# words: the share of greedy words equal to the reference's (a flipped near-tie changes the rest
# of its sentence, so this is looser than the loss).
TOLERANCES = {
    "fp32": {"loss_relative": 1e-4, "gradient_cosine": 0.9999, "words": 0.9},
    "tf32": {"loss_relative": 1e-2, "gradient_cosine": 0.99, "words": 0.6},
    "bf16": {"loss_relative": 2e-2, "gradient_cosine": 0.98, "words": 0.6},
}
SYNCS_ALLOWED = 0  # host syncs per training step
SHARING_TIMEOUT = 180.0  # seconds the sharing processes may take to report (a crashed one leaves the rest waiting)
SHARING_WHEN_ALONE = (
    3  # processes sharing the device where gpu.jobs_per_device is 1 (docs/plan_modelled.md's recommendation)
)
# What avoids a failure of each check
AVOID = {
    "bf16": "train.precision: fp32",
    "tf32": "train.precision: fp32",
    "fp32": "train.device: cpu (fp32 on the device disagrees with the CPU: a driver or kernel fault to report)",
    "dtypes": "no setting (a reduced dtype appears although none was asked for: a fault to report)",
    "syncs": "no setting (a host sync slows each step but changes no result: report it with this file)",
    "reference": "no setting (the CPU reference itself failed: a fault of the check to report)",
    "error": "no setting (an error of the device or of the check: report it with this file)",
}
# Seconds an item of each kind takes before one is measured. compile: graphs against eager took
# 1-17 s a family on the H200 (29 s with its fp64 retry), docs/gpu_check/2026-11-27-h200/.
ESTIMATES = {"family": 10.0, "decoding": 10.0, "sharing": 60.0, "compile": 30.0, "retime": 5.0}
MARGIN = 5.0  # seconds kept before the deadline: the last report and the workers' end


class Clock:
    """Seconds since the check started, and whether an item of a kind fits before the deadline:
    1.5 times the longest of its kind so far (ESTIMATES before the first) and MARGIN."""

    def __init__(self, deadline: float | None):
        self.started, self.deadline, self.longest = time.monotonic(), deadline, {}

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float | None:
        """Seconds left for work (None: no deadline)."""
        return None if self.deadline is None else max(0.0, self.deadline - MARGIN - self.elapsed())

    def fits(self, kind: str) -> bool:
        return self.deadline is None or self.left() >= 1.5 * self.longest.get(kind, ESTIMATES[kind])

    def why_not(self, kind: str) -> str:
        """Why an item of `kind` does not fit: what it is expected to take, from what, against what is left."""
        basis = "the longest so far" if kind in self.longest else "ESTIMATES' guess before one has run"
        expected = 1.5 * self.longest.get(kind, ESTIMATES[kind])
        return (
            f"not started: it would not end before the --deadline of {self.deadline:g} s (1.5 x {basis} for a "
            f"{kind} item, {expected:g} s, against {self.left():.1f} s left before the last {MARGIN:g} s)"
        )

    @contextlib.contextmanager
    def timing(self, kind: str):
        started = time.monotonic()
        yield
        self.longest[kind] = max(self.longest.get(kind, 0.0), time.monotonic() - started)


def precisions_checked(setting: str, device: torch.device) -> list[str]:
    """fp32 and the configured precision, each once (bf16 runs its recurrent layers with TF32 on,
    `precision.configure`, so TF32 is checked inside it; tf32 alone where it is configured)."""
    configured = precisions.resolve(setting, device)
    return ["fp32"] + ([configured] if configured != "fp32" else [])


# -- correctness ----------------------------------------------------------------------------------
def compare_fully(family: Family, ref: dict, checked: list[str], device: torch.device) -> tuple[dict, list]:
    """Loss, gradients, words and dtypes of the family's comparison model on the device, in each
    precision of `checked`, against the CPU's; the reference's gradients file is removed after."""
    base = compared(family).to(device)
    fixed = batch(family, CHECK_BATCH, True, device)
    gradients = torch.load(ref["gradients"], mmap=True)
    reference_run = {"loss": ref["loss"], "gradients": gradients, "words": ref["words"]}
    out, problems = {}, []
    for precision in checked:
        result = run_once(
            family,
            copy.deepcopy(base),
            fixed,
            precision,
            device,
            SharedDraws(ref["draws"]),
            replay=True,
            record_dtypes=True,
        )
        measures, found = compare(result, reference_run, TOLERANCES[precision])
        dtype_issues = dtype_problems(result["dtypes"], precision, result["loss_dtype"])
        here = [(f"{p} in {precision}", AVOID[precision]) for p in found]
        here += [
            (f"dtypes in {precision}: {p}", AVOID["bf16"] if precision == "bf16" else AVOID["dtypes"])
            for p in dtype_issues
        ]
        out[precision] = {
            **measures,
            "dtypes": dtype_table(result["dtypes"]),
            "dtype_problems": dtype_issues,
            "verdict": verdict(here),
        }
        problems += here
    del gradients, reference_run
    os.remove(ref["gradients"])
    return out, problems


def compare_loss_only(family: Family, ref: dict, precision: str, device: torch.device) -> tuple[dict, list]:
    model = compared(family).to(device)
    result = run_once(
        family,
        model,
        batch(family, CHECK_BATCH, True, device),
        precision,
        device,
        SharedDraws(ref["draws"]),
        replay=True,
        full=False,
    )
    measures, found = compare_loss(result["loss"], ref["loss"], TOLERANCES[precision])
    problems = [(f"{p} in {precision} at width {REDUCED_WIDTH}", AVOID[precision]) for p in found]
    return {precision: {**measures, "verdict": verdict(problems)}}, problems


# -- the check ------------------------------------------------------------------------------------
class Check:
    """One run of the check on `device` (see the module docstring)."""

    def __init__(
        self,
        config: dict,
        device: torch.device,
        out: Path,
        deadline: float | None = None,
        only: list[str] | None = None,
        compile_modes: str = "configured",
        sharing_jobs: int | None = None,
        workers: int | None = None,
        checks: tuple[str, ...] = CHECKS,
        log=print,
    ):
        if why := refused(checks):
            raise ValueError(why)
        self.checks = tuple(c for c in CHECKS if c in checks)
        self.config, self.device, self.clock, self.log = config, device, Clock(deadline), log
        self.lock = threading.Lock()  # the report is written by the run or, at the deadline, by its watchdog
        self.cuda = device.type == "cuda"
        setting = config["train"].get("precision", "auto")
        self.precision, self.checked = precisions.resolve(setting, device), precisions_checked(setting, device)
        self.found = selected(families(config), only)
        self.full = fully_compared(self.found)
        self.jobs_per_device = config.get("gpu", {}).get("jobs_per_device", 1)
        self.sharing_jobs = sharing_jobs or (self.jobs_per_device if self.jobs_per_device > 1 else SHARING_WHEN_ALONE)
        self.compile_modes = compile_check.modes(config["train"].get(compilation.KEY, "off"), compile_modes, device)
        self.pool = executor(0, 1)  # no workers until `run` starts them: an item called alone pauses nothing
        self.workers = (min(12, max(1, (os.cpu_count() or 2) - 2)) if self.cuda else 0) if workers is None else workers
        environment = measured.environment(device)
        self.report = Report(
            out,
            {
                "environment": environment,
                "checks": list(self.checks),
                "deadline_seconds": deadline,
                "elapsed_seconds": 0.0,
                "precision": {"setting": setting, "resolved": self.precision, "checked": self.checked},
                "compile_setting": config["train"].get(compilation.KEY, "off"),
                "jobs_per_device_configured": self.jobs_per_device,
                "tolerances": {
                    "reference": "CPU fp32, same initialisation, batch and random draws",
                    **TOLERANCES,
                    "decoding_words": decoding.WORDS,
                    "syncs_per_step": SYNCS_ALLOWED,
                    "memory_headroom": measured.HEADROOM,
                    "compile_agreement": compile_check.AGREEMENT,
                },
                "notes": self.notes(),
                "families": {},
                "decoding": {},
                "sharing": "not applicable on the CPU" if not self.cuda else "not reached",
                "compile": "train.compile is off in the config: nothing to check (--compile all checks every mode)"
                if not self.compile_modes
                else [],
                "step_seconds": {},
                "jobs_per_device": "not applicable (CPU)" if not self.cuda else {},
            },
            log,
        )
        self.report.check(
            "device",
            [],
            f"{environment['device_name']}; torch {environment['torch']}, CUDA "
            f"{environment['cuda'] or 'none'}, cuDNN {environment['cudnn'] or 'none'}; MPS "
            f"{'on' if environment['mps']['on'] else 'off'}; {len(self.found)} families",
        )

    def notes(self) -> dict:
        t, cuda = TOLERANCES, self.cuda
        return {
            "families": (
                f"One training step (forward, backward, clipping, optimiser) of each family at its configured sizes, "
                f"train.batch_size x its length (language models: their batch x bptt), in {self.precision}: the median "
                f"of {measured.STEPS} after {measured.WARMUP} warm-up steps"
                + (
                    ", timed again after every other item (`retime`) from a fresh build, and the fastest median kept "
                    "(step ms: the kept one, then each timing's): a host-bound step's time varies between moments of "
                    "a run, and interference only adds time"
                    if "retime" in self.checks
                    else ""
                )
                + (", the CPU workers stopped while it runs (as while sharing and compile items run)" if cuda else "")
                + ". Peak memory: "
                + (
                    "torch.cuda.max_memory_allocated (and reserved) over those steps, times gpu.jobs_per_device, "
                    f"with {measured.HEADROOM:.0%} of the device left"
                    if cuda
                    else "not measured on the CPU"
                )
                + ". Compared with the CPU: `full` families (one per architecture, output layer and loss) in loss, "
                f"gradients and words; the others by their loss alone at {REDUCED_WIDTH} hidden units (vocabularies "
                "kept), in train.precision. Modelled: the plan's H100 seconds per step alone (`plan.steps`), "
                + (
                    "its counts made on this machine's CPU beside the device's work."
                    if cuda
                    else "not computed on the CPU (the plan models an H100)."
                )
            ),
            "correctness": (
                "Reference: the CPU in fp32 from the same initialisation, a fixed batch of "
                f"{CHECK_BATCH} sentences (language models: columns), dropout off in translation models, "
                "language models' masks and every sampled vocabulary or negative drawn once and shared. "
                "Tolerances: "
                + "; ".join(
                    f"{k}: loss within {v['loss_relative']:g}, gradient cosine at least "
                    f"{v['gradient_cosine']:g}, words at least {v['words']:.0%}"
                    for k, v in t.items()
                )
                + "."
            ),
            "decoding": (
                f"Greedy and beam search (the widest beam the family's jobs decode with) of one family per output "
                f"layer at its configured sizes, </s> banned so each sentence runs its length; words on a fixed "
                f"batch of {CHECK_BATCH} against the CPU's (at least {decoding.WORDS:.0%}), time at "
                f"decode.batch_size {self.config['decode']['batch_size']} sentences; fp32 tensors with torch's "
                "default TF32 switches, as decode jobs run."
            ),
            "sharing": (
                f"{self.sharing_jobs} processes (config gpu.jobs_per_device: {self.jobs_per_device}"
                + ("" if self.jobs_per_device > 1 else f", so {SHARING_WHEN_ALONE}, what the plan recommends")
                + ") each running one family's step at once, against its step timed alone just before (step ms "
                "alone); the busy share is the union of the GPU's kernel times over a profiled step alone "
                "(torch.profiler)."
                if cuda
                else "Not applicable on the CPU."
            ),
            "compile": (
                "fuse: per architecture, in a fresh dynamo state, training at an epoch's shapes, then evaluation in "
                "the same state (as a job runs them: both go through the one compiled decoder step or LM segment, "
                "`model.compilation`), then after a reset the compiled loss against eager. graphs: per "
                "architecture, output layer and sampling, the whole training step captured per length bucket "
                f"against the eager step over {compile_check.GRAPH_STEPS} steps in fp32 without dropout (losses within "
                "the tolerance, the updates' cosine), then both timed in train.precision, in turn, each built afresh "
                f"{ROUNDS} times, the fastest median kept (train/graph_check.py)."
            ),
        }

    # -- items --------------------------------------------------------------------------------------
    def family(self, family: Family, ref) -> None:
        report = self.report
        e = {
            "kind": family.kind,
            "experiment": family.job.experiment,
            "dataset": family.job.dataset,
            "pair": family.job.pair,
            "jobs": family.jobs,
            "compared": "",
            "modelled": "not reached" if self.cuda else "not computed on the CPU",
        }
        with self.pool.paused():
            speed, problems = measured.measure(family, self.precision, self.device, self.jobs_per_device)
        e["speed"] = speed
        if isinstance(speed.get("syncs_per_step"), float) and speed["syncs_per_step"] > SYNCS_ALLOWED:
            problems.append(
                (
                    f"{speed['syncs_per_step']:g} host syncs per training step, called from "
                    f"{', '.join(speed['sync_sites']) or 'an unknown place'}",
                    AVOID["syncs"],
                )
            )
        full = e["full"] = family.name in self.full
        try:
            result = ref.result(timeout=self.clock.left())
        except TimeoutError:
            e["compared"] = "not reached: the CPU reference was not ready before the deadline"
            report.not_reached([f"the comparison of {family.name}"], "its CPU reference was not ready")
        except Exception as error:
            problems.append((f"the CPU reference failed: {one_line(error)}", AVOID["reference"]))
        else:
            if full:
                e["correctness"], found = compare_fully(family, result, self.checked, self.device)
                e["compared"] = f"full, in {', '.join(self.checked)}"
            else:
                e["correctness"], found = compare_loss_only(at_width(family), result, self.precision, self.device)
                e["compared"] = f"loss at width {REDUCED_WIDTH}, in {self.precision}"
            problems += found
        if "step_seconds" in speed:
            report.data["step_seconds"][family.name] = speed["step_seconds"]
        report.data["families"][family.name] = e
        memory = speed.get("memory")
        e["verdict"] = report.check(
            f"family {family.name}",
            problems,
            "; ".join(
                filter(
                    None,
                    [
                        f"step {speed['step_seconds'] * 1000:.1f} ms" if "step_seconds" in speed else "",
                        f"peak {memory['peak_reserved_bytes'] / 2**30:.2f} GiB x {memory['jobs_per_device']}, headroom "
                        f"{memory['headroom_bytes'] / 2**30:.1f} GiB"
                        if isinstance(memory, dict)
                        else "",
                        e["compared"],
                    ],
                )
            ),
        )

    def retime(self, family: Family, name: str) -> None:
        """The family's step timed again (`measured.timed_again`); the fastest median is kept."""
        e = self.report.data["families"].get(family.name, {})
        speed = e.get("speed", {})
        if "step_seconds" not in speed:
            self.report.check(name, [], "not timed: its first timing did not end")
            return
        with self.pool.paused():
            speed["step_seconds_rounds"].append(measured.timed_again(family, self.precision, self.device))
        rounds = speed["step_seconds_rounds"]
        kept = speed["step_seconds"] = min(rounds)
        speed["tokens_per_second"] = family.tokens_per_step / kept
        self.report.data["step_seconds"][family.name] = kept
        set_ratio(e)
        self.report.check(
            name,
            [],
            f"step {' and '.join(f'{r * 1000:.1f}' for r in rounds)} ms in its rounds, {max(rounds) / kept:.2f} x "
            f"apart: {kept * 1000:.1f} ms kept",
        )

    def decoding(self, family: Family, ref) -> None:
        entry, problems = decoding.check(
            family,
            ref.result(timeout=self.clock.left()),
            self.device,
            self.config["decode"]["batch_size"],
            finished_check_interval(self.device),
        )
        for name, search in entry.items():
            found = [(problem, avoid) for search_name, problem, avoid in problems if search_name == name]
            search["verdict"] = self.report.check(
                f"decoding {name} of {family.name}",
                found,
                f"{search['words']:.0%} of the words agree, "
                f"{search['seconds_per_sentence'] * 1000:.2f} ms per sentence",
            )
        self.report.data["decoding"][family.name] = entry

    def sharing(self, chosen: list[Family]) -> None:
        with self.pool.paused():
            self.shared(chosen)

    def shared(self, chosen: list[Family]) -> None:
        families_entry = {}
        for family in chosen:
            model, step = measured.full_size_step(family, self.precision, self.device)
            alone = measured.step_seconds(step, self.device)  # beside the shared run: the same moment's host
            try:
                share = measured.busy_share(step, self.device)
            except Exception as error:  # the profiler's own failure is not the device's
                share = f"not measured: {one_line(error)}"
            families_entry[family.name] = {"alone_seconds": alone, "busy_share": share}
            del model, step
            measured.free(self.device)
        left = self.clock.left()
        shared = sharing.shared_seconds(
            chosen, self.precision, self.sharing_jobs, SHARING_TIMEOUT if left is None else min(left, SHARING_TIMEOUT)
        )
        self.report.data["sharing"] = {
            "jobs": self.sharing_jobs,
            "mps": self.report.data["environment"]["mps"],
            "families": families_entry,
        }
        self.report.data["jobs_per_device"] = {str(self.sharing_jobs): {}}
        for family in chosen:
            s = families_entry[family.name]
            s["shared_seconds"] = shared.get(family.name)
            problems = (
                []
                if s["shared_seconds"]
                else [(f"{self.sharing_jobs} processes did not all report a step time", "gpu.jobs_per_device: 1")]
            )
            if s["shared_seconds"] and s["alone_seconds"]:
                s["slowdown"] = s["shared_seconds"] / s["alone_seconds"]
                self.report.data["jobs_per_device"][str(self.sharing_jobs)][family.name] = {
                    "step_seconds": s["shared_seconds"],
                    "alone_seconds": s["alone_seconds"],
                    "device_tokens_per_second": self.sharing_jobs * family.tokens_per_step / s["shared_seconds"],
                }
            busy = f"{s['busy_share']:.0%} busy alone" if isinstance(s["busy_share"], float) else s["busy_share"]
            slowdown = f" ({s['slowdown']:.2f} x alone)" if "slowdown" in s else ""
            s["verdict"] = self.report.check(
                f"sharing of {family.name}",
                problems,
                "; ".join(
                    [
                        f"{self.sharing_jobs} jobs: step {(s['shared_seconds'] or 0) * 1000:.1f} ms{slowdown}",
                        busy,
                        f"MPS {'on' if self.report.data['sharing']['mps']['on'] else 'off'}",
                    ]
                ),
            )

    def compiled(self, family: Family, mode: str) -> None:
        with self.pool.paused():
            entry, problems = compile_check.check(family, mode, self.precision, self.device)
        entry["verdict"] = self.report.check(
            compile_check.subject(family, mode),
            problems,
            ", ".join(
                f"{name}: {p['speedup']:.2f} x eager's speed, agreeing in {p['agreement']}"
                if "speedup" in p
                else f"{name} {p.get('graphs')} graphs in {p['seconds']:.1f} s"
                for name, p in entry["phases"].items()
            ),
        )
        self.report.data["compile"].append(entry)

    # -- the run ------------------------------------------------------------------------------------
    def modelled(self, futures: dict, wait: bool) -> None:
        """The plan's modelled steps that are ready (all, waiting up to the deadline, with `wait`)."""
        for name, future in list(futures.items()):
            e = self.report.data["families"].get(name)
            if e is None and wait:  # a family the deadline left unmeasured: nothing to set it beside
                del futures[name]
            if e is None or not (wait or future.done()):
                continue
            try:
                modelled = future.result(timeout=self.clock.left() if wait else 0)
            except TimeoutError:  # the plan's count on this machine's CPU: a measure beside the checks, not one
                modelled = "not computed before the deadline (the plan's count, on this machine's CPU, was not ready)"
            except Exception as error:  # the plan's count, not the device: said, not failed
                modelled = f"not computed: {one_line(error)}"
            del futures[name]
            e["modelled"] = modelled
            set_ratio(e)

    def run(self) -> Report:
        pool = self.pool = executor(self.workers, 1)
        scratch = tempfile.TemporaryDirectory(prefix="gpu_check-")
        measured_families = self.found if "family" in self.checks else []
        refs = {
            f.name: pool.submit(reference, f if f.name in self.full else at_width(f), f.name in self.full, scratch.name)
            for f in measured_families
        }
        searched = decoded(self.found) if "decoding" in self.checks else []
        searches = {f.name: pool.submit(decoding_reference, f, finished_check_interval(self.device)) for f in searched}
        modelled = {f.name: pool.submit(modelled_step, self.config, f) for f in measured_families} if self.cuda else {}
        work = [
            ("family", f"family {f.name}", functools.partial(self.family, f, refs[f.name])) for f in measured_families
        ]
        work += [
            ("decoding", f"decoding of {f.name}", functools.partial(self.decoding, f, searches[f.name]))
            for f in searched
        ]
        if self.cuda and "sharing" in self.checks:
            chosen = representative(self.found)
            work.append(
                ("sharing", f"sharing of {', '.join(f.name for f in chosen)}", functools.partial(self.sharing, chosen))
            )
        work += [
            ("compile", compile_check.subject(f, mode), functools.partial(self.compiled, f, mode))
            for mode in self.compile_modes
            for f in compile_check.targets(self.found, mode)
            if "compile" in self.checks
        ]
        work += [
            ("retime", name, functools.partial(self.retime, f, name))
            for k in range(2, ROUNDS + 1)
            for f in measured_families
            if "retime" in self.checks
            for name in [f"step timing {k} of {f.name}"]
        ]
        position = [0]
        self.write("running")  # a valid report from the start
        watchdog = (
            threading.Timer(max(0.0, self.clock.deadline - self.clock.elapsed()), self.stop_now, (work, position, pool))
            if self.clock.deadline
            else None
        )
        if watchdog:
            watchdog.daemon = True
            watchdog.start()
        try:
            for index, (kind, name, item) in enumerate(work):
                if not self.clock.fits(kind):
                    with self.lock:
                        position[0] = len(work)
                        self.report.not_reached(
                            [n for _, n, _ in work[index:]],
                            self.clock.why_not(kind),
                        )
                    break
                position[0] = index
                with self.clock.timing(kind):
                    try:
                        item()
                    except Exception as error:  # the item's finding; the check goes on with the next
                        self.report.check(name, [(one_line(error), AVOID["error"])], "")
                self.modelled(modelled, wait=False)
                with self.lock:
                    self.write("running")
            position[0] = len(work)
            self.modelled(modelled, wait=True)
            with self.lock:
                self.write(
                    "complete" if not self.report.data["not_reached"] else "partial: stopped before the deadline"
                )
        finally:
            if watchdog:
                watchdog.cancel()
                watchdog.join()  # no thread of the check outlives it
            pool.stop()
            scratch.cleanup()
        self.log(self.report.summary())
        return self.report

    def write(self, status: str) -> None:
        self.report.data["elapsed_seconds"] = self.clock.elapsed()
        self.report.write(status)

    def stop_now(self, work: list, position: list, pool) -> None:
        """At the deadline, with an item still running (every item is meant to end MARGIN before it):
        the last report, with that item and those after it not reached; then the process ends (exit
        1) at once. Nothing where every item has ended (the check is only writing its last report)."""
        with self.lock:
            if position[0] >= len(work):
                return
            data = json.loads(self.report.snapshot)
            data["not_reached"] += [
                f"{n} (stopped at the --deadline of {self.clock.deadline:g} s)" for _, n, _ in work[position[0] :]
            ]
            self.report.data = data
            self.write("stopped at the deadline")
            self.log(self.report.summary())
            pool.stop()
            os._exit(1)


def set_ratio(e: dict) -> None:
    """A family entry's measured / modelled step, where both are there."""
    if isinstance(e.get("modelled"), dict) and "step_seconds" in e.get("speed", {}):
        e["measured_over_modelled"] = e["speed"]["step_seconds"] / e["modelled"]["alone_seconds"]


def run(config: dict, device: torch.device, out: Path, **options) -> Report:
    """Every check on `device`, reported under `out` as it goes (see the module docstring)."""
    return Check(config, device, out, **options).run()
