"""GPU code proven without a GPU: every model family's forward pass, loss and
decoding run on fake CUDA tensors (`tests/fake_cuda_forward.py`, one subprocess for all of
them: a fake CUDA tensor that reaches autograd aborts a CPU build of torch), with their devices,
dtypes and shapes, and with no host read inside a step but the deliberate ones, which are named
here. And the list of CUDA-only branches in docs/cluster.md is kept true: every one in
workflow_src is listed there with what proves it.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HELPER = REPO / "tests" / "fake_cuda_forward.py"
DOCS = REPO / "docs" / "cluster.md"
SECTION = "## CUDA-only branches and what proves them"
sys.path.insert(0, str(HELPER.parent))

import fake_cuda_forward as fake  # noqa: E402

CASES = fake.cases()  # label -> (runner, (spec, ...)): the probes and one case per model family
FAMILIES = {label: arguments[0] for label, (_, arguments) in CASES.items() if not label.startswith("probe-")}
NMT = sorted(label for label in FAMILIES if label.startswith("nmt-"))
LM = sorted(label for label in FAMILIES if label.startswith("lm-"))
CRASHED = "the process running the cases died in this one"


def run_cases(labels: list[str]) -> dict[str, dict]:
    """Every case's result, from one subprocess; after a crash (a C++ abort) the case it died in
    is marked and the others run again in a new process."""
    results: dict[str, dict] = {}
    remaining = list(labels)
    env = {**os.environ, "TQDM_DISABLE": "1", "PYTHONWARNINGS": "ignore"}
    while remaining:
        run = subprocess.run(
            [sys.executable, str(HELPER), *remaining], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
        )
        for line in run.stdout.splitlines():
            if line.startswith("{"):
                result = json.loads(line)
                results[result["case"]] = result
        left = [label for label in remaining if label not in results]
        if left and run.returncode == 0:
            raise AssertionError(f"{HELPER.name} ended without reporting {left}:\n{run.stderr[-3000:]}")
        if left:
            results[left[0]] = {
                "case": left[0],
                "ok": False,
                "error": f"{CRASHED} (exit status {run.returncode})",
                "traceback": run.stderr[-3000:],
            }
        remaining = left[1:]
    return results


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    return run_cases(list(CASES))


def ran(results: dict, case: str) -> dict:
    result = results[case]
    assert result["ok"], f"{case}: {result['error']}\n{result.get('traceback', '')}"
    return result


def sites(reads: list[dict]) -> dict[str, int]:
    """{file:function: reads}, lines left out."""
    counted: dict[str, int] = {}
    for read in reads:
        key = read["site"].rsplit(":", 1)[0]
        counted[key] = counted.get(key, 0) + 1
    return counted


# -- the harness catches a host read -----------------------------------------------------------
@pytest.mark.parametrize("probe", [p for p in fake.PROBES if p != "probe-none"])
def test_the_harness_catches_a_host_read(results, probe):
    """A deliberate read of device data inside a fake CUDA step (.item(), bool(), .tolist(),
    .cpu(), a boolean mask, nonzero) is recorded with its site, or refused: the step tests below
    would fail on one."""
    result = ran(results, probe)
    assert result["reads"], f"{probe}: the harness let a host read through unrecorded ({result})"
    assert set(sites(result["reads"])) == {"tests/fake_cuda_forward.py:run_probe.<locals>.<lambda>"}


def test_the_harness_records_nothing_without_a_read(results):
    result = ran(results, "probe-none")
    assert result["reads"] == [] and result["error"] is None


# -- translation models ----------------------------------------------------------------------
@pytest.mark.parametrize("family", NMT)
def test_training_step_runs_on_cuda_without_a_host_read(results, family):
    """Seq2Seq.loss as train.py's loop runs it (batches from nmt_data.prefetched, CUDA's
    background thread and pinned memory), up to backward: an fp32 scalar loss on the device,
    the token count from the host, no host read; the decoder takes its CUDA path
    (`embedding_gates` once per batch, every first-layer cell through `lstm_cell` to ATen's
    fused `_thnn_fused_lstm_cell`, never the CPU's `repro::lstm_cell`); a sampled softmax
    draws with the sync-free sampler; random negatives are drawn on the device."""
    step = ran(results, family)["step"]
    spec = FAMILIES[family]
    assert step["batches"]
    for batch in step["batches"]:
        assert batch["loss"] == {"device": "cuda", "dtype": "float32", "shape": []}
        assert batch["tokens"] == batch["expected_tokens"]
    assert step["reads"] == [], f"host reads in the training step: {sites(step['reads'])}"
    calls = step["calls"]
    if step["input_feed"]:
        steps = sum(batch["target_steps"] for batch in step["batches"])
        assert calls.get("Decoder.embedding_gates") == len(step["batches"])
        assert calls.get("lstm_cell") == steps
        assert step["fused_lstm_cells"] >= steps * step["decoder_layers"]
        assert step["cpu_lstm_cells"] == 0
    if spec.get("sample_share"):
        assert calls.get("sample_vocabulary_topk") == len(step["batches"]) and "sample_vocabulary" not in calls
    else:
        assert "sample_vocabulary_topk" not in calls
    if spec.get("negative") == "random":
        assert calls.get("uniform_negative_ids") == len(step["batches"])


@pytest.mark.parametrize("family", NMT)
def test_validation_reads_the_host_once_at_its_end(results, family):
    """train.mean_loss sums on the device and reads the sum once, at its end (deliberate: once
    per validation)."""
    validation = ran(results, family)["validation"]
    assert sites(validation["reads"]) == {"workflow_src/train/train.py:mean_loss": 1}
    assert validation["value_type"] == "float"


@pytest.mark.parametrize("family", NMT)
def test_greedy_search_reads_nothing_before_the_finished_check(results, family):
    """Greedy search of fewer steps than the finished check's interval on CUDA (7 < 8): every
    output layer's decoding scores on the device, ids and attention on the device, no read."""
    result = ran(results, family)
    assert result["finished_check_interval"] == 8
    greedy = result[f"greedy_{fake.DECODE_STEPS_BELOW_CHECK}"]
    shape = [len(fake.SOURCES), fake.DECODE_STEPS_BELOW_CHECK]
    assert greedy["words"] == greedy["attended"] == {"device": "cuda", "dtype": "int64", "shape": shape}
    assert greedy["reads"] == [], f"host reads while decoding: {sites(greedy['reads'])}"


SEARCHED = [label for label in NMT if CASES[label][1][1]]  # run with the searches across the check


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_decoding_reads_the_host_only_at_the_finished_check(results, search):
    """The one deliberate read of a search: `bool(done.all())` every 8 steps on CUDA
    (seq2seq.finished_check_interval): none in 7 steps, two in 16, both there."""
    function = {"greedy": "Seq2Seq.greedy", "beam": "Seq2Seq.beam_search"}[search]
    checked = [label for label in SEARCHED if f"{search}_{fake.DECODE_STEPS_TWO_CHECKS}" in ran(results, label)]
    assert checked, f"no family ran {search} search across the finished check"
    for label in checked:
        result = results[label]
        below, across = (
            result[f"{search}_{steps}"] for steps in (fake.DECODE_STEPS_BELOW_CHECK, fake.DECODE_STEPS_TWO_CHECKS)
        )
        assert below["reads"] == []
        assert sites(across["reads"]) == {f"workflow_src/model/seq2seq.py:{function}": 2}, label
        assert across["words"] == {
            "device": "cuda",
            "dtype": "int64",
            "shape": [len(fake.SOURCES), fake.DECODE_STEPS_TWO_CHECKS],
        }


def test_translate_reads_at_the_finished_check_and_its_results_once(results):
    """decode.translate: the finished checks of greedy search, and the batch's results copied
    to the host at its end (deliberate; one copy each on a GPU, an element at a time here)."""
    translated = [ran(results, label)["translate"] for label in SEARCHED if "translate" in results[label]]
    assert translated
    for result in translated:
        read = sites(result["reads"])
        assert read.pop("workflow_src/model/seq2seq.py:Seq2Seq.greedy") == result["max_len"] // 8
        assert read == {"workflow_src/decode/decode.py:translate": 2 * len(fake.SOURCES) * result["max_len"]}


@pytest.mark.parametrize("family", NMT)
def test_the_graph_safe_step_runs_on_cuda_without_a_host_read(results, family):
    """`static_step.nmt_training_step`, what train.compile graphs captures, on a static batch
    (a padding row; S and T bucketed), with backward a no-op: clipping and Adam (capturable, its
    rate a device tensor, set in place) run over no gradients. An fp32 scalar loss on the device,
    the host's token count, no host read at all: the encoder unpacked (never packed by host
    lengths), a sampled softmax through the fixed-size `sample_vocabulary_static`. Validation on
    static batches reads once, at its end (deliberate)."""
    result = ran(results, family)
    step, spec = result["static_step"], FAMILIES[family]
    assert step["batches"]
    for batch in step["batches"]:
        assert batch["loss"] == {"device": "cuda", "dtype": "float32", "shape": []}
        assert batch["tokens"] == batch["expected_tokens"] and batch["shape"] == [len(fake.SOURCES) + 1, 4]
    assert step["reads"] == [], f"host reads in the graph-safe step: {sites(step['reads'])}"
    calls = step["calls"]
    assert calls.get("unpacked") == len(step["batches"]) and "pack_padded_sequence" not in calls
    if spec.get("sample_share"):
        assert calls.get("sample_vocabulary_static") == len(step["batches"])
    assert not {"sample_vocabulary", "sample_vocabulary_topk"} & set(calls)
    assert sites(result["static_validation"]["reads"]) == {
        "workflow_src/train/static_step.py:TranslationSteps.mean_loss": 1
    }


# -- language models -------------------------------------------------------------------------
@pytest.mark.parametrize("family", LM)
def test_lm_epoch_reads_the_host_once_per_epoch(results, family):
    """train_lm.train_epoch (backward a no-op) over 1 and over 3 segments: its two sums read at
    its end, whatever the number of segments (deliberate: once per epoch)."""
    result = ran(results, family)
    for segments in (1, 3):
        epoch = result[f"train_epoch_{segments}"]
        assert sites(epoch["reads"]) == {"workflow_src/train/steps.py:train_epoch": 2}, segments
        assert epoch["returned"] == ["float", "float", "int"]
    assert sites(result["evaluate"]["reads"]) == {"workflow_src/train/steps.py:evaluate": 1}


@pytest.mark.parametrize("family", LM)
def test_lm_segment_runs_on_cuda_without_a_host_read(results, family):
    """One training segment (the variational-dropout segment `unrolled_lstm` where dropout is
    on) and its objective (CE, AL, or Figure 1's beta mix): fp32 on the device, no read."""
    segment = ran(results, family)["segment"]
    steps, batch = 3, 2
    assert segment["logits"] == {"device": "cuda", "dtype": "float32", "shape": [steps, batch, fake.LM_VOCAB]}
    assert segment["h"] == {"device": "cuda", "dtype": "float32", "shape": [steps, batch, fake.LM_SIZE]}
    assert segment["per_token"] == {"device": "cuda", "dtype": "float32", "shape": [steps * batch]}
    assert segment["reads"] == []
    assert bool(segment["calls"].get("unrolled_lstm")) == (FAMILIES[family]["dropout"] > 0)


@pytest.mark.parametrize("family", LM)
def test_the_graph_safe_lm_segment_runs_on_cuda_without_a_host_read(results, family):
    """`static_step.LanguageModelSteps.step` (train.compile graphs) on a segment one step short
    of bptt, padded: its sums in float64 and the next state on the device, no host read."""
    segment = ran(results, family)["static_segment"]
    assert segment["total"] == segment["nll"] == {"device": "cuda", "dtype": "float64", "shape": []}
    assert segment["state"] == {"device": "cuda", "dtype": "float32", "shape": [2, 2, fake.LM_SIZE]}
    assert segment["reads"] == []


# -- settings that only CUDA takes --------------------------------------------------------------
def test_cuda_settings_resolve_as_a_cuda_job_resolves_them():
    """`auto` precision is bf16 on CUDA and turns TF32 on for the recurrent layers' fp32
    (precision.resolve, precision.configure); CUDA graphs are a compile mode on CUDA only
    (compilation.mode). What they do to the arithmetic is gpu_check's."""
    import torch

    from workflow_src.model import compilation, precision

    cuda = torch.device("cuda")
    assert precision.resolve("auto", cuda) == "bf16" and precision.resolve("auto", torch.device("cpu")) == "fp32"
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        precision.configure(precision.resolve("auto", cuda))
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        precision.configure("fp32")
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
    assert compilation.mode("graphs", cuda) == "graphs"
    with pytest.raises(ValueError, match="compile"):
        compilation.mode("graphs", torch.device("cpu"))


# -- the families are every model -------------------------------------------------------------
def test_the_families_are_every_model_of_the_registry():
    """Every loss, negative sampler, output form, sampling, tying and pretrained-vector choice of
    the registry's translation models, and every LM objective with and without RE, is a family
    run above (the families come from the configured jobs, `workflow_src.plan.planned_jobs`)."""
    from workflow_src import registry

    def traits(e) -> tuple:
        return (
            e["output_layer"],
            e.get("output_form"),
            e["loss"],
            e.get("negative"),
            bool(e.get("tied")),
            bool(e.get("embeddings")),
            e.get("sample_share") is not None,
        )

    registered = {traits(vars(e)) for e in registry.all_experiments().values()}
    covered = {traits(spec) for label, spec in FAMILIES.items() if label.startswith("nmt-")}
    assert registered <= covered, f"models of the registry no family covers: {registered - covered}"
    lms = {
        ("beta" if m.beta is not None else "augmented" if m.augmented else "ce", m.reuse_embedding)
        for m in registry.language_models().values()
    }
    assert lms <= {(FAMILIES[label]["loss"], FAMILIES[label]["reuse_embedding"]) for label in LM}


# -- the list kept true -------------------------------------------------------------------------
CUDA_MODULES = ("torch.cuda", "torch.backends.cuda", "torch.backends.cudnn")


def dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def names_cuda(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value == "cuda"
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(names_cuda(e) for e in node.elts)


class CudaBranches(ast.NodeVisitor):
    """(function, line) of every CUDA-only use: `x.is_cuda`, a comparison with "cuda"
    (`device.type == "cuda"`, `!= "cuda"`, `in ("cuda", ...)`), `torch.cuda.*`,
    `torch.backends.cuda*`."""

    def __init__(self):
        self.stack: list[str] = []
        self.found: set[tuple[str, int]] = set()

    def scoped(self, node):
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = scoped

    def add(self, node):
        self.found.add((".".join(self.stack) or "<module>", node.lineno))

    def visit_Attribute(self, node):
        name = dotted(node)
        if node.attr == "is_cuda" or (name and any(name == m or name.startswith(m + ".") for m in CUDA_MODULES)):
            self.add(node)
        else:
            self.generic_visit(node)

    def visit_Compare(self, node):
        if any(names_cuda(side) for side in (node.left, *node.comparators)):
            self.add(node)
        self.generic_visit(node)


def cuda_branches(source: str) -> set[tuple[str, int]]:
    finder = CudaBranches()
    finder.visit(ast.parse(source))
    return finder.found


def workflow_branches() -> dict[tuple[str, str], list[int]]:
    """(file, function) -> lines, over workflow_src (gpu_check, the GPU's own check, aside)."""
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted((REPO / "workflow_src").rglob("*.py")):
        relative = path.relative_to(REPO).as_posix()
        if relative.startswith("workflow_src/gpu_check"):
            continue
        for function, line in cuda_branches(path.read_text(encoding="utf-8")):
            found.setdefault((relative, function), []).append(line)
    return found


def documented_branches() -> dict[tuple[str, str], str]:
    """(file, function) -> what proves it, from the table of docs/cluster.md's section."""
    text = DOCS.read_text(encoding="utf-8")
    assert SECTION in text, f"{DOCS} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 4 or set(cells[0]) <= {"-", ":", " "} or cells[0] == "file":
            continue
        rows[(cells[0].strip("`"), cells[1].strip("`"))] = cells[-1]
    return rows


def test_the_scanner_finds_each_form():
    source = """
import torch
def a(x): return x.is_cuda
def b(d): return 8 if d.type == "cuda" else 1
def c(d): return d.type != 'cuda'
def e(d): return d.type in ("cuda", "cpu")
def f(): torch.cuda.synchronize()
def g(): torch.backends.cuda.matmul.allow_tf32 = True
class K:
    def m(self, x): return x.device.type == "cuda"
def no(d): return d.type == "cpu"
"""
    assert {function for function, _ in cuda_branches(source)} == {"a", "b", "c", "e", "f", "g", "K.m"}


def test_every_cuda_only_branch_is_listed_with_what_proves_it():
    """docs/cluster.md lists each (file, function) of workflow_src with a CUDA-only branch and
    what proves it; a new branch fails here until it is listed, a listed one that is gone too."""
    found, listed = workflow_branches(), documented_branches()
    missing = {
        f"{file} {function} (lines {lines})"
        for (file, function), lines in found.items()
        if (file, function) not in listed
    }
    stale = {f"{file} {function}" for file, function in listed if (file, function) not in found}
    assert not missing, f"CUDA-only branches {SECTION!r} in docs/cluster.md does not list: {sorted(missing)}"
    assert not stale, f"{SECTION!r} in docs/cluster.md lists branches that are gone: {sorted(stale)}"


def test_what_proves_each_listed_branch_exists():
    """Each row names a test (`test_x` of this file, `tests/test_y.py::test_x` of another), or a
    gpu_check check (run on a real GPU)."""
    for key, proof in documented_branches().items():
        named = re.findall(r"(?:(tests/test_\w+\.py)::)?\b(test_\w+)", proof)
        assert named or "gpu_check" in proof, f"{key}: nothing proves it ({proof!r})"
        for file, test in named:
            source = (REPO / file).read_text(encoding="utf-8") if file else Path(__file__).read_text(encoding="utf-8")
            assert re.search(rf"^def {test}\(", source, re.M), f"{key}: {file or Path(__file__).name} has no {test}"


def test_the_step_timer_synchronises_a_cuda_device_around_each_step(monkeypatch):
    """model/timing.py's CUDA-only branch: on a CUDA device each timed step is bracketed by
    torch.cuda.synchronize (queued kernels counted in its time); on the CPU it never is. A CPU build
    has no CUDA runtime to synchronise, so the call is recorded instead of made."""
    import torch

    from workflow_src.model import timing

    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: events.append(("sync", str(device))))
    timing.median_seconds(lambda: events.append("step"), torch.device("cuda", 0), steps=3, warmup=1)
    assert events == ["step"] + [("sync", "cuda:0"), "step", ("sync", "cuda:0")] * 3
    events.clear()
    timing.median_seconds(lambda: events.append("step"), torch.device("cpu"), steps=2)
    assert events == ["step", "step"]
