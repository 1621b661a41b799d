"""Functions captured as CUDA graphs, once per shape, and replayed (config `train.compile: graphs`).

`Captured(function, device)` is called like `function`, with tensors (and hashable constants) as
its arguments. Per key (every argument's shape and dtype, the constants, the grad mode and, given
a `module`, its training flag):

    the first `warmup` calls   run `function` as it is, on the capture stream: they are real calls
                               (a training step updates the model), and they make every lazy
                               allocation (the optimiser's state, cuBLAS's workspace on that
                               stream) before capture
    the next call              copies its arguments into static inputs, captures `function` on
                               them with `torch.cuda.graph`, and replays the graph
    every later call           copies its arguments into the static inputs and replays

and returns the graph's static outputs: they hold this call's results until the next call with
the same key replays the graph (read or copy them before). The functions must be graph-safe: no
host read, no shape from device data, parameters and optimiser state updated in place (the
static steps of `workflow_src/train/static_step.py` and the decoder's one step are).

Per torch's CUDA graphs notes (docs/cluster.md cites them): the warm-up runs on a side stream
(here the one capture stream, shared by every capture, as `torch.cuda.graph`'s `stream` note asks
of captures sharing a pool); all graphs share one memory pool per device
(`torch.cuda.graph_pool_handle`). Sharing is safe here because the graphs run one at a time and
each is self-contained: nothing one replay leaves behind is read by another but its outputs,
which stay allocated (referenced here), so no other capture reuses their memory.

Off CUDA nothing is captured: `function` runs as it is on every call (the static steps are
tested that way on the CPU; `train.compile: graphs` itself is refused there, `compilation.mode`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten, tree_map

WARMUP_CALLS = 2  # eager calls per key before capture: the first initialises, the second runs as every later one will


class CudaGraphs:
    """torch's CUDA graphs for one device: one side stream for every warm-up and capture, one
    memory pool shared by every capture (module docstring)."""

    _shared: dict = {}

    def __init__(self, device: torch.device):
        if device not in self._shared:
            self._shared[device] = (torch.cuda.Stream(device), torch.cuda.graph_pool_handle())
        self.device = device
        self.stream, self.pool = self._shared[device]

    def eager(self, function: Callable, args):
        current = torch.cuda.current_stream(self.device)
        self.stream.wait_stream(current)
        with torch.cuda.stream(self.stream):
            outputs = function(*args)
        current.wait_stream(self.stream)
        # made on the side stream, used on this one: the allocator must not reuse them before it is done
        for output in tree_flatten(outputs)[0]:
            if _is_tensor(output) and output.device.type == "cuda":
                output.record_stream(current)
        return outputs

    def capture(self, function: Callable, inputs: list) -> "CapturedGraph":
        graph = torch.cuda.CUDAGraph()
        # thread_local: the thread that builds the next batches pins host memory meanwhile (a CUDA
        # call that a "global" capture would refuse from any thread); only this thread must not
        with torch.cuda.graph(graph, pool=self.pool, stream=self.stream, capture_error_mode="thread_local"):
            outputs = function(*inputs)
        return CapturedGraph(graph, outputs)


@dataclasses.dataclass
class CapturedGraph:
    graph: Any
    outputs: Any

    def replay(self) -> None:
        self.graph.replay()


@dataclasses.dataclass
class Entry:
    calls: int = 0
    inputs: list | None = None  # the static inputs, one pytree per argument
    captured: Any = None  # a `CapturedGraph` (or a test's stand-in: `replay()`, `outputs`)
    sources: list | None = None  # per argument: the object last copied in, kept for `constant` ones


def _is_tensor(x) -> bool:
    return isinstance(x, torch.Tensor)


class Captured:
    """`function` captured once per key and replayed (module docstring). `constant` names the
    positions of arguments that stay the same objects across calls with unchanged contents (a
    decoder's attention keys over a sentence batch): they are copied only when another object
    comes. `graphs` is the capturing machinery: `CudaGraphs` of a CUDA `device`; none (`function`
    runs as it is) elsewhere."""

    def __init__(
        self,
        function: Callable,
        device: torch.device,
        module: torch.nn.Module | None = None,
        warmup: int = WARMUP_CALLS,
        constant: tuple[int, ...] = (),
        graphs=None,
    ):
        self.function, self.module, self.warmup, self.constant = function, module, warmup, constant
        self.graphs = graphs if graphs is not None else CudaGraphs(device) if device.type == "cuda" else None
        self.entries: dict[tuple, Entry] = {}

    @property
    def captures(self) -> int:
        """Graphs captured so far (one per key)."""
        return sum(entry.captured is not None for entry in self.entries.values())

    def key(self, leaves: list, spec) -> tuple:
        described = tuple((tuple(x.shape), x.dtype) if _is_tensor(x) else x for x in leaves)
        return (
            str(spec),
            described,
            torch.is_grad_enabled(),
            self.module.training if self.module is not None else None,
        )

    def __call__(self, *args):
        if self.graphs is None:
            return self.function(*args)
        leaves, spec = tree_flatten(args)
        entry = self.entries.setdefault(self.key(leaves, spec), Entry())
        if entry.calls < self.warmup:
            entry.calls += 1
            return self.graphs.eager(self.function, args)
        if entry.captured is None:
            entry.inputs = [tree_map(lambda x: x.clone() if _is_tensor(x) else x, arg) for arg in args]
            entry.sources = [None] * len(args)
            entry.captured = self.graphs.capture(self.function, entry.inputs)
        self._copy_inputs(entry, args)
        entry.captured.replay()
        return entry.captured.outputs

    def _copy_inputs(self, entry: Entry, args) -> None:
        for position, (static, arg) in enumerate(zip(entry.inputs, args)):
            if position in self.constant and entry.sources[position] is arg:
                continue
            for destination, source in zip(tree_flatten(static)[0], tree_flatten(arg)[0]):
                if _is_tensor(destination) and destination is not source:
                    destination.copy_(source, non_blocking=True)
            entry.sources[position] = arg if position in self.constant else None
