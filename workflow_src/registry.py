"""The experiment registry: the papers' model configurations as data, and each paper by its id.

`python -m workflow_src.registry explain NAME` (or `explain PAPER ARTEFACT TEXT...` for a table
cell) follows an experiment from the tables that use it to its spec and code
(`workflow_src/report/explain.py`).

A paper module (`workflow_src/papers/<id>.py`) declares `EXPERIMENTS` (name -> Experiment, the
translation models), `LANGUAGE_MODELS` (name -> LanguageModel) or both, and `ARTEFACTS` (id -> a
table or figure, `workflow_src/artefacts.py`). A name is global: two papers naming the same
experiment mean the same model, trained once (`all_experiments` and `language_models` check their
definitions agree).
The Snakefile expands its targets from here, the training rule resolves a name to a spec, and
the renderers read results back by the same names.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Mapping

PAPERS = ("vmf", "synmargin", "tying", "joint")

UNITS = ("word", "bpe", "emb")
OUTPUT_LAYERS = ("softmax", "continuous")


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One model configuration (independent of data set, pair and seed).

    `embeddings` names pretrained target vectors: the frozen table a continuous layer predicts
    into, or the initial word vectors of a softmax layer (syn-margin paper §4). `tied` feeds
    the decoder those vectors through a projection: the frozen table (continuous), or the
    softmax's own trained word vectors.
    """

    source_unit: str  # word | bpe
    target_unit: str  # word | bpe | emb
    output_layer: str  # softmax | continuous
    loss: str  # ce, or a key of workflow_src.model.losses.CONTINUOUS_LOSSES
    loss_params: Mapping[str, float] = dataclasses.field(default_factory=dict)
    negative: str | None = None  # margin losses: a key of workflow_src.model.losses.NEGATIVES
    embeddings: str | None = None  # word2vec | fasttext
    tied: bool = False
    lr_group: str | None = None  # the key of config train.lr it trains with; None: its output layer
    # The joint paper: a softmax over E, the decoder's own input embedding, in one of its forms
    # (`workflow_src.model.joint.VARIANTS`: nmt, tied, bilinear, output, context, joint); None is
    # W h + b, or E (P h) + b over pretrained `embeddings`.
    output_form: str | None = None
    joint_dim: int | None = None  # the joint form's d_j
    sample_share: float | None = None  # trains over a sampled share of the target vocabulary (joint §3.2)
    bpe: str | None = None  # both sides' BPE vocabulary: a key of the data set's bpe_sizes; None: bpe_merges
    architecture: str | None = None  # a key of config `architectures`: what it changes of config `model`
    layers: int | None = None  # encoder and decoder depth, instead of the architecture's

    def __post_init__(self):
        if self.source_unit not in ("word", "bpe") or self.target_unit not in UNITS:
            raise ValueError(f"unknown units {self.source_unit}->{self.target_unit}")
        if self.output_layer not in OUTPUT_LAYERS:
            raise ValueError(f"unknown output layer {self.output_layer}")
        if (self.output_layer == "continuous") != (self.target_unit == "emb"):
            raise ValueError("continuous output layers predict embeddings (target_unit 'emb'), and only they do")
        if (self.target_unit == "emb" or self.tied) and self.embeddings is None:
            raise ValueError("continuous or tied models need target embeddings")
        if self.output_form is not None and (self.output_layer != "softmax" or self.embeddings or self.tied):
            raise ValueError("an output form is a softmax over the decoder's own input embedding")
        if (self.output_form == "joint") != (self.joint_dim is not None):
            raise ValueError("the joint output form, and only it, has a joint space size (joint_dim)")
        if self.bpe is not None and "bpe" not in (self.source_unit, self.target_unit):
            raise ValueError("a BPE vocabulary (bpe) is for models that read or write BPE units")

    def with_loss_params(self, changes: Mapping[str, float]) -> "Experiment":
        return dataclasses.replace(self, loss_params={**self.loss_params, **changes})


@dataclasses.dataclass(frozen=True)
class LanguageModel:
    """One language model of the tying paper (independent of data set and seed): the VD-LSTM,
    with reused embeddings (RE: W = L^T, no output bias) and/or the augmented loss (AL, its
    gamma chosen on validation among an artefact's `tune: {gamma: ...}` variants, `<name>@gamma=<v>`,
    or config `lm.gamma` per data set when unset), or Figure 1's beta-mixed loss, trained without
    regularisation on a slice of the corpus, with unit-norm embedding rows, and kept as it ends."""

    size: str  # a key of config lm.sizes (its width) and of papers.tying.SCHEDULE
    reuse_embedding: bool = False
    augmented: bool = False
    beta: float | None = None  # Figure 1: J_tot = beta J_aug tau^2 |V| + (1 - beta) J
    tau: float | None = None
    regularised: bool = True  # False: no dropout (Figure 1)
    unit_norm_embeddings: bool = False
    sliced: bool = (
        False  # trains on a contiguous slice of config lm.train_words[size] words, its start drawn from the seed
    )
    gamma: float | None = None  # AL's weight α = γτ; None: config lm.gamma of the data set
    keep: str = "best"  # a key of train_lm.KEEP: the best validation perplexity, the "last", the "lowest_train_loss"
    output_bias: bool = True  # False: b = 0 in an untied model (§4, Figure 1)
    to_convergence: bool = False  # trains until the training loss converges (config lm.convergence), max_epochs a cap

    @property
    def loss_params(self) -> dict[str, float]:
        """The parameters a variant (`variant`) may change: Figure 1's beta and tau, AL's gamma."""
        if self.beta is not None:
            return {"beta": self.beta, "tau": self.tau}
        return {"gamma": self.gamma} if self.augmented else {}

    def with_loss_params(self, changes: Mapping[str, float]) -> "LanguageModel":
        return dataclasses.replace(self, **changes)


def named(name: str, implied: str, definition):
    """(name, definition), an entry of a paper's EXPERIMENTS or LANGUAGE_MODELS. The name is written
    out in the paper module, so that grep finds where an experiment a table names is defined
    (`tests/test_explain.py` checks each is a literal); it must be the name its parts imply."""
    if name != implied:
        raise ValueError(f"experiment {name!r}: its settings name it {implied!r}")
    return name, definition


def paper_module(paper: str):
    if paper not in PAPERS:
        raise KeyError(f"unknown paper {paper!r}; known: {', '.join(PAPERS)}")
    return importlib.import_module(f"workflow_src.papers.{paper}")


def paper_claims(paper: str) -> tuple:
    """A paper's claims (`Claim`s): `CLAIMS` of `workflow_src/papers/<paper>_claims.py`, which reads
    its paper module and so is kept apart from it."""
    paper_module(paper)  # an unknown paper: its KeyError, naming the known ones
    return tuple(importlib.import_module(f"workflow_src.papers.{paper}_claims").CLAIMS)


def variant(name: str, parameter: str, value: float) -> str:
    """The name of experiment or language model `name` with one loss parameter changed:
    `<name>@<parameter>=<value>`, or `name` itself when the value is its own (the same job)."""
    base = {**all_experiments(), **language_models()}[name]
    if parameter not in base.loss_params:
        raise ValueError(f"{name} has no loss parameter {parameter!r} to vary")
    return name if base.loss_params[parameter] == value else f"{name}@{parameter}={value:g}"


def _resolve(name: str, known: dict, kind: str):
    """`known[name]`, or for `<base>@<parameter>=<value>` the base with that loss parameter changed."""
    base_name, _, override = name.partition("@")
    if base_name not in known:
        raise KeyError(f"unknown {kind} {base_name!r}")
    base = known[base_name]
    if not override:
        return base
    parameter, _, value = override.partition("=")
    if parameter not in base.loss_params:
        raise KeyError(f"{kind} {name!r}: {base_name} has no loss parameter {parameter!r}")
    return base.with_loss_params({parameter: float(value)})


def experiment(name: str) -> Experiment:
    """An experiment by name, variants (`variant`) included."""
    return _resolve(name, all_experiments(), "experiment")


def language_model(name: str) -> LanguageModel:
    """A language model by name, variants (`variant`) included."""
    return _resolve(name, language_models(), "language model")


def language_model_paper(name: str):
    """The paper module that defines language model `name` (variants included): its training
    settings (TAU, LAYERS, DROPOUT, SCHEDULE, SESSIONS, init_range) are that paper's."""
    base = name.partition("@")[0]
    return next(paper_module(p) for p in PAPERS if base in getattr(paper_module(p), "LANGUAGE_MODELS", {}))


def all_experiments() -> dict[str, Experiment]:
    return _merged("EXPERIMENTS")


def language_models() -> dict[str, LanguageModel]:
    return _merged("LANGUAGE_MODELS")


def _merged(attribute: str) -> dict:
    merged = {}
    for paper in PAPERS:
        for name, experiment in getattr(paper_module(paper), attribute, {}).items():
            if name in merged and merged[name] != experiment:
                raise ValueError(f"experiment {name!r} is defined differently by two papers")
            merged[name] = experiment
    return merged


def artefact(paper: str, artefact_id: str):
    artefacts = paper_module(paper).ARTEFACTS
    if artefact_id not in artefacts:
        raise KeyError(f"paper {paper} has no {artefact_id}; it has {', '.join(artefacts)}")
    return artefacts[artefact_id]


if __name__ == "__main__":  # the command line, above every stage (tests/test_architecture.py)
    from workflow_src.report.explain import main

    main()
