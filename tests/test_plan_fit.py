"""The cost plan's model fitted to what a GPU measured (workflow_src/plan/fit.py, costmodel.py): the
H200's step times of 2026-11-26 (docs/gpu_check/h200_2026-11-26_steps.json) against the plan's
stored counts of the same steps, the model's transfer to the H100, and CUDA graphs beside eager."""

import dataclasses
import re

import pytest
import yaml

from tests.conftest import REPO
from workflow_src import plan
from workflow_src.plan import costmodel, fit

# What docs/gpu_check/2026-11-26-h200-partial.md printed, ms per step
PRINTED = {"LM beta": 5.8, "LM ce": 30.5, "LM augmented": 34.9, "LM ce RE": 24.9, "LM augmented RE": 28.8,
           "softmax tied": 36.6, "softmax joint": 34.8, "softmax joint sampled": 44.2, "softmax nmt sampled": 51.6,
           "softmax tied sampled": 38.7, "softmax bilinear": 36.9, "softmax output": 31.9, "softmax context": 38.0}


def test_the_fixture_holds_only_what_the_h200_printed():
    report = fit.read(fit.MEASURED)
    doc = (REPO / "docs" / "gpu_check" / "2026-11-26-h200-partial.md").read_text()
    measured = fit.measured_steps(report)
    assert {m.name: round(m.seconds * 1000, 1) for m in measured} == PRINTED
    for m in measured:  # each number, with its experiment, is a line of the document
        assert f"{m.name} ({m.experiment}): {m.seconds * 1000:.1f} ms/step" in doc
        assert m.target_tokens == (20 * 35 if m.name.startswith("LM") else 64 * 25)
    assert report["step_seconds"] == {m.name: m.seconds for m in measured}


def test_the_fitted_plan_predicts_every_measured_family_within_1_3x():
    """Today's assumed model (8 µs per operator on the host, 2.5 µs per kernel on the GPU, views free)
    is 1.4-3.4x off these steps; the fitted one is within 1.3x of every one."""
    report, counts, fitted = fit.load()
    measured = fit.measured_steps(report)
    assert fit.worst_ratio(fitted, measured, counts) <= 1.3
    assert fitted.device == costmodel.H200 and set(fitted.fitted) == set(fit.FITTED)
    # the model the plan assumed before (docs/plan_modelled.md of 2026-11-25): every kernel 8 µs on the host
    # and 2.5 µs on the GPU, views free
    h100 = costmodel.H100
    for m in measured:
        c = counts[m.name]
        assumed = (max(c.kernels * 8e-6, c.flops / (0.3 * h100.peak_flops["bf16"]) + c.bytes / h100.hbm_bytes_per_second
                       + c.kernels * 2.5e-6) + c.syncs * 10.5e-6)
        assert m.seconds / assumed > 1.3 or m.name == "LM beta", m.name  # 1.4-3.4x under
    # the fitted terms are a host's and a GPU's (µs each), not a fit's artefacts
    assert 1e-6 < fitted.host_operator < 30e-6 and 1e-6 < fitted.host_view < 30e-6
    assert 2.5e-6 < fitted.recurrent_kernel < 30e-6
    assert fitted.kernel == fit.PRIOR["kernel"] <= fit.kernel_bound(fitted, report, counts)


def test_the_stored_counts_are_the_plans_counts_of_the_measured_steps():
    """docs/gpu_check/h200_2026-11-26_counts.json holds `fit.count_measured`'s counts; one family
    counted again (LM ce RE: the fastest to count) gives them."""
    import torch

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    report, counts = fit.read(fit.MEASURED), fit.read_counts(fit.COUNTED)
    assert set(counts) == set(report["step_seconds"])
    m = next(m for m in fit.measured_steps(report) if m.name == "LM ce RE")
    job = plan.PlannedJob("lm", "ptb", "lm", m.experiment, 1)
    family = plan.lm_family(config, job, plan.lm_corpus(config, "ptb"))
    as_measured = {**config, "train": {**config["train"], "precision": m.precision}}
    counted = plan.time_lm(as_measured, job, family, torch.device("cpu"), model_only=True).counts["step"]
    assert counted == counts[m.name]
    translation = counts["softmax tied"]
    assert translation.recurrent_kernels > 0 and translation.operators + translation.recurrent_kernels > translation.kernels


def test_a_model_carried_to_the_h100_keeps_the_host_and_slows_the_memory():
    model = costmodel.CostModel(costmodel.H200, host_operator=10e-6, host_view=3e-6, kernel=2e-6,
                                recurrent_kernel=12e-6, achieved=0.3)
    carried = model.on(costmodel.H100)
    counts = plan.Counts(flops=1e12, kernels=1000, bytes=4.8e9, operators=900, views=500, recurrent_kernels=200)
    assert carried.host(counts) == model.host(counts) == pytest.approx(900 * 10e-6 + 500 * 3e-6)
    assert carried.latency_seconds(counts) == model.latency_seconds(counts) == pytest.approx(800 * 2e-6 + 200 * 12e-6)
    assert carried.flop_seconds(counts, "bf16") == model.flop_seconds(counts, "bf16")  # the same GH100
    assert carried.memory_seconds(counts) == pytest.approx(4.8e9 / 3.35e12) and model.memory_seconds(counts) == 1e-3
    assert costmodel.device_named("NVIDIA H200") is costmodel.H200
    assert costmodel.device_named("NVIDIA H100 80GB HBM3") is costmodel.H100


def test_graphs_leave_the_host_a_replay_and_the_gpu_the_padded_step():
    """As CUDA graphs a host-bound eager step becomes the GPU's: the host launches one replay and
    copies its batch; the GPU runs the kernels at the bucket-padded width."""
    model = costmodel.CostModel(costmodel.H100, host_operator=10e-6, host_view=3e-6, kernel=2.5e-6,
                                recurrent_kernel=12e-6, achieved=0.3)
    counts = {"step": plan.Counts(2e11, 2000, 1e9, 0, operators=1800, views=2000, recurrent_kernels=250),
              "forward": plan.Counts(5e10, 700, 0, 0, operators=600, views=700, recurrent_kernels=50),
              "decode": plan.Counts(5e10, 3000, 0, 4, operators=3000, views=2000)}
    timing = plan.Timing(None, None, None, counts, width_ratio=30 / 26, decode_steps=26)
    eager, graphs = (timing.modelled("step", "bf16", model, mode) for mode in ("eager", "graphs"))
    assert eager == pytest.approx(1800 * 10e-6 + 2000 * 3e-6) and timing.launch_bound("step", "bf16", model)
    padded = model.busy(dataclasses.replace(counts["step"], flops=2e11 * 30 / 26, kernels=round(2000 * 30 / 26),
                                            recurrent_kernels=round(250 * 30 / 26)), "bf16")
    assert graphs == pytest.approx(padded) and not timing.launch_bound("step", "bf16", model, "graphs")
    assert timing.host_seconds("step", model, "graphs") == pytest.approx(
        (costmodel.REPLAY_OPERATORS + costmodel.BATCH_OPERATORS) * 10e-6)
    # a decode: a replay per target position, its finished checks kept
    assert timing.host_seconds("decode", model, "graphs") == pytest.approx(
        (26 * costmodel.REPLAY_OPERATORS + costmodel.BATCH_OPERATORS) * 10e-6)
    assert timing.counted("decode", "graphs").syncs == 4 and timing.counted("step", "graphs").syncs == 0


def test_graphs_pad_to_the_length_buckets():
    assert plan.steps.bucket_width(26, [16, 24, 32, 48]) == 26 + (32 - 24 - 1) / 2
    assert plan.steps.bucket_width(10, [16, 24]) == 10 + (16 - 0 - 1) / 2
    assert plan.steps.bucket_width(60, [16, 24]) == 60  # beyond the last bucket: as it is
    family = ("nmt", "{}", 32000, 32000, None, 26)
    timing = plan.Timing(None, None, None, {})
    config = {"train": {"compile": "off"}}
    assert plan.steps.as_graphs(config, family, timing).width_ratio == pytest.approx((26 + 3.5) / 26)  # granule 8
    buckets = {"train": {"compile": "off", "length_buckets": [16, 24, 32, 48]}}
    graphs = plan.steps.as_graphs(buckets, family, timing)
    assert graphs.width_ratio == pytest.approx(29.5 / 26) and graphs.decode_steps == 26


def test_config_yaml_runs_at_the_settings_the_modelled_plan_recommends():
    """docs/plan_modelled.md recommends gpu.jobs_per_device (eager, as config.yaml trains) and
    threads.train from the fitted model; config.yaml uses them."""
    text = (REPO / "docs" / "plan_modelled.md").read_text()
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    row = re.search(r"\| \*\*recommended\*\* `gpu.jobs_per_device` \| \*\*(\d+)\*\*", text)
    threads = re.search(r"`threads.train: (\d+)`", text)
    assert row and threads, "regenerate: snakemake results/plan_modelled.md"
    assert config["gpu"]["jobs_per_device"] == int(row.group(1))
    assert config["threads"]["train"] == int(threads.group(1)) == costmodel.THREADS_PER_JOB
    assert "fitted to NVIDIA H200's step times" in text
