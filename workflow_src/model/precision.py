"""The arithmetic a training job runs in (config `train.precision`), without changing any paper setting.

    auto   bf16 where the device is CUDA, fp32 elsewhere (the CPU and the demo)
    bf16   torch.autocast to bfloat16 around the output layers' products (the large ones: hidden
           x vocabulary); the recurrent layers run outside autocast, in fp32 with TF32 allowed
           (`full_precision`); parameters, optimiser state and gradients stay fp32
    tf32   fp32 tensors, matmuls and cuDNN convolutions/RNNs in TensorFloat-32 (Ampere and later)
    fp32   plain fp32 everywhere: the papers' arithmetic

Why no autocast around the recurrent layers: CUDA autocast's wrapper for cuDNN's RNN
(`_cudnn_rnn_cast_reflatten`, aten/src/ATen/cudnn/AutocastRNN.cpp) casts input, weights, h and c
to fp16 whatever dtype autocast was given, and nothing here scales the loss for fp16.

Whatever the setting, the losses run in fp32 or wider: the model casts its outputs to fp32 at
the loss boundary (`Seq2Seq.loss`, `steps.train_epoch`), log C_m runs in float64, and the
softmax normalisation (cross-entropy, log-softmax) takes fp32 logits.
"""

from __future__ import annotations

import contextlib

import torch

PRECISIONS = ("auto", "bf16", "tf32", "fp32")


def resolve(setting: str, device: torch.device) -> str:
    """The precision a job runs in: `auto` is bf16 on CUDA and fp32 elsewhere."""
    if setting not in PRECISIONS:
        raise ValueError(f"train.precision: {setting!r} is not one of {', '.join(PRECISIONS)}")
    if setting == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    return setting


def configure(precision: str) -> None:
    """Set torch's TF32 switches for the whole job: on for tf32, and for bf16, whose recurrent
    layers run in fp32 (`full_precision`); off for fp32."""
    tf32 = precision in ("tf32", "bf16")
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def autocast(precision: str, device: torch.device, cache: bool = True) -> contextlib.AbstractContextManager:
    """The forward pass's context: bf16 autocast for bf16 (on the CPU too), nothing otherwise.
    Without `cache`, a weight is cast at each use rather than once per region (for captured CUDA
    graphs, as torch asks of autocast around them)."""
    if precision != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, cache_enabled=cache)


def full_precision(device: torch.device) -> contextlib.AbstractContextManager:
    """Autocast off for the block, on any device: the recurrent layers (encoder, decoder, the LM's
    LSTM) run in their parameters' fp32 inside `autocast("bf16", ...)`, on the CPU as on CUDA."""
    return torch.autocast(device_type=device.type, enabled=False)


def at_least_fp32(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor` in fp32 if it is narrower (bf16, fp16), as it is otherwise (fp32, fp64: no copy)."""
    return tensor.float() if tensor.is_floating_point() and torch.finfo(tensor.dtype).bits < 32 else tensor


def pin(saved: dict, precision: str, checkpoint, setting: str, device: torch.device, log) -> None:
    """A resume stays in the arithmetic its checkpoint was trained in: `saved["precision"]` (what
    `resolve` gave the job that wrote it) against `precision`, what it resolves to here. The spec
    keeps the setting (`auto`), not the resolved precision, so a job started on a GPU (bf16) and
    resumed on the CPU (fp32), or back, would keep its hash and change its arithmetic silently:
    that stops here, in one line. A checkpoint from before the precision was recorded resumes, and
    the log says that its precision is unknown."""
    recorded = saved.get("precision")
    if recorded is None:
        log(
            f"{checkpoint}: the precision it was trained in was not recorded (written before checkpoints "
            f"recorded it); resuming in {precision}"
        )
    elif recorded != precision:
        raise SystemExit(
            f"train.precision: {checkpoint} was trained in {recorded}, but {setting!r} resolves to "
            f"{precision} on {device}: resume it where train.precision resolves to {recorded}, "
            f"or delete {checkpoint} to train from the start"
        )
