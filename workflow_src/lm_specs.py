"""The training spec of each language model (`workflow_src.train.train_lm`) from the config: the
paper's settings for its size and corpus, and what config `lm` sets.
"""

from __future__ import annotations

from workflow_src.artefacts import Corpus
from workflow_src.specs import Convergence, LMSpec, TrainSlice, document
from workflow_src.step_mode import compile_setting
from workflow_src.registry import language_model, language_model_paper, language_models

LM_OVERRIDABLE = ("max_epochs", "lr_decay", "decay_after")


def lm_schedule(lm: dict, paper_schedule: dict, size: str, name: str) -> dict:
    """The rate, its decay, clipping and max_epochs of language model `name`: the paper's schedule for
    its size and lm.max_epochs, with what config lm.overrides sets for it (keyed by the name without
    its variant: every γ of `lm-small-real` trains alike, as AL's tuning needs)."""
    overrides = lm.get("overrides", {})
    unknown = sorted(set(overrides) - set(language_models()))
    if unknown:
        raise ValueError(f"lm.overrides: {', '.join(unknown)} not language models of any paper")
    for key, entry in overrides.items():
        if not set(entry) <= set(LM_OVERRIDABLE):
            raise ValueError(
                f"lm.overrides.{key}: {', '.join(sorted(set(entry) - set(LM_OVERRIDABLE)))} cannot be "
                f"set per model (only {', '.join(LM_OVERRIDABLE)})"
            )
    return {**paper_schedule, "max_epochs": lm["max_epochs"][size], **overrides.get(name.partition("@")[0], {})}


def lm_spec(config: dict, dataset: str, name: str, seed: int) -> LMSpec:
    """The full spec of one language model (`workflow_src.train.train_lm`): the paper's settings for its
    size and corpus (`registry.language_model_paper`: the tying paper's) and the configured ones
    (config `lm`)."""
    model = language_model(name)
    tying = language_model_paper(name)
    if "lm" not in config:
        raise ValueError(f"language model {name}: the config has no `lm` section (config.yaml has one to copy)")
    lm = config["lm"]
    corpus = Corpus(dataset, dataset).base
    if model.beta is not None:
        loss, params = "beta", {"beta": model.beta, "tau": model.tau}
    elif model.augmented:
        if model.gamma is None and corpus not in lm["gamma"]:
            raise ValueError(f"lm.gamma: no AL weight configured for {corpus} (language model {name})")
        gamma = lm["gamma"][corpus] if model.gamma is None else model.gamma
        loss, params = "augmented", {"gamma": gamma, "tau": tying.TAU}
    else:
        loss, params = "ce", {}
    for key in (
        ("sizes", "max_epochs")
        + (("train_words",) if model.sliced else ())
        + (("convergence",) if model.to_convergence else ())
    ):
        if model.size not in lm.get(key, {}):
            raise ValueError(f"lm.{key}: nothing configured for {model.size!r} (language model {name})")
    if model.regularised and model.size not in tying.DROPOUT.get(corpus, {}):
        raise ValueError(f"language model {name}: the paper gives no {model.size} dropout for {corpus}")
    schedule = lm_schedule(lm, tying.SCHEDULE[model.size], model.size, name)
    return LMSpec(
        experiment=name,
        size=lm["sizes"][model.size],
        layers=tying.LAYERS,
        # the paper's drop probability, or config lm.dropout's for the size (the demo's toy widths)
        dropout=lm.get("dropout", {}).get(model.size, tying.DROPOUT[corpus][model.size]) if model.regularised else 0.0,
        reuse_embedding=model.reuse_embedding,
        loss=loss,
        loss_params=params,
        lr=schedule["lr"],
        lr_decay=schedule["lr_decay"],
        decay_after=schedule["decay_after"],
        clip=schedule["clip"],
        bptt=lm["bptt"],
        batch_size=lm["batch_size"],
        max_epochs=schedule["max_epochs"],
        sessions=tying.SESSIONS.get((corpus, model.size), 1),
        seed=seed,
        device=config["train"]["device"],
        precision=config["train"].get("precision", "auto"),
        compile=compile_setting(config["train"]),
        init_range=tying.init_range(model.size, lm["sizes"][model.size], lm.get("scale_init_to_width", False)),
        unit_norm_embeddings=model.unit_norm_embeddings,
        train_slice=TrainSlice(length=lm["train_words"][model.size], start=None) if model.sliced else None,
        keep=model.keep,
        output_bias=model.output_bias,
        convergence=Convergence(**lm["convergence"][model.size]) if model.to_convergence else None,
        target_gradient=loss == "augmented" and bool(lm.get("augmented_target_gradient")),
    )


def resolve_lm_spec(config: dict, dataset: str, name: str, seed: int) -> dict:
    """`lm_spec`'s JSON document (`specs.document`): the train_lm rule's --spec, `explain`'s
    print-out and the plan's family key; code that builds or trains a model takes `lm_spec`."""
    return document(lm_spec(config, dataset, name, seed))
