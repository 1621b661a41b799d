"""The GPU check's model families (`workflow_src.gpu_check`): one per output layer and loss among
the configured jobs, each at its first job's sizes; its untrained model, fixed batch, training
forward and step, and greedy words, as the training and decoding jobs run them."""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from workflow_src import layout, lm_specs, registry
from workflow_src.model import precision as precisions
from workflow_src.model.lm import build_model
from workflow_src.model.lm_losses import build_objective
from workflow_src.model.seq2seq import Seq2Seq, initialise
from workflow_src.plan.benchmark import BOS, EOS, PAD, random_batch
from workflow_src.plan.jobs import lm_corpus, planned_jobs


@dataclasses.dataclass
class Family:
    """One model family: the first configured job of its output layer and loss, at its sizes."""

    name: str
    kind: str  # nmt | lm
    experiment: str
    dataset: str
    spec: dict
    src_vocab: int
    tgt_vocab: int
    dim: int | None = None  # target embedding size of continuous and pretrained-vector models


# -- families -------------------------------------------------------------------------------------
def nmt_family_name(e) -> str:
    if e.output_layer == "continuous":
        name = f"continuous {e.loss}" + (f" ({e.negative} negative)" if e.negative else "")
    else:
        form = e.output_form or ("pretrained vectors" if e.embeddings else "nmt")
        name = f"softmax {form}" + (" sampled" if e.sample_share is not None else "")
    return name + (" tied" if e.tied else "")


def lm_family_name(spec: dict) -> str:
    return f"LM {spec['loss']}" + (" RE" if spec["reuse_embedding"] else "")


def families(config: dict) -> list[Family]:
    """One family per output layer and loss (NMT) or objective and tying (LM) among the configured
    jobs (`plan.planned_jobs`), each at the sizes of its first job."""
    found: dict[str, Family] = {}
    for job in planned_jobs(config):
        if job.kind == "lm":
            spec = lm_specs.resolve_lm_spec(config, job.dataset, job.experiment, job.seed)
            name = lm_family_name(spec)
            if name not in found:
                corpus = lm_corpus(config, job.dataset)
                vocabulary = (corpus.vocabulary if corpus and corpus.vocabulary
                              else config.get("demo", {}).get("lm_vocabulary", 10000))
                found[name] = Family(name, "lm", job.experiment, job.dataset, spec, vocabulary, vocabulary)
            continue
        e = registry.experiment(job.experiment)
        name = nmt_family_name(e)
        if name in found:
            continue
        spec = layout.resolve_spec(config, job.dataset, job.pair, job.experiment, job.seed)
        sizes = layout.vocab_sizes(config["datasets"][job.dataset], e)
        src = sizes["src_size"] or layout.bpe_merges(config, job.dataset, "src", e.bpe)
        tgt = sizes["tgt_size"] or layout.bpe_merges(config, job.dataset, "tgt", e.bpe)
        dim = config["embeddings"][e.embeddings]["dim"] if e.embeddings else None
        found[name] = Family(name, "nmt", job.experiment, job.dataset, spec, src, tgt, dim)
    return list(found.values())


def sizes(family: Family) -> dict:
    if family.kind == "lm":
        return {"size": family.spec["size"], "layers": family.spec["layers"], "vocabulary": family.tgt_vocab}
    m = family.spec["model"]
    return {"hidden": m["hidden"], "encoder_layers": m["encoder_layers"], "decoder_layers": m["decoder_layers"],
            "src_vocabulary": family.src_vocab, "tgt_vocabulary": family.tgt_vocab, "dim": family.dim,
            "input_feed": m.get("input_feed", True)}


# -- models and batches ---------------------------------------------------------------------------
def build(family: Family, seed: int = 0) -> nn.Module:
    """An untrained model of the family on the CPU, initialised as its training job initialises it."""
    torch.manual_seed(seed)
    spec = family.spec
    if family.kind == "lm":
        return build_model(spec, family.tgt_vocab)
    table = F.normalize(torch.randn(family.tgt_vocab, family.dim), dim=-1) if family.dim else None
    model = Seq2Seq(spec, family.src_vocab, family.tgt_vocab, PAD, table)
    initialise(model, spec["train"]["init_scale"])
    return model


def without_dropout(model: nn.Module) -> nn.Module:
    """The translation model with every dropout at p = 0 (the CPU and a GPU draw differently)."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
        elif isinstance(module, nn.LSTM):
            module.dropout = 0.0
    return model


def fixed_batch(family: Family, model: nn.Module, batch: int, length: int, seed: int = 1) -> dict:
    """A batch on the CPU: translation, `benchmark.random_batch` with lengths from `length` down
    to 2/3 of it (the encoder packs them) and every target counted; language models, a random
    segment of `bptt` + 1 tokens per column."""
    torch.manual_seed(seed)
    if family.kind == "lm":
        tokens = torch.randint(0, family.tgt_vocab, (family.spec["bptt"] + 1, batch))
        return {"inputs": tokens[:-1], "targets": tokens[1:]}
    src, lengths, tgt = random_batch(model, batch, length, torch.device("cpu"))
    lengths = torch.tensor([length - i % max(1, length // 3) for i in range(batch)])
    return {"src": src, "lengths": lengths, "tgt": tgt, "positions": torch.arange(batch * length)}


def on(batch: dict, device: torch.device) -> dict:
    return {k: v if k == "lengths" else v.to(device) for k, v in batch.items()}  # lengths stay on the host


def forward_loss(family: Family, model: nn.Module, batch: dict, precision: str, device: torch.device):
    """(summed loss, divisor) of one training forward in `precision`, as train.py / train_lm.py run it."""
    if family.kind == "lm":
        hidden = model.init_hidden(batch["inputs"].shape[1])
        with precisions.autocast(precision, device):
            logits, _, _ = model(batch["inputs"], hidden)
        logits = precisions.at_least_fp32(logits.flatten(0, 1))
        per_token = build_objective(family.spec)(logits, batch["targets"].flatten(), model.embedding.weight,
                                              model.output_bias)
        return per_token.sum(), batch["inputs"].shape[1]
    with precisions.autocast(precision, device):
        return model.loss(batch["src"], batch["lengths"], batch["tgt"], batch["tgt"], PAD, batch["positions"])


def make_step(family: Family, model: nn.Module, batch: dict, precision: str, device: torch.device):
    """A training step (forward, backward, clipping, optimiser) as the training jobs take it."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimiser = (torch.optim.SGD(params, lr=1e-3) if family.kind == "lm"
                 else torch.optim.Adam(params, lr=1e-4, fused=device.type in ("cuda", "cpu")))
    clip = family.spec["clip"] if family.kind == "lm" else family.spec["train"]["clip"]

    def step():
        model.train()
        loss, n = forward_loss(family, model, batch, precision, device)
        optimiser.zero_grad(set_to_none=True)
        (loss / n).backward()
        torch.nn.utils.clip_grad_norm_(params, clip)
        optimiser.step()
    return step


@torch.no_grad()
def predicted_words(family: Family, model: nn.Module, batch: dict) -> torch.Tensor:
    """Greedy words of the batch (translation, as decode jobs: fp32 tensors, </s> banned so every
    sentence runs its full length) or the next-word argmax of each position (language models)."""
    model.eval()
    if family.kind == "lm":
        logits, _, _ = model(batch["inputs"], model.init_hidden(batch["inputs"].shape[1]))
        return logits.argmax(-1).cpu()
    words, _ = model.greedy(batch["src"], batch["lengths"], BOS, EOS, [PAD, BOS, EOS], batch["src"].shape[1])
    return words.cpu()
