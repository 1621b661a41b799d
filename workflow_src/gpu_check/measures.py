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
    the same draws, moved to its device, in the same order (`recorded`: a reference's draws, made
    in another process)."""

    def __init__(self, recorded: list | None = None):
        self.recorded: list = recorded if recorded is not None else []
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
        patched = [
            (joint_module, "sample_vocabulary"),
            (joint_module, "sample_vocabulary_topk"),
            (loss_module, "uniform_negative_ids"),
        ]
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

    handles = [
        module.register_forward_hook(
            lambda m, args, out, name=name or type(module).__name__: note(
                f"{name} ({type(m).__name__})", "recurrent" if isinstance(m, RECURRENT) else "module", out
            )
        )
        for name, module in model.named_modules()
    ]
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
    return {
        name: sorted(str(d).removeprefix("torch.") for d in dtypes)
        for name, (kind, dtypes) in seen.items()
        if kind != "operator" or dtypes - {torch.float32, torch.float64}
    }


# -- comparisons ------------------------------------------------------------------------------------
def gradients(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter's gradient, flat, where it is (fp32)."""
    return {name: p.grad.detach().float().flatten() for name, p in model.named_parameters() if p.grad is not None}


def group_of(parameter: str) -> str:
    """A parameter's group: the model's top-level part (encoder, decoder, output, word_vectors;
    language models: embedding, rnn, decoder)."""
    return parameter.split(".")[0]


def gradient_cosines(result: dict[str, torch.Tensor], reference: dict[str, torch.Tensor]) -> tuple[dict, dict]:
    """cos(g, g_ref) per parameter group and per parameter, in float64 on the result's device:

        cos_group = Σ_p g_p·r_p / sqrt(Σ_p |g_p|² · Σ_p |r_p|²)   over the group's parameters p

    (1 where both are zero, 0 where one is)."""
    sums: dict[str, list[float]] = {}
    per_parameter = {}
    for name, g in result.items():
        if name not in reference:
            continue
        g, r = g.double(), reference[name].to(g.device).double()
        dot, gg, rr = (float(x) for x in torch.stack([g @ r, g @ g, r @ r]).cpu())
        per_parameter[name] = round(cosine(dot, gg, rr), 7)
        group = sums.setdefault(group_of(name), [0.0, 0.0, 0.0])
        group[0], group[1], group[2] = group[0] + dot, group[1] + gg, group[2] + rr
    return {group: cosine(*s) for group, s in sums.items()}, per_parameter


def cosine(dot: float, gg: float, rr: float) -> float:
    if gg == 0 and rr == 0:
        return 1.0
    return dot / math.sqrt(gg * rr) if gg > 0 and rr > 0 else 0.0


def relative(value: float, reference: float) -> float:
    return abs(value - reference) / max(abs(reference), 1e-12)


def agreement(words: torch.Tensor, reference: torch.Tensor) -> float:
    """The share of positions whose word is the reference's (0 where the shapes differ)."""
    return float((words == reference).double().mean()) if words.shape == reference.shape else 0.0


def run_once(
    family: Family,
    model: nn.Module,
    batch: dict,
    precision: str,
    device: torch.device,
    draws: SharedDraws,
    replay: bool,
    full: bool = True,
    record_dtypes: bool = False,
) -> dict:
    """The loss per divisor unit of one training forward and, `full`, its gradients, predicted
    words (and output dtypes)."""
    precisions.configure(precision)
    model.zero_grad(set_to_none=True)
    model.train()
    with draws.active(model, replay):
        with recorded_dtypes(model) if record_dtypes else contextlib.nullcontext({}) as seen:
            with contextlib.nullcontext() if full else torch.no_grad():
                loss, n = forward_loss(family, model, batch, precision, device)
                if full:
                    (loss / n).backward()
        words = predicted_words(family, model, batch) if full else None
    return {
        "loss": float(loss.detach()) / n,
        "loss_dtype": loss.dtype,
        "words": words,
        "dtypes": seen,
        "gradients": gradients(model) if full else {},
    }


def compare_loss(loss: float, reference: float, tolerance: dict) -> tuple[dict, list[str]]:
    measures = {"loss": loss, "reference_loss": reference, "loss_relative": relative(loss, reference)}
    if math.isfinite(loss) and measures["loss_relative"] <= tolerance["loss_relative"]:
        return measures, []
    return measures, [
        f"loss {loss:.6g} vs {reference:.6g} (relative difference {measures['loss_relative']:.2e} > "
        f"{tolerance['loss_relative']:g})"
    ]


def compare(result: dict, reference: dict, tolerance: dict) -> tuple[dict, list[str]]:
    """The measures of `result` against `reference` and what is outside `tolerance`."""
    measures, problems = compare_loss(result["loss"], reference["loss"], tolerance)
    cosines, per_parameter = gradient_cosines(result["gradients"], reference["gradients"])
    missing = sorted(set(reference["gradients"]) ^ set(result["gradients"]))
    worst = min(cosines, key=cosines.get) if cosines else None
    words = agreement(result["words"], reference["words"])
    measures |= {
        "min_gradient_cosine": cosines[worst] if worst else None,
        "min_gradient_cosine_group": worst,
        "gradient_cosine": {k: round(v, 7) for k, v in cosines.items()},
        "gradient_cosine_per_parameter (not checked: a near-zero gradient's direction is rounding noise)": (
            per_parameter
        ),
        "words": words,
    }
    if worst and cosines[worst] < tolerance["gradient_cosine"]:
        problems.append(
            f"gradient cosine {cosines[worst]:.6f} < {tolerance['gradient_cosine']:g} (parameter group {worst})"
        )
    if missing:
        problems.append(f"gradients present on one side only: {', '.join(missing)}")
    if words < tolerance["words"]:
        problems.append(f"{words:.0%} of the predicted words agree (< {tolerance['words']:.0%})")
    return measures, problems
