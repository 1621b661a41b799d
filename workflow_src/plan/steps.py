"""The step, validation forward and greedy decode of one untrained model of a family, as train.py
and train_lm.py run them, measured on a device (`timing.measure`) or only counted (`model_only`:
on the CPU, counted as CUDA runs them).

Translation batches are shaped as the training's: padded to `nmt_data.length_multiple`'s granule
(the H100 model: CUDA's rule), the loss over the real tokens only. Counted only, a translation family
is counted at COUNTING_BATCH and twice that and its FLOPs extrapolated to `train.batch_size`
(`counting.extrapolate`: per-batch work once per batch).
"""

from __future__ import annotations

import dataclasses
import itertools

from workflow_src import layout, lm_specs
from workflow_src.plan import counting
from workflow_src.plan.jobs import PlannedJob
from workflow_src.plan.timing import LENGTH_SPREAD, PARTS, STEPS, WARMUP, Timing, timings

COUNTING_BATCH = 2  # --model-only counts translation models at this batch and twice it (their FLOPs are affine in it)
GRAPH_GRANULE = 8  # without train.length_buckets, graphs pad S and T to multiples of it (nmt_data.length_multiple's)


def bucket_width(length: float, buckets: list[int]) -> float:
    """The mean width of batches of about `length` units padded up to the smallest of `buckets`
    at least their length: length + (b_i - b_(i-1) - 1) / 2, b_i the bucket holding `length`
    (every length between the buckets alike, as `counting.padded_width` for a granule)."""
    above = [b for b in sorted(buckets) if b >= length]
    if not above:
        return float(length)
    below = [b for b in buckets if b < above[0]]
    return length + (above[0] - max(below, default=0) - 1) / 2


def as_graphs(config: dict, family: tuple, timing: Timing) -> Timing:
    """A family's timing with the shapes of its replayed graphs: a translation step padded to the
    length buckets (config `train.length_buckets`; absent, multiples of `GRAPH_GRANULE`), a decode
    replayed once per target position."""
    kind, *_, length = family
    if kind == "lm":  # a segment's shape is fixed: one replay per step and per forward
        return timing
    buckets = config["train"].get("length_buckets")
    width = bucket_width(length, buckets) if buckets else length + (GRAPH_GRANULE - 1) / 2
    from workflow_src.model import nmt_data

    multiple = nmt_data.length_multiple(config["train"].get("compile", "off"))
    counted = counting.padded_width(length, multiple)  # as the eager count
    return dataclasses.replace(timing, width_ratio=width / counted, decode_steps=length)


def spread(length: int) -> list[int]:
    return [max(1, round(length * factor)) for factor in LENGTH_SPREAD]


def repeats(model_only: bool) -> dict:
    """(warm-up, timed) calls of each part. Counted only, the forward is called once before it is
    counted, as validation computes the joint layer's g_out(E) once per pass, not per batch (the
    decode after it reads the same cache)."""
    if model_only:
        return {"step": (0, 0), "forward": (1, 0), "decode": (0, 0)}
    return {name: (WARMUP, STEPS) for name in PARTS}


def time_nmt(
    config: dict,
    job: PlannedJob,
    family: tuple,
    device,
    model_only: bool = False,
    batch: int | None = None,
    shapes: list[tuple[int, int]] | None = None,
) -> Timing:
    """A `job`-shaped model (untrained, random batches of the family's length), as train.py builds it
    (compiled as config `train.compile` says); counted as on CUDA with `model_only`. `batch`: its
    sentences (default the job's `train.batch_size`); `shapes`: (width, real units per row) of
    its batches in turn (default the family's length, padded as below)."""
    import torch

    from workflow_src.model import compilation, nmt_data, precision as precisions
    from workflow_src.plan.benchmark import BOS, EOS, PAD
    from workflow_src.model.seq2seq import finished_check_interval, Seq2Seq

    _, _, src_size, tgt_size, dim, length = family
    spec = layout.train_spec(config, job.dataset, job.pair, job.experiment, job.seed)
    table = torch.nn.functional.normalize(torch.randn(tgt_size, dim), dim=-1) if dim else None
    model = Seq2Seq(spec, src_size, tgt_size, PAD, table).to(device)
    # the decoder's path on CUDA (its default there), on any device: one cell operator per layer
    # and step, so that a CPU counts the kernels a GPU launches
    model.decoder.split_input_projection = True
    compilation.apply(model, spec, device)
    trained = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.Adam(trained, lr=1e-4, fused=device.type in ("cuda", "cpu"))
    batch = batch or spec.train.batch_size
    on = torch.device("cuda") if model_only else device
    multiple = nmt_data.length_multiple(spec.compile)
    # (width, real units per row): counted at the mean length (padded as its mean batch is), timed
    # at the spread of lengths (each padded up to the granule)
    shapes = shapes or (
        [(counting.padded_width(length, multiple), length)]
        + [(counting.ceil_to(n, multiple), n) for n in spread(length)[1:]]
    )

    def make(width: int, n: int):
        positions = (torch.arange(batch)[:, None] * width + torch.arange(n)[None, :]).flatten()
        return (
            torch.randint(4, src_size, (batch, width), device=device),
            torch.full((batch,), n),  # on the host, as the encoder packs by them
            torch.randint(4, tgt_size, (batch, width), device=device),
            positions.to(device),
            n,
        )  # the real targets, found on the host as nmt_data does

    batches = itertools.cycle([make(width, n) for width, n in shapes])
    precision = precisions.resolve(config["train"].get("precision", "auto"), device)
    precisions.configure(precision)
    check_every = finished_check_interval(on)

    def step():
        src, lengths, tgt, positions, _ = next(batches)
        model.train()
        with precisions.autocast(precision, device):  # as train.py: the forward pass
            loss, n = model.loss(src, lengths, tgt, tgt, PAD, positions)
        optimiser.zero_grad(set_to_none=True)
        (loss / n).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config["train"]["clip"])
        optimiser.step()

    @torch.no_grad()
    def forward():
        src, lengths, tgt, positions, _ = next(batches)
        model.eval()
        with precisions.autocast(precision, device):  # as train.mean_loss
            model.loss(src, lengths, tgt, tgt, PAD, positions)

    def decode():
        src, lengths, _, _, n = next(batches)
        model.eval()  # </s> banned: as many steps as the mean target length
        model.greedy(src, lengths, BOS, EOS, [PAD, BOS, EOS], n, check_every=check_every)

    return timings(
        {"step": step, "forward": forward, "decode": decode},
        repeats(model_only),
        device,
        counting.optimiser_bytes(optimiser, trained),
    )


def count_nmt(
    config: dict,
    job: PlannedJob,
    family: tuple,
    device,
    batch: int | None = None,
    shapes: list[tuple[int, int]] | None = None,
) -> Timing:
    """A translation family counted (not timed) at COUNTING_BATCH and twice it, its FLOPs
    extrapolated to `batch` (default the job's `train.batch_size`; every part, as the plan's
    decodes are counted at it too). `shapes`: as `time_nmt`'s."""
    batch = batch or layout.train_spec(config, job.dataset, job.pair, job.experiment, job.seed).train.batch_size
    small, large = (
        time_nmt(config, job, family, device, model_only=True, batch=b, shapes=shapes)
        for b in (COUNTING_BATCH, 2 * COUNTING_BATCH)
    )
    counts = {
        part: counting.extrapolate(small.counts[part], large.counts[part], COUNTING_BATCH, 2 * COUNTING_BATCH, batch)
        for part in PARTS
    }
    return Timing(None, None, None, counts)


def time_lm(config: dict, job: PlannedJob, family: tuple, device, model_only: bool = False) -> Timing:
    """One segment of a `job`-shaped language model, with train_lm's own epoch and evaluation
    (compiled as config `train.compile` says)."""
    import torch

    from workflow_src.model import compilation, precision as precisions
    from workflow_src.model.lm import build_model
    from workflow_src.model.lm_losses import build_objective
    from workflow_src.train import lm_spec, steps as training

    vocabulary = family[2]
    spec = lm_spec.checked(lm_specs.lm_spec(config, job.dataset, job.experiment, job.seed))
    model = build_model(spec, vocabulary).to(device)
    compilation.apply(model, spec, device)
    optimiser = torch.optim.SGD(model.parameters(), lr=spec.lr)
    objective = build_objective(spec)
    segment = torch.randint(0, vocabulary, (spec.bptt + 1, spec.batch_size), device=device)
    held_out = torch.randint(0, vocabulary, (spec.bptt + 1, spec.eval_batch_size), device=device)
    precision = precisions.resolve(spec.precision, device)
    precisions.configure(precision)
    functions = {
        "step": lambda: training.train_epoch(model, segment, spec, optimiser, objective, precision),
        "forward": lambda: training.evaluate(model, held_out, spec.bptt, precision),
        "decode": lambda: None,
    }
    return timings(functions, repeats(model_only), device, counting.optimiser_bytes(optimiser, model.parameters()))
