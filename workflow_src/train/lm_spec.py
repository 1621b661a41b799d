"""A language model's training spec (`workflow_src.train.train_lm`): its required keys, its
defaults, and their check. Imports torch's side of the model only, so that the GPU check and
graph_check resolve a spec on a bare GPU machine."""

from __future__ import annotations

from workflow_src.model import compilation
from workflow_src.model.lm_losses import OBJECTIVES

REQUIRED = ("experiment", "size", "layers", "dropout", "reuse_embedding", "loss", "loss_params", "lr",
            "lr_decay", "decay_after", "clip", "bptt", "batch_size", "max_epochs", "seed", "device")
DEFAULTS = {"eval_batch_size": 10, "init_range": None, "unit_norm_embeddings": False, "train_slice": None,
            "sessions": 1, "keep": "best", "output_bias": True, "convergence": None,
            "precision": "auto"}
OPTIONAL = (compilation.KEY, "target_gradient")  # neither required nor defaulted: absent keeps the hash
KEEP = {  # the epoch model.pt holds: the one that minimises
    "best": lambda record: record["valid_perplexity"],
    "last": lambda record: -record["epoch"],
    "lowest_train_loss": lambda record: record["train_loss"],  # Figure 1: "the minimum training loss"
}


def resolve(spec: dict) -> dict:
    """The spec with its defaults, or a ValueError naming the missing or unknown key."""
    missing = [key for key in REQUIRED if key not in spec]
    unknown = sorted(set(spec) - set(REQUIRED) - set(DEFAULTS) - set(OPTIONAL))
    if missing or unknown:
        raise ValueError(f"language-model spec: missing keys {missing}, unknown keys {unknown}")
    if not (isinstance(spec["size"], int) and spec["size"] > 0):
        raise ValueError(f"language-model spec: size {spec['size']!r} is not a width (units per layer)")
    if spec.get("keep", "best") not in KEEP:
        raise ValueError(f"language-model spec: keep {spec['keep']!r} is not one of {', '.join(KEEP)}")
    convergence = spec.get("convergence")
    if convergence is not None and (set(convergence) != {"window", "tolerance", "plateau_decay"}
                                    or convergence["window"] < 1 or not convergence["tolerance"] >= 0
                                    or not 0 < convergence["plateau_decay"] <= 1):
        raise ValueError(f"language-model spec: convergence {convergence!r} is not {{'window': epochs >= 1, "
                         "'tolerance': relative improvement >= 0, 'plateau_decay': factor in (0, 1]}")
    if spec["loss"] not in OBJECTIVES:
        raise ValueError(f"language-model spec: loss {spec['loss']!r} is not one of {sorted(OBJECTIVES)}")
    if spec.get("target_gradient") and spec["loss"] != "augmented":
        raise ValueError(f"language-model spec: target_gradient needs loss augmented, not {spec['loss']}")
    names = OBJECTIVES[spec["loss"]][0]
    if set(spec["loss_params"]) != set(names):
        raise ValueError(f"language-model spec: loss {spec['loss']} takes loss_params {list(names)}, got {spec['loss_params']}")
    return {**DEFAULTS, **spec}
