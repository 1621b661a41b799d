"""Benchmarks that print ratios measured in one run (never timed assertions in tests).

`python -m workflow_src.plan.benchmark <kind> --settings JSON --out result.json [--experiments ...]`

- `output-layers` (vMF Table 4): parameters of each model's input layer (the decoder's input
  embeddings) and output layer, the time of one training step (forward, backward, Adam) per
  batch, and of greedily decoding one batch (`decode_times`), every model at the same size, as
  ratios to the first;
- `throughput` (vMF Figure 1, left): training samples per second against batch size, up to the
  largest batch each model fits in memory;
- `log-cm`: log C_m and its derivative in torch on the device against scipy's `ive` with a
  round trip through the host (the released code's way);
- `decoding`: greedy decoding throughput of each model (`decode_times`);
- `sampling` (joint Table 4): target tokens per second in training with each sampled share of
  a BPE vocabulary of `sampling_vocab` pieces (the paper's 128K).

Every timing of a training step or of a decoded batch (output-layers, throughput, sampling,
decoding) is `repeats` timed repeats (`settings["repeats"]`, default and at least `REPEATS`), each
the mean over its `steps_per_repeat` steps (`steps` / `repeats`, rounded up: config
`benchmarks.steps` is shared among the repeats), after `warmup` untimed steps; a result holds the
repeats beside their mean (and sd), so that a claim on a timing or a ratio can count their spread
(`workflow_src/score/evidence.py`).

Models are untrained and fed random token ids: speed and size do not depend on the weights.
Training steps run in the precision a training job of the same config runs in
(`settings["precision"]`, config `train.precision`, resolved by `main`; see `workflow_src.model.precision`);
every result's "settings" say where, in what and when it ran (`stamp`).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import platform
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from workflow_src.atomic import described, write_text
from workflow_src.layout import train_spec
from workflow_src.step_mode import compile_spec_entry
from workflow_src.model import compilation, precision as precisions
from workflow_src.model.gpu import job_device
from workflow_src.model.seq2seq import Seq2Seq
from workflow_src.model.timing import synchronize
from workflow_src.model.vmf import log_cm
from workflow_src.registry import experiment as registry_experiment

PAD, BOS, EOS = 0, 2, 3
REPEATS = 5  # timed repeats of every training-step timing, at least
REPEATED = ("output-layers", "throughput", "sampling", "decoding")  # timed in repeats (`repeat_plan`)


def build(experiment: str, settings: dict, device: torch.device, **spec_changes) -> Seq2Seq:
    """An untrained model of `experiment` at the benchmark's sizes, changed by its architecture
    (`settings["architectures"]`, config `architectures`): the joint paper's 2 x 512 for joint
    Table 4, the benchmark's own sizes (the vMF paper's) for every model without one. Compiled as
    `settings["compile"]` (config `train.compile`, absent when off) says."""
    e = registry_experiment(experiment)
    config = {
        "model": {
            "encoder_layers": settings["encoder_layers"],
            "decoder_layers": settings["decoder_layers"],
            "hidden": settings["hidden"],
            "src_embedding": settings["src_embedding"],
            "tgt_embedding": settings["tgt_embedding"],
            "dropout": 0.0,
        },
        "datasets": {
            "benchmark": {
                "src_vocab_size": settings["vocab"],
                "tgt_vocab_size": settings["vocab"],
                "emb_vocab_size": settings["vocab"],
                "max_len": settings["length"],
                "max_len_unit": "word",
            }
        },
        "train": {
            "device": str(device),
            "lr": {"softmax": 1e-3, "continuous": 1e-3, "softmax_pretrained": 1e-3, "joint": 1e-3},
            "batch_size": settings["batch_size"],
            "max_epochs": 1,
            "patience": 1,
            "selection": "bleu",
            "clip": 5.0,
            "init_scale": 0.1,
            **compile_spec_entry(settings),
        },
        "architectures": {e.architecture: settings.get("architectures", {}).get(e.architecture, {})}
        if e.architecture
        else {},
    }
    spec = dataclasses.replace(train_spec(config, "benchmark", "xx-yy", experiment, seed=1), **spec_changes)
    size = lambda unit: settings["bpe_vocab"] if unit == "bpe" else settings["vocab"]  # noqa: E731
    table = None
    if e.embeddings:
        table = torch.nn.functional.normalize(torch.randn(size("word"), settings["dim"]), dim=-1)
    model = Seq2Seq(spec, size(e.source_unit), size("word" if e.target_unit == "emb" else e.target_unit), PAD, table)
    model.to(device)
    compilation.apply(model, spec, device)
    return model


def random_batch(model: Seq2Seq, batch: int, length: int, device: torch.device):
    """(src, lengths, tgt): random ids on `device`, the lengths on the host, where the encoder
    packs by them (on the device, each step would wait to copy them back)."""
    src_vocab = model.encoder.embed.num_embeddings
    tgt_vocab = model.output.vocab_size
    src = torch.randint(4, src_vocab, (batch, length), device=device)
    lengths = torch.full((batch,), length)
    tgt = torch.randint(4, tgt_vocab, (batch, length), device=device)
    return src, lengths, tgt


def repeat_plan(settings: dict) -> tuple[int, int]:
    """(timed repeats, steps per repeat): `settings["repeats"]` (default `REPEATS`) repeats sharing
    `settings["steps"]` timed steps, at least one each."""
    repeats = settings.get("repeats", REPEATS)
    if repeats < REPEATS:
        raise ValueError(f"benchmark repeats {repeats}: at least {REPEATS} timed repeats give a timing its spread")
    return repeats, -(-settings["steps"] // repeats)


def step_times(model: Seq2Seq, batch: int, settings: dict, device: torch.device) -> list[float]:
    """Seconds per training step of each timed repeat (`repeat_plan`: the mean over its steps),
    after `warmup` untimed steps; the forward pass in `settings["precision"]`, as `train.train` runs it."""
    repeats, per_repeat = repeat_plan(settings)
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-4, fused=True)
    src, lengths, tgt = random_batch(model, batch, settings["length"], device)
    times = []
    for i in range(settings["warmup"] + repeats * per_repeat):
        synchronize(device)
        started = time.perf_counter()
        with precisions.autocast(settings["precision"], device):
            loss, n = model.loss(src, lengths, tgt, tgt, PAD)
        optimiser.zero_grad(set_to_none=True)
        (loss / n).backward()
        optimiser.step()
        synchronize(device)
        if i >= settings["warmup"]:
            times.append(time.perf_counter() - started)
    return [statistics.fmean(times[r * per_repeat : (r + 1) * per_repeat]) for r in range(repeats)]


@torch.no_grad()
def decode_times(model: Seq2Seq, settings: dict, device: torch.device) -> list[float]:
    """Seconds to decode one batch greedily for `length` steps (</s> banned), each timed repeat's
    mean as `step_times`'s, after `warmup` untimed batches; in fp32, as decode jobs run
    (`workflow_src.decode.decode`) whatever `train.precision` says."""
    repeats, per_repeat = repeat_plan(settings)
    model.eval()
    src, lengths, _ = random_batch(model, settings["batch_size"], settings["length"], device)
    times = []
    for i in range(settings["warmup"] + repeats * per_repeat):
        synchronize(device)
        started = time.perf_counter()
        model.greedy(src, lengths, BOS, EOS, [PAD, BOS, EOS], settings["length"])
        synchronize(device)
        if i >= settings["warmup"]:
            times.append(time.perf_counter() - started)
    model.train()
    return [statistics.fmean(times[r * per_repeat : (r + 1) * per_repeat]) for r in range(repeats)]


def rates(amount: float, seconds: list[float]) -> list[float]:
    """`amount` per second in each repeat."""
    return [round(amount / s, 1) for s in seconds]


def sd(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def output_layers(experiments: list[str], settings: dict, device: torch.device) -> dict:
    """Per model: input and output layer parameters, ms per training step (each repeat's in
    `ms_repeats`, their mean `ms` and sample sd `ms_sd`), target tokens per second (batch_size x
    length / the mean step seconds), and ms to decode a batch greedily (`decode_ms_repeats`,
    `decode_ms`, `decode_ms_sd`)."""
    tokens = settings["batch_size"] * settings["length"]
    rows = {}
    for experiment in experiments:
        model = build(experiment, settings, device)
        seconds = step_times(model, settings["batch_size"], settings, device)
        ms = [1000 * s for s in seconds]
        decode_ms = [1000 * s for s in decode_times(model, settings, device)]
        rows[experiment] = {
            **model.layer_parameters(),
            "ms": round(statistics.fmean(ms), 2),
            "ms_sd": round(sd(ms), 2),
            "ms_repeats": [round(m, 3) for m in ms],
            "tokens_per_second": round(tokens / statistics.fmean(seconds), 1),
            "decode_ms": round(statistics.fmean(decode_ms), 2),
            "decode_ms_sd": round(sd(decode_ms), 2),
            "decode_ms_repeats": [round(m, 3) for m in decode_ms],
        }
        print(f"{experiment}: {rows[experiment]}", flush=True)
        del model
        release(device)
    first = rows[experiments[0]]["ms"]
    for experiment, row in rows.items():
        print(f"{experiment}: {row['ms'] / first:.2f}x the training time per batch of {experiments[0]}")
    return {"rows": rows}


def sampling(experiments: list[str], settings: dict, device: torch.device) -> dict:
    """Target tokens per second in training (forward, backward, Adam) with each share of the
    vocabulary sampled per batch, every model at the benchmark's size over `sampling_vocab` pieces:
    `rows` the mean over the timed repeats, `repeats` each repeat's, `sd` their sample sd."""
    sized = {**settings, "bpe_vocab": settings["sampling_vocab"]}
    tokens = settings["batch_size"] * settings["length"]
    rows, repeats, spread = {}, {}, {}
    for experiment in experiments:
        rows[experiment], repeats[experiment], spread[experiment] = {}, {}, {}
        for share in settings["sample_shares"]:
            model = build(experiment, sized, device, sample_share=share)
            speeds = rates(tokens, step_times(model, settings["batch_size"], sized, device))
            key = f"{share:g}"
            rows[experiment][key] = round(statistics.fmean(speeds), 1)
            repeats[experiment][key], spread[experiment][key] = speeds, round(sd(speeds), 1)
            del model
            release(device)
        print(f"{experiment}: target tokens/s by sampled share {rows[experiment]}", flush=True)
    first = experiments[0]
    for experiment, row in rows.items():
        print(
            f"{experiment}: "
            + ", ".join(f"{share}: {speed / rows[first][share]:.2f}x {first}" for share, speed in row.items())
        )
    architectures = settings.get("architectures", {})
    return {
        "rows": rows,
        "sd": spread,
        "repeats": repeats,
        "sampling_vocab": settings["sampling_vocab"],
        "architectures": {
            experiment: architectures.get(registry_experiment(experiment).architecture, "the benchmark's sizes")
            for experiment in experiments
        },
    }


def release(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def out_of_memory(error: Exception) -> bool:
    return isinstance(error, torch.cuda.OutOfMemoryError) or "out of memory" in str(error)


def throughput(experiments: list[str], settings: dict, device: torch.device) -> dict:
    """Training samples per second by batch size, per model: `systems` the mean over the timed
    repeats, `repeats` each repeat's."""
    systems, repeats = {}, {}
    for experiment in experiments:
        model = build(experiment, settings, device)
        points, repeats[experiment] = {}, {}
        for batch in settings["batch_sizes"]:
            if device.type == "cpu" and batch > settings["max_batch"]:
                break
            try:
                speeds = rates(batch, step_times(model, batch, settings, device))
                points[str(batch)], repeats[experiment][str(batch)] = round(statistics.fmean(speeds), 1), speeds
            except RuntimeError as error:
                if not out_of_memory(error):
                    raise
                break  # the largest batch this model fits is the previous one
            finally:
                release(device)
        systems[experiment] = points
        print(f"{experiment}: samples/s by batch size {points}", flush=True)
        del model
        release(device)
    return {
        "systems": systems,
        "repeats": repeats,
        "batch_sizes": settings["batch_sizes"],
        "note": (
            f"untrained models of the benchmark size on {device}; the sweep stops at the first batch "
            f"that does not fit" + (f" (or {settings['max_batch']} on the CPU)" if device.type == "cpu" else "")
        ),
    }


def log_cm_speed(settings: dict, device: torch.device) -> dict:
    """log C_m and its derivative for a batch of kappas: torch on the device vs scipy via the host,
    whatever the precision (fp32 kappas, float64 inside log C_m, no autocast)."""
    from scipy.special import ive

    m = settings["dim"]
    nu = m / 2 - 1
    kappa = torch.empty(settings["batch_size"] * settings["length"], dtype=torch.float32, device=device).uniform_(
        1.0, 400.0
    )

    def ours():
        k = kappa.detach().requires_grad_()
        value = log_cm(m, k)
        value.sum().backward()
        return value.detach(), k.grad

    def scipy_round_trip():
        k = kappa.detach().cpu().double().numpy()
        value = nu * np.log(k) - m / 2 * np.log(2 * np.pi) - (np.log(ive(nu, k)) + k)
        gradient = -ive(nu + 1, k) / ive(nu, k)
        return torch.from_numpy(value).to(device), torch.from_numpy(gradient).to(device)

    timings = {}
    for name, function in (("torch", ours), ("scipy", scipy_round_trip)):
        for _ in range(settings["warmup"]):
            function()
        times = []
        for _ in range(settings["steps"] * 10):
            synchronize(device)
            started = time.perf_counter()
            function()
            synchronize(device)
            times.append(time.perf_counter() - started)
        timings[name] = statistics.median(times)
    value, gradient = ours()
    reference_value, reference_gradient = scipy_round_trip()
    result = {
        "m": m,
        "kappas": kappa.numel(),
        "device": str(device),
        "arithmetic": (
            "fp32 kappas, float64 inside log C_m (torch) and scipy; no autocast, whatever the precision in settings"
        ),
        "torch_ms": round(1000 * timings["torch"], 4),
        "scipy_round_trip_ms": round(1000 * timings["scipy"], 4),
        "torch_over_scipy": round(timings["torch"] / timings["scipy"], 3),
        "max_relative_difference": float(((value.double() - reference_value).abs() / reference_value.abs()).max()),
        "max_gradient_relative_difference": float(
            ((gradient.double() - reference_gradient).abs() / reference_gradient.abs()).max()
        ),
    }
    print(
        f"log C_m, m={m}, {kappa.numel()} kappas on {device}: torch {result['torch_ms']} ms, scipy round trip "
        f"{result['scipy_round_trip_ms']} ms ({result['torch_over_scipy']}x)"
    )
    return result


def decoding(experiments: list[str], settings: dict, device: torch.device) -> dict:
    """Sentences per second of batched greedy decoding (`decode_times`): `sentences_per_second` the
    mean over the timed repeats, `repeats` each repeat's."""
    rows, repeats = {}, {}
    for experiment in experiments:
        model = build(experiment, settings, device)
        seconds = decode_times(model, settings, device)
        rows[experiment] = round(settings["batch_size"] / statistics.fmean(seconds), 1)
        repeats[experiment] = rates(settings["batch_size"], seconds)
        del model
        release(device)
    first = experiments[0]
    for experiment, speed in rows.items():
        print(f"{experiment}: {speed} sentences/s decoding ({speed / rows[first]:.2f}x {first})")
    return {"sentences_per_second": rows, "repeats": repeats, "arithmetic": "fp32, as decode jobs run"}


def device_name(device: torch.device) -> str:
    """The GPU's name on CUDA; elsewhere the CPU's model and torch's thread count."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cpuinfo = Path("/proc/cpuinfo")
    models = [
        line.partition(":")[2].strip()
        for line in (cpuinfo.read_text().splitlines() if cpuinfo.exists() else [])
        if line.startswith("model name")
    ]
    return f"{models[0] if models else platform.processor() or platform.machine()} ({torch.get_num_threads()} threads)"


def stamp(settings: dict, device: torch.device, precision: str, threads: int, repeated: bool = False) -> dict:
    """A result's "settings": the benchmark's sizes (and, for the training-step timings, their
    timed repeats and steps per repeat), and where, in what and when (UTC) it ran."""
    sizes = {
        k: settings[k]
        for k in ("hidden", "src_embedding", "tgt_embedding", "dim", "vocab", "bpe_vocab", "batch_size", "length")
    }
    if repeated:
        sizes["repeats"], sizes["steps_per_repeat"] = repeat_plan(settings)
    return {
        **sizes,
        "device": str(device),
        "device_name": device_name(device),
        "precision": precision,
        "compile": settings.get(compilation.KEY, "off"),
        "threads": threads,
        "torch": torch.__version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("kind", choices=("output-layers", "throughput", "log-cm", "decoding", "sampling"))
    parser.add_argument("--settings", type=json.loads, required=True)
    parser.add_argument("--experiments", nargs="*", default=[])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    with job_device(args.settings["device"]) as device:
        precision = precisions.resolve(args.settings["precision"], device)
        precisions.configure(precision)
        settings = {**args.settings, "precision": precision}
        print(f"benchmark {args.kind} on {device} ({device_name(device)}) in {precision}", flush=True)
        if args.kind == "output-layers":
            result = output_layers(args.experiments, settings, device)
        elif args.kind == "throughput":
            result = throughput(args.experiments, settings, device)
        elif args.kind == "log-cm":
            result = log_cm_speed(settings, device)
        elif args.kind == "sampling":
            result = sampling(args.experiments, settings, device)
        else:
            result = decoding(args.experiments, settings, device)
    result["settings"] = stamp(args.settings, device, precision, args.threads, args.kind in REPEATED)
    write_text(args.out, json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
