"""Forward passes of every model family on fake CUDA tensors, for `tests/test_fake_cuda.py`.

`python tests/fake_cuda_forward.py [CASE ...]` runs the named cases (all by default) in this
process and prints one JSON line per case as it ends: `{"case": ..., "ok": ..., ...}`. The test
runs it in a subprocess, because a fake CUDA tensor that reaches autograd aborts a CPU build of
torch (a C++ terminate), which must fail one test and not the suite.

What runs where (torch 2.13, CPU build, no GPU):
- Parameters and buffers are made by factory calls on device "cuda" under `FakeTensorMode`
  (moves, `uniform_` and `to_empty` need a CUDA runtime) and put into a model built on the
  CPU with `torch.nn.utils.stateless._reparametrize_module`, which `torch.func.functional_call`
  uses: the model's own methods (`loss`, `greedy`, `beam_search`, train_lm's `train_epoch` and
  `evaluate`) then run as the jobs run them, on fake CUDA tensors, through the meta kernels.
  Nothing requires grad; `Tensor.backward` is replaced by a no-op (backward passes are
  gpu_check's, on a real device).
- `Harness`, a dispatch mode above the fake mode, is the machine: it records every host read
  of device data (`.item()`, `bool()`, `.tolist()`: aten._local_scalar_dense; `.cpu()`,
  `.to("cpu")`: a device-to-host copy; an operator whose output size depends on device data,
  such as `nonzero`), with the function that made it; a read returns a stand-in (False, 0), so
  a run goes on and every read is listed. Host tensors stay real: an operator on real CPU
  tensors alone runs for real, as the host would run it; a copy of one to the device is an
  upload (recorded, not a read). The packed-sequence operators, whose output sizes come from
  host lengths, are computed from those lengths (their data by the padded LSTM's own fake
  kernel, which checks the weights), since their meta kernels refuse any data-dependent size.
- `pin_memory` needs a CUDA runtime: it is the identity here (recorded).
- CUDA autocast is unavailable on this build (torch disables it with a warning), so dtypes
  are those of fp32 runs; bf16 is gpu_check's.
- No CUDA graph can be captured: the graph-safe steps of `train.compile: graphs` run as they
  are (`_uncaptured`), as their warm-up calls run on a GPU.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import random
import sys
import time
import traceback
import warnings
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # train_epoch's progress bar, before tqdm is imported
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

aten = torch.ops.aten
CUDA = torch.device("cuda")
META = torch.device("meta")
HERE = Path(__file__).resolve()
TORCH_DIR = Path(torch.__file__).resolve().parent

# Sizes: small, but every output-layer path is taken (a sampled softmax's share of the target
# vocabulary, 0.25 x 64 = 16 words, holds the batch's 9 target tokens: the sync-free sampler).
SRC_VOCAB, TGT_VOCAB, HIDDEN, EMBEDDING, JOINT_DIM, TABLE_DIM = 30, 64, 8, 6, 5, 300
LM_VOCAB, LM_SIZE = 50, 8
SOURCES = [[4, 5, 6], [7, 8], [9, 10, 11, 12]]
TARGETS = [[5, 6, 3], [7, 3], [8, 9, 10, 3]]  # each ends in </s> (3)
DECODE_STEPS_BELOW_CHECK = 7  # fewer steps than the finished check's interval (8): no read at all
DECODE_STEPS_TWO_CHECKS = 16  # two checks: steps 8 and 16
BEAM = 3
STATIC_BUCKETS = [4, 8]  # train.length_buckets of the graph-safe step: SOURCES and TARGETS fit 4


class HostReadError(RuntimeError):
    """A read that cannot be stood in for (an output size that depends on device data)."""


def site() -> str:
    """`path:qualname:line` of the innermost frame outside torch and this harness: who read."""
    frame = sys._getframe(1)
    while frame is not None:
        path = Path(frame.f_code.co_filename).resolve()
        ours = path == HERE and (frame.f_code.co_qualname.split(".")[0] in ("Harness", "HostSide", "site"))
        if not ours and TORCH_DIR not in path.parents and path.name != "contextlib.py":
            try:
                shown = path.relative_to(REPO)
            except ValueError:
                shown = path
            return f"{shown}:{frame.f_code.co_qualname}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def is_fake(x) -> bool:
    return isinstance(x, FakeTensor)


def on_device(x) -> bool:
    """On the (fake) device; fake "meta" is CUDA shown as meta for a device guard (`HostSide`)."""
    return isinstance(x, torch.Tensor) and (x.device.type == "cuda" or (is_fake(x) and x.device.type == "meta"))


class Harness(TorchDispatchMode):
    """Records host reads, uploads and operators; keeps host tensors real (module docstring)."""

    def __init__(self):
        super().__init__()
        self.reads: list[dict] = []
        self.uploads: list[str] = []
        self.ops: collections.Counter = collections.Counter()

    def mark(self) -> tuple[int, int]:
        return len(self.reads), len(self.uploads)

    def rewind(self, marks: tuple[int, int]) -> None:
        del self.reads[marks[0] :], self.uploads[marks[1] :]

    def read(self, kind: str, func) -> None:
        self.reads.append({"kind": kind, "op": str(func), "site": site()})

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops[str(func.overloadpacket)] += 1
        tensors = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
        fake_inputs = any(is_fake(x) for x in tensors)

        if func is aten._local_scalar_dense.default:
            if not fake_inputs:
                return self.real(func, args, kwargs)
            self.read("scalar (item/bool/tolist)", func)
            dtype = args[0].dtype
            return False if dtype == torch.bool else 0 if not dtype.is_floating_point else 0.0
        if func in (aten._to_copy.default, aten.copy_.default):
            source = args[1] if func is aten.copy_.default else args[0]
            target = args[0].device if func is aten.copy_.default else kwargs.get("device") or source.device
            target = torch.device(target)
            if on_device(source) and target.type == "cpu":
                self.read("device-to-host copy", func)
            elif not is_fake(source) and target.type == "cuda":
                self.uploads.append(site())
                if func is aten.copy_.default:
                    return args[0]
                return torch.empty_strided(
                    source.shape, source.stride(), dtype=kwargs.get("dtype") or source.dtype, device=CUDA
                )
        if func is aten._pack_padded_sequence.default:
            return self.pack(*args, **kwargs)
        if func is aten.lstm.data:
            return self.packed_lstm(*args, **kwargs)
        if func is aten._pad_packed_sequence.default:
            return self.pad_packed(*args, **kwargs)
        if self.data_dependent_size(func, args) and any(on_device(x) for x in tensors):
            self.read("output size from device data", func)
            raise HostReadError(f"{func}: its output size is device data, a host sync ({site()})")
        if not fake_inputs and torch.device(kwargs.get("device") or "cpu").type != "cuda":
            return self.real(func, args, kwargs)  # host work on host tensors
        return func(*args, **kwargs)

    @staticmethod
    def data_dependent_size(func, args) -> bool:
        """Whether the operator's output size depends on tensor data (a host sync on CUDA):
        `nonzero`, `masked_select`, ...; indexing only with a boolean mask."""
        if torch.Tag.dynamic_output_shape not in func.tags:
            return False
        if func.overloadpacket in (aten.index, aten.index_put, aten.index_put_, aten._index_put_impl_):
            return any(
                isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in args[1] if i is not None
            )
        return True

    @staticmethod
    def real(func, args, kwargs):
        with _disable_current_modes():
            return func(*args, **kwargs)

    @staticmethod
    def host_list(tensor: torch.Tensor, what: str) -> list[int]:
        if is_fake(tensor):
            raise HostReadError(f"{what} must be host data (a CPU tensor made on the host), not {tensor}")
        with _disable_current_modes():
            return tensor.tolist()

    def pack(self, input, lengths, batch_first):
        lens = self.host_list(lengths, "pack_padded_sequence's lengths")
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order (aten._pack_padded_sequence)")
        if min(lens) <= 0 or len(lens) != input.shape[0 if batch_first else 1]:
            raise RuntimeError(f"pack_padded_sequence: lengths {lens} do not fit input {tuple(input.shape)}")
        with _disable_current_modes():
            batch_sizes = torch.tensor([sum(n > t for n in lens) for t in range(max(lens))], dtype=torch.int64)
        return torch.empty(sum(lens), *input.shape[2:], dtype=input.dtype, device=input.device), batch_sizes

    def packed_lstm(self, data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional):
        sizes = self.host_list(batch_sizes, "a packed sequence's batch sizes")
        padded = torch.empty(len(sizes), sizes[0], data.shape[-1], dtype=data.dtype, device=data.device)
        out, h, c = aten.lstm.input(padded, hx, params, has_biases, num_layers, dropout, train, bidirectional, False)
        return torch.empty(data.shape[0], out.shape[-1], dtype=out.dtype, device=out.device), h, c

    def pad_packed(self, data, batch_sizes, batch_first, padding_value, total_length):
        sizes = self.host_list(batch_sizes, "a packed sequence's batch sizes")
        steps = max(total_length, len(sizes))
        out = torch.empty(steps, sizes[0], *data.shape[1:], dtype=data.dtype, device=data.device)
        with _disable_current_modes():
            lengths = torch.tensor([sum(s > b for s in sizes) for b in range(sizes[0])], dtype=torch.int64)
        return (out.transpose(0, 1) if batch_first else out), lengths


class HostSide(TorchFunctionMode):
    """What a CPU build refuses before any operator is dispatched, answered here:

    - `.to(cuda)` / `.cuda()` of a host tensor (torch initialises CUDA first): recorded as an
      upload and answered with a fake CUDA tensor of the same shape (its values unknown, as
      every fake tensor's);
    - Python's own bindings that take a device guard of the tensor's device (indexing
      `t[...]`, `t[...] = v`, `~t`, ...), which a CPU build has none of for CUDA: the call is
      made again with the fake CUDA tensors shown as "meta" (the same operators run, through the
      same fake mode and harness, which counts meta as the device) and its results shown as CUDA.
    """

    def __init__(self, harness: "Harness"):
        super().__init__()
        self.harness = harness

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.Tensor.to, torch.Tensor.cuda) and args and not is_fake(args[0]):
            source = args[0]
            if func is torch.Tensor.cuda:
                device, dtype = CUDA, source.dtype
            else:
                device, dtype, _, _ = torch._C._nn._parse_to(*args[1:], **kwargs)
                dtype = dtype or source.dtype
            if device is not None and torch.device(device).type == "cuda":
                self.harness.uploads.append(site())
                return torch.empty_strided(source.shape, source.stride(), dtype=dtype, device=CUDA)
        marks = self.harness.mark()
        try:
            return func(*args, **kwargs)
        except RuntimeError as err:
            if "not linked with support for cuda" not in str(err):
                raise
            fakes = [t for t in tree_flatten((args, kwargs))[0] if is_fake(t) and t.fake_device.type == "cuda"]
            if not fakes:
                raise
        self.harness.rewind(marks)  # what the refused attempt recorded is recorded again
        devices = [t.fake_device for t in fakes]
        for t in fakes:
            t.fake_device = META
        try:
            out = func(*args, **kwargs)
        finally:
            for t, device in zip(fakes, devices):
                t.fake_device = device
        for t in tree_flatten(out)[0]:
            if is_fake(t) and t.fake_device.type == "meta":
                t.fake_device = devices[0]
        return out


@contextlib.contextmanager
def fake_cuda():
    """(fake mode, harness) for one case: a fresh fake mode, the harness above it, no autograd,
    and the device-keyed caches of workflow_src emptied (they would keep another mode's tensors)."""
    from workflow_src.model import losses, vmf

    for cached in (losses._allowed_ids, vmf._debye_matrix):
        cached.cache_clear()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    harness = Harness()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CUDA autocast disabled; data_ptr of fake tensors
        with torch.no_grad(), mode, harness, HostSide(harness):
            yield mode, harness
    for cached in (losses._allowed_ids, vmf._debye_matrix):
        cached.cache_clear()


def fake_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer of `model` (shared ones once), made on fake CUDA by factory
    calls; call under the fake mode. A 2-d buffer is a unit-row table (the target embeddings)."""
    state = {}
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        made = torch.randn(tensor.shape, dtype=tensor.dtype, device=CUDA) * 0.1
        state[name] = F.normalize(made, dim=-1) if name.endswith("table") else made
    return state


@contextlib.contextmanager
def on_fake_cuda(model: torch.nn.Module, state: dict):
    """The model with `state` (tied entries tied), as torch.func.functional_call runs it."""
    from torch.nn.utils.stateless import _reparametrize_module

    with _reparametrize_module(model, state, tie_weights=True, strict=False):
        yield model


def describe(tensor: torch.Tensor) -> dict:
    return {
        "device": tensor.device.type,
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "shape": list(tensor.shape),
    }


def call_counts(targets: dict[str, tuple]) -> tuple[collections.Counter, contextlib.ExitStack]:
    """Count calls of functions (name -> (owner, attribute)) by wrapping them; an ExitStack undoes it."""
    counts, stack = collections.Counter(), contextlib.ExitStack()
    for label, (owner, attribute) in targets.items():
        original = getattr(owner, attribute)

        def wrapped(*args, __original=original, __label=label, **kwargs):
            counts[__label] += 1
            return __original(*args, **kwargs)

        setattr(owner, attribute, wrapped)
        stack.callback(setattr, owner, attribute, original)
    return counts, stack


# -- the families -------------------------------------------------------------------------------
def config() -> dict:
    import yaml

    with open(REPO / "config.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def nmt_key(spec: dict) -> tuple:
    """What a family's code path depends on (sizes and rates aside)."""
    m = spec["model"]
    return (
        spec["output_layer"],
        spec.get("output_form"),
        spec["loss"],
        tuple(sorted(spec.get("loss_params") or {})),
        spec.get("negative"),
        bool(spec.get("embeddings")),
        bool(spec.get("tied")),
        spec.get("joint_dim") is not None,
        spec.get("sample_share") is not None,
        m.get("encoder_bidirectional", True),
        m.get("input_feed", True),
        min(m["encoder_layers"], 2),
        min(m["decoder_layers"], 2),
        m["dropout"] > 0,
    )


def nmt_label(spec: dict) -> str:
    m = spec["model"]
    parts = [spec.get("output_form") or spec["output_layer"], spec["loss"]]
    parts += [f"{k}" for k in sorted(spec.get("loss_params") or {})]
    parts += [spec["negative"]] if spec.get("negative") else []
    parts += ["pretrained"] if spec.get("embeddings") else []
    parts += ["tied"] if spec.get("tied") else []
    parts += ["sampled"] if spec.get("sample_share") else []
    parts += [
        f"enc{min(m['encoder_layers'], 2)}{'bi' if m.get('encoder_bidirectional', True) else 'uni'}",
        f"dec{min(m['decoder_layers'], 2)}",
        "feed" if m.get("input_feed", True) else "nofeed",
    ]
    parts += ["dropout"] if m["dropout"] > 0 else []
    return "nmt-" + "-".join(parts)


def lm_key(spec: dict) -> tuple:
    return (
        spec["loss"],
        spec["reuse_embedding"],
        spec["dropout"] > 0,
        spec.get("output_bias", True),
        spec.get("unit_norm_embeddings", False),
    )


def lm_label(spec: dict) -> str:
    parts = [
        spec["loss"],
        "re" if spec["reuse_embedding"] else "untied",
        "dropout" if spec["dropout"] > 0 else "nodropout",
    ]
    parts += [] if spec.get("output_bias", True) else ["nobias"]
    parts += ["unitnorm"] if spec.get("unit_norm_embeddings") else []
    return "lm-" + "-".join(parts)


def families(cfg: dict | None = None) -> dict[str, dict]:
    """label -> a resolved spec, one per family of the configured jobs (`workflow_src.plan`'s
    planned jobs: every model of every configured table and figure), sizes made small."""
    from workflow_src import layout, lm_specs, plan

    cfg = cfg or config()
    found: dict[tuple, tuple[str, dict]] = {}
    for job in plan.planned_jobs(cfg):
        if job.kind == "lm":
            spec = lm_specs.resolve_lm_spec(cfg, job.dataset, job.experiment, job.seed)
            key, label = ("lm", *lm_key(spec)), lm_label(spec)
        else:
            spec = layout.resolve_spec(cfg, job.dataset, job.pair, job.experiment, job.seed)
            key, label = ("nmt", *nmt_key(spec)), nmt_label(spec)
        found.setdefault(key, (label, spec))
    labels = [label for label, _ in found.values()]
    duplicates = {label for label in labels if labels.count(label) > 1}
    if duplicates:
        raise AssertionError(f"two families share a label: {sorted(duplicates)}; make the label say what differs")
    return {label: spec for label, spec in found.values()}


def small_nmt(spec: dict) -> dict:
    m = spec["model"]
    model = {**m, "hidden": HIDDEN, "src_embedding": EMBEDDING, "tgt_embedding": EMBEDDING}
    return {
        **spec,
        "model": model,
        "joint_dim": JOINT_DIM if spec.get("joint_dim") else None,
        "device": "cuda",
        "precision": spec.get("precision", "auto"),
    }


def small_lm(spec: dict) -> dict:
    return {**spec, "size": LM_SIZE, "bptt": 3, "batch_size": 2, "eval_batch_size": 2, "device": "cuda"}


def vocabularies():
    from workflow_src.data.vocab import SPECIALS, Vocab

    return (
        Vocab(list(SPECIALS) + [f"s{i}" for i in range(SRC_VOCAB - len(SPECIALS))]),
        Vocab(list(SPECIALS) + [f"t{i}" for i in range(TGT_VOCAB - len(SPECIALS))]),
    )


def build_nmt(spec):
    from workflow_src.model.seq2seq import Seq2Seq

    src_vocab, tgt_vocab = vocabularies()
    needs_table = spec.output_layer == "continuous" or spec.tied or spec.embeddings
    table = F.normalize(torch.randn(TGT_VOCAB, TABLE_DIM), dim=-1) if needs_table else None
    return Seq2Seq(spec, len(src_vocab), len(tgt_vocab), src_vocab.pad, table), src_vocab, tgt_vocab


def run_nmt(label: str, spec: dict, searches: bool = False, translate: bool = False) -> dict:
    """The training step's forward and loss (train.py's loop body up to backward), the validation
    loss (train.mean_loss) and greedy search of fewer steps than the finished check's interval;
    with `searches`, greedy (and, for a softmax, beam) search below and across that interval;
    with `translate`, decode.translate (the decode job's loop) over a batch."""
    from workflow_src.decode import decode
    from workflow_src.model import nmt_data, precision as precisions
    from workflow_src.train import static_step, train
    from workflow_src.model import joint, losses, seq2seq
    from workflow_src.specs import TrainSpec, load

    spec = load(TrainSpec, small_nmt(spec), label)
    model, src_vocab, tgt_vocab = build_nmt(spec)
    result = {
        "case": label,
        "family": {
            k: getattr(spec, k)
            for k in ("experiment", "output_layer", "output_form", "loss", "negative", "tied", "sample_share")
        },
    }
    precision = precisions.resolve(spec.precision, CUDA)
    multiple = nmt_data.length_multiple(spec.compile)
    counts, undo = call_counts(
        {
            "Decoder.embedding_gates": (seq2seq.Decoder, "embedding_gates"),
            "lstm_cell": (seq2seq, "lstm_cell"),
            "sample_vocabulary_topk": (joint, "sample_vocabulary_topk"),
            "sample_vocabulary": (joint, "sample_vocabulary"),
            "uniform_negative_ids": (losses, "uniform_negative_ids"),
            "sample_vocabulary_static": (static_step, "sample_vocabulary_static"),
            "unpacked": (seq2seq, "unpacked"),
            "pack_padded_sequence": (seq2seq, "pack_padded_sequence"),
        }
    )
    with undo, fake_cuda() as (mode, harness):
        state = fake_state(model)
        with on_fake_cuda(model, state):
            model.train()
            indices = nmt_data.batch_indices(
                [len(s) for s in SOURCES], len(SOURCES), random.Random(1), [len(t) for t in TARGETS]
            )
            built = (
                nmt_data.training_batch(SOURCES, TARGETS, idx, src_vocab, tgt_vocab, CUDA, multiple) for idx in indices
            )
            start, ops_before = len(harness.reads), collections.Counter(harness.ops)
            batches = []
            for batch in nmt_data.prefetched(built, CUDA):
                with precisions.autocast(precision, CUDA):
                    loss, n = model.loss(
                        batch.src, batch.lengths, batch.tgt_in, batch.tgt_out, tgt_vocab.pad, batch.positions
                    )
                batches.append(
                    {
                        "loss": describe(loss),
                        "tokens": n,
                        "expected_tokens": batch.tokens,
                        "target_steps": batch.tgt_in.shape[1],
                    }
                )
            step_ops = harness.ops - ops_before
            result["step"] = {
                "batches": batches,
                "reads": harness.reads[start:],
                "fused_lstm_cells": step_ops["aten._thnn_fused_lstm_cell"],
                "cpu_lstm_cells": step_ops["repro.lstm_cell"],
                "decoder_layers": spec.model.decoder_layers,
                "input_feed": spec.model.input_feed,
                "calls": dict(counts),
            }
            counts.clear()
            start = len(harness.reads)
            mean = train.mean_loss(
                model, SOURCES, TARGETS, src_vocab, tgt_vocab, len(SOURCES), CUDA, precision, multiple
            )
            result["validation"] = {"reads": harness.reads[start:], "value_type": type(mean).__name__}
            model.eval()
            src, lengths = nmt_data.source_batch(SOURCES, list(range(len(SOURCES))), src_vocab, CUDA, multiple)
            banned = [tgt_vocab.pad, tgt_vocab.bos]
            result["finished_check_interval"] = seq2seq.finished_check_interval(src.device)
            runs = [("greedy", DECODE_STEPS_BELOW_CHECK)]
            if searches:
                runs += [("greedy", DECODE_STEPS_TWO_CHECKS)]
                if spec.output_layer == "softmax":
                    runs += [("beam", DECODE_STEPS_BELOW_CHECK), ("beam", DECODE_STEPS_TWO_CHECKS)]
            for search, max_len in runs:
                start = len(harness.reads)
                if search == "greedy":
                    words, attended = model.greedy(src, lengths, tgt_vocab.bos, tgt_vocab.eos, banned, max_len)
                else:
                    words, attended = model.beam_search(
                        src, lengths, tgt_vocab.bos, tgt_vocab.eos, banned, max_len, BEAM
                    )
                result[f"{search}_{max_len}"] = {
                    "words": describe(words),
                    "attended": describe(attended),
                    "reads": harness.reads[start:],
                }
            if translate:
                start = len(harness.reads)
                sentences = [" ".join(src_vocab.itos[i] for i in s) for s in SOURCES]
                hypotheses = decode.translate(
                    model, spec, src_vocab, tgt_vocab, sentences, CUDA, batch_size=len(SOURCES)
                )
                result["translate"] = {
                    "reads": harness.reads[start:],
                    "hypotheses": len(hypotheses),
                    "max_len": int(2.0 * max(len(s) for s in SOURCES) + 10),
                }
            # train.compile graphs: the graph-safe step on a static batch (a padding row, S and T
            # bucketed to 4), backward a no-op; then validation on static batches
            model.train()
            model.encoder.packed = False
            graphs_spec = dataclasses.replace(
                spec,
                compile="graphs",
                length_buckets=tuple(STATIC_BUCKETS),
                train=dataclasses.replace(spec.train, batch_size=len(SOURCES) + 1),
            )
            optimiser = static_step.adam([t for t in state.values() if t.is_floating_point()], 1e-3, CUDA)
            steps = static_step.TranslationSteps(model, optimiser, graphs_spec, CUDA, precision, src_vocab, tgt_vocab)
            counts.clear()
            start = len(harness.reads)
            batches = []
            with _no_backward():
                static_step.set_learning_rate(optimiser, 5e-4)
                for batch in nmt_data.prefetched([steps.batch(SOURCES, TARGETS, list(range(len(SOURCES))))], CUDA):
                    loss, n = steps.step(batch)
                    batches.append(
                        {
                            "loss": describe(loss),
                            "tokens": n,
                            "shape": list(batch.tgt_out.shape),
                            "expected_tokens": sum(len(t) for t in TARGETS),
                        }
                    )
            result["static_step"] = {"batches": batches, "reads": harness.reads[start:], "calls": dict(counts)}
            start = len(harness.reads)
            mean = steps.mean_loss(SOURCES, TARGETS)
            result["static_validation"] = {"reads": harness.reads[start:], "value_type": type(mean).__name__}
    return result


def run_lm(label: str, spec: dict) -> dict:
    """train_lm.train_epoch (backward a no-op: forward, objective, clipping and the optimiser's
    step over no gradients) over one and over three segments, and steps.evaluate."""
    from workflow_src.model import precision as precisions
    from workflow_src.train import static_step, train_lm

    spec = train_lm.resolve(small_lm(spec))
    model = train_lm.build_model(spec, LM_VOCAB)
    objective = train_lm.build_objective(spec)
    optimiser = torch.optim.SGD(model.parameters(), lr=spec.lr)
    precision = precisions.resolve(spec.precision, CUDA)
    result = {
        "case": label,
        "family": {k: getattr(spec, k) for k in ("experiment", "loss", "reuse_embedding", "dropout")},
    }
    counts, undo = call_counts({"unrolled_lstm": (model, "unrolled")} if hasattr(model, "unrolled") else {})
    undo.enter_context(_no_backward())
    with undo, fake_cuda() as (mode, harness):
        state = fake_state(model)
        with on_fake_cuda(model, state):
            for segments in (1, 3):
                stream = torch.randint(0, LM_VOCAB, (segments * spec.bptt * spec.batch_size + spec.batch_size,))
                data = train_lm.batchify(stream, spec.batch_size).to(CUDA)  # an upload, once per job
                start = len(harness.reads)
                totals = train_lm.train_epoch(model, data, spec, optimiser, objective, precision)
                result[f"train_epoch_{segments}"] = {
                    "reads": harness.reads[start:],
                    "returned": [type(t).__name__ for t in totals],
                }
            # one segment's forward and objective, for devices, dtypes and shapes
            model.train()
            tokens = torch.randint(0, LM_VOCAB, (spec.bptt, spec.batch_size), device=CUDA)
            start = len(harness.reads)
            with precisions.autocast(precision, CUDA):
                logits, h, hidden = model(tokens, model.init_hidden(spec.batch_size))
            per_token = objective(
                logits.flatten(0, 1).float(), tokens.flatten(), model.embedding.weight, model.output_bias
            )
            result["segment"] = {
                "logits": describe(logits),
                "h": describe(h),
                "state": describe(hidden[0]),
                "per_token": describe(per_token),
                "reads": harness.reads[start:],
                "calls": dict(counts),
            }
            held_out = train_lm.batchify(torch.randint(0, LM_VOCAB, (20,)), spec.eval_batch_size).to(CUDA)
            start = len(harness.reads)
            train_lm.evaluate(model, held_out, spec.bptt, precision)
            result["evaluate"] = {"reads": harness.reads[start:]}
            # train.compile graphs: the graph-safe segment, one step short of bptt (padded), backward a no-op
            optimiser = static_step.sgd([t for t in state.values() if t.is_floating_point()], 1.0, CUDA)
            steps = static_step.LanguageModelSteps(model, optimiser, objective, spec, CUDA, precision)
            model.train()
            tokens = torch.randint(0, LM_VOCAB, (spec.bptt - 1, spec.batch_size), device=CUDA)
            start = len(harness.reads)
            total, nll, hidden = steps.step(tokens, tokens, model.init_hidden(spec.batch_size))
            result["static_segment"] = {
                "total": describe(total),
                "nll": describe(nll),
                "state": describe(hidden[0]),
                "reads": harness.reads[start:],
            }
    return result


@contextlib.contextmanager
def _no_backward():
    """Tensor.backward does nothing (fake CUDA has no autograd on a CPU build)."""
    original = torch.Tensor.backward
    torch.Tensor.backward = lambda self, *args, **kwargs: None
    try:
        yield
    finally:
        torch.Tensor.backward = original


@contextlib.contextmanager
def _uncaptured():
    """No CUDA runtime to capture graphs with: `graphs.Captured` runs its function as it is (as
    its warm-up calls do on a GPU)."""
    from workflow_src.model import graphs

    original = graphs.CudaGraphs
    graphs.CudaGraphs = lambda device: None
    try:
        yield
    finally:
        graphs.CudaGraphs = original


@contextlib.contextmanager
def _pin_is_identity():
    """pin_memory needs a CUDA runtime; here it hands the tensor back."""
    original = torch.Tensor.pin_memory
    torch.Tensor.pin_memory = lambda self, *args, **kwargs: self
    try:
        yield
    finally:
        torch.Tensor.pin_memory = original


# -- probes: the harness itself ------------------------------------------------------------------
def run_probe(label: str) -> dict:
    """Deliberate host reads inside a fake CUDA step: each must be recorded (or refused)."""
    probes = {
        "probe-item": lambda x: x.sum().item(),
        "probe-bool": lambda x: bool((x > 0).all()),
        "probe-tolist": lambda x: x.tolist(),
        "probe-cpu": lambda x: x.cpu(),
        "probe-nonzero": lambda x: x.nonzero(),
        "probe-mask-index": lambda x: x[x > 0],
        "probe-none": lambda x: (x * 2).sum(),
    }
    with fake_cuda() as (mode, harness):
        x = torch.randn(3, 4, device=CUDA)
        error = None
        try:
            probes[label](x)
        except Exception as err:  # noqa: BLE001 (a refusal is the point)
            error = f"{type(err).__name__}: {err}"
    return {"case": label, "reads": harness.reads, "error": error}


PROBES = ("probe-item", "probe-bool", "probe-tolist", "probe-cpu", "probe-nonzero", "probe-mask-index", "probe-none")


def cases() -> dict[str, tuple]:
    """label -> (runner, its arguments): the probes, every family (the first softmax and the first
    continuous one also with the searches across the finished check, the first softmax one
    also through decode.translate)."""
    every: dict[str, tuple] = {p: (run_probe, ()) for p in PROBES}
    searched = set()
    for label, spec in families().items():
        if label.startswith("lm-"):
            every[label] = (run_lm, (spec,))
            continue
        first = spec["output_layer"] not in searched
        searched.add(spec["output_layer"])
        every[label] = (run_nmt, (spec, first, first and spec["output_layer"] == "softmax"))
    return every


def main(argv: list[str]) -> None:
    torch.manual_seed(0)
    every = cases()
    for label in argv or list(every):
        started = time.perf_counter()
        try:
            runner, arguments = every[label]
            with _pin_is_identity(), _uncaptured():
                result = runner(label, *arguments)
            result["ok"] = True
        except Exception as err:  # noqa: BLE001 (reported per case)
            result = {
                "case": label,
                "ok": False,
                "error": f"{type(err).__name__}: {err}",
                "traceback": traceback.format_exc()[-4000:],
            }
        result["seconds"] = round(time.perf_counter() - started, 3)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
