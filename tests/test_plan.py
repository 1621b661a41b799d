"""The cost plan (workflow_src.plan): its arithmetic on hand-made step times and sizes, a real
timing of a tiny model family, the comparison with the actual time, and the rule in both DAGs."""

import csv
import json
import re

import pytest
import yaml

from tests.conftest import REPO, snakemake
from workflow_src import layout, plan


def load(name: str) -> dict:
    return yaml.safe_load((REPO / name).read_text())


TIMING = plan.Timing(
    step=0.5,
    forward=0.1,
    decode=0.2,
    counts={
        "step": plan.Counts(3e12, 10_000, 6.7e9, operators=9_000, views=4_000),
        "forward": plan.Counts(1e12, 3000, operators=3000),
        "decode": plan.Counts(5e11, 20_000, 0, 3, operators=20_000),
    },
)
# A cost model of round numbers (the plan's own is fitted: tests/test_plan_fit.py)
MODEL = plan.CostModel(
    plan.H100, host_operator=8e-6, host_view=2e-6, kernel=2.5e-6, recurrent_kernel=5e-6, achieved=0.3
)


def test_translation_job_seconds_multiply_steps_epochs_and_sets():
    config = load("config.yaml")
    job = plan.PlannedJob("nmt", "iwslt16", "fr-en", "word2word-ce", 1, searches={"greedy", "beam5"})
    corpus = plan.Corpus(train=6400, length=20, dev=130, test=64, vocabulary=None, source="hand-made")
    seconds = plan.job_seconds(config, job, corpus, TIMING)
    batch, epochs = config["train"]["batch_size"], config["train"]["max_epochs"]  # 64, 20
    assert seconds["steps_per_epoch"] == 100 and seconds["epochs"] == epochs
    assert seconds["train"] == pytest.approx(0.5 * 100 * epochs)
    # each epoch: the dev loss (3 batches of 64) and the dev BLEU's greedy decode (3 batches of 64)
    assert seconds["validation"] == pytest.approx(epochs * (0.1 * 3 + 0.2 * 3))
    # the test set (one batch) decoded greedily and with a beam of 5
    assert seconds["decoding"] == pytest.approx(0.2 * 1 + 0.2 * 5 * 1)
    assert batch == 64
    config["train"]["overrides"] = {"word2word-ce": {"max_epochs": 7}}  # as the demo gives NLLvMF reg1 20
    assert plan.job_seconds(config, job, corpus, TIMING)["epochs"] == 7


def test_language_model_seconds_follow_its_schedule_and_slice():
    config = load("config.yaml")
    corpus = plan.Corpus(train=700_000, length=1, dev=70_000, test=35_000, vocabulary=10_000, source="hand-made")
    medium = plan.job_seconds(config, plan.PlannedJob("lm", "ptb", "lm", "lm-medium-vd", 1), corpus, TIMING)
    segments = 700_000 / (20 * 35)  # 1000
    assert medium["steps_per_epoch"] == 1000 and medium["epochs"] == config["lm"]["max_epochs"]["medium"]
    assert medium["train"] == pytest.approx(0.5 * segments * medium["epochs"])
    assert medium["validation"] == pytest.approx(0.1 * 70_000 / 350 * medium["epochs"])
    small = plan.job_seconds(config, plan.PlannedJob("lm", "ptb", "lm", "lm-small-vd", 1), corpus, TIMING)
    assert small["epochs"] == 2 * config["lm"]["max_epochs"]["small"]  # PTB small: two sessions (footnote 4)
    sliced = plan.job_seconds(config, plan.PlannedJob("lm", "ptb", "lm", "lm-subspace", 1), corpus, TIMING)
    assert sliced["steps_per_epoch"] == -(-20_000 // 700)  # Figure 1's 20,000-word slice, not the corpus


def test_modelled_h100_time_is_the_larger_of_the_host_and_the_busy_device():
    peak, hbm = plan.H100.peak_flops, plan.H100.hbm_bytes_per_second
    memory = 6.7e9 / hbm  # 2 ms of optimiser traffic
    busy = 3e12 / (0.3 * peak["bf16"]) + memory + 10_000 * 2.5e-6
    host = 9_000 * 8e-6 + 4_000 * 2e-6  # operators and views
    assert TIMING.modelled_device("step", "bf16", MODEL) == pytest.approx(busy)
    assert TIMING.host_seconds("step", MODEL) == pytest.approx(host)
    assert TIMING.modelled("step", "bf16", MODEL) == pytest.approx(max(busy, host))
    assert TIMING.floor("step", "bf16", MODEL) == pytest.approx(3e12 / (0.4 * peak["bf16"]) + memory)
    # decode: 20,000 kernels and few FLOPs, host-bound, and its 3 syncs drain the queue
    assert TIMING.modelled("decode", "bf16", MODEL) == pytest.approx(20_000 * 8e-6 + 3 * (8e-6 + 2.5e-6))
    assert TIMING.launch_bound("decode", "bf16", MODEL) and not TIMING.launch_bound("step", "fp32", MODEL)
    # fp32's lower peak makes the step device-bound
    assert (
        TIMING.modelled("step", "fp32", MODEL)
        == TIMING.modelled_device("step", "fp32", MODEL)
        > TIMING.modelled("step", "bf16", MODEL)
    )
    assert plan.modelled_precision({"train": {"precision": "auto"}}) == "bf16"  # auto on CUDA
    assert plan.modelled_precision({"train": {}}) == "bf16"
    assert plan.modelled_precision({"train": {"precision": "fp32"}}) == "fp32"
    assert plan.modelled_precision({"train": {"precision": "tf32"}}) == "tf32"


def test_jobs_sharing_a_device_are_bound_by_its_busy_time():
    alone, busy = [4.0, 4.0, 4.0], [1.0, 1.0, 1.0]
    assert plan.modelled_wall_hours(alone, busy, gpus=1, per_device=1) == 12.0  # one after another
    assert plan.modelled_wall_hours(alone, busy, gpus=1, per_device=3) == 4.0  # side by side, the GPU 3/4 busy
    busy = [3.0, 3.0, 3.0]
    assert plan.modelled_wall_hours(alone, busy, gpus=1, per_device=3) == 9.0  # the GPU's 9 busy hours bound it
    assert plan.modelled_wall_hours(alone, busy, gpus=3, per_device=3) == 4.0
    rows = [{"h100_modelled_hours": 24.0 * 4, "h100_busy_hours": 24.0}] * 3
    days = plan.h100_days_by_jobs_per_device(rows + [{"note": "no size"}])
    assert days[1] == 12.0 and days[2] == 8.0 and days[4] == 4.0 and days[8] == 4.0


def test_an_exclusive_job_holds_a_whole_device():
    """A training whose time an artefact reports runs alone on its device: sharing gains nothing on it."""
    alone, busy = [4.0, 4.0, 4.0], [1.0, 1.0, 1.0]
    assert plan.modelled_wall_hours(alone, busy, 1, 3, [True, False, False]) == 4.0 + 4.0  # then the two side by side
    assert plan.modelled_wall_hours(alone, busy, 1, 3, [True, True, True]) == 12.0
    assert plan.modelled_wall_hours(alone, busy, 1, 1, [True, False, False]) == 12.0  # one at a time anyway
    assert plan.modelled_wall_hours(alone, busy, 3, 1, [True, True, False]) == pytest.approx(8 / 3 + 4.0)
    assert plan.modelled_wall_hours([9.0, 1.0], [1.0, 1.0], 4, 2, [True, False]) == 9.0  # the longest held device
    jobs = plan.planned_jobs({**load("config.yaml"), "papers": {"vmf": {"table3": {"seeds": {"iwslt16": [1, 2]}}}}})
    assert jobs and all(job.exclusive for job in jobs)  # vMF Table 3 reports its trainings' time


@pytest.mark.parametrize("packed", [False, True])
def test_a_fused_lstm_counts_its_flops_and_kernels_per_time_step(packed):
    """FlopCounterMode does not see inside oneDNN's LSTM layer: the plan adds 2 · tokens · Σ|W| per
    layer and direction forward, twice that backward, and kernels per time step."""
    import torch
    from torch.nn.utils.rnn import pack_padded_sequence

    lstm = torch.nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True)
    lengths = torch.tensor([7, 4, 2])
    x = torch.randn(3, 7, 6)

    def step():
        out, _ = lstm(pack_padded_sequence(x, lengths, batch_first=True) if packed else x)
        (out.data if packed else out).sum().backward()

    _, counted = plan.measure(step, 0, 0)
    flops, kernels = counted.flops, counted.kernels
    tokens = int(lengths.sum()) if packed else 3 * 7
    weights = sum(w.numel() for name, w in lstm.named_parameters() if name.startswith("weight"))
    # forward and backward; oneDNN's fused layer (unpacked) exactly, torch's own packed loop within the
    # products it skips (no input gradient for the first layer)
    assert flops == pytest.approx(2 * tokens * weights * 3, rel=0.15 if packed else 1e-6)
    per_step = sum(plan.RECURRENT_KERNELS_PER_STEP.values())
    assert kernels >= 7 * 2 * 2 * per_step  # 7 steps, 2 layers, 2 directions


def test_counts_at_two_batches_extrapolate_per_batch_work_once():
    """--model-only counts translation models at COUNTING_BATCH and twice it: FLOPs affine in the
    batch (the joint layer's g_out(E) of its sampled vocabulary once per batch), kernels constant."""
    import torch

    config = load("config.demo.yaml")
    job = plan.PlannedJob("nmt", "wmt17", "de-en", "bpe32k-joint2048", 1)
    family = plan.nmt_family(config, job, plan.Corpus(100, 6, 10, 10, None, "hand-made"))
    batch = 4 * plan.COUNTING_BATCH
    sized = {**config, "train": {**config["train"], "batch_size": batch}}
    extrapolated = plan.count_nmt(sized, job, family, torch.device("cpu"))
    counted = plan.time_nmt(sized, job, family, torch.device("cpu"), model_only=True)
    assert extrapolated.step is None and counted.step is None  # counted, not timed
    for part in ("step", "forward", "decode"):
        assert extrapolated.counts[part].flops == pytest.approx(counted.counts[part].flops, rel=1e-6)
        assert extrapolated.counts[part].kernels == pytest.approx(counted.counts[part].kernels, rel=0.02)
    small = plan.time_nmt(
        {**config, "train": {**config["train"], "batch_size": plan.COUNTING_BATCH}},
        job,
        family,
        torch.device("cpu"),
        model_only=True,
    )
    assert counted.counts["step"].flops < 4 * small.counts["step"].flops  # per-batch work: not scaled by 4
    assert counted.counts["step"].bytes == small.counts["step"].bytes > 0  # Adam and clipping, per step
    assert counted.counts["step"].syncs == 0  # as on CUDA: host positions, sampling by topk


def test_family_rows_give_target_tokens_per_second():
    config = load("config.yaml")
    nmt = plan.nmt_family(
        config,
        plan.PlannedJob("nmt", "iwslt16", "fr-en", "word2word-ce", 1),
        plan.Corpus(1000, 26, 10, 10, None, "hand-made"),
    )
    lm = plan.lm_family(
        config, plan.PlannedJob("lm", "ptb", "lm", "lm-medium-vd", 1), plan.Corpus(1000, 1, 10, 10, 10_000, "hand-made")
    )
    counted = plan.Timing(None, None, None, TIMING.counts)  # --model-only
    rows = {row["target_tokens_per_step"]: row for row in plan.family_rows(config, {nmt: TIMING, lm: counted}, MODEL)}
    translation, language_model = rows[64 * 26], rows[20 * 35]
    assert translation["tokens_per_second"] == pytest.approx(64 * 26 / 0.5)
    assert translation["h100_tokens_per_second_modelled"] == pytest.approx(
        64 * 26 / TIMING.modelled("step", "bf16", MODEL)
    )
    assert language_model["tokens_per_second"] is None and language_model["step_kernels"] == 10_000


def test_wall_hours_schedule_longest_first():
    assert plan.wall_hours([5, 4, 3, 3, 3], 1) == 18
    assert plan.wall_hours([5, 4, 3, 3, 3], 2) == 10  # 5 | 4, then each 3 onto the lighter: 8 | 10
    assert plan.wall_hours([10, 1, 1], 8) == 10


def test_summary_counts_a_shared_job_in_each_table_and_once_in_the_total():
    config = {
        "papers": {"vmf": {"table1": {}, "table3": {}}, "synmargin": {"table1": {}}},
        "gpu": {"jobs_per_device": 2},
    }
    rows = [
        {
            "artefacts": "vmf/table1 vmf/table3 synmargin/table1",
            "device_hours": 2.0,
            "h100_modelled_hours": 0.2,
            "h100_busy_hours": 0.1,
            "h100_graphs_modelled_hours": 0.1,
            "h100_graphs_busy_hours": 0.1,
        },
        {
            "artefacts": "vmf/table1",
            "device_hours": 1.0,
            "h100_modelled_hours": 0.1,
            "h100_busy_hours": 0.1,
            "h100_graphs_modelled_hours": 0.05,
            "h100_graphs_busy_hours": 0.05,
        },
        {"artefacts": "synmargin/table1", "note": "no size"},
    ]
    summary = {(r["level"], r["paper"], r["artefact"]): r for r in plan.summary_rows(config, rows)}
    assert summary[("artefact", "vmf", "table1")]["device_hours"] == 3.0
    assert summary[("artefact", "vmf", "table3")]["device_hours"] == 2.0
    assert summary[("artefact", "synmargin", "table1")]["jobs_without_size"] == 1
    total = summary[("total", "", "")]
    assert total["jobs"] == 3 and total["device_hours"] == 3.0 and total["h100_modelled_hours"] == pytest.approx(0.3)
    assert total["wall_hours_gpu1"] == 2.0  # two jobs per device: both at once
    assert total["h100_busy_hours"] == pytest.approx(0.2) and total["h100_wall_hours_gpu1"] == pytest.approx(0.2)
    # as graphs: device-bound, so two jobs per device take their summed busy time
    assert total["h100_graphs_modelled_hours"] == pytest.approx(0.15)
    assert total["h100_graphs_wall_hours_gpu1"] == pytest.approx(0.15)
    config["gpu"]["jobs_per_device"] = 1
    assert plan.summary_rows(config, rows)[-1]["wall_hours_gpu1"] == 3.0
    assert plan.summary_rows(config, rows)[-1]["h100_wall_hours_gpu1"] == pytest.approx(0.3)
    model_only = [{k: v for k, v in row.items() if k != "device_hours"} for row in rows]
    total = plan.summary_rows(config, model_only)[-1]
    assert "device_hours" not in total and "wall_hours_gpu1" not in total and total["h100_modelled_hours"] > 0


def planned_row(kind, train_hours, validation_hours, epochs=3, metrics="m.jsonl"):
    return {
        "kind": kind,
        "dataset": "d",
        "pair": "p",
        "experiment": "e",
        "seed": "1",
        "epochs": str(epochs),
        "train_hours": str(train_hours),
        "validation_hours": str(validation_hours),
        "metrics": metrics,
    }


def test_comparison_adds_validation_for_translation_and_not_for_language_models():
    rows = [
        planned_row("nmt", 30 / 3600, 6 / 3600, metrics="nmt"),
        planned_row("lm", 20 / 3600, 5 / 3600, metrics="lm"),
        {**planned_row("nmt", "", ""), "note": "no size"},
    ]  # a job without a size is left out
    metrics = {"nmt": [{"train_seconds": 10, "validation_seconds": 2}] * 3, "lm": [{"seconds": 10}] * 2}
    compared, total = plan.compare(rows, metrics.__getitem__)
    assert [r["predicted_seconds"] for r in compared] == [36, 20]
    assert [r["actual_seconds"] for r in compared] == [36, 20] and [r["epochs_run"] for r in compared] == [3, 2]
    # the language model stopped after 2 of its 3 planned epochs: the ratio is against 2 epochs' prediction
    assert [r["predicted_seconds_run"] for r in compared] == [36, pytest.approx(13.33)]
    assert total["actual / predicted"] == pytest.approx(56 / (36 + 40 / 3), abs=1e-3) and plan.within_factor(total)
    metrics["nmt"] = [{"train_seconds": 40, "validation_seconds": 5}] * 3  # 135 s, 3.75x its prediction
    _, total = plan.compare(rows, metrics.__getitem__)
    assert total["actual / predicted"] == pytest.approx(155 / (36 + 40 / 3), abs=1e-3) and not plan.within_factor(total)


def test_sizes_come_from_prepared_statistics_else_the_papers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load("config.yaml")
    stated = plan.parallel_corpus(config, "iwslt16", "fr-en")
    assert stated.train == 220_000 and stated.dev == 2_300 and "paper" in stated.source
    assert plan.lm_corpus(config, "wikitext2part1").train == 2_088_000 / 2
    for path, split, sentences in zip(
        layout.parallel_stats_paths(config, "iwslt16", "fr-en"), ("train", "dev", "test"), (1000, 50, 40)
    ):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(json.dumps({split: {"sentences": sentences, "tokens_en": 9 * sentences}}))
    prepared = plan.parallel_corpus(config, "iwslt16", "fr-en")
    assert (prepared.train, prepared.length, prepared.dev, prepared.test) == (1000, 10, 50, 40)
    assert "prepared" in prepared.source
    assert plan.parallel_corpus(load("config.demo.yaml"), "iwslt16", "de-en") is None  # the demo waits for its data


@pytest.mark.workflow
def test_registry_jobs_match_the_full_dag(full_config_outputs):
    """The plan's trainings are exactly the models `snakemake -n all` builds."""
    jobs = plan.planned_jobs(load("config.yaml"))
    dag = full_config_outputs  # planned_outputs of config.yaml (tests/conftest.py), shared with tests/test_workflow.py
    trained = {p.removesuffix("/model.pt") for p in dag if p.endswith("/model.pt")}
    assert trained and {plan_model_dir(j) for j in jobs} == trained
    ce = next(j for j in jobs if (j.dataset, j.pair, j.experiment) == ("iwslt16", "fr-en", "bpe2bpe-ce"))
    assert "beam5" in ce.searches and ("vmf", "table1") in ce.artefacts


def plan_model_dir(job: plan.PlannedJob) -> str:
    if job.kind == "lm":
        return layout.lm_dir(layout.Job(job.dataset, job.pair, job.experiment, job.seed))
    return layout.model_dir(job.dataset, job.pair, job.experiment, job.seed)


def test_a_tiny_family_is_timed_on_the_cpu():
    import torch

    config = load("config.demo.yaml")
    job = plan.PlannedJob("nmt", "iwslt16", "fr-en", "word2emb-fasttext-tied-nllvmf_reg1reg2", 1)
    corpus = plan.Corpus(train=100, length=6, dev=10, test=10, vocabulary=None, source="hand-made")
    family = plan.nmt_family(config, job, corpus)
    timing = plan.time_nmt(config, job, family, torch.device("cpu"))
    assert timing.step > 0 and timing.forward > 0 and timing.decode > 0
    step_flops, step_operators = timing.counts["step"].flops, timing.counts["step"].kernels
    forward_flops = timing.counts["forward"].flops
    assert step_flops > 2 * forward_flops > 0  # the backward pass costs about twice the forward
    assert step_operators > 50
    lm_job = plan.PlannedJob("lm", "ptb", "lm", "lm-small-re", 1)
    lm_family = plan.lm_family(config, lm_job, plan.Corpus(1000, 1, 100, 100, 50, "hand-made"))
    lm_timing = plan.time_lm(config, lm_job, lm_family, torch.device("cpu"))
    assert lm_timing.step > 0 and lm_timing.counts["step"].flops > lm_timing.counts["forward"].flops > 0


@pytest.mark.workflow
@pytest.mark.parametrize("config", ["config.yaml", "config.demo.yaml"])
def test_the_plan_is_in_the_dry_run_of_all(config, tmp_path):
    result = snakemake(tmp_path, "--configfile", str(REPO / config), "--cores", "2", "-n", "all")
    planned = dict(re.findall(r"^(\w+)\s+(\d+)$", result.stdout, re.MULTILINE))
    assert planned.get("plan") == "1"
    assert ("plan_vs_actual" in planned) == (config == "config.demo.yaml")
    assert "plan_modelled" not in planned  # on request only


@pytest.mark.workflow
def test_the_modelled_plan_runs_on_request_without_data_or_a_gpu(tmp_path):
    result = snakemake(
        tmp_path, "--configfile", str(REPO / "config.yaml"), "--cores", "2", "-n", "results/plan_modelled.md"
    )
    planned = dict(re.findall(r"^(\w+)\s+(\d+)$", result.stdout, re.MULTILINE))
    assert planned == {"plan_modelled": "1", "resolved_config": "1", "total": "2"}  # the config it reads


def test_a_model_only_plan_counts_without_timing(tmp_path, monkeypatch):
    """--model-only on a hand-sized slice of the demo: every family counted, nothing timed, the
    H100 columns filled and the measured ones left out."""
    config = load("config.demo.yaml")
    config["papers"] = {"vmf": {"table2": {}}}
    jobs = plan.planned_jobs(config)
    assert jobs
    sized = plan.Corpus(train=200, length=6, dev=20, test=20, vocabulary=None, source="hand-made")
    monkeypatch.setattr(plan.jobs, "parallel_corpus", lambda *args: sized)
    plan.plan(config, tmp_path / "plan_modelled", threads=1, model_only=True)
    rows = list(csv.DictReader(open(tmp_path / "plan_modelled.jobs.csv")))
    assert len(rows) == len(jobs)
    assert all(float(r["h100_modelled_hours"]) >= float(r["h100_busy_hours"]) > 0 for r in rows)
    assert all(r["device_hours"] == "" and "not timed" in r["note"] for r in rows)
    families = list(csv.DictReader(open(tmp_path / "plan_modelled.families.csv")))
    assert families and all(
        f["tokens_per_second"] == "" and float(f["h100_tokens_per_second_modelled"]) > 0 for f in families
    )
    markdown = (tmp_path / "plan_modelled.md").read_text()
    assert (
        "**not timed**" in markdown and "| wall_hours_gpu1 |" not in markdown and "| h100_wall_hours_gpu1 |" in markdown
    )


def test_a_plan_with_no_sized_job_says_it_modelled_nothing(tmp_path, monkeypatch):
    """The demo's config before its data is prepared: no job has a size, and the plan says so, not
    "0 days, within the 5-day goal" with a floor of 0 and a recommendation."""
    config = load("config.demo.yaml")
    config["papers"] = {"vmf": {"table2": {}}}
    monkeypatch.setattr(plan.jobs, "parallel_corpus", lambda *args: None)
    plan.plan(config, tmp_path / "plan_modelled", threads=1, model_only=True)
    markdown = (tmp_path / "plan_modelled.md").read_text()
    assert (
        f"**H100: nothing modelled**: none of the {len(plan.planned_jobs(config))} training jobs has a size" in markdown
    )
    assert "goal" not in markdown and "Floor:" not in markdown and "**recommended**" not in markdown


def test_dropout_is_counted_as_one_kernel_each_way_as_on_cuda():
    """The CPU draws, scales and multiplies; CUDA's native_dropout is one kernel, its backward one."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.name())
            return func(*args, **(kwargs or {}))

    x = torch.randn(8, 5, requires_grad=True)
    with Recorder() as cpu:
        torch.nn.Dropout(0.3)(x).sum().backward()
    with Recorder() as as_cuda, plan.dropout_as_cuda():
        torch.nn.Dropout(0.3)(x).sum().backward()
    assert "aten::bernoulli_.float" in cpu.names and "aten::native_dropout" not in cpu.names
    dropout = [n for n in as_cuda.names if "dropout" in n or "bernoulli" in n]
    assert dropout == ["aten::native_dropout", "aten::native_dropout_backward"]
    with Recorder() as evaluation, plan.dropout_as_cuda():
        torch.nn.Dropout(0.3).eval()(x)
    assert evaluation.names == []  # off in eval mode, as nn.Dropout is


def test_the_committed_modelled_plan_counts_todays_jobs():
    """docs/plan_modelled.md is the model-only plan of config.yaml, for users before they start."""
    text = (REPO / "docs" / "plan_modelled.md").read_text()
    jobs = int(re.search(r"(\d+) training jobs", text).group(1))
    assert jobs == len(plan.planned_jobs(load("config.yaml"))), "regenerate: snakemake results/plan_modelled.md"


def hand_step_flops(config: dict, job: plan.PlannedJob, family: tuple, batch: int) -> float:
    """A translation step's matrix-product FLOPs by hand (forward F; a step is 3 F where both
    operands take gradients, 2 F where only the weight does, F under no_grad), per sentence of
    n units (no padding: train.compile off), B sentences, N = B n target tokens:

        encoder    Σ_layers,directions 2 B n (4h · in + 4h · h)
        decoder    2 N · 4H · (E + H [input feed] + H) + (L - 1) · 2 N · 4H · 2H   (LSTM layers)
                   + 2 N n H · 2 + 2 N · 2H · H  (attention: scores, context, W_c)
                   + 2 B n H H (keys) + 2 · 2 B H H (bridges)
        output     softmax 2 N H V;  pretrained tied 2 N H d + 2 N d V;  continuous 2 N H m
                   (+ 2 N m V under no_grad for the most informative negative);  joint forms over
                   V' (the sample, once per batch): output 2 V' d H + 2 N H V', joint 2 V' d d_j
                   + 2 N H d_j + 2 N d_j V', bilinear/context 2 N H d + 2 N d V'
    """
    spec = layout.train_spec(config, job.dataset, job.pair, job.experiment, job.seed)
    m = spec.model
    _, _, _, vocab, dim, n = family
    B, N = batch, batch * n
    H, E = m.hidden, m.tgt_embedding
    bidirectional = m.encoder_bidirectional
    h, directions = (H // 2, 2) if bidirectional else (H, 1)
    flops = 0.0
    width = m.src_embedding
    for _ in range(m.encoder_layers):
        flops += 3 * directions * 2 * B * n * (4 * h * width + 4 * h * h)
        width = h * directions
    feed = H if m.input_feed else 0  # input feeding: layer 0 also reads the previous h~
    layers = 2 * N * 4 * H * (E + feed + H) + (m.decoder_layers - 1) * 2 * N * 4 * H * 2 * H
    attention = 2 * N * n * H * 2 + 2 * N * 2 * H * H
    flops += 3 * (layers + attention + 2 * B * n * H * H + 2 * 2 * B * H * H)
    form = spec.output_form
    if spec.output_layer == "continuous":
        flops += 3 * 2 * N * H * dim
        if spec.tied:
            flops += 2 * 2 * N * dim * E  # the projection of the frozen table: no gradient for the table
        if spec.negative == "most_informative":
            flops += 2 * N * dim * vocab
    elif form is None and spec.embeddings:  # a softmax over pretrained, trained word vectors
        flops += 3 * (2 * N * H * dim + 2 * N * dim * vocab + (2 * N * dim * E if spec.tied else 0))
    elif form is None:
        flops += 3 * 2 * N * H * vocab
    else:
        d = E
        sampled = int(spec.sample_share * vocab) if spec.sample_share else vocab
        dj = spec.joint_dim
        flops += (
            3
            * {
                "nmt": 2 * N * H * sampled,
                "tied": 2 * N * d * sampled + (0 if d == H else 2 * N * H * d),
                "bilinear": 2 * N * H * d + 2 * N * d * sampled,
                "context": 2 * N * H * d + 2 * N * d * sampled,
                "output": 2 * sampled * d * H + 2 * N * H * sampled,
                "joint": 2 * sampled * d * (dj or 0) + 2 * N * H * (dj or 0) + 2 * N * (dj or 0) * sampled,
            }[form]
        )
    return flops


def test_every_familys_counted_flops_match_the_hand_formula():
    """A translation family of every kind in the demo (the full configuration's output layers, forms,
    losses, negatives and tyings at small sizes), counted as --model-only counts it (two batches,
    extrapolated to train.batch_size), within 5% of `hand_step_flops`; the joint layer's per-batch
    g_out(E) is counted once."""
    import torch

    config = load("config.demo.yaml")
    for paper in ("vmf", "synmargin"):  # every row's family, those the demo leaves out too (pretrained softmax)
        for settings in config["papers"][paper].values():
            settings.pop("rows", None)
    representative = {}
    for job in plan.planned_jobs(config):
        if job.kind == "nmt":
            family = plan.nmt_family(config, job, plan.Corpus(100, 7, 10, 10, None, "hand-made"))
            s = json.loads(family[1])
            kind = (
                s["output_layer"],
                s.get("output_form"),
                s["loss"],
                s.get("negative"),
                bool(family[4]),
                s["tied"],
                bool(s.get("sample_share")),
            )
            size = family[3] * (s.get("joint_dim") or 1)
            if kind not in representative or size < representative[kind][0]:
                representative[kind] = (size, family, job)  # the smallest family of each kind
    assert len(representative) >= 10
    # the time budget: the kinds whose formulas differ (softmax, pretrained tied softmax, continuous with
    # and without the no_grad negative, tied to the frozen table, the joint forms with per-batch g_out(E))
    chosen = [
        min((v for k, v in representative.items() if want(k)), key=lambda v: v[0])[1:]
        for want in (
            lambda k: k[0] == "softmax" and k[1] is None and not k[4],
            lambda k: k[0] == "softmax" and k[4],
            lambda k: k[3] == "most_informative" and k[5],
            lambda k: k[2] == "nllvmf",
            lambda k: k[1] == "output",
            lambda k: k[1] == "joint",
        )
    ]
    forms = set()
    for family, job in chosen:
        counted = plan.count_nmt(config, job, family, torch.device("cpu")).counts["step"].flops
        expected = hand_step_flops(config, job, family, config["train"]["batch_size"])
        assert counted == pytest.approx(expected, rel=0.05), plan.family_label(family)
        forms.add(json.loads(family[1]).get("output_form") or json.loads(family[1])["output_layer"])
    assert {"continuous", "softmax", "output", "joint"} <= forms and len(chosen) == 6
    fed = {**config, "model": {**config["model"], "input_feed": True}}  # the full configuration's decoder
    _, job = chosen[0]
    family = plan.nmt_family(fed, job, plan.Corpus(100, 7, 10, 10, None, "hand-made"))
    assert json.loads(family[1])["model"]["input_feed"]
    counted = plan.count_nmt(fed, job, family, torch.device("cpu")).counts["step"].flops
    assert counted == pytest.approx(hand_step_flops(fed, job, family, config["train"]["batch_size"]), rel=0.05)


def test_jobs_sharing_a_device_take_the_slowdown_the_gpu_check_measured():
    """Wall hours at gpu.jobs_per_device J scale each job by the median, over the families, of its
    step time with J processes on the device over its time alone (results/gpu_check.json)."""
    from workflow_src.plan.tables import summary_rows
    from workflow_src.plan.timing import sharing_slowdown, wall_hours

    checked = {
        "step_seconds": {"a": 1.0, "b": 2.0, "c": 4.0},
        "jobs_per_device": {"2": {"a": {"step_seconds": 1.5}, "b": {"step_seconds": 3.6}, "c": {"step_seconds": 6.4}}},
    }
    assert sharing_slowdown(checked, 2) == pytest.approx(1.6)  # ratios 1.5, 1.8, 1.6
    assert sharing_slowdown(checked, 1) == 1.0
    assert sharing_slowdown(checked, 4) is None and sharing_slowdown(None, 2) is None
    assert sharing_slowdown({"step_seconds": {}, "jobs_per_device": "not applicable (CPU)"}, 2) is None
    config = {"gpu": {"jobs_per_device": 2}, "papers": {}}
    rows = [
        {
            "artefacts": "",
            "h100_modelled_hours": 1.0,
            "h100_busy_hours": 0.5,
            "h100_graphs_modelled_hours": 0.5,
            "h100_graphs_busy_hours": 0.5,
            "device_hours": hours,
        }
        for hours in (3.0, 2.0, 2.0, 1.0)
    ]
    measured = summary_rows(config, rows, 1.6)[-1]
    assert measured["wall_hours_gpu1"] == pytest.approx(wall_hours([4.8, 3.2, 3.2, 1.6], 2))
    assert summary_rows(config, rows, None)[-1]["wall_hours_gpu1"] == pytest.approx(wall_hours([3.0, 2.0, 2.0, 1.0], 2))
