"""The cost plan: what every table will cost on this device, before the run (and, after it, how
close the prediction came).

`python -m workflow_src.plan plan --config JSON --out-prefix results/plan [--threads N]`
    times a few training steps (forward, backward, optimiser; after warm-up), a validation
    forward and a greedy decode of one model of every family (one architecture, output layer,
    loss and vocabulary size at the configured sizes) on the training device, and multiplies:

        train      = step · ⌈pairs / batch⌉ · epochs                  (LM: segments = tokens / (batch · bptt))
        validation = epochs · (forward · ⌈dev / batch⌉ + greedy · ⌈dev / 64⌉)   (LM: forward per validation segment)
        decoding   = greedy · ⌈test / decode.batch_size⌉ · K        per decoded search (beam K; greedy: K = 1)

    Corpus sizes come from the prepared data's statistics when they exist (`tok/stats.<split>.json`,
    `results/data/<corpus>/stats.json`), else from the sizes the papers state
    (`workflow_src.statistics.STATED`), with `benchmarks.length` units per sentence; each job says
    which. Writes `<prefix>.csv` (device-hours per table, per paper and in total, wall hours for
    `--resources gpu=N`), `<prefix>.jobs.csv` (every job), `<prefix>.families.csv` (each family's
    step: seconds, target tokens per second, FLOPs, kernels) and `<prefix>.md` (with the assumptions).
    Beside the measured hours, an H100 estimate from a model, never measured:

        busy_H100  = FLOPs / (ACHIEVED_FRACTION · peak[precision]) + kernels · KERNEL_SECONDS
        alone_H100 = max(kernels · HOST_SECONDS, busy_H100)          (the host queues kernels ahead)
        wall on N H100s, J jobs each = max(Σ busy / N, LPT of the alone times on N · J slots)

    with the FLOPs (torch's FlopCounterMode, plus fused LSTM layers') and the kernels (one per
    tensor operator; a fused LSTM layer's per time step) of one step counted while it is timed.
    `--model-only` counts without timing, on the CPU: the H100 model of the full configuration in
    minutes (`snakemake results/plan_modelled.md`).

`python -m workflow_src.plan compare --jobs results/plan.jobs.csv --out-prefix results/plan_vs_actual` (.csv, .md, .html)
    beside each trained job's predicted seconds, the seconds its metrics.jsonl records
    (translation: train_seconds + validation_seconds per epoch; language models: seconds).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import heapq
import itertools
import io
import json
import math
import re
import statistics
import time
from pathlib import Path

from workflow_src import layout, precision as precisions, registry
from workflow_src.atomic import write_text
from workflow_src.render import to_html
from workflow_src.statistics import STATED

GPU_COUNTS = (1, 2, 4, 8)
H100_PEAK_FLOPS = {"fp32": 67e12, "tf32": 495e12, "bf16": 989e12}  # SXM, dense (NVIDIA's datasheet)
ACHIEVED_FRACTION = 0.3  # of the peak, for matrix products of batch 64 x 1024 (an assumption)
HOST_SECONDS = 8e-6  # per tensor operator, on the host: eager PyTorch's dispatch and launch (an assumption)
KERNEL_SECONDS = 2.5e-6  # per kernel, on the GPU: a small kernel's launch latency and run (an assumption)
# A fused LSTM layer (oneDNN's on the CPU, cuDNN's on CUDA) is one operator that runs a kernel or
# more per time step inside: a recurrent matrix product and the fused gates forward, and about one
# more backward (an assumption; FlopCounterMode counts neither their FLOPs nor their kernels).
RECURRENT_KERNELS_PER_STEP = {"forward": 2, "backward": 3}
JOBS_PER_DEVICE_CHOICES = (1, 2, 3, 4, 6, 8)  # the modelled H100 table of gpu.jobs_per_device
COUNTING_BATCH = 4  # --model-only counts translation models at this batch; their FLOPs scale with it
# Batches are bucketed by length, so their shapes vary from step to step: each part is timed once at
# each of these multiples of the mean length (the mean of their times: the cost at the mean length,
# with the cost of changing shapes), after WARMUP calls; then counted once more at the mean length.
LENGTH_SPREAD = (1.0, 1.25, 1.5, 0.5, 0.75)
WARMUP, STEPS = 5, 5
DEV_DECODE_BATCH = 64  # train.development_bleu translates with translate()'s default batch
MODEL_PATH = re.compile(r"^results/models/([^/]+)/([^/]+)/([^/]+)/seed(\d+)/([^/]+)$")
LM_PATH = re.compile(r"^results/lm/([^/]+)/([^/]+)/seed(\d+)/([^/]+)$")
SEARCH = re.compile(r"\.(greedy|beam(\d+))\.")


@dataclasses.dataclass
class PlannedJob:
    """One trained model, the artefacts that need it and the searches decoded with it."""

    kind: str  # nmt | lm
    dataset: str
    pair: str  # "lm" for language models
    experiment: str
    seed: int
    artefacts: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    searches: set[str] = dataclasses.field(default_factory=set)


@dataclasses.dataclass(frozen=True)
class Corpus:
    """The sizes a job trains, validates and decodes on (language models: tokens, length 1)."""

    train: float
    length: float  # target units per sentence (+ </s>)
    dev: float
    test: float
    vocabulary: int | None  # language models: the corpus's
    source: str


@dataclasses.dataclass(frozen=True)
class Timing:
    """Seconds of one training step, one validation forward and one greedy decode of a batch,
    with the FLOPs and tensor operators of each (for the modelled H100 time)."""

    step: float | None  # None: counted only (--model-only)
    forward: float | None
    decode: float | None
    counts: dict  # "step" | "forward" | "decode" -> (flops, kernels)

    def modelled_device(self, part: str, precision: str) -> float:
        """The H100's busy seconds: FLOPs / (fraction · peak) + kernels · KERNEL_SECONDS."""
        flops, operators = self.counts[part]
        return flops / (ACHIEVED_FRACTION * H100_PEAK_FLOPS[precision]) + operators * KERNEL_SECONDS

    def modelled(self, part: str, precision: str) -> float:
        """A job's seconds alone on an H100: max(host, device), the host queueing kernels ahead
        (no step syncs), host = operators · HOST_SECONDS."""
        return max(self.counts[part][1] * HOST_SECONDS, self.modelled_device(part, precision))

    def scaled_flops(self, factor: float) -> Timing:
        """The same counts with FLOPs × factor (every counted product is linear in the batch)."""
        counts = {part: (flops * factor, operators) for part, (flops, operators) in self.counts.items()}
        return dataclasses.replace(self, counts=counts)


def modelled_precision(config: dict) -> str:
    """The precision a CUDA job of this config runs in (`precision.resolve`: `auto` is bf16),
    which the H100 model assumes (the plan's markdown says which it took)."""
    import torch

    from workflow_src import precision as precision_setting

    return precision_setting.resolve(config["train"].get("precision", "auto"), torch.device("cuda"))


# -- the jobs ------------------------------------------------------------------------------------
def planned_jobs(config: dict) -> list[PlannedJob]:
    """Every training job of the configured artefacts, read from the files each is rendered from
    (`layout.inputs`): a model folder's files name its job, a `.greedy.`/`.beam<K>.` file a decode."""
    jobs: dict[tuple, PlannedJob] = {}
    for paper, artefact_id in layout.configured_artefacts(config):
        ctx = layout.context(config, paper, artefact_id)
        for path in layout.inputs(registry.artefact(paper, artefact_id), ctx, paper, artefact_id):
            if m := MODEL_PATH.match(path):
                dataset, pair, experiment, seed, name = m.groups()
                kind = "nmt"
            elif m := LM_PATH.match(path):
                (dataset, experiment, seed, name), pair, kind = m.groups(), "lm", "lm"
            else:
                continue
            job = jobs.setdefault((kind, dataset, pair, experiment, int(seed)),
                                  PlannedJob(kind, dataset, pair, experiment, int(seed)))
            job.artefacts.add((paper, artefact_id))
            if kind == "nmt" and (s := SEARCH.search(name)):
                job.searches.add(s.group(1))
    return list(jobs.values())


def metrics_file(job: PlannedJob) -> str:
    j = registry.Job(job.dataset, job.pair, job.experiment, job.seed)
    return f"{layout.lm_dir(j)}/metrics.jsonl" if job.kind == "lm" else layout.metrics_path(j)


# -- corpus sizes --------------------------------------------------------------------------------
def read_json(path: str) -> dict | None:
    p = Path(path)
    return json.loads(p.read_text()) if p.exists() else None


def parallel_corpus(config: dict, dataset: str, pair: str) -> Corpus | None:
    """Sizes of a pair: its statistics once prepared, else what the papers state (None: neither)."""
    tgt = pair.split("-")[1]
    parts = [read_json(path) for path in layout.parallel_stats_paths(config, dataset, pair)]
    if all(parts):
        train, dev, test = (part[split] for part, split in zip(parts, ("train", "dev", "test")))
        return Corpus(train["sentences"], train[f"tokens_{tgt}"] / max(train["sentences"], 1) + 1,
                      dev["sentences"], test["sentences"], None, "prepared data (tok/stats.<split>.json)")
    stated = STATED.get((dataset, pair), {})
    if "demo" in config or "training pairs" not in stated:
        return None
    length = config["benchmarks"]["length"] + 1
    dev, test = stated.get("development pairs"), stated.get("test pairs")
    assumed = config["benchmarks"]["length"] * 100  # an evaluation set of ~newstest's size when unstated
    source = (f"paper's stated sizes ({stated['training pairs'][1]}), {length - 1} units per sentence assumed"
              + ("" if dev and test else f", {assumed} development/test sentences assumed"))
    return Corpus(stated["training pairs"][0], length, dev[0] if dev else assumed, test[0] if test else assumed,
                  None, source)


def lm_corpus(config: dict, dataset: str) -> Corpus | None:
    """Tokens of a language-modelling corpus (a partition: half of its corpus's, before it exists)."""
    base = registry.Corpus(dataset, "").base
    for name, share in ((dataset, 1.0), (base, 0.5 if base != dataset else 1.0)):
        stats = read_json(f"{layout.lm_data_dir(name)}/stats.json")
        if stats:
            return Corpus(stats["train"]["tokens"] * share, 1, stats["valid"]["tokens"], stats["test"]["tokens"],
                          stats["vocabulary"], f"prepared data ({layout.lm_data_dir(name)}/stats.json)"
                          + (", half of it" if share < 1 else ""))
    stated = STATED.get((base, "-"), {})
    if "demo" in config or "training tokens" not in stated:
        return None
    share = 1.0 if base == dataset else 0.5
    return Corpus(stated["training tokens"][0] * share, 1, stated["validation tokens"][0], stated["test tokens"][0],
                  int(stated["vocabulary"][0]), f"paper's stated sizes ({stated['training tokens'][1]})"
                  + (", half of it" if share < 1 else ""))


# -- families --------------------------------------------------------------------------------------
def nmt_family(config: dict, job: PlannedJob, corpus: Corpus) -> tuple:
    """What a training step's cost depends on: the resolved spec but names, seeds, rates and loss
    weights, the vocabulary sizes, and the sentence length."""
    spec = layout.resolve_spec(config, job.dataset, job.pair, job.experiment, job.seed)
    e = registry.experiment(job.experiment)
    sizes = layout.vocab_sizes(config["datasets"][job.dataset], e)
    src = sizes["src_size"] or layout.bpe_merges(config, job.dataset, "src", e.bpe)
    tgt = sizes["tgt_size"] or layout.bpe_merges(config, job.dataset, "tgt", e.bpe)
    dim = config["embeddings"][e.embeddings]["dim"] if e.embeddings else None
    ignored = {"experiment", "loss_params", "tgt_lang", "train", "vocab", "data", "device", "lr_group", "bpe", "embeddings"}
    shape = {key: value for key, value in spec.items() if key not in ignored}  # embeddings: their size, `dim`
    return ("nmt", json.dumps(shape, sort_keys=True), src, tgt, dim, round(corpus.length))


def lm_family(config: dict, job: PlannedJob, corpus: Corpus) -> tuple:
    spec = layout.resolve_lm_spec(config, job.dataset, job.experiment, job.seed)
    shape = {key: spec[key] for key in ("size", "layers", "dropout", "reuse_embedding", "loss", "bptt", "batch_size",
                                        "unit_norm_embeddings")}
    shape["eval_batch_size"] = 10
    return ("lm", json.dumps(shape, sort_keys=True), corpus.vocabulary, None, None, 1)


def family_label(family: tuple) -> str:
    kind, shape, src, tgt, dim, length = family
    s = json.loads(shape)
    if kind == "lm":
        return (f"LM {s['size']}x{s['layers']} V={src} loss={s['loss']}{' RE' if s['reuse_embedding'] else ''}"
                f" dropout={s['dropout']:g}")
    m = s["model"]
    form = s["output_form"] or s["output_layer"]
    extras = "".join(f" {k}={s[k]}" for k in ("negative", "joint_dim", "sample_share") if s.get(k))
    return (f"NMT enc {m['encoder_layers']}x{m['hidden']} dec {m['decoder_layers']}x{m['hidden']} {form}/{s['loss']}"
            f"{' tied' if s['tied'] else ''}{extras} V {src}->{tgt}{f' m={dim}' if dim else ''} length {length}")


# -- timing ----------------------------------------------------------------------------------------
def spread(length: int) -> list[int]:
    return [max(1, round(length * factor)) for factor in LENGTH_SPREAD]


def recurrent_layer_cost(func, args, kwargs) -> tuple[float, int] | None:
    """FLOPs and kernels of a fused LSTM operator (oneDNN's one layer and direction on the CPU,
    cuDNN's whole stack on CUDA), None for any other operator:

        FLOPs = 2 · tokens · Σ numel(W_ih, W_hh)  (× 2 backward),
        kernels = time steps · layers · directions · RECURRENT_KERNELS_PER_STEP[pass]
    """
    import torch

    name = func.overloadpacket.__name__
    if name not in ("mkldnn_rnn_layer", "mkldnn_rnn_layer_backward", "_cudnn_rnn", "_cudnn_rnn_backward"):
        return None
    schema = [a.name for a in func._schema.arguments]
    named = dict(zip(schema, args)) | (kwargs or {})
    tokens_by_step = named["batch_sizes"]
    x = named["input"]
    if tokens_by_step:  # a packed sequence: its batch size at each step
        steps, tokens = len(tokens_by_step), sum(tokens_by_step)
    else:  # oneDNN's layer is handed time-major input whatever its batch_first says; cuDNN's is not
        time_axis = 1 if named["batch_first"] and name.startswith("_cudnn") else 0
        steps, tokens = x.shape[time_axis], x.numel() // x.shape[-1]
    if name.startswith("mkldnn"):
        matrices = [w for w in args[1:5] if isinstance(w, torch.Tensor) and w.dim() == 2]
    else:
        matrices = [w for w in named["weight"] if w.dim() == 2]
    backward = name.endswith("backward")
    flops = 2 * tokens * sum(w.numel() for w in matrices) * (2 if backward else 1)
    layer_directions = len(matrices) // 2  # W_ih and W_hh of each
    kernels = steps * layer_directions * RECURRENT_KERNELS_PER_STEP["backward" if backward else "forward"]
    return flops, kernels


def dropout_as_cuda():
    """A torch function mode under which `F.dropout` runs as on CUDA, one fused kernel each way
    (`native_dropout`), where the CPU draws, scales and multiplies in three or four: the plan's
    counts on a CPU are then a GPU's."""
    import inspect

    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    signature = inspect.signature(F.dropout)

    class DropoutAsCuda(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is not F.dropout:
                return func(*args, **(kwargs or {}))
            bound = signature.bind(*args, **(kwargs or {}))
            bound.apply_defaults()
            x, p, training = (bound.arguments[name] for name in ("input", "p", "training"))
            return torch.native_dropout(x, p, True)[0] if training and p > 0 else x

    return DropoutAsCuda()


def measure(function, warmup: int, steps: int) -> tuple[float | None, tuple[float, int]]:
    """Mean seconds of `function()` over `steps` calls after `warmup` calls (None: no call timed),
    and the FLOPs and kernels of one more call: one per tensor operator (views excluded), and a
    fused LSTM operator's per `recurrent_layer_cost`; off CUDA, dropout counted as CUDA runs it."""
    from torch.utils.flop_counter import FlopCounterMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class Operators(TorchDispatchMode):
        count, recurrent_flops = 0, 0.0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if (cost := recurrent_layer_cost(func, args, kwargs)) is not None:
                self.recurrent_flops += cost[0]
                self.count += cost[1]
            else:
                self.count += 0 if func.is_view else 1
            return func(*args, **(kwargs or {}))

    for _ in range(warmup):
        function()
    times = []
    for _ in range(steps):
        synchronize()
        started = time.perf_counter()
        function()
        synchronize()
        times.append(time.perf_counter() - started)
    as_cuda = dropout_as_cuda() if _DEVICE is None or _DEVICE.type != "cuda" else contextlib.nullcontext()
    with FlopCounterMode(display=False) as flops, Operators() as operators, as_cuda:
        function()
    return (statistics.mean(times) if times else None,
            (flops.get_total_flops() + operators.recurrent_flops, operators.count))


_DEVICE = None
_REPEATS = (WARMUP, STEPS)  # (0, 0) with --model-only: counted, not timed


def synchronize() -> None:
    import torch

    if _DEVICE is not None and _DEVICE.type == "cuda":
        torch.cuda.synchronize(_DEVICE)


def time_nmt(config: dict, job: PlannedJob, family: tuple, device) -> Timing:
    """A `job`-shaped model (untrained, random batches of the family's length), as train.py builds it
    (compiled as config `train.compile` says)."""
    import torch

    from workflow_src import compilation
    from workflow_src.benchmark import BOS, EOS, PAD
    from workflow_src.model.seq2seq import Seq2Seq

    _, _, src_size, tgt_size, dim, length = family
    spec = layout.resolve_spec(config, job.dataset, job.pair, job.experiment, job.seed)
    table = torch.nn.functional.normalize(torch.randn(tgt_size, dim), dim=-1) if dim else None
    model = Seq2Seq(spec, src_size, tgt_size, PAD, table).to(device)
    # the decoder's path on CUDA (its default there), on any device: one cell operator per layer
    # and step, so that a CPU counts the kernels a GPU launches
    model.decoder.split_input_projection = True
    compilation.apply(model, spec, device)
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-4,
                                 fused=device.type in ("cuda", "cpu"))
    batch = config["train"]["batch_size"]
    batches = itertools.cycle([(torch.randint(4, src_size, (batch, n), device=device),
                                torch.full((batch,), n),  # on the host, as the encoder packs by them
                                torch.randint(4, tgt_size, (batch, n), device=device),
                                torch.arange(batch * n, device=device))  # every target counts: no mask to search
                               for n in spread(length)])

    precision = precisions.resolve(config["train"].get("precision", "auto"), device)
    precisions.configure(precision)

    def step():
        src, lengths, tgt, positions = next(batches)
        model.train()
        with precisions.autocast(precision, device):  # as train.py: the forward pass
            loss, n = model.loss(src, lengths, tgt, tgt, PAD, positions)
        optimiser.zero_grad(set_to_none=True)
        (loss / n).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config["train"]["clip"])
        optimiser.step()

    @torch.no_grad()
    def forward():
        src, lengths, tgt, positions = next(batches)
        model.eval()
        with precisions.autocast(precision, device):  # as train.mean_loss
            model.loss(src, lengths, tgt, tgt, PAD, positions)

    def decode():
        src, lengths, *_ = next(batches)
        model.eval()
        model.greedy(src, lengths, BOS, EOS, [PAD, BOS, EOS], src.shape[1])  # </s> banned: as many steps as units

    return timings(config, step, forward, decode)


def time_lm(config: dict, job: PlannedJob, family: tuple, device) -> Timing:
    """One segment of a `job`-shaped language model, with train_lm's own epoch and evaluation
    (compiled as config `train.compile` says)."""
    import functools

    import torch

    from workflow_src import compilation, train_lm

    vocabulary = family[2]
    spec = train_lm.resolve(layout.resolve_lm_spec(config, job.dataset, job.experiment, job.seed))
    model = train_lm.build_model(spec, vocabulary).to(device)
    compilation.apply(model, spec, device)
    optimiser = torch.optim.SGD(model.parameters(), lr=spec["lr"])
    names, loss = train_lm.LOSSES[spec["loss"]]
    objective = functools.partial(loss, **spec["loss_params"]) if names else loss
    segment = torch.randint(0, vocabulary, (spec["bptt"] + 1, spec["batch_size"]), device=device)
    held_out = torch.randint(0, vocabulary, (spec["bptt"] + 1, spec["eval_batch_size"]), device=device)
    precision = precisions.resolve(spec["precision"], device)
    precisions.configure(precision)
    return timings(config, lambda: train_lm.train_epoch(model, segment, spec, optimiser, objective, precision),
                   lambda: train_lm.evaluate(model, held_out, spec["bptt"], precision), lambda: None)


def timings(config: dict, step, forward, decode) -> Timing:
    parts = {name: measure(function, *_REPEATS)
             for name, function in (("step", step), ("forward", forward), ("decode", decode))}
    return Timing(*(parts[name][0] for name in ("step", "forward", "decode")),
                  counts={name: counts for name, (_, counts) in parts.items()})


# -- tables ------------------------------------------------------------------------------------------
def cell(value) -> str:
    if value is None:
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def to_csv(columns: list[str], rows: list[dict]) -> str:
    """Every value as computed (hours of seconds-long demo jobs keep their digits)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def to_markdown(columns: list[str], rows: list[dict]) -> list[str]:
    return (["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in rows])


# -- the arithmetic ----------------------------------------------------------------------------------
def beam_width(search: str) -> int:
    return 1 if search == "greedy" else int(search.removeprefix("beam"))


def job_seconds(config: dict, job: PlannedJob, corpus: Corpus, timing: Timing, part=None) -> dict[str, float]:
    """Predicted seconds of a job's training, validation and decoding from its family's timings;
    `part(name)` gives the seconds of "step", "forward" or "decode" (default: the measured ones)."""
    seconds = part or (lambda name: getattr(timing, name))
    if job.kind == "lm":
        spec = layout.resolve_lm_spec(config, job.dataset, job.experiment, job.seed)
        model = registry.language_model(job.experiment)
        tokens = config["lm"]["train_words"][model.size] if model.sliced else corpus.train
        epochs = spec["max_epochs"] * spec.get("sessions", 1)
        segments = tokens / (spec["batch_size"] * spec["bptt"])
        held_out = lambda n: n / (10 * spec["bptt"])  # noqa: E731  (train_lm's eval_batch_size 10)
        return {"epochs": epochs, "steps_per_epoch": math.ceil(segments),
                "train": seconds("step") * math.ceil(segments) * epochs,
                "validation": seconds("forward") * held_out(corpus.dev) * epochs,
                "decoding": seconds("forward") * (held_out(corpus.dev) + held_out(corpus.test))}  # the final scores
    t = config["train"]
    steps = math.ceil(corpus.train / t["batch_size"])
    epochs = layout.schedule(t, job.experiment)["max_epochs"]  # train.overrides included
    validation = (seconds("forward") * math.ceil(corpus.dev / t["batch_size"])
                  + seconds("decode") * math.ceil(corpus.dev / DEV_DECODE_BATCH))
    decoding = sum(seconds("decode") * beam_width(s) * math.ceil(corpus.test / config["decode"]["batch_size"])
                   for s in sorted(job.searches))
    return {"epochs": epochs, "steps_per_epoch": steps, "train": seconds("step") * steps * epochs,
            "validation": validation * epochs, "decoding": decoding}


def wall_hours(durations: list[float], slots: int) -> float:
    """The makespan of `durations` on `slots` parallel slots, longest first onto the least loaded
    (LPT list scheduling; dependencies between jobs ignored)."""
    loads = [0.0] * slots
    for duration in sorted(durations, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + duration)
    return max(loads)


def modelled_wall_hours(alone: list[float], busy: list[float], gpus: int, per_device: int) -> float:
    """Modelled H100 wall hours of jobs sharing `gpus` devices, `per_device` at a time:

        max(Σ busy / gpus, LPT makespan of the jobs' alone hours on gpus · per_device slots)

    jobs run at their own (host-bound) speed until the devices' busy time is the bound (with
    MPS, kernels of several processes run at once; without it they take turns: an optimistic bound)."""
    return max(sum(busy) / gpus, wall_hours(alone, gpus * per_device))


JOB_COLUMNS = ["kind", "dataset", "pair", "experiment", "seed", "artefacts", "searches", "family", "corpus_source",
               "steps_per_epoch", "epochs", "step_seconds", "train_hours", "validation_hours", "decoding_hours",
               "device_hours", "h100_modelled_hours", "h100_busy_hours", "metrics", "note"]
SUMMARY_COLUMNS = ["level", "paper", "artefact", "jobs", "jobs_without_size", "device_hours", "h100_modelled_hours",
                   "h100_busy_hours", *(f"wall_hours_gpu{n}" for n in GPU_COUNTS),
                   *(f"h100_wall_hours_gpu{n}" for n in GPU_COUNTS)]


def job_rows(config: dict, jobs: list[PlannedJob], corpora: dict, families: dict, timings_by_family: dict) -> list[dict]:
    precision = modelled_precision(config)
    rows = []
    for job in jobs:
        key = (job.kind, job.dataset, job.pair, job.experiment, job.seed)
        row = {"kind": job.kind, "dataset": job.dataset, "pair": job.pair, "experiment": job.experiment,
               "seed": job.seed, "artefacts": " ".join(sorted(f"{p}/{a}" for p, a in job.artefacts)),
               "searches": " ".join(sorted(job.searches)), "metrics": metrics_file(job)}
        corpus = corpora[key]
        if corpus is None:
            row["note"] = ("no size: the data are not prepared yet and the papers state none"
                           + (" (the demo's plan waits for its data)" if "demo" in config else ""))
            rows.append(row)
            continue
        timing = timings_by_family[families[key]]
        parts = ("train", "validation", "decoding")
        modelled = job_seconds(config, job, corpus, timing, lambda part: timing.modelled(part, precision))
        busy = job_seconds(config, job, corpus, timing, lambda part: timing.modelled_device(part, precision))
        row |= {"family": family_label(families[key]), "corpus_source": corpus.source,
                "steps_per_epoch": modelled["steps_per_epoch"], "epochs": modelled["epochs"],
                "h100_modelled_hours": sum(modelled[p] for p in parts) / 3600,
                "h100_busy_hours": sum(busy[p] for p in parts) / 3600}
        if timing.step is None:
            row["note"] = "model only: counted, not timed (--model-only)"
        else:
            measured = job_seconds(config, job, corpus, timing)
            row |= {"step_seconds": round(timing.step, 5),
                    **{f"{part}_hours": measured[part] / 3600 for part in parts},
                    "device_hours": sum(measured[p] for p in parts) / 3600}
        rows.append(row)
    return rows


def summary_rows(config: dict, rows: list[dict]) -> list[dict]:
    """Hours per artefact (table or figure), per paper (each job once) and in total, with the wall hours on N GPUs."""
    per_device = config.get("gpu", {}).get("jobs_per_device", 1)
    groups = [("artefact", paper, artefact_id) for paper, artefact_id in layout.configured_artefacts(config)]
    groups += [("paper", paper, "") for paper in config["papers"]] + [("total", "", "")]

    def member(row, level, paper, artefact_id):
        artefacts = row["artefacts"].split()
        if level == "artefact":
            return f"{paper}/{artefact_id}" in artefacts
        return level == "total" or any(a.startswith(f"{paper}/") for a in artefacts)

    out = []
    for level, paper, artefact_id in groups:
        members = [row for row in rows if member(row, level, paper, artefact_id)]
        sized, alone, busy = modelled_hours(members)
        # a job and its decodes run one after the other: one item per job
        durations = [row["device_hours"] for row in sized if "device_hours" in row]
        summary = {"level": level, "paper": paper, "artefact": artefact_id, "jobs": len(members),
                   "jobs_without_size": len(members) - len(sized),
                   "h100_modelled_hours": sum(alone), "h100_busy_hours": sum(busy),
                   **{f"h100_wall_hours_gpu{n}": modelled_wall_hours(alone, busy, n, per_device) if sized else 0.0
                      for n in GPU_COUNTS}}
        if len(durations) == len(sized):  # timed (not --model-only)
            summary |= {"device_hours": sum(durations),
                        **{f"wall_hours_gpu{n}": wall_hours(durations, n * per_device) if durations else 0.0
                           for n in GPU_COUNTS}}
        out.append(summary)
    return out


def modelled_hours(rows: list[dict]) -> tuple[list[dict], list[float], list[float]]:
    """The rows with a size, and their modelled H100 hours alone and busy."""
    sized = [row for row in rows if "h100_modelled_hours" in row]
    return sized, [row["h100_modelled_hours"] for row in sized], [row["h100_busy_hours"] for row in sized]


def h100_days_by_jobs_per_device(rows: list[dict]) -> dict[int, float]:
    """Modelled days of every sized job on one H100 for each gpu.jobs_per_device choice."""
    _, alone, busy = modelled_hours(rows)
    return {n: modelled_wall_hours(alone, busy, 1, n) / 24 for n in JOBS_PER_DEVICE_CHOICES}


def seconds_cell(value: float | None) -> str:
    return "not timed" if value is None else f"{value:.4f}"


FAMILY_COLUMNS = ["family", "target_tokens_per_step", "step_seconds", "tokens_per_second", "forward_seconds",
                  "decode_seconds", "step_gflop", "step_kernels", "h100_step_seconds_modelled",
                  "h100_step_busy_seconds_modelled", "h100_tokens_per_second_modelled"]


def family_rows(config: dict, timings_by_family: dict) -> list[dict]:
    """Per family: its step's target tokens (batch × mean target length; LM: batch × bptt), the
    step seconds measured here and the tokens per second they give, and the H100 model's."""
    precision = modelled_precision(config)
    rows = []
    for family, timing in timings_by_family.items():
        kind, shape, *_, length = family
        if kind == "lm":
            s = json.loads(shape)
            tokens = s["batch_size"] * s["bptt"]
        else:  # the timed batches' targets: `length` units (</s> included) per sentence
            tokens = config["train"]["batch_size"] * length
        flops, kernels = timing.counts["step"]
        modelled = timing.modelled("step", precision)
        rows.append({"family": family_label(family), "target_tokens_per_step": tokens,
                     "step_seconds": timing.step, "tokens_per_second": tokens / timing.step if timing.step else None,
                     "forward_seconds": timing.forward, "decode_seconds": timing.decode,
                     "step_gflop": flops / 1e9, "step_kernels": kernels, "h100_step_seconds_modelled": modelled,
                     "h100_step_busy_seconds_modelled": timing.modelled_device("step", precision),
                     "h100_tokens_per_second_modelled": tokens / modelled})
    return rows


def markdown(config: dict, device_name: str, summary: list[dict], rows: list[dict], families: dict,
             timings_by_family: dict, model_only: bool = False) -> str:
    precision = modelled_precision(config)
    total = next(row for row in summary if row["level"] == "total")
    per_device = config.get("gpu", {}).get("jobs_per_device", 1)
    by_jobs_per_device = h100_days_by_jobs_per_device(rows)
    measured = ("Counted, **not timed** (`--model-only`): the FLOPs and kernels of every family on "
                f"{device_name}" if model_only else
                f"Measured on **{device_name}** (config `train.device`: {config['train']['device']}): "
                f"{total['device_hours']:.4g} device-hours on this device")
    columns = [c for c in SUMMARY_COLUMNS if not (model_only and (c == "device_hours" or c.startswith("wall_")))]
    lines = [
        "# Cost plan", "",
        f"{measured}; {total['jobs']} training jobs ({total['jobs_without_size']} without a size).", "",
        f"**H100, modelled, not measured** ({precision}; config `train.precision`: "
        f"{config['train'].get('precision', 'unset')}): {total['h100_modelled_hours'] / 24:.3g} days one job at a time; "
        f"{total['h100_wall_hours_gpu1'] / 24:.3g} days on one H100 at {per_device} job(s) per device "
        f"(config `gpu.jobs_per_device`); the device busy {total['h100_busy_hours'] / 24:.3g} days of it.", "",
        "| gpu.jobs_per_device | " + " | ".join(str(n) for n in by_jobs_per_device) + " |",
        "|---|" + "---|" * len(by_jobs_per_device),
        "| days for every job on one H100 (modelled) | " + " | ".join(f"{d:.3g}" for d in by_jobs_per_device.values()) + " |",
        "",
        "## Predicted hours per table, per paper and in total", "",
        *to_markdown(columns, summary), "",
        "A job shared by several tables or figures counts in each one's row, once in its paper's and the total. "
        + ("" if model_only else
           f"wall_hours_gpuN: `--resources gpu=N` with {per_device} job(s) per device (config `gpu.jobs_per_device`), "
           "a job and its decodes one after the other, jobs sharing a device assumed to run at their own speed "
           "(with more than one per device, an optimistic bound), dependencies ignored. ")
        + "h100_modelled_hours: each job alone on an H100, one after another; h100_busy_hours: the GPU's busy time "
        "in them; h100_wall_hours_gpuN: N H100s at the configured jobs per device (below). Per job: plan.jobs.csv.", "",
        "## Families", "",
        "| family | step s | target tokens/s | validation forward s | greedy decode s (batch) | step GFLOP "
        "| step kernels | H100 step s (modelled: alone, GPU busy) | H100 tokens/s (modelled) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in family_rows(config, timings_by_family):
        lines.append(f"| {row['family']} | {seconds_cell(row['step_seconds'])} | {cell(row['tokens_per_second'])} | "
                     f"{seconds_cell(row['forward_seconds'])} | {seconds_cell(row['decode_seconds'])} | "
                     f"{row['step_gflop']:.2f} | {row['step_kernels']} | {row['h100_step_seconds_modelled']:.4f}, "
                     f"{row['h100_step_busy_seconds_modelled']:.4f} | {row['h100_tokens_per_second_modelled']:.4g} |")
    sources = sorted({row["corpus_source"] for row in rows if "corpus_source" in row})
    counted_as = (f"counted with batches of {COUNTING_BATCH} sentences at the mean target length, the FLOPs then "
                  "scaled to `train.batch_size` (language models: at their own batch)" if model_only else
                  f"timed after {WARMUP} warm-up steps, the mean of {STEPS} steps at "
                  f"{', '.join(f'{f:g}' for f in LENGTH_SPREAD)} × the corpus's mean target length (both sides: "
                  "bucketed batches change shape from step to step), then counted once more at the mean length")
    lines += ["", "## How it is computed", "",
              "- Steps: untrained models of each family at the configured sizes, random batches of "
              f"`train.batch_size` sentences, {counted_as}; a step is forward, backward, gradient clipping and "
              "the optimiser.",
              "- Training: step × ⌈training pairs / batch⌉ × `train.max_epochs` (or the experiment's `train.overrides`; an upper bound: patience may stop "
              "earlier); language models: step × ⌈tokens / (batch × bptt)⌉ × their fixed schedule's epochs.",
              f"- Validation, each epoch: the development set's loss (a forward per batch) and its greedy BLEU "
              f"(batches of {DEV_DECODE_BATCH}, decoding as many steps as the mean target length).",
              "- Decoding (an estimate): a greedy decode of each test batch of `decode.batch_size`, "
              "K times that for beam K; decoding runs the mean target length, as trained models stop at </s>.",
              "- Not planned: data preparation, embeddings, alignment, benchmarks and rendering (CPU jobs or minutes).",
              "- Corpus sizes used: " + "; ".join(sources) + ".",
              "- **H100, modelled, not measured.** Per step, the GPU is busy "
              f"FLOPs / ({ACHIEVED_FRACTION} × peak) + kernels × {KERNEL_SECONDS * 1e6:g} µs, the peak at {precision} "
              f"{H100_PEAK_FLOPS[precision] / 1e12:g} TFLOP/s (H100 SXM, dense), and the host issues the kernels at "
              f"{HOST_SECONDS * 1e6:g} µs each; a job alone takes the larger of the two (the host queues kernels ahead: "
              "no step waits for the device). Jobs sharing a device run at their own speed until the GPU's busy time "
              "is the bound: max(Σ busy / GPUs, the longest-first schedule of the jobs' alone times on GPUs × "
              "jobs per device slots). This assumes NVIDIA MPS (docs/cluster.md); without it, processes take turns "
              "on the GPU and the gain from several jobs per device is smaller.",
              "- Kernels: one per tensor operator (views excluded), counted in the same step on this device; a fused "
              f"LSTM layer (oneDNN on the CPU, cuDNN on CUDA) counts {RECURRENT_KERNELS_PER_STEP['forward']} per time "
              f"step forward and {RECURRENT_KERNELS_PER_STEP['backward']} backward, and its FLOPs are added "
              "(FlopCounterMode counts neither). Translation steps are counted on the decoder's CUDA path (two "
              "products and one fused cell operator per layer and step, `workflow_src/model/lstm_cell.py`) and, off "
              "CUDA, dropout as CUDA's one kernel each way; the language models' hand-unrolled cells are elementwise "
              "operators on every device.",
              f"- Assumptions, not measurements: the achieved fraction ({ACHIEVED_FRACTION}), "
              f"{HOST_SECONDS * 1e6:g} µs per operator on the host, {KERNEL_SECONDS * 1e6:g} µs per kernel on the GPU, "
              "the fused LSTM's kernels per step, and the sharing of a device. A plan run on a GPU measures its own "
              "step times (device_hours), and those are the ones to trust.",
              f"- `train.compile` is {config['train'].get('compile', 'off')!r}: "
              + ("the kernels are counted as eager PyTorch runs them (the counting runs the step eagerly), so "
                 "the model ignores what compiling fuses; the measured step times include it."
                 if config["train"].get("compile", "off") != "off" else "eager PyTorch, as counted."), ""]
    return "\n".join(lines) + "\n"


def plan(config: dict, out_prefix: Path, threads: int, model_only: bool = False) -> None:
    """Write `<prefix>.csv`, `.jobs.csv` and `.md`. `model_only`: count each family's FLOPs and
    kernels on the CPU (translation models at COUNTING_BATCH, their FLOPs scaled up) without timing."""
    global _DEVICE, _REPEATS
    import torch

    from workflow_src import benchmark
    from workflow_src.gpu import job_device

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    jobs = planned_jobs(config)
    corpora, families = {}, {}
    for job in jobs:
        key = (job.kind, job.dataset, job.pair, job.experiment, job.seed)
        corpora[key] = (lm_corpus(config, job.dataset) if job.kind == "lm"
                        else parallel_corpus(config, job.dataset, job.pair))
        if corpora[key] is not None:
            families[key] = (lm_family if job.kind == "lm" else nmt_family)(config, job, corpora[key])
    representative = {}
    for job in jobs:
        key = (job.kind, job.dataset, job.pair, job.experiment, job.seed)
        if key in families:
            representative.setdefault(families[key], job)
    timings_by_family = {}
    _REPEATS = (0, 0) if model_only else (WARMUP, STEPS)
    # --model-only counts in the precision a CUDA job runs in (bf16 autocast's casts are kernels too)
    as_on_cuda = {**config, "train": {**config["train"], "precision": modelled_precision(config)}}
    counting = {**as_on_cuda, "train": {**as_on_cuda["train"], "batch_size": COUNTING_BATCH}}
    with job_device("cpu" if model_only else config["train"]["device"]) as device:
        _DEVICE = device
        device_name = benchmark.device_name(device)
        print(f"plan: {len(jobs)} jobs in {len(representative)} families on {device_name}", flush=True)
        for family, job in representative.items():
            if job.kind == "lm":
                timing = time_lm(as_on_cuda if model_only else config, job, family, device)
            elif model_only:
                timing = time_nmt(counting, job, family, device).scaled_flops(config["train"]["batch_size"] / COUNTING_BATCH)
            else:
                timing = time_nmt(config, job, family, device)
            timings_by_family[family] = timing
            print(f"{family_label(family)}: step {seconds_cell(timing.step)} s, {timing.counts['step'][1]} kernels",
                  flush=True)
    rows = job_rows(config, jobs, corpora, families, timings_by_family)
    summary = summary_rows(config, rows)
    write_text(out_prefix.with_suffix(".jobs.csv"), to_csv(JOB_COLUMNS, rows))
    write_text(out_prefix.with_suffix(".families.csv"), to_csv(FAMILY_COLUMNS, family_rows(config, timings_by_family)))
    write_text(out_prefix.with_suffix(".csv"), to_csv(SUMMARY_COLUMNS + ["device"],
                                                      [{**row, "device": device_name} for row in summary]))
    write_text(out_prefix.with_suffix(".md"),
               markdown(config, device_name, summary, rows, families, timings_by_family, model_only))


# -- prediction against the actual time ----------------------------------------------------------------
def actual_seconds(kind: str, records: list[dict]) -> float:
    """Training and validation seconds a metrics.jsonl records (language models record training only)."""
    if kind == "lm":
        return sum(r["seconds"] for r in records)
    return sum(r["train_seconds"] + r["validation_seconds"] for r in records)


def predicted_seconds(row: dict) -> float:
    """The plan's seconds for what metrics.jsonl measures: training and validation (LM: training)."""
    hours = float(row["train_hours"]) + (float(row["validation_hours"]) if row["kind"] == "nmt" else 0.0)
    return hours * 3600


COMPARE_COLUMNS = ["kind", "dataset", "pair", "experiment", "seed", "epochs_planned", "epochs_run",
                   "predicted_seconds", "actual_seconds", "actual / predicted"]


def compare(plan_rows: list[dict], read_metrics) -> tuple[list[dict], dict]:
    """Per planned job with a size, predicted against actual seconds; and the total row.
    `read_metrics(path)` gives a metrics.jsonl's records."""
    rows = []
    for row in plan_rows:
        if not row.get("train_hours"):
            continue
        records = read_metrics(row["metrics"])
        predicted, actual = predicted_seconds(row), actual_seconds(row["kind"], records)
        rows.append({**{k: row[k] for k in ("kind", "dataset", "pair", "experiment", "seed")},
                     "epochs_planned": int(row["epochs"]), "epochs_run": len(records),
                     "predicted_seconds": round(predicted, 2), "actual_seconds": round(actual, 2),
                     "actual / predicted": round(actual / predicted, 3) if predicted else None})
    predicted = sum(r["predicted_seconds"] for r in rows)
    actual = sum(r["actual_seconds"] for r in rows)
    total = {"kind": "total", "dataset": "", "pair": "", "experiment": f"{len(rows)} jobs", "seed": "",
             "epochs_planned": sum(r["epochs_planned"] for r in rows), "epochs_run": sum(r["epochs_run"] for r in rows),
             "predicted_seconds": round(predicted, 2), "actual_seconds": round(actual, 2),
             "actual / predicted": round(actual / predicted, 3) if predicted else None}
    return rows, total


def within_factor(total: dict, factor: float = 2.0) -> bool:
    ratio = total["actual / predicted"]
    return ratio is not None and 1 / factor <= ratio <= factor


def write_comparison(jobs_csv: Path, out_prefix: Path) -> dict:
    with open(jobs_csv, newline="") as f:
        plan_rows = list(csv.DictReader(f))

    def read_metrics(path):
        return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]

    rows, total = compare(plan_rows, read_metrics)
    verdict = "within" if within_factor(total) else "NOT within"
    footer = [f"Total: actual / predicted = {total['actual / predicted']}, {verdict} a factor of 2. "
              "Actual: the sum over epochs of train_seconds + validation_seconds of each model's metrics.jsonl "
              "(language models: seconds, training only; their prediction is training only too). The plan predicts "
              "`train.max_epochs` epochs; a run that stopped early ran fewer (epochs_run)."]
    write_text(out_prefix.with_suffix(".csv"), to_csv(COMPARE_COLUMNS, rows + [total]))
    title = "The cost plan's prediction against the actual training time"
    lines = [f"# {title}", "", f"Plan: {jobs_csv}", "", *to_markdown(COMPARE_COLUMNS, rows + [total]), "", *footer]
    write_text(out_prefix.with_suffix(".md"), "\n".join(lines) + "\n")
    write_text(out_prefix.with_suffix(".html"), to_html(title, f"plan: {jobs_csv}. {footer[0]}", COMPARE_COLUMNS, rows + [total]))
    return total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("plan")
    p.add_argument("--config", type=json.loads, required=True, help="the workflow's config (JSON)")
    p.add_argument("--out-prefix", type=Path, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--model-only", action="store_true",
                   help="count FLOPs and kernels on the CPU without timing: the H100 model alone, in minutes")
    c = commands.add_parser("compare")
    c.add_argument("--jobs", type=Path, required=True, help="the plan's <prefix>.jobs.csv")
    c.add_argument("--out-prefix", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "plan":
        plan(args.config, args.out_prefix, args.threads, args.model_only)
    else:
        total = write_comparison(args.jobs, args.out_prefix)
        print(f"actual / predicted: {total['actual / predicted']}")


if __name__ == "__main__":
    main()
