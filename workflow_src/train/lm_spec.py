"""A language model's training spec (`specs.LMSpec`, `workflow_src.train.train_lm`): read from its
JSON document and checked beyond its keys. Imports torch's side of the model only, so that the GPU
check and graph_check resolve a spec on a bare GPU machine."""

from __future__ import annotations

from workflow_src.model.lm_losses import OBJECTIVES
from workflow_src.specs import LMSpec, SpecError, load

KEEP = {  # the epoch model.pt holds: the one that minimises
    "best": lambda record: record["valid_perplexity"],
    "last": lambda record: -record["epoch"],
    "lowest_train_loss": lambda record: record["train_loss"],  # Figure 1: "the minimum training loss"
}


def checked(spec: LMSpec, source: str = "language-model spec") -> LMSpec:
    """`spec`, or a SpecError naming `source` and the field whose value it cannot train with."""
    if not (isinstance(spec.size, int) and spec.size > 0):
        raise SpecError(f"{source}: size {spec.size!r} is not a width (units per layer)")
    if spec.keep not in KEEP:
        raise SpecError(f"{source}: keep {spec.keep!r} is not one of {', '.join(KEEP)}")
    rule = spec.convergence
    if rule is not None and (rule.window < 1 or not rule.tolerance >= 0 or not 0 < rule.plateau_decay <= 1):
        raise SpecError(
            f"{source}: convergence {rule!r} is not {{'window': epochs >= 1, "
            "'tolerance': relative improvement >= 0, 'plateau_decay': factor in (0, 1]}"
        )
    if spec.loss not in OBJECTIVES:
        raise SpecError(f"{source}: loss {spec.loss!r} is not one of {sorted(OBJECTIVES)}")
    if spec.target_gradient and spec.loss != "augmented":
        raise SpecError(f"{source}: target_gradient needs loss augmented, not {spec.loss}")
    names = OBJECTIVES[spec.loss][0]
    if set(spec.loss_params) != set(names):
        raise SpecError(f"{source}: loss {spec.loss} takes loss_params {list(names)}, got {dict(spec.loss_params)}")
    return spec


def read(fields: dict, source: str) -> LMSpec:
    """The checked spec of JSON document `fields` (`specs.load`: every key, this spec_version)."""
    return checked(load(LMSpec, fields, source), source)


def resolve(fields: dict) -> LMSpec:
    """The checked spec of document `fields` (`read`), named "language-model spec" in its errors."""
    return read(fields, "language-model spec")
