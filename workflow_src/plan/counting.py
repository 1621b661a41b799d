"""What one call of a step costs a GPU, counted on any device: FLOPs (torch's FlopCounterMode plus
fused LSTM layers'), kernels (one per tensor operator, a fused LSTM layer's per time step), host
syncs (operators whose result the host must wait for on CUDA) and the memory traffic of the
optimiser and gradient clipping, which FLOPs leave out:

    bytes = Σ_params numel · itemsize · (optimiser accesses + 3)      (clipping: norm reads g; scale reads, writes g)
    optimiser accesses: Adam 7 (reads p, g, m, v; writes p, m, v), SGD 3 (reads p, g; writes p)

Counts at two batch sizes give the cost at a third: every FLOP is per token (linear in the batch)
or per batch (g_out(E) of the joint paper's forms, the sampled vocabulary), so

    FLOPs(B) = FLOPs(b1) + (B - b1) · (FLOPs(b2) - FLOPs(b1)) / (b2 - b1)

counts per-batch work once, where scaling FLOPs(b1) by B / b1 counted it B / b1 times.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect

# A fused LSTM layer (oneDNN's on the CPU, cuDNN's on CUDA) is one operator that runs a kernel or
# more per time step inside: a recurrent matrix product and the fused gates forward, and about one
# more backward (an assumption; FlopCounterMode counts neither their FLOPs nor their kernels).
RECURRENT_KERNELS_PER_STEP = {"forward": 2, "backward": 3}
# Operators whose result the host reads on CUDA, so that it waits for the device there.
SYNC_OPERATORS = {
    "_local_scalar_dense",
    "nonzero",
    "masked_select",
    "_unique2",
    "unique_dim",
    "unique_consecutive",
    "equal",
}
OPTIMISER_ACCESSES = {"Adam": 7, "AdamW": 7, "SGD": 3}  # per parameter element and step, momentum-free SGD
CLIPPING_ACCESSES = 3  # clip_grad_norm_: the norm reads each gradient, the scaling reads and writes it


@dataclasses.dataclass(frozen=True)
class Counts:
    """The cost of one call: FLOPs, kernels, bytes of optimiser and clipping traffic, host syncs,
    and what the host dispatches: operators (a fused LSTM layer one, however many kernels it runs)
    and views (no kernel, but a dispatch all the same)."""

    flops: float = 0.0
    kernels: int = 0
    bytes: float = 0.0
    syncs: int = 0
    operators: int = 0
    views: int = 0
    recurrent_kernels: int = 0  # of `kernels`, those the fused LSTM layers run


def extrapolate(small: Counts, large: Counts, b1: int, b2: int, batch: int) -> Counts:
    """The counts at `batch` from those at b1 (`small`) and b2 (`large`): FLOPs affine in the batch
    (per-token work times the batch plus per-batch work once); kernels, bytes and syncs as at b1
    (they do not grow with the batch)."""
    per_sentence = (large.flops - small.flops) / (b2 - b1)
    return dataclasses.replace(small, flops=small.flops + (batch - b1) * per_sentence)


def optimiser_bytes(optimiser, parameters) -> float:
    """Memory traffic of one optimiser step and the gradient clipping before it (module docstring)."""
    accesses = OPTIMISER_ACCESSES[type(optimiser).__name__] + CLIPPING_ACCESSES
    if any(group.get("momentum") for group in optimiser.param_groups):
        accesses += 2  # SGD's momentum buffer: read and written
    return float(sum(p.numel() * p.element_size() for p in parameters if p.requires_grad) * accesses)


def recurrent_layer_cost(func, args, kwargs) -> tuple[float, int] | None:
    """FLOPs and kernels of a fused LSTM operator (oneDNN's one layer and direction on the CPU,
    cuDNN's whole stack on CUDA), None for any other operator:

        FLOPs = 2 · tokens · Σ numel(W_ih, W_hh)  (× 2 backward),
        kernels = time steps · layers · directions · RECURRENT_KERNELS_PER_STEP[pass]
    """
    import torch

    name = func.overloadpacket.__name__
    if name not in ("mkldnn_rnn_layer", "mkldnn_rnn_layer_backward", "_cudnn_rnn", "_cudnn_rnn_backward"):
        return None
    schema = [a.name for a in func._schema.arguments]
    named = dict(zip(schema, args)) | (kwargs or {})
    tokens_by_step = named["batch_sizes"]
    x = named["input"]
    if tokens_by_step:  # a packed sequence: its batch size at each step
        steps, tokens = len(tokens_by_step), sum(tokens_by_step)
    else:  # oneDNN's layer is handed time-major input whatever its batch_first says; cuDNN's is not
        time_axis = 1 if named["batch_first"] and name.startswith("_cudnn") else 0
        steps, tokens = x.shape[time_axis], x.numel() // x.shape[-1]
    if name.startswith("mkldnn"):
        matrices = [w for w in args[1:5] if isinstance(w, torch.Tensor) and w.dim() == 2]
    else:
        matrices = [w for w in named["weight"] if w.dim() == 2]
    backward = name.endswith("backward")
    flops = 2 * tokens * sum(w.numel() for w in matrices) * (2 if backward else 1)
    layer_directions = len(matrices) // 2  # W_ih and W_hh of each
    kernels = steps * layer_directions * RECURRENT_KERNELS_PER_STEP["backward" if backward else "forward"]
    return flops, kernels


def is_sync(func, args, kwargs) -> bool:
    """Whether the host waits for the device on this operator on CUDA: it reads a value
    (`.item()`, `bool(t)`), or sizes its result by the data (nonzero, a boolean index, unique,
    repeat_interleave without output_size)."""
    import torch

    name = func.overloadpacket.__name__
    if name in SYNC_OPERATORS:
        return True
    if name == "index" and len(args) > 1:
        return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1] if i is not None)
    if name == "repeat_interleave":
        return func._overloadname == "Tensor" and (kwargs or {}).get("output_size") is None
    return False


def dropout_as_cuda():
    """A torch function mode under which `F.dropout` runs as on CUDA, one fused kernel each way
    (`native_dropout`), where the CPU draws, scales and multiplies in three or four: the plan's
    counts on a CPU are then a GPU's."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    signature = inspect.signature(F.dropout)

    class DropoutAsCuda(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is not F.dropout:
                return func(*args, **(kwargs or {}))
            bound = signature.bind(*args, **(kwargs or {}))
            bound.apply_defaults()
            x, p, training = (bound.arguments[name] for name in ("input", "p", "training"))
            return torch.native_dropout(x, p, True)[0] if training and p > 0 else x

    return DropoutAsCuda()


@contextlib.contextmanager
def sampling_as_cuda():
    """The joint layer's sampled vocabulary drawn as on CUDA (`sample_vocabulary_topk`, no sync)
    where the host knows it can be, on any device; the CPU's draw (nonzero, a count) elsewhere."""
    from workflow_src.model import joint

    draw, topk = joint.sample_vocabulary, joint.sample_vocabulary_topk

    def as_cuda(target, vocab_size, share, banned=()):
        if min(int(share * vocab_size), vocab_size - len(set(banned))) < len(target):
            return draw(target, vocab_size, share, banned)
        return topk(target, vocab_size, share, banned)

    joint.sample_vocabulary = as_cuda
    try:
        yield
    finally:
        joint.sample_vocabulary = draw


def count(function, as_cuda: bool) -> Counts:
    """FLOPs, kernels and syncs of one call of `function()`; with `as_cuda`, dropout and the joint
    layer's sampling run as CUDA runs them (the counts on a CPU are then a GPU's)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    class Operators(TorchDispatchMode):
        kernels, syncs, recurrent_flops, operators, views, recurrent_kernels = 0, 0, 0.0, 0, 0, 0
        host: set = set()  # storages a CUDA run keeps on the host (a packed sequence's batch sizes)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.views += func.is_view
            self.operators += not func.is_view
            if (cost := recurrent_layer_cost(func, args, kwargs)) is not None:
                self.recurrent_flops += cost[0]
                self.kernels += cost[1]
                self.recurrent_kernels += cost[1]
            else:
                self.kernels += 0 if func.is_view else 1
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name == "_pack_padded_sequence":  # its batch sizes stay on the host on CUDA too
                self.host.add(out[1].untyped_storage().data_ptr())
            elif is_sync(func, args, kwargs) and not (
                name == "_local_scalar_dense" and args[0].untyped_storage().data_ptr() in self.host
            ):
                self.syncs += 1
            return out

    modes = (dropout_as_cuda(), sampling_as_cuda()) if as_cuda else ()
    with contextlib.ExitStack() as stack:
        for mode in modes:
            stack.enter_context(mode)
        flops = stack.enter_context(FlopCounterMode(display=False))
        operators = stack.enter_context(Operators())
        function()
    return Counts(
        flops.get_total_flops() + operators.recurrent_flops,
        operators.kernels,
        0.0,
        operators.syncs,
        operators.operators,
        operators.views,
        operators.recurrent_kernels,
    )


def padded_width(length: int, multiple: int) -> int:
    """The mean width of batches whose longest sentence is about `length` units once padded to
    multiples of `multiple`: length + (multiple - 1) / 2 (every remainder alike), rounded half up."""
    return int(length + (multiple - 1) / 2 + 0.5)


def ceil_to(length: int, multiple: int) -> int:
    return -(-length // multiple) * multiple
