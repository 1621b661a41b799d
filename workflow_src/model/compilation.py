"""Config `train.compile`: the recurrent loops through torch.compile, or the whole step as CUDA
graphs, without changing any model.

    off     eager PyTorch (the default: neither mode has been measured against it on a GPU here)
    fuse    torch.compile (inductor, mode "default") of the recurrent inner loop: inductor fuses
            each step's pointwise operations
    graphs  the whole training step, validation's forward and decoding's one step, each captured
            once per shape as a CUDA graph and replayed (CUDA only): static batches by length
            bucket (`train.length_buckets`), the encoder unpacked, the optimiser on the device
            (`workflow_src/train/static_step.py`, `workflow_src/model/graphs.py`); no torch.compile

What `fuse` compiles, and only that, as one function each (fullgraph=True: a graph break is an
error): the translation decoder's one step `Decoder.step` (teacher forcing, greedy and beam
search run it T times per batch) and the language model's variationally-dropped-out segment
`unrolled_lstm` (the masks are drawn outside it, so it is deterministic given its inputs).
Compilations are bounded, whatever the data. The decoder step's dimensions are all symbolic
from the start (dynamic=True, without duck shapes: no recompiling as B, S or the hidden sizes
change, as on the H200 where it hit dynamo's limit of 8, docs/gpu_check/2026-11-26-h200-partial.md),
and arguments that alias each other (the first step's per-layer states, one tensor) are passed
as copies. What remains is the grad mode, the first step's input feed without gradients, and
whether the step's input is a view (teacher forcing slices it, decoding does not): four entries,
tests/test_compile.py counts them over whole epochs with validation and decoding. The LM's
segment has two shapes, bptt and an epoch's last segment, and keeps torch's default (its loop
specialises the length anyway, and inductor compiles a static segment faster): two entries.
Parameters, state_dicts, checkpoints and parameter counts are the eager model's.

Whether inductor's fused step would add speed inside a captured graph is unmeasured, so `graphs`
captures the eager operators and `fuse` stays a mode of its own.

Dropout inside a compiled decoder step draws from inductor's own random stream, and a `graphs`
step draws over padded shapes, so either is repeatable but not equal to the eager run; that is
why the setting is a field of the training spec (`specs.TrainSpec.compile`, `LMSpec.compile`) and
so of its hash. With `off` the model runs eagerly: fp32 CPU results are bit-for-bit the eager ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_src.step_mode import COMPILE_KEY as KEY  # config train.compile; the spec field of the same name

if TYPE_CHECKING:
    import torch

    from workflow_src.specs import LMSpec, TrainSpec

MODES = ("off", "fuse", "graphs")  # the settings
FUSE_MODE = "default"  # torch.compile's mode for `fuse`
BACKEND = "inductor"  # torch.compile's backend for `fuse`; the tests use "eager" (inductor takes minutes on a CPU)


def mode(setting: str, device: torch.device) -> str:
    """`setting` itself, checked: one of MODES, and `graphs` only on CUDA."""
    if setting not in MODES:
        raise ValueError(f"train.{KEY}: {setting!r} is not one of {', '.join(MODES)}")
    if setting == "graphs" and device.type != "cuda":
        raise ValueError(
            f"train.{KEY}: graphs captures CUDA graphs and needs a CUDA device, not {device} (use fuse or off there)"
        )
    return setting


def compiled(function, dynamic: bool | None = True):
    """`function` through torch.compile for `fuse`: one graph (a break is an error), every
    dimension symbolic from the start (`dynamic` True; None: torch's default, static until a
    size changes), aliased tensor arguments passed as copies. nn.LSTM (the decoder step
    without input feeding) is traced too: dynamo breaks the graph there unless `allow_rnn` is on
    while it traces. Under a Python dispatch mode (the plan's FLOP and operator counts,
    `plan.measure`), which torch.compile does not trace, `function` runs eager."""
    import torch
    from torch.utils._python_dispatch import is_in_torch_dispatch_mode

    from torch.fx.experimental import _config as symbolic_shapes

    options = {"mode": FUSE_MODE} if BACKEND == "inductor" else {"backend": BACKEND}
    fused = torch.compile(function, fullgraph=True, dynamic=dynamic, **options)
    # no duck shapes: a source length equal to the hidden size would tie the two, and recompile when they part
    fused = symbolic_shapes.patch(use_duck_shape=False)(torch._dynamo.config.patch(allow_rnn=True)(fused))

    def run(*args):
        return function(*args) if is_in_torch_dispatch_mode(include_infra_modes=False) else fused(*unaliased(args))

    return run


def unaliased(args):
    """`args` with every tensor that appeared before in them replaced by a copy (a copy is
    differentiable: the gradient reaches the original as it would)."""
    import torch
    from torch.utils._pytree import tree_map

    seen: set[int] = set()

    def once(x):
        if not isinstance(x, torch.Tensor):
            return x
        if id(x) in seen:
            return x.clone()
        seen.add(id(x))
        return x

    return tree_map(once, args)


def apply(model: torch.nn.Module, spec: TrainSpec | LMSpec, device: torch.device) -> str:
    """Set up `model` (a Seq2Seq or an LSTMLanguageModel) for the spec's setting; returns it, for
    the job's log. `fuse`: its recurrent loop compiled. `graphs`: a translation model's encoder
    unpacked and its decoding step captured (`graphs.Captured`); the training loops capture their
    steps (`static_step`). (Told apart by what they can compile, so that this module, which the
    models import, imports no model.)"""
    setting = mode(spec.compile, device)
    language_model = hasattr(model, "compile_unrolled")
    if setting == "fuse":
        if language_model:
            model.compile_unrolled()
        else:
            model.decoder.compile_step()
    elif setting == "graphs" and not language_model:
        from workflow_src.model.graphs import Captured

        model.encoder.packed = False
        # the keys (argument 2) are one tensor triple for a whole sentence batch: copied once per batch
        model.decoder.graphed_step = Captured(model.decoder._step, device, module=model.decoder, constant=(2,))
    return setting
