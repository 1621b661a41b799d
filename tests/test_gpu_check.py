"""The GPU check (workflow_src/gpu_check) on the CPU: it runs where only a bare GPU machine's
packages are and says passed or FAILED with a reason on every line; a deadline leaves a valid
partial report naming what it skipped; its families are the dry run's; decoding and the compile
check on the CPU's device path; a failed check exits 1 with the setting that avoids it; the device
script's training on real pairs; its Snakemake wiring never makes a finished model out of date."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch
import yaml

from conftest import REPO, real_fixture, translation_spec
from workflow_src import gpu_check, layout
from workflow_src.gpu_check import compile_check, decoding, device as measured, references
from workflow_src.gpu_check.__main__ import main
from workflow_src.gpu_check.references import CHECK_BATCH, InProcess, decoding_reference
from workflow_src.plan.jobs import PlannedJob
from workflow_src.train import graph_check

check_families = importlib.import_module("workflow_src.gpu_check.families")  # the package's `families` is the function
DEMO = REPO / "config.demo.yaml"
# Absent on a bare GPU machine (torch, numpy, scipy, pandas, sentencepiece, sacrebleu only)
ABSENT_THERE = (
    "snakemake",
    "gensim",
    "fasttext",
    "eflomal",
    "yaml",
    "tqdm",
    "sacremoses",
    "nltk",
    "matplotlib",
    "jsonschema",
)
LINE = re.compile(r"^[^:]+( [^:]+)*: (passed \(.+\)|FAILED: .+ \(avoid with .+\))$")
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def demo_config() -> dict:
    return yaml.safe_load(DEMO.read_text())


@pytest.fixture(scope="module")
def demo_families(demo_config) -> list:
    return check_families.families(demo_config)


def first(found: list, **wanted):
    return next(f for f in found if all(getattr(f, key) == value for key, value in wanted.items()))


@pytest.fixture(scope="module")
def json_config(tmp_path_factory) -> Path:
    """config.demo.yaml as JSON (export-config), for runs without PyYAML."""
    path = tmp_path_factory.mktemp("config") / "config.json"
    assert main(["export-config", str(DEMO), str(path)]) == 0
    return path


def run_bare(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """`python -m workflow_src.gpu_check ARGS` with the packages a bare GPU machine lacks unimportable."""
    code = (
        f"import sys, runpy\nfor name in {ABSENT_THERE!r}:\n    sys.modules[name] = None\n"
        f"sys.argv = ['gpu_check', *{args!r}]\nrunpy.run_module('workflow_src.gpu_check', run_name='__main__')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "REPRO_GPU_LOCK_DIR": str(tmp_path / "locks")}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def verdict_cells(markdown: str) -> list[str]:
    """The last cell of every table row of the report's check tables (their verdict column)."""
    return [
        line.rstrip(" |").rsplit("| ", 1)[1]
        for line in markdown.splitlines()
        if line.startswith("| ") and not line.startswith("| family |") and not line.startswith("| architecture")
    ]


def test_a_bare_machine_run_says_passed_or_failed_on_every_line(json_config, demo_families, tmp_path):
    """Without the workflow's packages: a translation family decoded with a beam, a sampled joint
    family and a language model with dropout, each at the demo's sizes, their CPU references made
    in a worker process as on a GPU machine (gradients through a scratch file)."""
    chosen = [
        next(f for f in demo_families if f.kind == "nmt" and f.spec.sample_share),
        next(f for f in demo_families if f.kind == "nmt" and f.beam > 1 and f.output_layer == "softmax nmt"),
        next(f for f in demo_families if f.kind == "lm" and f.spec.dropout > 0),
    ]
    result = run_bare(
        [
            "--config",
            str(json_config),
            "--out",
            str(tmp_path / "out"),
            "--threads",
            "1",
            "--deadline",
            "280",
            "--workers",
            "1",
            "--families",
            *(f.name for f in chosen),
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    lines = result.stdout.splitlines()
    assert lines and all(LINE.match(line) for line in lines), [line for line in lines if not LINE.match(line)]
    report = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert report["passed"] and report["status"] == "complete" and report["not_reached"] == [] == report["failures"]
    assert set(report["families"]) == {f.name for f in chosen} == set(report["step_seconds"])
    assert report["lines"] == lines[:-1] and lines[-1].startswith("GPU check: passed")
    assert report["environment"]["mps"]["on"] is False and "pipe" in report["environment"]["mps"]["how"]
    for name, entry in report["families"].items():
        assert entry["speed"]["memory"] == "not measured on the CPU" and entry["speed"]["step_seconds"] > 0
        rounds = entry["speed"]["step_seconds_rounds"]
        assert len(rounds) == 2 and entry["speed"]["step_seconds"] == min(rounds) == report["step_seconds"][name]
        assert entry["speed"]["syncs_per_step"] == "not applicable (CPU)"
        assert list(entry["correctness"]) == ["fp32"] and entry["verdict"] == "passed"
    # the plan's fit (plan/fit.py) reads the report's step times with their precision and length
    from workflow_src.plan.fit import measured_steps

    read = {m.name: m for m in measured_steps(report)}
    assert set(read) == {f.name for f in chosen}
    for f in chosen:
        assert (read[f.name].precision, read[f.name].length) == ("fp32", f.length)
        assert read[f.name].experiment == f.job.experiment and read[f.name].target_tokens == f.tokens_per_step
    beam = chosen[1]
    assert set(report["decoding"][beam.name]) == {"greedy", f"beam{beam.beam}"}
    markdown = (tmp_path / "out" / "gpu_check.md").read_text()
    assert markdown.startswith("# GPU check\n\n**passed** on cpu") and "cuDNN" in markdown and "MPS off" in markdown
    cells = verdict_cells(markdown)
    assert len(cells) >= 3 + 3 + 2 and set(cells) == {"passed"}


def test_a_deadline_leaves_a_valid_partial_report_that_names_what_it_skipped(
    monkeypatch, demo_families, tmp_path, capsys
):
    """An item starts only if 1.5 times its kind's longest so far (an estimate before) fits: here a
    family fits and decoding, estimated at far more than the deadline, is not started."""
    family = next(f for f in demo_families if f.kind == "nmt" and f.beam > 1)
    monkeypatch.setitem(gpu_check.ESTIMATES, "family", 0.0)
    monkeypatch.setitem(gpu_check.ESTIMATES, "decoding", 1e6)
    assert main(["--config", str(DEMO), "--out", str(tmp_path), "--families", family.name, "--deadline", "600"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("GPU check: FAILED: 2 not reached before the deadline (avoid with")
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["status"] == "partial: stopped before the deadline" and report["passed"] is False
    assert list(report["families"]) == [family.name] and report["families"][family.name]["verdict"] == "passed"
    why = "not started: it would not end before the --deadline of 600 s (1.5 x ESTIMATES' guess before one has "
    assert [entry.split(f" of {family.name} (")[0] for entry in report["not_reached"]] == ["decoding", "step timing 2"]
    assert all(
        entry.split(f" of {family.name} (", 1)[1].startswith(why + "run for a decoding item, 1.5e+06 s, against ")
        for entry in report["not_reached"]
    ), report["not_reached"]
    markdown = (tmp_path / "gpu_check.md").read_text()
    assert "**incomplete** (partial: stopped before the deadline)" in markdown
    assert f"## Not reached\n\n- decoding of {family.name}" in markdown


def test_a_short_deadline_starts_nothing_and_names_everything(demo_families, tmp_path):
    """A deadline within the margin kept for the last report: `python -m workflow_src.gpu_check`
    exits 1 with a valid report that names every item (as not started, or stopped at the deadline)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "REPRO_GPU_LOCK_DIR": str(tmp_path / "locks")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_src.gpu_check",
            "--config",
            str(DEMO),
            "--out",
            str(tmp_path),
            "--deadline",
            "2",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1 and result.stdout.splitlines()[-1].startswith("GPU check: FAILED: ")
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["families"] == {} and report["passed"] is False
    named = [item.split(" (")[0] for item in report["not_reached"]]
    assert named == [f"family {f.name}" for f in demo_families] + [
        f"decoding of {f.name}" for f in check_families.decoded(demo_families)
    ] + [f"step timing 2 of {f.name}" for f in demo_families]


def test_at_the_deadline_a_running_item_is_reported_not_reached_and_the_process_ends(
    monkeypatch, demo_config, tmp_path
):
    ended = []
    monkeypatch.setattr(os, "_exit", lambda status: ended.append(status) or (_ for _ in ()).throw(SystemExit(status)))
    first = gpu_check.families(demo_config)[0].name
    check = gpu_check.Check(demo_config, CPU, tmp_path, deadline=100.0, only=[first], log=lambda line: None)
    check.write("running")
    with pytest.raises(SystemExit):
        check.stop_now([("family", "family A", None), ("decoding", "decoding of A", None)], [0], InProcess())
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert ended == [1] and report["status"] == "stopped at the deadline" and not report["passed"]
    assert report["not_reached"] == [
        f"{item} (stopped at the --deadline of 100 s)" for item in ("family A", "decoding of A")
    ]


def test_a_families_pattern_that_names_no_family_is_refused_not_checked_as_nothing(demo_config, tmp_path, capsys):
    first = gpu_check.families(demo_config)[0].name
    with pytest.raises(ValueError, match="no family's name contains 'no such family'"):
        gpu_check.Check(demo_config, CPU, tmp_path, only=[first, "no such family"], log=lambda line: None)
    with pytest.raises(SystemExit) as refused:
        main(["--config", str(DEMO), "--out", str(tmp_path), "--families", first, "no such family"])
    assert refused.value.code == 2 and "no family's name contains 'no such family'" in capsys.readouterr().err
    assert not (tmp_path / "gpu_check.json").exists()


def test_the_clock_starts_an_item_only_where_its_estimate_fits(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(gpu_check.time, "monotonic", lambda: now[0])
    clock = gpu_check.Clock(deadline=30.0)
    assert clock.fits("family") == (30.0 - gpu_check.MARGIN >= 1.5 * gpu_check.ESTIMATES["family"])
    with clock.timing("family"):
        now[0] = 4.0
    assert clock.left() == 30.0 - gpu_check.MARGIN - 4.0
    assert clock.fits("family") and gpu_check.Clock(deadline=None).fits("compile")
    now[0] = 30.0 - gpu_check.MARGIN - 5.9  # 5.9 s left, 1.5 x 4 s wanted
    assert not clock.fits("family")


@pytest.mark.workflow
def test_the_checks_families_are_every_training_family_of_the_dry_run(full_config_outputs):
    """Every distinct family of `snakemake -n all`'s trainings (config.yaml) is checked, once:
    its largest models included, which a check by family name never built."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    trained = set()
    for path in full_config_outputs:
        if not (found := layout.trained_job(path)):
            continue
        model, name = found
        kind = "lm" if model.pair == "lm" else "nmt"
        job = PlannedJob(kind, model.dataset, model.pair, model.experiment, model.seed)
        if name == "model.pt":
            trained.add(check_families.family_of(config, job))
    found = check_families.families(config)
    assert len({f.name for f in found}) == len(found) and {f.key for f in found} == trained
    names = " / ".join(f.name for f in found)
    for largest in (
        "joint/ce joint_dim=4096 sample_share=0.25 V 128000->128000",
        "V 100000->300000 m=300",
        "LM 1500x2 V=10000",
        "LM 650x2 V=33278",
        "NMT enc 4x512 dec 4x512",
    ):
        assert largest in names


def test_decoding_runs_on_the_device_path_against_the_cpu(demo_families):
    family = next(f for f in demo_families if f.kind == "nmt" and f.beam > 1)
    reference = decoding_reference(family, check_every=1)
    assert set(reference) == {1, family.beam} and reference[1].shape == (CHECK_BATCH, family.length)
    entry, problems = decoding.check(family, reference, CPU, decode_batch=4, check_every=1)
    assert problems == [] and set(entry) == {"greedy", f"beam{family.beam}"}
    assert all(s["words"] == 1.0 and s["seconds_per_sentence"] > 0 for s in entry.values())
    tampered = {
        beam: torch.where(torch.arange(words.shape[1]) % 2 == 0, words, words + 1) for beam, words in reference.items()
    }
    _, problems = decoding.check(family, tampered, CPU, decode_batch=4, check_every=1)
    assert [p[0] for p in problems] == ["greedy", f"beam{family.beam}"]
    assert problems[0][1] == "54% of the greedy words agree with the CPU's (< 90%)"  # 7 of 13 positions kept


def test_the_compile_check_compiles_each_architecture_from_a_fresh_dynamo_state(monkeypatch, demo_families):
    """Dynamo's eager backend instead of inductor (minutes on a CPU): the phases as a job runs
    them, each architecture after a reset, the compiled loss equal to eager's."""
    compile = torch.compile
    monkeypatch.setattr(
        torch,
        "compile",
        lambda function, mode=None, fullgraph=False, **_: compile(function, backend="eager", fullgraph=fullgraph),
    )
    monkeypatch.setattr(compile_check, "BUCKETS", (1.0, 0.5))
    monkeypatch.setattr(torch._logging._internal.trace_log, "handlers", [])  # no structured trace to build
    resets, reset = [], torch._dynamo.reset
    monkeypatch.setattr(torch._dynamo, "reset", lambda: resets.append(compile_check.graphs()) or reset())
    targets = compile_check.targets(demo_families)
    assert len({t.architecture for t in targets}) == len(targets) and all(
        t.kind == "nmt" or t.spec.dropout for t in targets
    )
    lm = min((t for t in targets if t.kind == "lm"), key=lambda t: t.spec.size)
    lm = check_families.dataclasses.replace(
        lm, length=4, spec=check_families.dataclasses.replace(lm.spec, bptt=4)
    )  # a short segment to trace
    nmt = next(t for t in targets if t.kind == "nmt")
    graphs = {}
    for family in (lm, nmt):
        before = len(resets)
        entry, problems = compile_check.check(family, "fuse", "fp32", CPU)
        assert problems == [] and len(resets) == before + 2  # cold before training, and before the agreement
        phases = entry["phases"]
        assert phases["agreement"]["loss_relative"] <= compile_check.AGREEMENT
        assert all(p["verdict"] == "passed" for p in phases.values())
        graphs[family.kind] = [phases[name]["graphs"] for name in ("training", "evaluation", "agreement")]
    # the language model compiles its dropout segment in training (evaluation runs nn.LSTM); the demo's
    # translation models, without input feeding, run nn.LSTM in teacher forcing and the step in greedy search
    assert not nmt.spec.model.input_feed
    assert graphs["lm"][0] >= 1 and graphs["lm"][1] == 0 and graphs["lm"][2] >= 1 and graphs["nmt"] == [0, 1, 0]
    assert compile_check.modes("off", "configured", CPU) == [] and compile_check.modes("fuse", "all", CPU) == ["fuse"]
    cuda = torch.device("cuda")
    assert compile_check.modes("graphs", "configured", cuda) == ["graphs"] == compile_check.modes("off", "graphs", cuda)
    assert (
        compile_check.modes("fuse", "graphs", cuda) == ["fuse", "graphs"]
        and compile_check.modes("off", "graphs", CPU) == []
    )


def test_graphs_are_checked_against_eager_per_output_layer_with_the_training_step(monkeypatch, demo_families):
    """`--compile graphs`: one item per architecture, output layer and sampling, each the whole
    captured step against the eager one (train/graph_check.check; on the CPU uncaptured, as its own
    tests run it): agreeing, timed, reported with its speed-up; a disagreement is one FAILED line."""
    targets = compile_check.targets(demo_families, "graphs")
    keys = {(t.architecture, t.output_layer, t.kind == "nmt" and t.spec.sample_share is not None) for t in targets}
    assert len(keys) == len(targets) > len(compile_check.targets(demo_families))
    assert {f.output_layer for f in demo_families} == {t.output_layer for t in targets}
    monkeypatch.setattr(compile_check, "GRAPH_STEPS", 3)
    monkeypatch.setattr(graph_check, "LENGTHS", (5, 7, 9))
    checked, calls, check = {}, [], graph_check.check
    monkeypatch.setattr(graph_check, "check", lambda *a, **k: calls.append(a) or check(*a, **k, timed=2))
    for family in (first(targets, kind="lm"), first(targets, kind="nmt")):
        calls.clear()
        entry, problems = compile_check.check(family, "graphs", "fp32", CPU)
        phase = entry["phases"]["graphs against eager"]
        assert problems == [] and phase["verdict"] == "passed" and calls[0][1] is family.spec
        assert phase["loss_relative"] <= graph_check.LOSS_RELATIVE and phase["speedup"] > 0
        checked[family.kind] = phase
    monkeypatch.setattr(graph_check, "UPDATE_COSINE", 1.5)
    monkeypatch.setattr(graph_check, "FP64_UPDATE_COSINE", 1.5)
    _, problems = compile_check.check(first(targets, kind="lm"), "graphs", "fp32", CPU)
    assert len(problems) == 1 and problems[0][0].startswith("graphs against eager over 3 steps: ")
    assert "; in fp64: losses within " in problems[0][0]
    assert compile_check.subject(first(targets, kind="nmt"), "graphs").startswith("train.compile graphs of NMT enc ")


def test_a_disagreement_in_fp32_is_retried_in_fp64_where_rounding_shrinks_and_a_fault_does_not(monkeypatch):
    """graph_check.check: where fp32 misses the bars, the same comparison in fp64 decides: passed
    when the captured step computes what eager does (here the same static step on the CPU; fp64
    agrees to rounding: both optimisers at the same fp32-representable rate), failed when it
    computes something else (a loss scaled by 1 + 1e-3 on the static path)."""
    from tests import fixed_step
    from workflow_src.train import static_step

    spec = translation_spec(
        {
            **fixed_step.BASE,
            **fixed_step.KINDS["softmax"],
            "precision": "fp32",
            "train": {"lr": 0.01, "batch_size": 3, "clip": 1.0, "init_scale": 0.1, "loss_normalisation": "sentence"},
        }
    )
    sizes = {"src": 40, "tgt": 60, "dim": None}
    monkeypatch.setattr(graph_check, "LENGTHS", (5, 7, 9))
    monkeypatch.setattr(graph_check, "UPDATE_COSINE", 1.5)  # fp32 misses: fp64 decides
    result = graph_check.check("nmt", spec, sizes, CPU, steps=4, timed=1)
    assert result["passed"] and result["agreement"].startswith("fp64"), result
    assert result["fp64_loss_max_relative"] < 1e-12 and result["eager_repeat_loss_max_relative"] == 0.0
    losses = static_step.position_losses
    monkeypatch.setattr(static_step, "position_losses", lambda *a: losses(*a) * (1 + 1e-3))
    result = graph_check.check("nmt", spec, sizes, CPU, steps=4, timed=1)
    assert not result["passed"] and result["agreement"] == "none" and result["fp64_loss_max_relative"] > 1e-4


def test_host_syncs_are_the_sync_warnings_alone(monkeypatch):
    """syncs_per_step counts sync debug mode's "called a synchronizing CUDA operation", not the
    mode's own once-a-process "prototype feature" warning (the H200's first family, 2026-11-27),
    and says where each sync was called."""
    import warnings

    set_mode = []

    def mode(value):
        if not set_mode:
            warnings.warn(
                "Synchronization debug mode is a prototype feature and does not yet detect all synchronizing operations"
            )
        set_mode.append(value)

    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", mode)
    calls = []

    def step():
        calls.append(1)
        if len(calls) % 2:
            warnings.warn(f"{measured.SYNC_WARNING}")

    assert measured.syncs_per_step(lambda: None, CPU) == (0.0, [])
    count, sites = measured.syncs_per_step(step, CPU, steps=4)
    assert count == 0.5 and len(sites) == 1 and sites[0].startswith(__file__)


def process_state(pid: int) -> str:
    """/proc/PID/stat's state: T where stopped."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def wait_for(condition, seconds: float = 20.0) -> bool:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_the_cpu_workers_are_stopped_while_the_device_is_timed_and_then_finish_their_work():
    """Workers.paused stops every worker (state T) and continues them after, their work intact;
    stop() ends a paused worker too."""
    workers = references.Workers(1, 1)
    try:
        task = workers.submit(time.sleep, 1.0)
        assert wait_for(lambda: workers.processes() and process_state(workers.processes()[0].pid) in "SR")
        (process,) = workers.processes()
        with workers.paused():
            assert wait_for(lambda: process_state(process.pid) == "T")
            time.sleep(1.5)
            assert process_state(process.pid) == "T" and not task.done()
        assert task.result(timeout=20) is None and process_state(process.pid) != "T"
        with workers.paused():
            assert wait_for(lambda: process_state(process.pid) == "T")
            workers.stop()
            # ended: gone or a zombie, whichever thread reaps it (the pool's own may, and then
            # Process.is_alive, whose waitpid meets ECHILD, would say it runs)
            assert wait_for(lambda: not Path(f"/proc/{process.pid}").exists() or process_state(process.pid) == "Z")
    finally:
        workers.stop()


class PausingPool(references.InProcess):
    """The in-process pool, its `paused` recorded in `events` as "pause" and "continue"."""

    def __init__(self, events: list):
        super().__init__()
        self.events = events

    @contextlib.contextmanager
    def paused(self):
        self.events.append("pause")
        yield
        self.events.append("continue")


def test_the_check_times_steps_sharing_and_compile_items_with_its_workers_paused(
    monkeypatch, demo_config, demo_families, tmp_path
):
    """Check.family measures a family's step inside the pool's `paused` (and sharing and compile
    items run whole inside it); the CPU reference is awaited outside it (a paused worker computes
    nothing)."""
    family = first(demo_families, kind="lm")
    events = []

    def measure(*args):
        events.append("measure")
        return {"step_seconds": 0.01}, []

    monkeypatch.setattr(measured, "measure", measure)
    check = gpu_check.Check(demo_config, CPU, tmp_path, only=[family.name], log=lambda line: None)
    check.pool = PausingPool(events)
    reference = Future()
    reference.set_exception(RuntimeError("no reference here"))
    check.family(family, reference)
    assert events == ["pause", "measure", "continue"]
    monkeypatch.setattr(compile_check, "check", lambda *args: (events.append("compile") or {"phases": {}}, []))
    check.report.data["compile"] = []
    check.compiled(family, "graphs")
    assert events[3:] == ["pause", "compile", "continue"]


def test_each_familys_step_is_timed_again_after_the_other_items_and_the_fastest_median_kept(
    monkeypatch, demo_config, demo_families, tmp_path
):
    """`retime` (model/timing.py's ROUNDS): after every other item, each family's step is built
    afresh and timed again with the workers paused; the fastest median is its step_seconds (the
    plan's fit reads it), each round is kept, and the ratio to the modelled step follows."""
    family = first(demo_families, kind="nmt")
    medians, events = iter([0.050, 0.020]), []
    monkeypatch.setattr(measured, "step_seconds", lambda step, device: events.append("timed") or next(medians))

    lines = []
    check = gpu_check.Check(demo_config, CPU, tmp_path, only=[family.name], log=lines.append)
    check.pool = PausingPool(events)
    reference = Future()
    reference.set_exception(RuntimeError("no reference here"))
    check.family(family, reference)
    check.report.data["families"][family.name]["modelled"] = {"alone_seconds": 0.010}
    check.retime(family, f"step timing 2 of {family.name}")
    assert events == ["pause", "timed", "continue"] * 2
    speed = check.report.data["families"][family.name]["speed"]
    assert speed["step_seconds_rounds"] == [0.050, 0.020] and speed["step_seconds"] == 0.020
    assert check.report.data["step_seconds"] == {family.name: 0.020}
    assert speed["tokens_per_second"] == pytest.approx(family.tokens_per_step / 0.020)
    assert check.report.data["families"][family.name]["measured_over_modelled"] == pytest.approx(2.0)
    assert lines[-1] == (
        f"step timing 2 of {family.name}: passed (step 50.0 and 20.0 ms in its rounds, 2.50 x apart: 20.0 ms kept)"
    )
    assert LINE.match(lines[-1])
    from workflow_src.plan.fit import measured_steps

    assert [m.seconds for m in measured_steps(check.report.data)] == [0.020]
    check.write("complete")
    assert f"| {family.name} | {family.jobs} | 20.0 (50.0, 20.0) |" in (tmp_path / "gpu_check.md").read_text()


def test_checks_runs_only_the_kinds_asked_for(demo_config, demo_families, tmp_path):
    family = first(demo_families, kind="nmt")
    check = gpu_check.Check(demo_config, CPU, tmp_path, only=[family.name], checks=("decoding",), log=lambda line: None)
    report = check.run()
    assert report.data["checks"] == ["decoding"] and report.data["families"] == {}
    assert list(report.data["decoding"]) == [family.name] and report.data["passed"]
    assert "Checks run: decoding only (`--checks`)" in (tmp_path / "gpu_check.md").read_text()
    with pytest.raises(ValueError, match=r"unknown checks \['families'\]: choose among family, decoding"):
        gpu_check.Check(demo_config, CPU, tmp_path, checks=("families",))
    with pytest.raises(ValueError, match=r"--checks retime times each family's step a second time"):
        gpu_check.Check(demo_config, CPU, tmp_path, checks=("retime",))


def test_retime_without_family_is_refused_on_the_command_line_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as ended:
        main(["--config", str(DEMO), "--out", str(tmp_path), "--checks", "retime"])
    assert ended.value.code == 2 and not list(tmp_path.iterdir())
    assert "it runs with family (--checks family retime)" in capsys.readouterr().err


def test_a_failed_tolerance_exits_1_with_one_line_and_the_setting(monkeypatch, demo_families, tmp_path, capsys):
    family = first(demo_families, kind="lm")  # no decoding: one item
    monkeypatch.setitem(gpu_check.TOLERANCES, "fp32", {**gpu_check.TOLERANCES["fp32"], "gradient_cosine": 1.5})
    assert main(["--config", str(DEMO), "--out", str(tmp_path), "--families", family.name]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if ": FAILED: " in line]
    assert len(lines) == 2 and all(LINE.match(line) for line in lines)
    assert lines[0].startswith(f"family {family.name}: FAILED: gradient cosine 1.000000 < 1.5 (parameter group ")
    assert lines[0].endswith(f" in fp32 (avoid with {gpu_check.AVOID['fp32']})")
    report = json.loads((tmp_path / "gpu_check.json").read_text())  # written before the exit
    assert report["passed"] is False and report["failures"] == lines[:1]
    assert report["families"][family.name]["verdict"] == lines[0].split(": ", 1)[1]


def test_dtype_rules():
    seen = {"encoder.rnn (LSTM)": ("recurrent", {torch.bfloat16}), "output (JointOutput)": ("module", {torch.bfloat16})}
    assert gpu_check.dtype_problems(seen, "bf16", torch.float32) == [
        "recurrent encoder.rnn (LSTM) outputs torch.bfloat16, not fp32"
    ]
    assert "encoder.rnn (LSTM) outputs bfloat16 in fp32" in gpu_check.dtype_problems(seen, "fp32", torch.float32)
    assert (
        gpu_check.dtype_problems({"x (Linear)": ("module", {torch.float16})}, "bf16", torch.float32)[0]
        == "x (Linear) outputs float16"
    )
    assert (
        "autocast is not in effect"
        in gpu_check.dtype_problems({"x (Linear)": ("module", {torch.float32})}, "bf16", torch.float32)[0]
    )
    assert gpu_check.dtype_problems({}, "fp32", torch.bfloat16) == ["the loss is torch.bfloat16, not fp32 or wider"]


def test_an_injected_bf16_output_fails_the_dtypes_check(monkeypatch, demo_families, tmp_path):
    family = first(demo_families, kind="nmt")
    build = check_families.build

    def with_bf16_output(family, seed=0):  # the output layer's loss "hides" bf16 although fp32 is asked for
        model = build(family, seed)
        loss = model.output.loss

        def bf16_loss(*args):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return loss(*args)

        model.output.loss = bf16_loss
        return model

    reference = gpu_check.references.reference(family, True, tmp_path)
    monkeypatch.setattr(check_families, "build", with_bf16_output)
    _, problems = gpu_check.compare_fully(family, reference, ["fp32"], CPU)
    dtypes = [(reason, avoid) for reason, avoid in problems if "bfloat16" in reason]
    assert dtypes and all(
        reason.startswith("dtypes in fp32: operators (")
        and reason.endswith("outputs bfloat16 in fp32")
        and avoid == gpu_check.AVOID["dtypes"]
        for reason, avoid in dtypes
    )


def test_memory_beyond_the_headroom_names_the_jobs_per_device_that_fit():
    gib = 2**30
    assert measured.memory_problems(20 * gib, 80 * gib, 3, 64) == []
    assert measured.memory_problems(30 * gib, 80 * gib, 3, 64) == [
        ("3 jobs of 30.0 GiB each leave less than 10% of the device's 80.0 GiB", "gpu.jobs_per_device: 2")
    ]
    assert measured.memory_problems(75 * gib, 80 * gib, 1, 64)[0][1] == "train.batch_size below 64"
    assert measured.union_seconds([(0, 2), (1, 3), (5, 6), (5.5, 5.7)]) == 4.0


def test_the_checks_lm_step_is_train_lms(demo_families):
    """One training step of a language model with unit-norm embeddings and dropout, by the check
    and by train_lm.train_epoch over one segment, from the same weights and masks."""
    from workflow_src.model.lm_losses import build_objective
    from workflow_src.train import train_lm

    family = first(demo_families, kind="lm")
    spec = check_families.dataclasses.replace(family.spec, unit_norm_embeddings=True, dropout=0.3)
    family = check_families.dataclasses.replace(family, spec=spec)
    data = check_families.batch(family, 4, False, CPU)
    models = [check_families.build(family) for _ in range(2)]
    torch.manual_seed(5)
    check_families.training_step(family, models[0], "fp32", CPU)(data)
    torch.manual_seed(5)
    segment = torch.cat([data["inputs"], data["targets"][-1:]])
    train_lm.train_epoch(
        models[1], segment, spec, torch.optim.SGD(models[1].parameters(), lr=spec.lr), build_objective(spec)
    )
    for (name, a), b in zip(models[0].named_parameters(), models[1].parameters()):
        assert torch.equal(a, b), name
    assert torch.allclose(models[0].embedding.weight.norm(dim=1), torch.ones(family.tgt_vocab))


def test_the_modelled_step_and_its_ratio_come_from_the_plan(demo_config, demo_families, tmp_path):
    from workflow_src.gpu_check.references import modelled_step

    family = first(demo_families, kind="lm")
    modelled = modelled_step(demo_config, family)
    assert modelled["alone_seconds"] >= modelled["busy_seconds"] > 0 and modelled["bound"] in ("launch", "device")
    check = gpu_check.Check(demo_config, CPU, tmp_path, only=[family.name], log=lambda line: None)
    check.report.data["families"][family.name] = {"speed": {"step_seconds": 3 * modelled["alone_seconds"]}}
    future = Future()
    future.set_result(modelled)
    check.modelled({family.name: future}, wait=False)
    entry = check.report.data["families"][family.name]
    assert entry["modelled"] == modelled and entry["measured_over_modelled"] == pytest.approx(3.0)


def test_the_modelled_steps_are_counted_where_only_a_bare_gpu_machines_packages_are(
    json_config, demo_families, tmp_path
):
    """The plan's modelled step of a language model and a translation model, in a process where
    tqdm, sacremoses and PyYAML cannot be imported (the LM's count once imported train_lm)."""
    chosen = [first(demo_families, kind="lm").name, first(demo_families, kind="nmt").name]
    code = (
        f"import sys, json\nfor name in {ABSENT_THERE!r}:\n    sys.modules[name] = None\n"
        "from workflow_src.atomic import read_config\n"
        "from workflow_src.gpu_check.families import families\n"
        "from workflow_src.gpu_check.references import modelled_step\n"
        f"config = read_config({str(json_config)!r})\n"
        f"found = {{f.name: f for f in families(config)}}\n"
        f"print(json.dumps({{name: modelled_step(config, found[name]) for name in {chosen!r}}}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    modelled = json.loads(result.stdout.splitlines()[-1])
    for name in chosen:
        assert modelled[name]["alone_seconds"] >= modelled[name]["busy_seconds"] > 0, (name, modelled[name])


def test_cudas_measures_are_reported_and_sharing_is_what_the_plan_reads(
    monkeypatch, demo_config, demo_families, tmp_path
):
    """What only CUDA measures (peak memory, the sharing processes, the profiler's busy share), given
    by stand-ins on the CPU: the lines and the report carry them, and the plan's wall hours read the
    slowdown the check wrote (`plan.timing.sharing_slowdown`)."""
    from workflow_src.plan.timing import sharing_slowdown

    gib, lines = 2**30, []
    chosen = check_families.representative(demo_families)
    check = gpu_check.Check(
        {**demo_config, "gpu": {"jobs_per_device": 2}}, CPU, tmp_path, only=[f.name for f in chosen], log=lines.append
    )
    memory = {
        "peak_allocated_bytes": 2 * gib,
        "peak_reserved_bytes": 3 * gib,
        "device_bytes": 80 * gib,
        "jobs_per_device": 2,
        "headroom_bytes": 74 * gib,
    }
    monkeypatch.setattr(
        measured,
        "measure",
        lambda family, precision, device, jobs: (
            {
                "step_seconds": 0.1,
                "target_tokens_per_step": family.tokens_per_step,
                "tokens_per_second": 1.0,
                "syncs_per_step": 0.0,
                "memory": memory,
            },
            [],
        ),
    )
    monkeypatch.setattr(measured, "full_size_step", lambda family, precision, device: (None, None))
    monkeypatch.setattr(measured, "step_seconds", lambda step, device: 0.1)
    monkeypatch.setattr(measured, "busy_share", lambda step, device: 0.25)
    monkeypatch.setattr(
        gpu_check.sharing, "shared_seconds", lambda found, precision, jobs, timeout: {f.name: 0.15 for f in found}
    )
    lm = next(f for f in chosen if f.kind == "lm")
    check.family(lm, InProcess().submit(gpu_check.reference, lm, True, tmp_path))
    check.report.data["step_seconds"] |= {f.name: 0.1 for f in chosen}  # as if measured too
    check.sharing(chosen)
    check.write("complete")
    assert lines[-len(chosen) - 1].startswith(
        f"family {lm.name}: passed (step 100.0 ms; peak 3.00 GiB x 2, headroom 74.0 GiB; full, in fp32)"
    )
    assert all(
        line.endswith(": passed (2 jobs: step 150.0 ms (1.50 x alone); 25% busy alone; MPS off)")
        for line in lines[-len(chosen) :]
    )
    assert sharing_slowdown(json.loads((tmp_path / "gpu_check.json").read_text()), 2) == pytest.approx(1.5)
    # a later, faster timing of a family alone (`retime`) leaves the slowdown timed beside the shared run
    check.report.data["step_seconds"] |= {f.name: 0.05 for f in chosen}
    check.write("complete")
    assert sharing_slowdown(json.loads((tmp_path / "gpu_check.json").read_text()), 2) == pytest.approx(1.5)
    markdown = (tmp_path / "gpu_check.md").read_text()
    assert (
        "| 2.00 / 3.00 GiB x 2 of 80.0; headroom 74.0 GiB |" in markdown
        and "| 100.0 | 150.0 | 1.50 | 25% | passed |" in markdown
    )


def test_yaml_config_without_pyyaml_names_the_json_export(tmp_path):
    result = run_bare(["--config", str(DEMO), "--out", str(tmp_path)], tmp_path)
    assert result.returncode != 0 and "export-config" in result.stderr


def test_every_lm_objective_of_the_demo_is_a_family(demo_families):
    from workflow_src.model.lm_losses import OBJECTIVES

    assert {f.spec.loss for f in demo_families if f.kind == "lm"} == set(OBJECTIVES)


def test_device_script_trains_on_real_pairs(tmp_path):
    pairs = tmp_path / "gpu_pairs"
    pairs.mkdir()
    for name in ("src-train.txt", "tgt-train.txt"):
        lines = real_fixture("wmt-toy-ende", name).read_text(encoding="utf-8").splitlines()[:200]
        (pairs / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "CONFIG": str(DEMO),
        "SECONDS_PER_MODEL": "1",
        "GPU_CHECK_ARGS": "--threads 1 --checks family --families loss=beta",  # one small family, quickly
        "REPRO_GPU_LOCK_DIR": str(tmp_path / "locks"),
    }
    result = subprocess.run(
        [str(REPO / "scripts" / "gpu_check_on_device.sh"), str(tmp_path / "out"), str(pairs)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "pairs_training.json").read_text())
    assert [r["experiment"] for r in report["runs"]] == ["word2word-ce", "word2emb-fasttext-tied-nllvmf_reg1reg2"]
    for run in report["runs"]:
        assert run["target_tokens_per_second"] > 0 and run["loss_curve"] and run["steps"] >= 1
    assert report["runs"][0]["target_embeddings"] is None
    assert "stand-in" in report["runs"][1]["target_embeddings"]
    assert "stand-in" in (tmp_path / "out" / "pairs_training.md").read_text()
    checked = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert checked["passed"] and checked["deadline_seconds"] > 0


@pytest.mark.workflow
def test_rerunning_the_check_outdates_no_model(tmp_path):
    """Dry runs of the demo: a finished model does not wait for, or retrain after, the check."""
    model = "results/models/iwslt16/fr-en/word2word-ce/seed1/model.pt"
    snakemake = [
        sys.executable,
        "-m",
        "snakemake",
        "--configfile",
        str(DEMO),
        "--directory",
        str(tmp_path),
        "--cores",
        "1",
        "-n",
        "-s",
        str(REPO / "Snakefile"),
    ]

    def dry(*targets: str) -> str:
        result = subprocess.run(snakemake + list(targets), cwd=REPO, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    planned = dry(model)
    assert "rule gpu_check:" in planned and "input: results/gpu_check.json" in planned
    outputs = [line.split("output: ", 1)[1] for line in planned.splitlines() if line.startswith("    output: ")]
    for step, line in enumerate(outputs):  # every file of the model's DAG, oldest first
        for path in line.split(", "):
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).touch()
            os.utime(tmp_path / path, (1.7e9 + 10 * step, 1.7e9 + 10 * step))
    (tmp_path / "results/gpu_check.json").touch()  # a newer check
    assert "Nothing to be done" in dry(model)
    rerun = dry("results/gpu_check.md", model, "--forcerun", "gpu_check")
    assert "rule gpu_check:" in rerun and "rule train:" not in rerun


def test_the_owed_graphs_command_times_the_undecided_targets_and_the_largest_family():
    """docs/cluster.md's command for the next GPU session selects, as the check selects its graphs
    targets, the four whose agreement the 2026-11-27 fp64 retry left undecided and the family with
    the most FLOPs a step (the plan's counts of the H200's steps), in the same device call as the
    whole check and within that call's limit."""
    import shlex

    text = (REPO / "docs" / "cluster.md").read_text()
    command = re.search(r"(python3 -m workflow_src\.gpu_check [^`]*?--families.*?)\n\s*```", text, re.S)
    assert command, "docs/cluster.md: no gpu_check command with --families"
    words = shlex.split(command.group(1).replace("\\\n", " "))
    # one device call (a machine is warm for 30 s after one): the whole check first, then this
    # command, the script's seconds and this deadline inside a call's 600 s, a minute left for their start
    call = text[text.rindex("```", 0, command.start()) : command.end()]
    assert "bash scripts/gpu_check_on_device.sh $OUT/check gpu_pairs; \\\n" + command.group(1) in call
    script = (REPO / "scripts" / "gpu_check_on_device.sh").read_text()
    seconds, per_model, extra = (
        int((re.search(rf"\b{name}=(\d+)", call) or re.search(rf"\$\{{{name}:-(\d+)\}}", script)).group(1))
        for name in ("GPU_CHECK_SECONDS", "SECONDS_PER_MODEL", "PAIRS_SECONDS_EXTRA")
    )
    assert seconds + float(words[words.index("--deadline") + 1]) + 60 <= 600
    stated = re.search(r"deadline is then (\d+) - 2 x (\d+) - (\d+) = (\d+) s", text)
    assert stated and tuple(map(int, stated.groups())) == (seconds, per_model, extra, seconds - 2 * per_model - extra)
    assert words[words.index("--compile") + 1] == "graphs" and words[words.index("--checks") + 1] == "compile"
    only = words[words.index("--families") + 1 :]
    found = [
        f
        for f in gpu_check.families(yaml.safe_load((REPO / "config.yaml").read_text()))
        if any(o in f.name for o in only)
    ]
    chosen = {f.name for f in compile_check.targets(found, "graphs")}
    checked = REPO / "docs" / "gpu_check" / "2026-11-27-h200"
    undecided = {
        e["family"]
        for e in json.loads((checked / "graphs-fp64" / "gpu_check.json").read_text())["compile"]
        if e["verdict"].startswith("FAILED")
    }
    counts = json.loads((REPO / "docs" / "gpu_check" / "h200_2026-11-27_counts.json").read_text())["counts"]
    largest = max(counts, key=lambda name: counts[name]["flops"])
    assert len(undecided) == 4 and "joint_dim=4096" in largest
    assert chosen == undecided | {largest}


@pytest.mark.parametrize("script", ["demo.sh", "setup.sh", "gpu_check_on_device.sh"])
def test_a_script_asked_for_help_prints_its_usage_and_does_nothing_else(script, tmp_path):
    """`demo.sh --help` once started the 11-minute demo, and the GPU script's made a folder named `--help`."""
    for argument, status in (("--help", 0), ("--bogus", 2)):
        done = subprocess.run(
            ["bash", str(REPO / "scripts" / script), argument], cwd=tmp_path, capture_output=True, text=True, timeout=30
        )
        assert done.returncode == status and done.stderr.startswith("usage:") and not done.stdout, (argument, done)
        assert list(tmp_path.iterdir()) == [] and not (REPO / argument).exists()
