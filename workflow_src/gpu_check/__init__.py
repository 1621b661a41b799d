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

import contextlib
import copy
import dataclasses
import json
import math
import statistics
import time
import warnings
from datetime import datetime, timezone

import torch
import torch.nn.functional as F
import torch.utils._python_dispatch
from torch import nn

from workflow_src import compilation, layout, precision as precisions, registry
from workflow_src.benchmark import BOS, EOS, PAD, device_name, random_batch
from workflow_src.model import joint as joint_module, losses as loss_module
from workflow_src.model.lm import LSTMLanguageModel
from workflow_src.model.lm_losses import augmented_total_loss, beta_mixed_loss
from workflow_src.model.seq2seq import Seq2Seq

try:
    from workflow_src.plan.jobs import lm_corpus, planned_jobs
except ImportError:  # the plan as one module (before it became a package)
    from workflow_src.plan import lm_corpus, planned_jobs

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


@dataclasses.dataclass
class Failure:
    check: str
    family: str
    detail: str
    avoid: str

    def line(self) -> str:
        return f"GPU CHECK FAILED: {self.check} of {self.family}: {self.detail}; avoided by {self.avoid}"


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
            spec = layout.resolve_lm_spec(config, job.dataset, job.experiment, job.seed)
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
    """An untrained model of the family on the CPU. Translation models start as `train.initialise`
    starts them (U(-init_scale, init_scale), pretrained vectors kept), language models as
    `train_lm.build_model` builds them (train.py and train_lm.py are not imported: they need
    tqdm and sacremoses, which a bare GPU machine lacks)."""
    torch.manual_seed(seed)
    spec = family.spec
    if family.kind == "lm":
        return LSTMLanguageModel(family.tgt_vocab, spec["size"], spec["layers"], spec["dropout"],
                                 spec["reuse_embedding"], spec["init_range"] or 0.1, spec.get("output_bias", True))
    table = F.normalize(torch.randn(family.tgt_vocab, family.dim), dim=-1) if family.dim else None
    model = Seq2Seq(spec, family.src_vocab, family.tgt_vocab, PAD, table)
    pretrained = {id(p) for p in model.pretrained_parameters()}
    for p in model.parameters():
        if p.requires_grad and id(p) not in pretrained:
            nn.init.uniform_(p, -spec["train"]["init_scale"], spec["train"]["init_scale"])
    return model


def without_dropout(model: nn.Module) -> nn.Module:
    """The translation model with every dropout at p = 0 (the CPU and a GPU draw differently)."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
        elif isinstance(module, nn.LSTM):
            module.dropout = 0.0
    return model


def lm_objective(spec: dict):
    """ℓ(logits, target, embedding, output_bias) per token: `train_lm.LOSSES[spec["loss"]]` with its
    parameters (the same functions; tests/test_gpu_check.py keeps the two tables equal)."""
    if spec["loss"] == "ce":
        return lambda logits, target, embedding, output_bias: loss_module.cross_entropy(logits, target)
    loss = {"augmented": augmented_total_loss, "beta": beta_mixed_loss}[spec["loss"]]
    return lambda *args: loss(*args, **spec["loss_params"])


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
        per_token = lm_objective(family.spec)(logits, batch["targets"].flatten(), model.embedding.weight,
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


# -- shared random draws ----------------------------------------------------------------------------
class SharedDraws:
    """Random draws made once and replayed: the reference run records what the model draws (the
    language models' dropout masks, a sampled vocabulary, random negatives), every other run gets
    the same draws, moved to its device, in the same order."""

    def __init__(self):
        self.recorded: list = []
        self.replaying = False
        self.position = 0

    def _through(self, original):
        def draw(*args, **kwargs):
            if not self.replaying:
                result = original(*args, **kwargs)
                self.recorded.append(_map_tensors(result, lambda t: t.detach().cpu().clone()))
                return result
            device = next(a.device for a in args if isinstance(a, torch.Tensor))
            result = self.recorded[self.position % len(self.recorded)]
            self.position += 1
            return _map_tensors(result, lambda t: t.to(device))
        return draw

    @contextlib.contextmanager
    def active(self, model: nn.Module, replay: bool):
        self.replaying, self.position = replay, 0
        patched = [(joint_module, "sample_vocabulary"), (joint_module, "sample_vocabulary_topk"),
                   (loss_module, "uniform_negative_ids")]
        saved = [getattr(module, name) for module, name in patched]
        for (module, name), original in zip(patched, saved):
            setattr(module, name, self._through(original))
        if isinstance(model, LSTMLanguageModel):
            model.sample_masks = self._through(model.sample_masks)
        try:
            yield
        finally:
            for (module, name), original in zip(patched, saved):
                setattr(module, name, original)
            model.__dict__.pop("sample_masks", None)


def _map_tensors(value, fn):
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map_tensors(v, fn) for v in value)
    return value


# -- output dtypes --------------------------------------------------------------------------------
RECURRENT = (nn.LSTM, nn.LSTMCell)


def _dtypes(value) -> set:
    if isinstance(value, torch.Tensor):
        return {value.dtype} if value.is_floating_point() else set()
    if hasattr(value, "data") and isinstance(getattr(value, "data"), torch.Tensor):  # PackedSequence
        return _dtypes(value.data)
    if isinstance(value, (list, tuple)):
        return set().union(*(_dtypes(v) for v in value)) if value else set()
    return set()


class _OperatorDtypes(torch.utils._python_dispatch.TorchDispatchMode):
    """The floating dtypes every tensor operator outputs (the products a hook cannot see: the
    output layer's logits are made in its `loss`, not its forward)."""

    def __init__(self, seen: dict):
        super().__init__()
        self.seen = seen

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        dtypes = _dtypes(out)
        if dtypes:
            self.seen.setdefault(f"operators ({func.overloadpacket.__name__})", ("operator", set()))[1].update(dtypes)
        return out


@contextlib.contextmanager
def recorded_dtypes(model: nn.Module):
    """{module name: (kind, set of output dtypes)} of everything the block runs: every module
    (forward hooks; kind "recurrent" for nn.LSTM and nn.LSTMCell), the decoder's step cells (h, c
    of every layer, whichever path computes them) and the language model's unrolled segment."""
    seen: dict[str, tuple[str, set]] = {}

    def note(name: str, kind: str, value):
        seen.setdefault(name, (kind, set()))[1].update(_dtypes(value))

    handles = [module.register_forward_hook(
        lambda m, args, out, name=name or type(module).__name__: note(
            f"{name} ({type(m).__name__})", "recurrent" if isinstance(m, RECURRENT) else "module", out))
        for name, module in model.named_modules()]
    wrapped = []
    if isinstance(model, Seq2Seq):
        decoder, original = model.decoder, model.decoder._step

        def step(*args):
            out = original(*args)
            note("decoder step cells (h, c per layer)", "recurrent", out[2][0])
            return out
        decoder._step = step
        wrapped.append((decoder, "_step"))
    if isinstance(model, LSTMLanguageModel):
        original_unrolled = model.unrolled

        def unrolled(*args):
            out = original_unrolled(*args)
            note("unrolled LSTM segment (dropout path)", "recurrent", out)
            return out
        model.unrolled = unrolled
        wrapped.append((model, "unrolled"))
    try:
        with _OperatorDtypes(seen):
            yield seen
    finally:
        for handle in handles:
            handle.remove()
        for owner, name in wrapped:
            if name == "_step":
                owner.__dict__.pop(name, None)
            else:
                setattr(owner, name, original_unrolled)


def dtype_problems(seen: dict, precision: str, loss_dtype: torch.dtype) -> list[str]:
    """What breaks the dtype rules (module docstring) in `seen` under `precision`."""
    problems = []
    for name, (kind, dtypes) in seen.items():
        if torch.float16 in dtypes:
            problems.append(f"{name} outputs float16")
        if torch.bfloat16 in dtypes and precision != "bf16":
            problems.append(f"{name} outputs bfloat16 in {precision}")
        if kind == "recurrent" and dtypes & {torch.float16, torch.bfloat16}:
            problems.append(f"recurrent {name} outputs {', '.join(sorted(map(str, dtypes)))}, not fp32")
    if precision == "bf16" and not any(torch.bfloat16 in dtypes for _, dtypes in seen.values()):
        problems.append("bf16 was asked for but no module output bfloat16 (autocast is not in effect)")
    if loss_dtype not in (torch.float32, torch.float64):
        problems.append(f"the loss is {loss_dtype}, not fp32 or wider")
    return problems


def dtype_table(seen: dict) -> dict:
    """Output dtypes of every module and of the operators that produced each reduced dtype."""
    return {name: sorted(str(d).removeprefix("torch.") for d in dtypes) for name, (kind, dtypes) in seen.items()
            if kind != "operator" or dtypes - {torch.float32, torch.float64}}


# -- comparisons ------------------------------------------------------------------------------------
def gradients(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad.detach().double().cpu().flatten() for name, p in model.named_parameters()
            if p.grad is not None}


def group_of(parameter: str) -> str:
    """A parameter's group: the model's top-level part (encoder, decoder, output, word_vectors;
    language models: embedding, rnn, decoder)."""
    return parameter.split(".")[0]


def grouped(gradients: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    groups: dict[str, list[torch.Tensor]] = {}
    for name, gradient in gradients.items():
        groups.setdefault(group_of(name), []).append(gradient)
    return {group: torch.cat(parts) for group, parts in groups.items()}


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    na, nb = a.norm(), b.norm()
    if na == 0 and nb == 0:
        return 1.0
    return float((a @ b) / (na * nb)) if na > 0 and nb > 0 else 0.0


def relative(value: float, reference: float) -> float:
    return abs(value - reference) / max(abs(reference), 1e-12)


def run_once(family: Family, model: nn.Module, batch: dict, precision: str, device: torch.device,
             draws: SharedDraws, replay: bool, record_dtypes: bool = False) -> dict:
    """Loss per divisor unit, gradients, predicted words (and output dtypes) of one run."""
    precisions.configure(precision)
    model.zero_grad(set_to_none=True)
    model.train()
    with draws.active(model, replay):
        with recorded_dtypes(model) if record_dtypes else contextlib.nullcontext({}) as seen:
            loss, n = forward_loss(family, model, batch, precision, device)
            (loss / n).backward()
        words = predicted_words(family, model, batch)
    return {"loss": float(loss.detach()) / n, "loss_dtype": loss.dtype, "gradients": gradients(model),
            "words": words, "dtypes": seen}


def compare(result: dict, reference: dict, tolerance: dict) -> tuple[dict, list[str]]:
    """The measures of `result` against `reference` and what is outside `tolerance`."""
    reference_groups = grouped(reference["gradients"])
    cosines = {group: cosine(g, reference_groups[group]) for group, g in grouped(result["gradients"]).items()
               if group in reference_groups}
    per_parameter = {name: round(cosine(g, reference["gradients"][name]), 7) for name, g in result["gradients"].items()
                     if name in reference["gradients"]}
    missing = sorted(set(reference["gradients"]) ^ set(result["gradients"]))
    worst = min(cosines, key=cosines.get) if cosines else None
    words = float((result["words"] == reference["words"]).double().mean()) if result["words"].shape == reference[
        "words"].shape else 0.0
    measures = {"loss": result["loss"], "reference_loss": reference["loss"],
                "loss_relative": relative(result["loss"], reference["loss"]),
                "min_gradient_cosine": cosines[worst] if worst else None, "min_gradient_cosine_group": worst,
                "gradient_cosine": {k: round(v, 7) for k, v in cosines.items()},
                "gradient_cosine_per_parameter (not checked: a near-zero gradient's direction is rounding noise)": per_parameter,
                "words": words}
    problems = []
    if not math.isfinite(result["loss"]) or measures["loss_relative"] > tolerance["loss_relative"]:
        problems.append(f"loss {result['loss']:.6g} vs {reference['loss']:.6g} (relative difference "
                        f"{measures['loss_relative']:.2e} > {tolerance['loss_relative']:g})")
    if worst and cosines[worst] < tolerance["gradient_cosine"]:
        problems.append(f"gradient cosine {cosines[worst]:.6f} < {tolerance['gradient_cosine']:g} (parameter group {worst})")
    if missing:
        problems.append(f"gradients present on one side only: {', '.join(missing)}")
    if words < tolerance["words"]:
        problems.append(f"{words:.0%} of the predicted words agree (< {tolerance['words']:.0%})")
    return measures, problems


# -- speed and syncs --------------------------------------------------------------------------------
def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


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
