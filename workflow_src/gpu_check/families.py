"""The GPU check's model families (`workflow_src.gpu_check`): every family the configured run
trains, as the cost plan counts them, and what the check builds of each: its untrained model (at
its configured width, or a reduced one), its batches, its training step and evaluation as the
training jobs run them, and its greedy and beam-search words as the decode jobs run them.

A family is the plan's (`plan.jobs.nmt_family` / `lm_family`, labelled by `plan.jobs.family_label`):
one per architecture, output layer and loss, vocabulary sizes, joint dimension, sampling, LM width,
corpus and dropout among the jobs of `plan.planned_jobs` (the trainings of `snakemake all`), so
every measured step has the plan's modelled step beside it, under the same name.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from workflow_src import layout, lm_specs
from workflow_src.model import precision as precisions
from workflow_src.model.lm import build_model
from workflow_src.model.lm_losses import build_objective
from workflow_src.model.seq2seq import Seq2Seq, initialise
from workflow_src.plan.benchmark import BOS, EOS, PAD
from workflow_src.plan.jobs import (
    Corpus,
    PlannedJob,
    family_label,
    lm_corpus,
    lm_family,
    nmt_family,
    parallel_corpus,
    planned_jobs,
)
from workflow_src.plan.timing import beam_width
from workflow_src.specs import LMSpec, TrainSpec

REDUCED_WIDTH = 64  # hidden and embedding units of the models whose loss alone is compared


@dataclasses.dataclass
class Family:
    """One family of the plan: its first planned job's spec, at that job's sizes."""

    name: str  # the plan's label
    kind: str  # nmt | lm
    key: tuple  # the plan's family
    job: PlannedJob  # its first planned job
    spec: TrainSpec | LMSpec
    src_vocab: int
    tgt_vocab: int
    dim: int | None  # target embedding size of continuous and pretrained-vector models
    length: int  # target units per sentence, </s> included (language models: bptt)
    jobs: int = 0  # planned trainings in the family
    beam: int = 1  # the widest configured search of its jobs (1: greedy only)

    @property
    def architecture(self) -> str:
        if self.kind == "lm":
            return f"LM {self.spec.size}x{self.spec.layers}" + (" dropout" if self.spec.dropout else "")
        m = self.spec.model
        return f"NMT enc {m.encoder_layers}x{m.hidden} dec {m.decoder_layers}x{m.hidden}" + (
            "" if m.input_feed else " no input feed"
        )

    @property
    def output_layer(self) -> str:
        """What decodes alike: the output layer, its form, and the decoder's tied input embedding."""
        if self.kind == "lm":
            return "LM " + ("RE" if self.spec.reuse_embedding else "untied")
        s = self.spec
        if s.output_layer == "continuous":
            return "continuous" + (" tied" if s.tied else "")
        form = s.output_form or ("pretrained vectors" if s.embeddings else "nmt")
        return f"softmax {form}" + (" tied" if s.tied else "")

    @property
    def loss(self) -> str:
        s = self.spec
        if self.kind == "lm":
            return s.loss
        return s.loss + (f" {s.negative}" if s.negative else "") + (" sampled" if s.sample_share else "")

    @property
    def batch_size(self) -> int:
        return self.spec.batch_size if self.kind == "lm" else self.spec.train.batch_size

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.length


# -- families -------------------------------------------------------------------------------------
def family_of(config: dict, job: PlannedJob) -> tuple:
    """The plan's family of `job`; before the data are prepared where the papers state no size (the
    demo), the sizes the plan's timing would take: benchmarks.length units, demo.lm_vocabulary."""
    if job.kind == "lm":
        vocabulary = config.get("demo", {}).get("lm_vocabulary", 10000)
        corpus = lm_corpus(config, job.dataset) or Corpus(0, 1, 0, 0, vocabulary, "config demo.lm_vocabulary")
        return lm_family(config, job, corpus)
    corpus = parallel_corpus(config, job.dataset, job.pair) or Corpus(
        0, config["benchmarks"]["length"] + 1, 0, 0, None, "config benchmarks.length"
    )
    return nmt_family(config, job, corpus)


def families(config: dict) -> list[Family]:
    """Every family of the configured trainings (`plan.planned_jobs`), once, in the plan's order."""
    found: dict[tuple, Family] = {}
    for job in planned_jobs(config):
        key = family_of(config, job)
        if key not in found:
            kind, _, src, tgt, dim, length = key
            if kind == "lm":
                spec = lm_specs.lm_spec(config, job.dataset, job.experiment, job.seed)
                found[key] = Family(family_label(key), kind, key, job, spec, src, src, None, spec.bptt)
            else:
                spec = layout.train_spec(config, job.dataset, job.pair, job.experiment, job.seed)
                found[key] = Family(family_label(key), kind, key, job, spec, src, tgt, dim, length)
        family = found[key]
        family.jobs += 1
        family.beam = max([family.beam, *(beam_width(search) for search in job.searches)])
    return list(found.values())


def selected(found: list[Family], only: list[str] | None) -> list[Family]:
    """The families whose names contain one of `only` (all without it); ValueError naming each of
    `only` that no family's name contains, so that a mistyped one is not a check of nothing."""
    unmatched = [o for o in only or () if not any(o in f.name for f in found)]
    if unmatched:
        raise ValueError(
            f"--families: no family's name contains {', '.join(map(repr, unmatched))} (the names are the "
            "report's, e.g. 'softmax/ce V 50000->50000')"
        )
    return [f for f in found if not only or any(o in f.name for o in only)]


def smallest(members: list[Family]) -> Family:
    return min(members, key=lambda f: (f.tgt_vocab, f.src_vocab, getattr(f.spec, "joint_dim", None) or 0))


def grouped(found: list[Family], key) -> dict[str, list[Family]]:
    groups: dict[str, list[Family]] = {}
    for family in found:
        groups.setdefault(key(family), []).append(family)
    return groups


def fully_compared(found: list[Family]) -> set[str]:
    """One family per (architecture, output layer, loss), its smallest vocabulary: the ones whose
    gradients and words are compared as well as their loss."""
    groups = grouped(found, lambda f: f"{f.architecture} | {f.output_layer} | {f.loss}")
    return {smallest(members).name for members in groups.values()}


def decoded(found: list[Family]) -> list[Family]:
    """One translation family per output layer (its smallest vocabulary), searched with the widest
    beam its group's jobs decode with."""
    groups = grouped([f for f in found if f.kind == "nmt"], lambda f: f.output_layer)
    return [dataclasses.replace(smallest(members), beam=max(f.beam for f in members)) for members in groups.values()]


def representative(found: list[Family], count: int = 3) -> list[Family]:
    """`count` families for the sharing measurement: the family with the most jobs of each
    architecture, the architectures with the most jobs first, a translation and a language model
    among them where the run has both."""
    by_architecture = grouped(found, lambda f: f.architecture)
    ranked = sorted(by_architecture.values(), key=lambda members: -sum(f.jobs for f in members))
    leaders = [max(members, key=lambda f: f.jobs) for members in ranked]
    chosen = [
        next(f for f in leaders if f.kind == kind) for kind in ("nmt", "lm") if any(f.kind == kind for f in leaders)
    ]
    chosen += [f for f in leaders if f not in chosen]
    return chosen[:count]


def at_width(family: Family, width: int = REDUCED_WIDTH) -> Family:
    """The family with at most `width` hidden and embedding units (vocabularies, joint dimension,
    target embedding size and layers kept): its loss is compared at this width."""
    spec = family.spec
    if family.kind == "lm":
        spec = dataclasses.replace(spec, size=min(spec.size, width))
    else:
        narrower = {key: min(getattr(spec.model, key), width) for key in ("hidden", "src_embedding", "tgt_embedding")}
        spec = dataclasses.replace(spec, model=dataclasses.replace(spec.model, **narrower))
    return dataclasses.replace(family, spec=spec)


# -- models and batches ---------------------------------------------------------------------------
def build(family: Family, seed: int = 0) -> nn.Module:
    """An untrained model of the family on torch's default device, initialised as its training job
    initialises it; for a comparison (on the CPU, then copied), the translation model's dropout off."""
    torch.manual_seed(seed)
    spec = family.spec
    if family.kind == "lm":
        return build_model(spec, family.tgt_vocab)
    table = F.normalize(torch.randn(family.tgt_vocab, family.dim), dim=-1) if family.dim else None
    model = Seq2Seq(spec, family.src_vocab, family.tgt_vocab, PAD, table)
    initialise(model, spec.train.init_scale)
    return model


def without_dropout(model: nn.Module) -> nn.Module:
    """The translation model with every dropout at p = 0 (the CPU and a GPU draw differently)."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
        elif isinstance(module, nn.LSTM):
            module.dropout = 0.0
    return model


def compared(family: Family, seed: int = 0) -> nn.Module:
    """The model a comparison starts from, on the CPU: translation models without dropout (the
    language models' masks are drawn once and shared, `measures.SharedDraws`)."""
    with torch.device("cpu"):
        model = build(family, seed)
    return without_dropout(model) if family.kind == "nmt" else model


def batch(family: Family, sentences: int, spread: bool, device: torch.device, seed: int = 1) -> dict:
    """A training batch on `device`: translation, `sentences` random pairs of the family's length
    (with `spread`, source lengths from it down to 2/3 of it: the encoder packs them), every target
    counted; language models, a random segment of bptt + 1 tokens per column."""
    generator = torch.Generator().manual_seed(seed)
    if family.kind == "lm":
        tokens = torch.randint(0, family.tgt_vocab, (family.length + 1, sentences), generator=generator)
        return {"inputs": tokens[:-1].to(device), "targets": tokens[1:].to(device)}
    length = family.length
    src = torch.randint(4, family.src_vocab, (sentences, length), generator=generator)
    tgt = torch.randint(4, family.tgt_vocab, (sentences, length), generator=generator)
    lengths = (
        torch.tensor([length - i % max(1, length // 3) for i in range(sentences)])
        if spread
        else torch.full((sentences,), length)
    )
    return {
        "src": src.to(device),
        "lengths": lengths,
        "tgt": tgt.to(device),  # lengths stay on the host
        "positions": torch.arange(sentences * length).to(device),
    }


def forward_loss(family: Family, model: nn.Module, batch: dict, precision: str, device: torch.device):
    """(summed loss, divisor) of one training forward in `precision`, as train.py and train_lm.py
    take it: the divisor is the batch's columns (language models), its target tokens or, with
    train.loss_normalisation `sentence`, its sentences (`steps.loss_divisor`)."""
    if family.kind == "lm":
        hidden = model.init_hidden(batch["inputs"].shape[1])
        with precisions.autocast(precision, device):
            logits, _, _ = model(batch["inputs"], hidden)
        logits = precisions.at_least_fp32(logits.flatten(0, 1))
        per_token = build_objective(family.spec)(
            logits, batch["targets"].flatten(), model.embedding.weight, model.output_bias
        )
        return per_token.sum(), batch["inputs"].shape[1]
    with precisions.autocast(precision, device):
        loss, tokens = model.loss(batch["src"], batch["lengths"], batch["tgt"], batch["tgt"], PAD, batch["positions"])
    sentences = family.spec.train.loss_normalisation == "sentence"
    return loss, batch["src"].shape[0] if sentences else tokens


def training_step(family: Family, model: nn.Module, precision: str, device: torch.device):
    """`step(batch)`: one training step as the training jobs take it (forward in `precision`,
    backward of the loss over its divisor, clipping, the optimiser; language models with unit-norm
    embeddings renormalise L after it, as steps.train_epoch). The one place the check builds the
    step from: its speed, memory, sharing, profile and compile measurements all call it."""
    parameters = [p for p in model.parameters() if p.requires_grad]
    if family.kind == "lm":
        optimiser = torch.optim.SGD(parameters, lr=family.spec.lr)
        clip = family.spec.clip
    else:
        optimiser = torch.optim.Adam(parameters, lr=family.spec.train.lr, fused=True)
        clip = family.spec.train.clip
    unit_norm = family.kind == "lm" and family.spec.unit_norm_embeddings

    def step(batch: dict) -> None:
        model.train()
        loss, divisor = forward_loss(family, model, batch, precision, device)
        optimiser.zero_grad(set_to_none=True)
        (loss / divisor).backward()
        torch.nn.utils.clip_grad_norm_(parameters, clip)
        optimiser.step()
        if unit_norm:
            with torch.no_grad():
                model.embedding.weight.copy_(F.normalize(model.embedding.weight, dim=1))

    return step


def evaluation(family: Family, model: nn.Module, precision: str, device: torch.device):
    """`evaluate(batch)`: what a training job runs between epochs: the validation loss (no
    gradients, in `precision`) and, for translation, greedy decoding of the batch's sources as
    train.development_bleu does (fp32, </s> allowed, up to twice the source length + 10)."""

    @torch.no_grad()
    def evaluate(batch: dict) -> None:
        model.eval()
        forward_loss(family, model, batch, precision, device)
        if family.kind == "nmt":
            model.greedy(batch["src"], batch["lengths"], BOS, EOS, [PAD, BOS], 2 * batch["src"].shape[1] + 10)

    return evaluate


@torch.no_grad()
def predicted_words(family: Family, model: nn.Module, batch: dict) -> torch.Tensor:
    """Greedy words of the batch (translation, as decode jobs: fp32 tensors, </s> banned so every
    sentence runs its full length) or the next-word argmax of each position (language models)."""
    model.eval()
    if family.kind == "lm":
        logits, _, _ = model(batch["inputs"], model.init_hidden(batch["inputs"].shape[1]))
        return logits.argmax(-1).cpu()
    return searched_words(model, batch, 1, batch["src"].shape[1])


@torch.no_grad()
def searched_words(
    model: nn.Module, batch: dict, beam: int, length: int, check_every: int | None = None
) -> torch.Tensor:
    """The words of greedy search (`beam` 1) or beam search of a translation batch, on its device,
    in fp32 as decode jobs run it, </s> banned (an untrained model's first </s> is arbitrary), so
    every sentence runs `length` steps."""
    model.eval()
    banned = [PAD, BOS, EOS]
    if beam == 1:
        words, _ = model.greedy(batch["src"], batch["lengths"], BOS, EOS, banned, length, check_every)
    else:
        words, _ = model.beam_search(batch["src"], batch["lengths"], BOS, EOS, banned, length, beam, check_every)
    return words.cpu()
