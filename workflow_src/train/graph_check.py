"""`train.compile: graphs` against eager on a GPU (issue 35 item 5): agreement over 50 steps and
the time of a step, per model family.

`python -m workflow_src.train.graph_check [--config config.yaml] [--steps 50] [--timed 20]
 [--out graph_check.json] [EXPERIMENT ...]`, EXPERIMENT `dataset:pair:name` (translation) or
`dataset:name` (language model); by default the families of issue 35's H200 table and two of the
vMF paper's. CUDA only: the CPU has no graphs to capture (the functions below run there
uncaptured, which is how tests/test_graph_check.py tests them).

For each family, at the configured sizes, from one initialisation and the same random batches:

    agreement  `steps` training steps in fp32 with dropout off, eager (`steps.training_step`
               and Adam, or train_lm's segment) and captured (`static_step`): the largest relative
               difference of the two runs' losses, step by step, and the smallest cosine, over
               the parameter tensors, between the two runs' updates θ_steps - θ_0. A sampled
               softmax draws V' from the same generator state in both, so its subsets agree.
               Translation batches cycle through three lengths (three buckets, each captured
               once and replayed).
    time       `timed` steps of each in the configured `train.precision`, dropout as configured,
               on batches of one length: the median seconds of a step (synchronised), after
               warm-up (the captures included there), eager and captured in turn, each built
               afresh `model.timing.ROUNDS` times: the fastest median of each, and their ratio.

Passed when the losses agree within LOSS_RELATIVE and the updates' cosine is at least
UPDATE_COSINE, or, where fp32 misses those, when the same comparison in fp64 agrees within
FP64_LOSS_RELATIVE and FP64_UPDATE_COSINE (grown rounding shrinks there; a different step does
not). Eager against itself is reported beside it. The GPU check (`workflow_src/gpu_check`) calls
`check` per family.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import random
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from workflow_src import layout, lm_specs, registry
from workflow_src.data.vocab import SPECIALS, Vocab
from workflow_src.model import precision as precisions
from workflow_src.model.lm import build_model
from workflow_src.model.lm_losses import build_objective
from workflow_src.model.nmt_data import training_batch
from workflow_src.model.seq2seq import Seq2Seq, initialise
from workflow_src.model.timing import ROUNDS, median_seconds
from workflow_src.config_check import read_checked
from workflow_src.atomic import described, write_text
from workflow_src.specs import LMSpec, TrainSpec
from workflow_src.train import static_step
from workflow_src.train.lm_spec import checked
from workflow_src.train.steps import train_epoch, training_step

LOSS_RELATIVE = 1e-3  # the largest relative difference of a step's loss, eager against graphs (fp32)
UPDATE_COSINE = 0.99  # the smallest cosine of a parameter tensor's update, eager against graphs
FP64_LOSS_RELATIVE = 1e-6  # the same in fp64, where fp32 misses those (`check`)
FP64_UPDATE_COSINE = 0.99999
LENGTHS = (18, 25, 32)  # target lengths of the agreement's translation batches (the H200's step timed 25-26)
LM_VOCABULARY = 10_000  # PTB's
DEFAULT_EXPERIMENTS = (
    "wmt17:de-en:bpe32k-tied",
    "wmt17:de-en:bpe32k-joint512",
    "wmt17:en-fi:bpe32k-joint2048",
    "wmt17:en-fi:bpe128k-nmt",
    "iwslt16:fr-en:word2word-ce",
    "iwslt16:fr-en:word2emb-fasttext-nllvmf_reg1reg2",
    "ptb:lm-small-vd",
    "ptb:lm-small-re",
)


def without_dropout(model: torch.nn.Module) -> torch.nn.Module:
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        elif isinstance(module, torch.nn.LSTM):
            module.dropout = 0.0
    if hasattr(model, "dropout") and isinstance(model.dropout, float):  # the language model's rate
        model.dropout = 0.0
    return model


def update_cosine(before: list[torch.Tensor], eager: list[torch.Tensor], graphs: list[torch.Tensor]) -> float:
    """min over parameter tensors of cos(θ_eager - θ_0, θ_graphs - θ_0); tensors neither run moved are left out."""
    cosines = [
        F.cosine_similarity((e - b).flatten().double(), (g - b).flatten().double(), dim=0).item()
        for b, e, g in zip(before, eager, graphs)
        if (e - b).abs().max() > 0 or (g - b).abs().max() > 0
    ]
    return min(cosines, default=1.0)


def as_device_rate(lr: float) -> float:
    """The rate as the captured step's optimiser holds it (an fp32 device tensor,
    `static_step.with_device_rate`): in fp32 both are that number anyway; in fp64 a rate off by
    fp32's rounding (5e-8 relative) would grow over the steps like the difference looked for."""
    return float(torch.tensor(lr, dtype=torch.float32))


def relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-12)


# -- translation ------------------------------------------------------------------------------------
def translation_model(spec: TrainSpec, src_size: int, tgt_size: int, dim: int | None) -> Seq2Seq:
    torch.manual_seed(0)
    table = F.normalize(torch.randn(tgt_size, dim), dim=-1) if dim else None
    model = Seq2Seq(spec, src_size, tgt_size, SPECIALS.index("<pad>"), table)
    initialise(model, spec.train.init_scale)
    return model


def random_pairs(spec: TrainSpec, src_size: int, tgt_size: int, lengths, seed: int = 1):
    """`batch_size` random pairs per length (words from 4 up; targets end in </s>, 3)."""
    rng, size = random.Random(seed), spec.train.batch_size
    pairs = [
        (
            [rng.randrange(4, src_size) for _ in range(n - 1 - i % 3)],
            [rng.randrange(4, tgt_size) for _ in range(n - 1)] + [3],
        )
        for n in lengths
        for i in range(size)
    ]
    return (
        [s for s, _ in pairs],
        [t for _, t in pairs],
        [list(range(k * size, (k + 1) * size)) for k in range(len(lengths))],
    )


def translation_runs(
    spec: TrainSpec,
    src_size: int,
    tgt_size: int,
    dim: int | None,
    device: torch.device,
    steps: int,
    lengths,
    precision: str,
    dropout: bool,
    graphs: bool,
    measure: int = 0,
    dtype: torch.dtype = torch.float32,
) -> dict:
    """`steps` training steps, eager or captured, cycling over one batch per length; then
    `measure` more, timed. (losses, parameters before and after, seconds per step.) `dtype`:
    the parameters' (fp64 tells rounding from a fault, `check`)."""
    base = translation_model(spec, src_size, tgt_size, dim)
    model = (base if dropout else without_dropout(base)).to(device=device, dtype=dtype).train()
    vocab = Vocab(list(SPECIALS) + [f"w{i}" for i in range(max(src_size, tgt_size) - len(SPECIALS))])
    src, tgt, batches = random_pairs(spec, src_size, tgt_size, lengths)
    t, trained = spec.train, [p for p in model.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in trained]
    if graphs:
        model.encoder.packed = False
        optimiser = static_step.adam(trained, t.lr, device)
        bucketed = dataclasses.replace(spec, length_buckets=tuple(sorted(set(lengths))))
        captured = static_step.TranslationSteps(model, optimiser, bucketed, device, precision, vocab, vocab)
        prepared = [captured.batch(src, tgt, idx).to(device) for idx in batches]

        def step(batch):
            return captured.step(batch)[0]
    else:
        optimiser = torch.optim.Adam(trained, lr=as_device_rate(t.lr), fused=True)
        prepared = [training_batch(src, tgt, idx, vocab, vocab, device).to(device) for idx in batches]

        def step(batch):
            return training_step(model, optimiser, batch, vocab.pad, precision, t.clip, t.loss_normalisation)[0]

    torch.manual_seed(2)
    losses = [float(step(prepared[i % len(prepared)]).detach()) for i in range(steps)]
    after = [p.detach().clone() for p in trained]
    seconds = median_seconds(lambda: step(prepared[0]), device, measure) if measure else None
    return {"losses": losses, "before": before, "after": after, "seconds": seconds}


# -- language models --------------------------------------------------------------------------------
def language_model_runs(
    spec: LMSpec,
    vocabulary: int,
    device: torch.device,
    steps: int,
    precision: str,
    dropout: bool,
    graphs: bool,
    measure: int = 0,
    dtype: torch.dtype = torch.float32,
) -> dict:
    """One epoch of steps.train_epoch over `steps` segments (the last one shorter), eager or
    captured: its mean objective is the one loss compared; then `measure` epochs of a single
    segment, timed (their two reads at the end included, on both sides)."""
    torch.manual_seed(0)
    model = build_model(spec if dropout else dataclasses.replace(spec, dropout=0.0), vocabulary).to(
        device=device, dtype=dtype
    )
    objective = build_objective(spec)
    generator = torch.Generator().manual_seed(1)
    data = torch.randint(0, vocabulary, (steps * spec.bptt - spec.bptt // 2, spec.batch_size), generator=generator)
    data = data.to(device)
    before = [p.detach().clone() for p in model.parameters()]
    optimiser = (
        static_step.sgd(model.parameters(), spec.lr, device)
        if graphs
        else torch.optim.SGD(model.parameters(), lr=as_device_rate(spec.lr))
    )
    static = static_step.LanguageModelSteps(model, optimiser, objective, spec, device, precision) if graphs else None
    torch.manual_seed(2)
    total, _, tokens = train_epoch(model, data, spec, optimiser, objective, precision, static)
    after = [p.detach().clone() for p in model.parameters()]
    segment = data[: spec.bptt + 1]
    seconds = (
        median_seconds(
            lambda: train_epoch(model, segment, spec, optimiser, objective, precision, static), device, measure
        )
        if measure
        else None
    )
    return {"losses": [total / tokens], "before": before, "after": after, "seconds": seconds}


# -- the check ---------------------------------------------------------------------------------------
def agreement(eager: dict, other: dict) -> tuple[float, float]:
    """(the largest relative difference of the runs' losses, the smallest cosine of their updates)."""
    return (
        max(relative(o, e) for o, e in zip(other["losses"], eager["losses"])),
        update_cosine(eager["before"], eager["after"], other["after"]),
    )


def family_runs(
    kind: str,
    spec: TrainSpec | LMSpec,
    sizes: dict,
    device: torch.device,
    precision: str,
    dropout: bool,
    graphs: bool,
    count: int,
    measure: int,
    dtype: torch.dtype = torch.float32,
) -> dict:
    """`count` steps of one family (`language_model_runs`, or `translation_runs` over LENGTHS, timed
    at the middle one) in `precision`, captured with `graphs`, the last `measure` of them timed."""
    precisions.configure(precision)
    if kind == "lm":
        return language_model_runs(spec, sizes["vocabulary"], device, count, precision, dropout, graphs, measure, dtype)
    lengths = LENGTHS if not measure else LENGTHS[1:2]
    return translation_runs(
        spec,
        sizes["src"],
        sizes["tgt"],
        sizes["dim"],
        device,
        count,
        lengths,
        precision,
        dropout,
        graphs,
        measure,
        dtype,
    )


def check(
    kind: str, spec: TrainSpec | LMSpec, sizes: dict, device: torch.device, steps: int = 50, timed: int = 20
) -> dict:
    """Agreement and speed of `graphs` against eager for one family (module docstring). `sizes`:
    {"src", "tgt", "dim"} for translation, {"vocabulary"} for a language model.

    Beside graphs against eager in fp32, eager against itself (the device's own run-to-run spread:
    atomics in cuDNN and scatter kernels) is reported; where fp32 misses the bars, the comparison
    is made again in fp64: Adam divides each gradient by its running norm, so over `steps` steps a
    rounding difference in a near-zero gradient (a tied or pretrained output table's rows) grows to
    a visible one, and in fp64 it shrinks by about 2^-29, while a difference in what the captured
    step computes does not. Passed: fp32 within the bars, or fp64 within FP64_LOSS_RELATIVE and
    FP64_UPDATE_COSINE (then `agreement` says so)."""
    configured = precisions.resolve(spec.precision, device)
    runs = functools.partial(family_runs, kind, spec, sizes, device)
    eager = runs("fp32", False, False, steps, 0)
    loss_relative, cosine = agreement(eager, runs("fp32", False, True, steps, 0))
    eager_relative, eager_cosine = agreement(eager, runs("fp32", False, False, steps, 0))
    result = {
        "steps": steps,
        "loss_max_relative": loss_relative,
        "update_cosine_min": cosine,
        "eager_repeat_loss_max_relative": eager_relative,
        "eager_repeat_update_cosine_min": eager_cosine,
    }
    passed = loss_relative <= LOSS_RELATIVE and cosine >= UPDATE_COSINE
    result["agreement"] = "fp32"
    if not passed:
        wide = runs("fp32", False, False, steps, 0, torch.float64)
        fp64_relative, fp64_cosine = agreement(wide, runs("fp32", False, True, steps, 0, torch.float64))
        passed = fp64_relative <= FP64_LOSS_RELATIVE and fp64_cosine >= FP64_UPDATE_COSINE
        result |= {
            "fp64_loss_max_relative": fp64_relative,
            "fp64_update_cosine_min": fp64_cosine,
            "agreement": "fp64 (fp32 rounding grown over the steps)" if passed else "none",
        }
    warm = 3 * len(LENGTHS)  # each length's two eager calls and its capture, before timing
    rounds = {False: [], True: []}  # eager, captured: timed in turn, ROUNDS times each
    for _ in range(ROUNDS):
        for captured, seconds in rounds.items():
            seconds.append(runs(configured, True, captured, warm, timed)["seconds"])
    eager, graphs = min(rounds[False]), min(rounds[True])
    return result | {
        "passed": passed,
        "precision_timed": configured,
        "eager_step_seconds": eager,
        "graphs_step_seconds": graphs,
        "eager_step_seconds_rounds": rounds[False],
        "graphs_step_seconds_rounds": rounds[True],
        "speedup": eager / graphs,
    }


def family(config: dict, experiment: str) -> tuple[str, str, TrainSpec | LMSpec, dict]:
    """(name, kind, spec, sizes) of `dataset:pair:name` or `dataset:name`."""
    parts = experiment.split(":")
    if len(parts) == 2:
        spec = checked(lm_specs.lm_spec(config, parts[0], parts[1], 1))
        return experiment, "lm", spec, {"vocabulary": LM_VOCABULARY}
    dataset, pair, name = parts
    e = registry.experiment(name)
    spec = layout.train_spec(config, dataset, pair, name, 1)
    vocab = layout.vocab_sizes(config["datasets"][dataset], e)
    sizes = {
        "src": vocab["src_size"] or layout.bpe_merges(config, dataset, "src", e.bpe),
        "tgt": vocab["tgt_size"] or layout.bpe_merges(config, dataset, "tgt", e.bpe),
        "dim": config["embeddings"][e.embeddings]["dim"] if e.embeddings else None,
    }
    return experiment, "nmt", spec, sizes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("experiments", nargs="*", default=list(DEFAULT_EXPERIMENTS))
    parser.add_argument("--config", default="config.yaml", help="config file (YAML or JSON) or a JSON object")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--timed", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("graph_check.json"))
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("graph_check: train.compile graphs captures CUDA graphs; torch sees no GPU here")
    device = torch.device("cuda")
    config = read_checked(args.config)
    report = {"device": torch.cuda.get_device_name(device), "torch": torch.__version__, "families": {}}
    print(
        "| family | loss max relative | update cosine min | eager ms | graphs ms | speedup | passed "
        "|\n|---|---|---|---|---|---|---|"
    )
    for experiment in args.experiments:
        name, kind, spec, sizes = family(config, experiment)
        try:
            result = check(kind, spec, sizes, device, args.steps, args.timed)
        except Exception as error:  # a family that fails to capture is this check's finding
            result = {"passed": False, "error": f"{type(error).__name__}: {error}"}
        report["families"][name] = result
        write_text(args.out, json.dumps(report, indent=1) + "\n")  # after each family: a timeout keeps the rest
        if "error" in result:
            print(f"| {name} | {result['error']} | | | | | no |", flush=True)
        else:
            print(
                f"| {name} | {result['loss_max_relative']:.2e} | {result['update_cosine_min']:.5f} | "
                f"{result['eager_step_seconds'] * 1e3:.1f} | {result['graphs_step_seconds'] * 1e3:.1f} | "
                f"{result['speedup']:.2f} | {'yes' if result['passed'] else 'NO'} |",
                flush=True,
            )
    if not all(r["passed"] for r in report["families"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
