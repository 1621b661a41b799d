"""The GPU check's measures (`workflow_src.gpu_check`): random draws shared between the reference
and the device run, every module's and operator's output dtypes, and a run's loss, gradients and
words against the reference's."""

from __future__ import annotations

import contextlib
import math

import torch
import torch.utils._python_dispatch
from torch import nn

from workflow_src.gpu_check.families import Family, forward_loss, predicted_words
from workflow_src.model import joint as joint_module, losses as loss_module, precision as precisions
from workflow_src.model.lm import LSTMLanguageModel
from workflow_src.model.seq2seq import Seq2Seq


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
