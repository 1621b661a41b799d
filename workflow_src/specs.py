"""The training specs: what one training job trains, declared once, field by field.

`TrainSpec` is a translation model's (`workflow_src.train.train`, built by `layout.train_spec`),
`LMSpec` a language model's (`workflow_src.train.train_lm`, built by `lm_specs.lm_spec`). A spec
travels as its JSON document, `document(spec)`: every field, nested parts as objects, and
`spec_version`. Its hash (`spec_hash`) is over that whole document, so a run's checkpoint and
model file name exactly the spec that made them, and a change to what a spec holds is one change
of SPEC_VERSION, which changes every hash once (docs/architecture.md, "Training specs").
`load(cls, document, source)` reads a document back, refusing an unknown or missing key or
another version in one line naming `source` and the key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from argparse import ArgumentParser, Namespace
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, TypeVar

# The specs' schema version, in every document and so in every hash. 1: the untyped dicts before
# it (no `spec_version`; a key left out where it had its default, so that older specs kept their
# hash). 2: these dataclasses, every field written.
SPEC_VERSION = 2
VERSION_KEY = "spec_version"


@dataclass(frozen=True)
class ModelShape:
    """The encoder-decoder's sizes (config `model`, changed by the experiment's architecture and
    depth: `layout.model_settings`)."""

    encoder_layers: int
    decoder_layers: int
    hidden: int  # units per LSTM layer (the decoder's state size)
    src_embedding: int  # width of the source word (or piece) embeddings
    tgt_embedding: int  # width of the decoder's input embeddings
    dropout: float  # drop probability between layers
    encoder_bidirectional: bool = True  # hidden / 2 units per direction (vMF Table 7), else one direction of hidden
    input_feed: bool = True  # the last attentional state fed to the decoder's next step (OpenNMT-py)


@dataclass(frozen=True)
class VocabSizes:
    """Each side's vocabulary cap in words; None on a BPE side, whose vocabulary is every piece of
    its training text (`layout.vocab_sizes`)."""

    src_size: int | None
    tgt_size: int | None


@dataclass(frozen=True)
class LengthLimit:
    """The longest training pair kept (`layout.length_limit`)."""

    max_len: int  # units of the longer side
    max_len_unit: str  # word: counted at tokenisation; piece: counted as the model reads them, at training


@dataclass(frozen=True)
class TrainSettings:
    """A translation model's optimisation (config `train`, by the experiment's training group)."""

    seed: int  # torch's seed for initialisation; batch order and dropout from (seed, epoch)
    lr: float  # Adam's initial learning rate
    batch_size: int  # sentences per batch
    selection: str  # bleu | loss: the development measure that picks the kept epoch
    clip: float  # global gradient-norm clip
    init_scale: float  # s of U(-s, s) for every learned weight (`layout.init_scale`)
    max_epochs: int
    patience: int  # epochs without a better development score before training stops
    lr_decay: float | None = None  # factor per epoch once decaying (OpenNMT-py's rule); None: constant rate
    lr_decay_start: int | None = None  # the epoch after which decay starts regardless; None: only on a rise
    lr_decay_on_rise: bool = True  # decay once the development perplexity rises over the last epoch's
    loss_normalisation: str = "token"  # token: the loss averaged over target tokens; sentence: over sentences


@dataclass(frozen=True)
class TrainSpec:
    """One translation job: the experiment (registry `Experiment`, its fields repeated here), the
    configured sizes and schedule, the pair's target language and the device."""

    experiment: str  # the experiment's name (with its `@variant`)
    source_unit: str  # word | bpe
    target_unit: str  # word | bpe | emb
    output_layer: str  # softmax | continuous
    loss: str  # ce, or a key of model.losses.CONTINUOUS_LOSSES
    tgt_lang: str  # the target language (detokenisation of the development BLEU)
    device: str  # auto | cpu | cuda | cuda:N (config train.device)
    model: ModelShape
    vocab: VocabSizes
    data: LengthLimit
    train: TrainSettings
    loss_params: Mapping[str, float] = field(default_factory=dict)  # the loss's parameters by name
    negative: str | None = None  # margin losses: a key of model.losses.NEGATIVES
    embeddings: str | None = None  # the pretrained target vectors (word2vec | fasttext), or None
    tied: bool = False  # the decoder reads the target vectors through a projection
    lr_group: str | None = None  # the key of config train.lr it trains with; None: its output layer
    output_form: str | None = None  # the joint paper's softmax form (model.joint.VARIANTS); None: W h + b
    joint_dim: int | None = None  # d_j of the joint form (`layout.joint_dim`), else None
    sample_share: float | None = None  # the share of the target vocabulary a step samples (joint §3.2), or None
    bpe: str | None = None  # the data set's `bpe_sizes` key both sides use; None: its bpe_merges
    architecture: str | None = None  # the key of config `architectures` that changed `model`, or None
    layers: int | None = None  # the experiment's encoder and decoder depth; None: the architecture's
    precision: str = "auto"  # auto | bf16 | tf32 | fp32 (`model.precision`)
    compile: str = "off"  # off | fuse | graphs (config train.compile, `model.compilation`)
    length_buckets: tuple[int, ...] | None = None  # with compile graphs: the lengths batches are padded up to

    def __post_init__(self):
        if self.length_buckets is not None:
            object.__setattr__(self, "length_buckets", tuple(self.length_buckets))


@dataclass(frozen=True)
class TrainSlice:
    """The part of the training stream a language model trains on (Figure 1's 20,000 words)."""

    length: int  # tokens
    start: int | None  # the first token; None: drawn from the seed


@dataclass(frozen=True)
class Convergence:
    """Train until the training loss converges, `max_epochs` a cap (Figure 1): stop after epoch e once
        (min_{i <= e-k} L_i - min_{e-k < i <= e} L_i) / min_{i <= e-k} L_i < tolerance,   k = window,
    and multiply the rate by `plateau_decay` after every epoch whose training loss is not below the
    best before it (as pytorch/examples' word_language_model does on validation loss)."""

    window: int  # k, epochs (>= 1)
    tolerance: float  # the relative improvement below which training stops (>= 0)
    plateau_decay: float  # the rate's factor after a plateau, in (0, 1]


@dataclass(frozen=True)
class LMSpec:
    """One language-model job of the tying paper (`workflow_src.train.train_lm`): the VD-LSTM, its
    objective and its schedule, lr_e = lr · lr_decay^max(0, e - decay_after) (appendix A)."""

    experiment: str  # the language model's name (with its `@variant`)
    size: int  # units per layer (= the embedding size): 200 / 650 / 1500 (§6.1)
    layers: int  # LSTM layers (2)
    dropout: float  # drop probability (papers.tying.DROPOUT; appendix A gives keep probabilities)
    reuse_embedding: bool  # RE (§4): W = Lᵀ, no output bias
    loss: str  # ce | augmented (AL, Eq. 3.3) | beta (Figure 1, Eq. 6.1): model.lm_losses.OBJECTIVES
    loss_params: Mapping[str, float]  # augmented: gamma, tau; beta: beta, tau; ce: none
    lr: float  # SGD's rate (papers.tying.SCHEDULE[size] has the paper's schedule)
    lr_decay: float  # the rate's factor per epoch after `decay_after`
    decay_after: int  # epochs (of a session) at the full rate
    clip: float  # global gradient-norm clip
    bptt: int  # steps per truncated-backpropagation segment (35)
    batch_size: int  # training stream columns (20)
    max_epochs: int  # epochs per session (a cap under `convergence`)
    seed: int  # torch's seed for initialisation; dropout masks from (seed, epoch)
    device: str  # auto | cpu | cuda | cuda:N
    sessions: int = 1  # the schedule's runs, each from the weights the last ended with (footnote 4)
    precision: str = "auto"  # auto | bf16 | tf32 | fp32 (`model.precision`; the loss always in fp32)
    compile: str = "off"  # off | fuse | graphs: the dropout segment through torch.compile (`model.compilation`)
    init_range: float | None = None  # r of U(-r, r) for every weight; None: 0.1
    unit_norm_embeddings: bool = False  # every row of L kept at norm 1 (Figure 1)
    train_slice: TrainSlice | None = None  # None: the whole training stream
    keep: str = "best"  # the epoch model.pt holds: best (validation perplexity) | last | lowest_train_loss
    output_bias: bool = True  # false: b = 0 in an untied model (§4 and Figure 1: y = W h)
    convergence: Convergence | None = None  # None: the fixed schedule
    target_gradient: bool = False  # AL's gradient also reaches L through ỹ (tying ledger D16); only with augmented
    eval_batch_size: int = 10  # validation and test stream columns (pytorch/examples' 10)


Spec = TypeVar("Spec", TrainSpec, LMSpec)


def document(spec: TrainSpec | LMSpec) -> dict:
    """The spec as JSON reads it back: every field, nested parts as objects, and `spec_version`."""
    return json.loads(json.dumps({**dataclasses.asdict(spec), VERSION_KEY: SPEC_VERSION}))


def spec_hash(spec: TrainSpec | LMSpec | dict) -> str:
    """The first 16 hex digits of the SHA-256 of the spec's document (or of a document), its keys sorted."""
    entries = spec if isinstance(spec, dict) else document(spec)
    return hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:16]


class SpecError(ValueError):
    """A spec document that is not one of this version's: its message is one line naming the source and key."""


def load(cls: type[Spec], entries: dict, source: str) -> Spec:
    """The spec of the document `entries` (from `source`, a file or a command-line option), or a
    SpecError naming `source` and the first unknown or missing key, or another spec_version."""
    if not isinstance(entries, dict):
        raise SpecError(f"{source}: a spec is a JSON object, not {type(entries).__name__}")
    version = entries.get(VERSION_KEY)
    if version != SPEC_VERSION:
        raise SpecError(
            f"{source}: {VERSION_KEY} {version!r}, not {SPEC_VERSION} (a spec of another version: "
            f'its run was made under other hashes; docs/architecture.md, "Training specs")'
        )
    return _build(cls, {k: v for k, v in entries.items() if k != VERSION_KEY}, source, "")


def _nested(annotation) -> type | None:
    """The spec dataclass a field's annotation names (alone or `| None`), or None."""
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    return next((option for option in options if dataclasses.is_dataclass(option)), None)


def _build(cls: type, entries, source: str, prefix: str):
    """An instance of spec dataclass `cls` from a document's `entries`, its nested parts built
    alike; `prefix`: the path of `entries` in the whole document ("train.")."""
    if not isinstance(entries, dict):
        raise SpecError(f"{source}: {prefix.rstrip('.')} is {entries!r}, not an object (a {cls.__name__})")
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = [key for key in entries if key not in names]
    if unknown:
        raise SpecError(f"{source}: unknown key {prefix}{unknown[0]} in a {cls.__name__}")
    missing = [name for name in names if name not in entries]
    if missing:
        raise SpecError(f"{source}: missing key {prefix}{missing[0]} of a {cls.__name__}")
    hints = typing.get_type_hints(cls)
    values = {}
    for name in names:
        part, value = _nested(hints[name]), entries[name]
        values[name] = _build(part, value, source, f"{prefix}{name}.") if part and value is not None else value
    return cls(**values)


def add_spec_arguments(parser: ArgumentParser, cls: type[Spec]) -> None:
    """A trainer's spec: `--spec JSON` (its document) or `--spec-file PATH` (a file holding it, as the
    workflow's rules give it: `layout.requested_spec_path`)."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--spec", type=json.loads, help=f"the spec's JSON document (workflow_src.specs.{cls.__name__})")
    source.add_argument("--spec-file", type=Path, help="a file holding that document")


def spec_argument(args: Namespace) -> tuple[dict, str]:
    """The document `add_spec_arguments` took, and where it came from (for errors): --spec or the file."""
    if args.spec is not None:
        return args.spec, "--spec"
    try:
        return json.loads(args.spec_file.read_text(encoding="utf-8")), str(args.spec_file)
    except (OSError, json.JSONDecodeError) as err:
        raise SpecError(f"{args.spec_file}: not a spec's JSON document ({err})") from err
