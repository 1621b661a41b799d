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
               warm-up (the captures included there), and their ratio.

Passed when the losses agree within LOSS_RELATIVE and the updates' cosine is at least
UPDATE_COSINE. The GPU check (`workflow_src/gpu_check`) is to call `check` per family.
"""

from __future__ import annotations

import argparse
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
from workflow_src.model.timing import median_seconds
from workflow_src.atomic import read_config, write_text
from workflow_src.train import static_step
from workflow_src.train.lm_spec import resolve as resolve_lm
from workflow_src.train.steps import train_epoch, training_step

LOSS_RELATIVE = 1e-3  # the largest relative difference of a step's loss, eager against graphs (fp32)
UPDATE_COSINE = 0.99  # the smallest cosine of a parameter tensor's update, eager against graphs
LENGTHS = (18, 25, 32)  # target lengths of the agreement's translation batches (the H200's step timed 25-26)
LM_VOCABULARY = 10_000  # PTB's
DEFAULT_EXPERIMENTS = ("wmt17:de-en:bpe32k-tied", "wmt17:de-en:bpe32k-joint512", "wmt17:en-fi:bpe32k-joint2048",
                       "wmt17:en-fi:bpe128k-nmt", "iwslt16:fr-en:word2word-ce",
                       "iwslt16:fr-en:word2emb-fasttext-nllvmf_reg1reg2", "ptb:lm-small-vd", "ptb:lm-small-re")


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
    cosines = [F.cosine_similarity((e - b).flatten().double(), (g - b).flatten().double(), dim=0).item()
               for b, e, g in zip(before, eager, graphs) if (e - b).abs().max() > 0 or (g - b).abs().max() > 0]
    return min(cosines, default=1.0)


def relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-12)


# -- translation ------------------------------------------------------------------------------------
def translation_model(spec: dict, src_size: int, tgt_size: int, dim: int | None) -> Seq2Seq:
    torch.manual_seed(0)
    table = F.normalize(torch.randn(tgt_size, dim), dim=-1) if dim else None
    model = Seq2Seq(spec, src_size, tgt_size, SPECIALS.index("<pad>"), table)
    initialise(model, spec["train"]["init_scale"])
    return model


def random_pairs(spec: dict, src_size: int, tgt_size: int, lengths, seed: int = 1):
    """`batch_size` random pairs per length (words from 4 up; targets end in </s>, 3)."""
    rng, size = random.Random(seed), spec["train"]["batch_size"]
    pairs = [([rng.randrange(4, src_size) for _ in range(n - 1 - i % 3)], [rng.randrange(4, tgt_size) for _ in range(n - 1)] + [3])
             for n in lengths for i in range(size)]
    return [s for s, _ in pairs], [t for _, t in pairs], [list(range(k * size, (k + 1) * size)) for k in range(len(lengths))]


def translation_runs(spec: dict, src_size: int, tgt_size: int, dim: int | None, device: torch.device, steps: int,
                     lengths, precision: str, dropout: bool, graphs: bool, measure: int = 0) -> dict:
    """`steps` training steps, eager or captured, cycling over one batch per length; then
    `measure` more, timed. (losses, parameters before and after, seconds per step.)"""
    base = translation_model(spec, src_size, tgt_size, dim)
    model = (base if dropout else without_dropout(base)).to(device).train()
    vocab = Vocab(list(SPECIALS) + [f"w{i}" for i in range(max(src_size, tgt_size) - len(SPECIALS))])
    src, tgt, batches = random_pairs(spec, src_size, tgt_size, lengths)
    t, trained = spec["train"], [p for p in model.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in trained]
    if graphs:
        model.encoder.packed = False
        optimiser = static_step.adam(trained, t["lr"], device)
        captured = static_step.TranslationSteps(model, optimiser, {**spec, "length_buckets": sorted(set(lengths))}, device,
                                                precision, vocab, vocab)
        prepared = [captured.batch(src, tgt, idx).to(device) for idx in batches]

        def step(batch):
            return captured.step(batch)[0]
    else:
        optimiser = torch.optim.Adam(trained, lr=t["lr"], fused=True)
        prepared = [training_batch(src, tgt, idx, vocab, vocab, device).to(device) for idx in batches]

        def step(batch):
            return training_step(model, optimiser, batch, vocab.pad, precision, t["clip"], t.get("loss_normalisation", "token"))[0]
    torch.manual_seed(2)
    losses = [float(step(prepared[i % len(prepared)]).detach()) for i in range(steps)]
    after = [p.detach().clone() for p in trained]
    seconds = median_seconds(lambda: step(prepared[0]), device, measure) if measure else None
    return {"losses": losses, "before": before, "after": after, "seconds": seconds}


# -- language models --------------------------------------------------------------------------------
def language_model_runs(spec: dict, vocabulary: int, device: torch.device, steps: int, precision: str,
                        dropout: bool, graphs: bool, measure: int = 0) -> dict:
    """One epoch of steps.train_epoch over `steps` segments (the last one shorter), eager or
    captured: its mean objective is the one loss compared; then `measure` epochs of a single
    segment, timed (their two reads at the end included, on both sides)."""
    torch.manual_seed(0)
    model = build_model(spec if dropout else {**spec, "dropout": 0.0}, vocabulary).to(device)
    objective = build_objective(spec)
    generator = torch.Generator().manual_seed(1)
    data = torch.randint(0, vocabulary, (steps * spec["bptt"] - spec["bptt"] // 2, spec["batch_size"]), generator=generator)
    data = data.to(device)
    before = [p.detach().clone() for p in model.parameters()]
    optimiser = (static_step.sgd(model.parameters(), spec["lr"], device) if graphs else
                 torch.optim.SGD(model.parameters(), lr=spec["lr"]))
    static = static_step.LanguageModelSteps(model, optimiser, objective, spec, device, precision) if graphs else None
    torch.manual_seed(2)
    total, _, tokens = train_epoch(model, data, spec, optimiser, objective, precision, static)
    after = [p.detach().clone() for p in model.parameters()]
    segment = data[:spec["bptt"] + 1]
    seconds = (median_seconds(lambda: train_epoch(model, segment, spec, optimiser, objective, precision, static),
                                   device, measure) if measure else None)
    return {"losses": [total / tokens], "before": before, "after": after, "seconds": seconds}


# -- the check ---------------------------------------------------------------------------------------
def check(kind: str, spec: dict, sizes: dict, device: torch.device, steps: int = 50, timed: int = 20) -> dict:
    """Agreement and speed of `graphs` against eager for one family (module docstring). `sizes`:
    {"src", "tgt", "dim"} for translation, {"vocabulary"} for a language model."""
    configured = precisions.resolve(spec.get("precision", "auto"), device)

    def runs(precision: str, dropout: bool, graphs: bool, count: int, measure: int) -> dict:
        precisions.configure(precision)
        if kind == "lm":
            return language_model_runs(spec, sizes["vocabulary"], device, count, precision, dropout, graphs, measure)
        lengths = LENGTHS if not measure else LENGTHS[1:2]
        return translation_runs(spec, sizes["src"], sizes["tgt"], sizes["dim"], device, count, lengths, precision,
                                dropout, graphs, measure)

    eager, graphs = (runs("fp32", False, captured, steps, 0) for captured in (False, True))
    loss_relative = max(relative(g, e) for g, e in zip(graphs["losses"], eager["losses"]))
    cosine = update_cosine(eager["before"], eager["after"], graphs["after"])
    warm = 3 * len(LENGTHS)  # each length's two eager calls and its capture, before timing
    timed_runs = {captured: runs(configured, True, captured, warm, timed)["seconds"] for captured in (False, True)}
    return {"steps": steps, "loss_max_relative": loss_relative, "update_cosine_min": cosine,
            "passed": loss_relative <= LOSS_RELATIVE and cosine >= UPDATE_COSINE, "precision_timed": configured,
            "eager_step_seconds": timed_runs[False], "graphs_step_seconds": timed_runs[True],
            "speedup": timed_runs[False] / timed_runs[True]}


def family(config: dict, experiment: str) -> tuple[str, str, dict, dict]:
    """(name, kind, resolved spec, sizes) of `dataset:pair:name` or `dataset:name`."""
    parts = experiment.split(":")
    if len(parts) == 2:
        spec = resolve_lm(lm_specs.resolve_lm_spec(config, parts[0], parts[1], 1))
        return experiment, "lm", spec, {"vocabulary": LM_VOCABULARY}
    dataset, pair, name = parts
    e = registry.experiment(name)
    spec = layout.resolve_spec(config, dataset, pair, name, 1)
    vocab = layout.vocab_sizes(config["datasets"][dataset], e)
    sizes = {"src": vocab["src_size"] or layout.bpe_merges(config, dataset, "src", e.bpe),
             "tgt": vocab["tgt_size"] or layout.bpe_merges(config, dataset, "tgt", e.bpe),
             "dim": config["embeddings"][e.embeddings]["dim"] if e.embeddings else None}
    return experiment, "nmt", spec, sizes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiments", nargs="*", default=list(DEFAULT_EXPERIMENTS))
    parser.add_argument("--config", default="config.yaml", help="config file (YAML or JSON) or a JSON object")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--timed", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("graph_check.json"))
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("graph_check: train.compile graphs captures CUDA graphs; torch sees no GPU here")
    device = torch.device("cuda")
    config = read_config(args.config)
    report = {"device": torch.cuda.get_device_name(device), "torch": torch.__version__, "families": {}}
    print("| family | loss max relative | update cosine min | eager ms | graphs ms | speedup | passed |\n|---|---|---|---|---|---|---|")
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
            print(f"| {name} | {result['loss_max_relative']:.2e} | {result['update_cosine_min']:.5f} | "
                  f"{result['eager_step_seconds'] * 1e3:.1f} | {result['graphs_step_seconds'] * 1e3:.1f} | "
                  f"{result['speedup']:.2f} | {'yes' if result['passed'] else 'NO'} |", flush=True)
    if not all(r["passed"] for r in report["families"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
