"""The recurrent inner loops through torch.compile (config `train.compile`), without changing any model.

    off     eager PyTorch (the default: unmeasured on a GPU in this project)
    fuse    torch.compile, mode "default": inductor fuses each step's pointwise operations
    graphs  torch.compile, mode "reduce-overhead": the fused step is also captured as a CUDA graph
            and replayed (CUDA only)

What is compiled, and only that, as one function each (fullgraph=True: a graph break is an error):
the translation decoder's one step `Decoder.step` (teacher forcing, greedy and beam search run
it T times per batch) and the language model's variationally-dropped-out segment `unrolled_lstm`
(the masks are drawn outside it, so it is deterministic given its inputs). Parameters,
state_dicts, checkpoints and parameter counts are the eager model's.

Shapes stay static: a batch's B and hidden sizes are fixed within an epoch but for its last
batch, and with compile on `nmt_data.length_multiple` pads T and S to multiples of 8, so few distinct
shapes reach the compiler; with dynamic=None, a dimension that changes (S, the last batch's B,
B x beam) turns symbolic at its first recompile instead of compiling once per value.

Dropout inside the compiled decoder step draws from inductor's own random stream, so a run with
`fuse` or `graphs` is repeatable but not equal to the eager run; that is why the setting joins the
training spec (and its hash) when it is not `off`. With `off` nothing is compiled and the spec is
what it was (`layout.compile_spec_entry`): fp32 CPU results are bit-for-bit unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_src.layout import COMPILE_KEY as KEY  # config train.compile; the spec's entry is `layout.compile_spec_entry`

if TYPE_CHECKING:
    import torch

MODES = {"off": None, "fuse": "default", "graphs": "reduce-overhead"}


def mode(setting: str, device: torch.device) -> str | None:
    """torch.compile's mode for `setting` on `device`; None for `off`."""
    if setting not in MODES:
        raise ValueError(f"train.{KEY}: {setting!r} is not one of {', '.join(MODES)}")
    if setting == "graphs" and device.type != "cuda":
        raise ValueError(f"train.{KEY}: graphs captures CUDA graphs and needs a CUDA device, not {device} "
                         "(use fuse or off there)")
    return MODES[setting]


def compiled(function, mode: str):
    """`function` through torch.compile: one graph (a break is an error), shapes static until
    one changes. nn.LSTM (the decoder step without input feeding) is traced too: dynamo breaks
    the graph there unless `allow_rnn` is on while it traces. Under a Python dispatch mode (the
    plan's FLOP and operator counts, `plan.measure`), which torch.compile does not trace,
    `function` runs eager. A CUDA graph's outputs live in its static memory, which its next
    replay overwrites, while the callers keep earlier steps' outputs (teacher forcing stacks
    them): under `reduce-overhead` they are returned as copies."""
    import torch
    from torch.utils._python_dispatch import is_in_torch_dispatch_mode
    from torch.utils._pytree import tree_map

    fused = torch._dynamo.config.patch(allow_rnn=True)(torch.compile(function, mode=mode, fullgraph=True))
    keep = (lambda outputs: tree_map(torch.clone, outputs)) if mode == "reduce-overhead" else (lambda outputs: outputs)

    def run(*args):
        return function(*args) if is_in_torch_dispatch_mode(include_infra_modes=False) else keep(fused(*args))
    return run


def apply(model: torch.nn.Module, spec: dict, device: torch.device) -> str:
    """Compile the recurrent loop of `model` (a Seq2Seq or an LSTMLanguageModel) as `spec` says;
    returns the setting, for the job's log. (Told apart by what they can compile, so that this
    module, which the models import, imports no model.)"""
    setting = spec.get(KEY, "off")
    torch_mode = mode(setting, device)
    if torch_mode is not None:
        if hasattr(model, "compile_unrolled"):  # an LSTMLanguageModel
            model.compile_unrolled(torch_mode)
        else:
            model.decoder.compile_step(torch_mode)
    return setting
