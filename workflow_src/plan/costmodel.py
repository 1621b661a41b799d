"""What one training step, validation forward or greedy decode costs on a GPU, from its counts
(`counting.Counts`), run eagerly or replayed as CUDA graphs (`train.compile: graphs`):

    host, eager   = operators · host_operator + views · host_view        (eager PyTorch dispatching each)
                    + recurrent kernels · host_recurrent_kernel          (cuDNN launching each time step's)
    host, graphs  = (replays · REPLAY_OPERATORS + BATCH_OPERATORS) · host_operator
    busy          = FLOPs / (achieved · peak[precision]) + bytes / HBM bandwidth
                    + (kernels - recurrent kernels) · kernel + recurrent kernels · recurrent_kernel
    alone         = max(host, busy) + syncs · (host_operator + kernel)
                    (the host queues kernels ahead of the GPU, but not past a sync)
    floor         = FLOPs / (FLOOR_FRACTION · peak) + bytes / HBM bandwidth   (no launches, no host)

Replayed as graphs, a step, a forward and each decoding step is one replay: the host only copies
the batch into the graph's inputs and launches it; the GPU runs the same kernels at the
bucket-padded shapes (`Timing.width_ratio` scales FLOPs and kernels), with no host sync in a
step or a forward. `fit.py` fits the host terms to a GPU check's eager step times and the GPU terms
to its steps replayed as graphs; `CostModel.on` carries a model fitted on one device to another.
"""

from __future__ import annotations

import dataclasses

import numpy

from workflow_src.plan.counting import Counts

MODES = ("eager", "graphs")  # train.compile: off (eager, or fuse: counted as eager) | graphs
FLOOR_FRACTION = 0.4  # the floor's share of the peak (issue 21's definition of the floor)
# A replay: the graph's launch and the copies of a batch (source, lengths, decoder inputs, targets,
# their mask) and of the learning rate into the graph's fixed inputs
REPLAY_OPERATORS = 1 + 6
# A batch prepared for a replay: each of its five tensors built, pinned and copied to the device
BATCH_OPERATORS = 3 * 5
# Host threads a GPU job keeps busy: the one issuing its steps (the host terms) and the one preparing its
# batches (nmt_data.prefetched); intra-op threads beyond them run no kernel of a GPU job
THREADS_PER_JOB = 2


@dataclasses.dataclass(frozen=True)
class Device:
    """A GPU's documented peak numbers (NVIDIA's datasheets: SXM, dense)."""

    name: str
    peak_flops: dict  # precision -> FLOP/s
    hbm_bytes_per_second: float


H100 = Device("H100 SXM", {"fp32": 67e12, "tf32": 495e12, "bf16": 989e12}, 3.35e12)  # HBM3
# The H200 is the H100's GH100 (the same SMs, clocks and peaks) with HBM3e
H200 = Device("H200 SXM", {"fp32": 67e12, "tf32": 495e12, "bf16": 989e12}, 4.8e12)
DEVICES = (H100, H200)


def device_named(name: str) -> Device:
    """The device whose model a GPU check's `device_name` (torch.cuda.get_device_name) names."""
    for device in DEVICES:
        if device.name.split()[0] in name:
            return device
    raise ValueError(
        f"no documented peaks for {name!r} (workflow_src/plan/costmodel.py DEVICES: "
        f"{', '.join(d.name for d in DEVICES)})"
    )


@dataclasses.dataclass(frozen=True)
class CostModel:
    """Seconds per counted unit on `device` (module docstring); `fitted` names the terms a
    measurement fixed, the others are priors that no measurement has tested yet."""

    device: Device
    host_operator: float  # s per dispatched operator (a fused LSTM layer: one)
    host_view: float  # s per dispatched view
    kernel: float  # s of GPU time per kernel outside fused LSTM layers
    recurrent_kernel: float  # s of GPU time per kernel of a fused LSTM layer (per time step, layer, direction)
    achieved: float  # the share of the peak that a step's FLOPs run at
    # s of host time per kernel of a fused LSTM layer, eager: cuDNN's host loop launching each time step's
    # kernels (0: a fused layer's launches in its one operator)
    host_recurrent_kernel: float = 0.0
    fitted: tuple = ()
    source: str = "assumed"

    def on(self, device: Device) -> CostModel:
        """The model carried to `device`: the host terms unchanged (the same host CPU class); the
        GPU's per-kernel terms scaled by the ratio of the devices' bf16 peaks (their SMs and clocks),
        1 between an H200 and an H100; FLOPs and memory traffic at `device`'s own peaks."""
        ratio = self.device.peak_flops["bf16"] / device.peak_flops["bf16"]
        return dataclasses.replace(
            self,
            device=device,
            kernel=self.kernel * ratio,
            recurrent_kernel=self.recurrent_kernel * ratio,
            source=f"{self.source}, carried from {self.device.name} to {device.name}",
        )

    def flop_seconds(self, counts: Counts, precision: str, fraction: float | None = None) -> float:
        return counts.flops / ((fraction or self.achieved) * self.device.peak_flops[precision])

    def memory_seconds(self, counts: Counts) -> float:
        return counts.bytes / self.device.hbm_bytes_per_second

    def latency_seconds(self, counts: Counts) -> float:
        return (counts.kernels - counts.recurrent_kernels) * self.kernel + self.recurrent_seconds(counts)

    def recurrent_seconds(self, counts: Counts) -> float:
        """Of the kernels' latency, the fused LSTM layers'."""
        return counts.recurrent_kernels * self.recurrent_kernel

    def busy(self, counts: Counts, precision: str) -> float:
        """The GPU's seconds: FLOPs, memory traffic and the kernels' latency."""
        return self.flop_seconds(counts, precision) + self.memory_seconds(counts) + self.latency_seconds(counts)

    def host(self, counts: Counts, replays: int | None = None) -> float:
        """The host's seconds: eager (`replays` None) each operator and view dispatched; as graphs,
        `replays` launches with their copies and one batch prepared."""
        if replays is None:
            return (
                counts.operators * self.host_operator
                + counts.views * self.host_view
                + counts.recurrent_kernels * self.host_recurrent_kernel
            )
        return (replays * REPLAY_OPERATORS + BATCH_OPERATORS) * self.host_operator

    def alone(self, counts: Counts, precision: str, replays: int | None = None) -> float:
        """A job's seconds alone on the device: the slower of host and GPU, plus a drained queue
        at each host sync (`counts`' fields may be arrays: one step each, as `fit` evaluates them)."""
        return numpy.maximum(self.host(counts, replays), self.busy(counts, precision)) + counts.syncs * (
            self.host_operator + self.kernel
        )

    def floor(self, counts: Counts, precision: str) -> float:
        return self.flop_seconds(counts, precision, FLOOR_FRACTION) + self.memory_seconds(counts)


def as_graphs(counts: Counts, width_ratio: float, keep_syncs: bool) -> Counts:
    """The counts of a part replayed as a CUDA graph at bucket-padded shapes: FLOPs and kernels
    scaled by the padded width over the counted one (every position computed, the loss masked),
    the optimiser's traffic unchanged, no host sync unless `keep_syncs` (decoding's finished checks)."""
    return dataclasses.replace(
        counts,
        flops=counts.flops * width_ratio,
        kernels=round(counts.kernels * width_ratio),
        recurrent_kernels=round(counts.recurrent_kernels * width_ratio),
        syncs=counts.syncs if keep_syncs else 0,
    )
