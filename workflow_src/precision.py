"""The arithmetic a training job runs in (config `train.precision`), without changing any paper setting.

    auto   bf16 where the device is CUDA, fp32 elsewhere (the CPU and the demo)
    bf16   torch.autocast to bfloat16 (matmuls, LSTMs); parameters, optimiser state and gradients
           stay fp32
    tf32   fp32 tensors, matmuls and cuDNN convolutions/RNNs in TensorFloat-32 (Ampere and later)
    fp32   plain fp32 everywhere

Whatever the setting, the losses run in fp32 or wider: the model casts its outputs to fp32 at
the loss boundary (`Seq2Seq.loss`, `train_lm.train_epoch`), log C_m runs in float64, and the
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
    """Set torch's TF32 switches for the whole job: on for tf32 only."""
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def autocast(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    """The forward pass's context: bf16 autocast for bf16 (on the CPU too), nothing otherwise."""
    if precision != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def at_least_fp32(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor` in fp32 if it is narrower (bf16, fp16), as it is otherwise (fp32, fp64: no copy)."""
    return tensor.float() if tensor.is_floating_point() and torch.finfo(tensor.dtype).bits < 32 else tensor
