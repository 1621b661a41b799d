"""The GPU check: every model family of the config on the training device against a CPU fp32
reference, before any long training starts (`snakemake results/gpu_check.md`, the first job of
`all`; on a bare GPU machine `python3 -m workflow_src.gpu_check --config config.yaml --out DIR`).

For each family (one per output layer and loss of the configured papers: softmax CE, tied,
joint forms with and without vocabulary sampling, continuous vMF / L2 / cosine / margins; the
language models' CE, RE and AL), at the configured sizes, from one initialisation and one fixed
batch (`benchmark.random_batch`; language models: a random segment):

    correctness  per precision checked (fp32, tf32 on CUDA, and train.precision resolved):
                 |loss - loss_ref| / |loss_ref|, cos(grad, grad_ref) per parameter, and the share
                 of greedy words (language models: next-word argmax) equal to the reference's,
                 each against TOLERANCES[precision]. Random draws (dropout masks of the language
                 models, sampled vocabularies, random negatives) are drawn once on the CPU and
                 replayed on the device; the translation models' dropout is off (p = 0) here.
    dtypes       every module's output dtype (forward hooks): no float16 anywhere, no bfloat16
                 unless bf16 was asked for, recurrent layers (nn.LSTM, nn.LSTMCell, the decoder's
                 cells, the language model's unrolled segment) and the loss in fp32 or wider.
    syncs        on CUDA, host syncs per training step (`torch.cuda.set_sync_debug_mode`): none
                 allowed. On the CPU not applicable (nothing to wait for).
    compile      each train.compile mode (fuse; graphs on CUDA) against eager, once per compiled
                 shape (the decoder step of one architecture, one language model): agreement with
                 COMPILE_TOLERANCE and step time (option --compile; the Snakemake rule runs it on
                 CUDA only: inductor takes minutes on a CPU).
    speed        seconds per training step (forward, backward, clipping, optimiser) at
                 train.batch_size x benchmarks.length (language models: their batch x bptt),
                 alone; on CUDA also with 2 and 4 processes on the device at once.

Writes `<out>/gpu_check.json` and `<out>/gpu_check.md` (atomically), then exits 1 if a check
failed, after printing one line per failure: what failed and which setting avoids it.
The JSON's `step_seconds` ({family: seconds per step, alone}) is the hook for the cost plan.

Imports: torch, numpy and this package only (no Snakemake, gensim, fastText, eflomal, tqdm,
sacremoses, PyYAML needed), so that it runs as plain Python on a bare GPU machine.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import statistics
import time
import warnings
from datetime import datetime, timezone

import torch

from workflow_src.gpu_check.families import Family, build, families, fixed_batch, make_step, on, sizes, without_dropout
from workflow_src.gpu_check.measures import SharedDraws, compare, dtype_problems, dtype_table, run_once
from workflow_src.model import compilation, precision as precisions
from workflow_src.plan.benchmark import device_name, synchronize

# Tolerances against the CPU fp32 reference, per precision of the device run. fp32: the same
# arithmetic in another order (cuDNN, cuBLAS); tf32: 10-bit mantissas in the products; bf16:
# 8-bit mantissas in the output layer's products (the recurrent layers run in fp32 there).
# words: the share of greedy words equal to the reference's (a flipped near-tie changes the rest
# of its sentence, so this is looser than the loss); decoding runs in fp32 tensors as decode
# jobs do, with the precision's TF32 switches.
TOLERANCES = {
    "fp32": {"loss_relative": 1e-4, "gradient_cosine": 0.9999, "words": 0.9},
    "tf32": {"loss_relative": 1e-2, "gradient_cosine": 0.99, "words": 0.6},
    "bf16": {"loss_relative": 2e-2, "gradient_cosine": 0.98, "words": 0.6},
}
# A compiled step against the eager one on the same device and precision.
COMPILE_TOLERANCE = {"loss_relative": 1e-3, "gradient_cosine": 0.999, "words": 0.9}
SYNCS_ALLOWED = 0  # host syncs per training step
CHECK_BATCH = 8  # sentences (language models: columns) of the fixed correctness batch
WARMUP, STEPS = 3, 5  # untimed, then timed steps of each speed measurement
JOBS_PER_DEVICE = (2, 4)  # processes sharing the device for the speed check (CUDA)
# What avoids a failure of each check, by the precision it failed in
AVOID = {
    "bf16": "train.precision: fp32", "tf32": "train.precision: fp32",
    "fp32": "train.device: cpu (fp32 on the device disagrees with the CPU: a driver or kernel fault to report)",
    "compile": "train.compile: off",
    "dtypes": "no setting (a reduced dtype appears although none was asked for: a fault to report)",
    "syncs": "none: a host sync slows each step but changes no result; report it with this file",
}


@dataclasses.dataclass
class Failure:
    check: str
    family: str
    detail: str
    avoid: str

    def line(self) -> str:
        return f"GPU CHECK FAILED: {self.check} of {self.family}: {self.detail}; avoided by {self.avoid}"


# -- speed and syncs --------------------------------------------------------------------------------
def step_seconds(step, device: torch.device, warmup: int = WARMUP, steps: int = STEPS) -> float:
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        synchronize(device)
        started = time.perf_counter()
        step()
        synchronize(device)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def speed_setup(family: Family, config: dict, device: torch.device, precision: str):
    """(step function, target tokens per step) of the family at its training batch, with dropout."""
    model = build(family).to(device)
    compilation.apply(model, family.spec, device)  # as train.py: the configured train.compile
    if family.kind == "lm":
        batch = fixed_batch(family, model, family.spec["batch_size"], 0)
        tokens = family.spec["batch_size"] * family.spec["bptt"]
    else:
        length = config["benchmarks"]["length"]
        batch = fixed_batch(family, model, family.spec["train"]["batch_size"], length)
        tokens = family.spec["train"]["batch_size"] * length
    return make_step(family, model, on(batch, device), precision, device), tokens


def syncs_per_step(step, device: torch.device, steps: int = 3) -> float | None:
    """Host syncs per training step after one warm-up step (CUDA's sync debug mode); None off CUDA."""
    if device.type != "cuda":
        return None
    step()
    torch.cuda.synchronize(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(steps):
                step()
        finally:
            torch.cuda.set_sync_debug_mode(0)
    return sum("synchroniz" in str(w.message) for w in caught) / steps


def _shared_speed_worker(config, names, precision, rank, barrier, results):
    """One of N processes timing every family at once on the same device (spawned)."""
    device = torch.device("cuda")
    precisions.configure(precision)
    by_name = {f.name: f for f in families(config)}
    for name in names:
        step, _ = speed_setup(by_name[name], config, device, precision)
        for _ in range(WARMUP):
            step()
        synchronize(device)
        barrier.wait()
        seconds = step_seconds(step, device, warmup=0)
        barrier.wait()
        results.put((rank, name, seconds))
        del step
        torch.cuda.empty_cache()


def shared_speed(config: dict, names: list[str], precision: str, jobs: int) -> dict[str, float]:
    """Median step seconds of each family while `jobs` processes run it on the device at once."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(jobs), context.Queue()
    workers = [context.Process(target=_shared_speed_worker, args=(config, names, precision, rank, barrier, results))
               for rank in range(jobs)]
    for worker in workers:
        worker.start()
    collected: dict[str, list[float]] = {}
    for _ in range(jobs * len(names)):
        _, name, seconds = results.get(timeout=600)
        collected.setdefault(name, []).append(seconds)
    for worker in workers:
        worker.join()
    return {name: statistics.median(values) for name, values in collected.items()}


# -- the checks -------------------------------------------------------------------------------------
def precisions_checked(setting: str, device: torch.device) -> list[str]:
    """fp32, TF32 (on CUDA) and the configured precision, each once."""
    checked = ["fp32"] + (["tf32"] if device.type == "cuda" else [])
    configured = precisions.resolve(setting, device)
    return checked + ([configured] if configured not in checked else [])


def check_family(family: Family, config: dict, device: torch.device, checked: list[str], configured: str,
                 failures: list[Failure]) -> dict:
    cpu = torch.device("cpu")
    base = build(family)
    if family.kind == "nmt":
        without_dropout(base)
    length = config["benchmarks"]["length"]
    batch = fixed_batch(family, base, CHECK_BATCH, length)
    draws = SharedDraws()
    reference = run_once(family, copy.deepcopy(base), batch, "fp32", cpu, draws, replay=False)
    entry = {"kind": family.kind, "experiment": family.experiment, "dataset": family.dataset, "sizes": sizes(family),
             "correctness": {}, "dtypes": {}}
    for precision in checked:
        model = copy.deepcopy(base).to(device)
        result = run_once(family, model, on(batch, device), precision, device, draws, replay=True, record_dtypes=True)
        measures, problems = compare(result, reference, TOLERANCES[precision])
        entry["correctness"][precision] = {**measures, "passed": not problems}
        failures += [Failure(f"correctness in {precision}", family.name, p, AVOID[precision]) for p in problems]
        dtype_issues = dtype_problems(result["dtypes"], precision, result["loss_dtype"])
        entry["dtypes"][precision] = {"outputs": dtype_table(result["dtypes"]), "problems": dtype_issues,
                                      "passed": not dtype_issues}
        failures += [Failure(f"dtypes in {precision}", family.name, p, AVOID["bf16"] if precision == "bf16" else AVOID["dtypes"])
                     for p in dtype_issues]
        del model
    precisions.configure(configured)
    step, tokens = speed_setup(family, config, device, configured)
    seconds = step_seconds(step, device)
    syncs = syncs_per_step(step, device)
    entry["syncs_per_step"] = "not applicable (CPU)" if syncs is None else syncs
    if syncs is not None and syncs > SYNCS_ALLOWED:
        failures.append(Failure("syncs", family.name, f"{syncs:g} host syncs per training step", AVOID["syncs"]))
    entry["speed"] = {"precision": configured, "target_tokens_per_step": tokens, "step_seconds": seconds,
                      "tokens_per_second": tokens / seconds}
    return entry


def compile_targets(found: list[Family]) -> list[Family]:
    """One family per compiled shape: the decoder step of each architecture, each LM width and depth."""
    targets: dict[str, Family] = {}
    for family in found:
        key = (json.dumps(family.spec["model"], sort_keys=True) if family.kind == "nmt"
               else f"lm {family.spec['size']} x {family.spec['layers']}")
        targets.setdefault(key, family)
    return list(targets.values())


def check_compile(family: Family, config: dict, device: torch.device, precision: str, mode_name: str,
                  failures: list[Failure]) -> dict:
    """A compiled copy against the eager model: loss, gradients, words, and step seconds."""
    base = build(family)
    if family.kind == "nmt":
        without_dropout(base)
    batch = on(fixed_batch(family, base, CHECK_BATCH, config["benchmarks"]["length"]), device)
    draws = SharedDraws()
    spec = {**family.spec, compilation.KEY: mode_name}
    eager = copy.deepcopy(base).to(device)
    eager_result = run_once(family, eager, batch, precision, device, draws, replay=False)
    entry: dict = {"family": family.name, "mode": mode_name}
    try:
        compiled = copy.deepcopy(base).to(device)
        compilation.apply(compiled, spec, device)
        started = time.perf_counter()
        result = run_once(family, compiled, batch, precision, device, draws, replay=True)
        entry["first_call_seconds"] = time.perf_counter() - started
        measures, problems = compare(result, eager_result, COMPILE_TOLERANCE)
        entry |= measures
        speed_family = dataclasses.replace(family, spec=spec)
        eager_step, _ = speed_setup(family, config, device, precision)
        compiled_step, _ = speed_setup(speed_family, config, device, precision)
        entry["eager_step_seconds"] = step_seconds(eager_step, device)
        entry["compiled_step_seconds"] = step_seconds(compiled_step, device)
        entry["speedup"] = entry["eager_step_seconds"] / entry["compiled_step_seconds"]
    except Exception as error:  # a compile error is this check's finding
        problems = [f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"]
    entry["passed"] = not problems
    failures += [Failure(f"train.compile: {mode_name}", family.name, p, AVOID["compile"]) for p in problems]
    return entry


def run(config: dict, device: torch.device, compile_check: str = "always", jobs_per_device=JOBS_PER_DEVICE,
        only: list[str] | None = None, log=print) -> dict:
    """Every check on `device`; the report's content (see the module docstring)."""
    setting = config["train"].get("precision", "auto")
    configured = precisions.resolve(setting, device)
    checked = precisions_checked(setting, device)
    found = [f for f in families(config) if not only or any(o in f.name for o in only)]
    failures: list[Failure] = []
    report = {
        "device": str(device), "device_name": device_name(device), "torch": torch.__version__,
        "cuda": torch.version.cuda, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "precision": {"setting": setting, "resolved": configured, "checked": checked},
        "compile_setting": config["train"].get(compilation.KEY, "off"),
        "tolerances": {"reference": "CPU fp32, same initialisation, batch and random draws", **TOLERANCES,
                       "compile_vs_eager": COMPILE_TOLERANCE, "syncs_per_step": SYNCS_ALLOWED},
        "batch": {"check_sentences": CHECK_BATCH, "length": config["benchmarks"]["length"],
                  "speed_batch": config["train"]["batch_size"], "warmup": WARMUP, "steps": STEPS},
        "families": {},
    }
    for family in found:
        started = time.perf_counter()
        report["families"][family.name] = check_family(family, config, device, checked, configured, failures)
        speed = report["families"][family.name]["speed"]
        log(f"{family.name} ({family.experiment}): {speed['step_seconds'] * 1000:.1f} ms/step, "
            f"{time.perf_counter() - started:.1f} s checked")
    modes = [m for m in compilation.MODES if m != "off" and (m != "graphs" or device.type == "cuda")]
    if compile_check == "always" or (compile_check == "cuda" and device.type == "cuda"):
        report["compile"] = [check_compile(f, config, device, configured, mode, failures)
                             for f in compile_targets(found) for mode in modes]
        for entry in report["compile"]:
            log(f"compile {entry['mode']} {entry['family']}: {'passed' if entry['passed'] else 'FAILED'}")
    else:
        report["compile"] = f"skipped (--compile {compile_check} on {device.type})"
    if device.type == "cuda" and jobs_per_device:
        precisions.configure(configured)
        report["jobs_per_device"] = {}
        for jobs in jobs_per_device:
            shared = shared_speed(config, [f.name for f in found], configured, jobs)
            report["jobs_per_device"][str(jobs)] = {
                name: {"step_seconds": seconds,
                       "device_tokens_per_second": jobs * report["families"][name]["speed"]["target_tokens_per_step"] / seconds}
                for name, seconds in shared.items()}
            log(f"{jobs} jobs per device timed")
    else:
        report["jobs_per_device"] = "not applicable (CPU)" if device.type != "cuda" else "skipped"
    # The cost plan's hook: seconds of one training step of each family alone on this device.
    report["step_seconds"] = {name: entry["speed"]["step_seconds"] for name, entry in report["families"].items()}
    report["failures"] = [f.line() for f in failures]
    report["passed"] = not failures
    return report
