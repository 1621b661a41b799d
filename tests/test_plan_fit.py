"""The cost plan's model fitted to what a GPU measured (workflow_src/plan/fit.py, costmodel.py): the
H200's check of 2026-11-27 (docs/gpu_check/2026-11-27-h200/: eager steps of 67 families, and 30
of them replayed as CUDA graphs) against the plan's stored counts of the same steps, the model's
transfer to the H100, and CUDA graphs beside eager. The partial check of 2026-11-26
(docs/gpu_check/h200_2026-11-26_steps.json) is the record of what that run printed."""

import dataclasses
import re

import pytest
import yaml

from tests.conftest import REPO
from workflow_src import plan
from workflow_src.plan import costmodel, fit

PARTIAL = REPO / "docs" / "gpu_check" / "h200_2026-11-26_steps.json"
# What docs/gpu_check/2026-11-26-h200-partial.md printed, ms per step
PRINTED = {
    "LM beta": 5.8,
    "LM ce": 30.5,
    "LM augmented": 34.9,
    "LM ce RE": 24.9,
    "LM augmented RE": 28.8,
    "softmax tied": 36.6,
    "softmax joint": 34.8,
    "softmax joint sampled": 44.2,
    "softmax nmt sampled": 51.6,
    "softmax tied sampled": 38.7,
    "softmax bilinear": 36.9,
    "softmax output": 31.9,
    "softmax context": 38.0,
}


def test_the_fixture_holds_only_what_the_h200_printed():
    report = fit.read(PARTIAL)
    doc = (REPO / "docs" / "gpu_check" / "2026-11-26-h200-partial.md").read_text()
    measured = fit.measured_steps(report)
    assert {m.name: round(m.seconds * 1000, 1) for m in measured} == PRINTED
    for m in measured:  # each number, with its experiment, is a line of the document
        assert f"{m.name} ({m.experiment}): {m.seconds * 1000:.1f} ms/step" in doc
        assert m.target_tokens == (20 * 35 if m.name.startswith("LM") else 64 * 25)
    assert report["step_seconds"] == {m.name: m.seconds for m in measured}


# The fit's worst modelled / measured over the eager steps (2026-11-27's reports: 1.560, 1.558 and TIE; NMT 1x512
# nmt/ce's 22.9 ms in the graph check; the floor no setting of the terms beats: 1.380)
WORST = 1.56


def test_the_fit_to_the_h200_is_as_close_as_its_eager_steps_allow():
    """Fitted to the H200's eager steps (all 67 families), the graph check's 30 eager and
    30 replayed ones (docs/gpu_check/2026-11-27-h200), the model is within 1.25x of every graphs step
    but only within WORST = 1.56x of every eager one, and no setting of its terms could be within
    1.3x: `worst_ratio_floor` finds pairs whose counts order one way and whose times the other by
    more than 1.3^2 (1.38x at best: NMT 1x1024 margin tied, projection negative, 65.3 ms in the check,
    against NMT 2x512 nmt/ce, 32.9 ms in the graph check, whose counts are at least 1/1.04 of its own in
    every term),
    and the same family at the same counts was measured up to 1.76x apart in the two runs (NMT 2x512
    tied/ce: 61.9 ms in the check, 35.1 in the graph check, 48.2 in the graph check's fp64 repeat).
    Why: the check timed its eager steps (a median of 3) while up to 12 worker processes computed
    the CPU references and the plan's counts on the same host, and an eager step is host-bound
    (2.5-7x its graphs step), so the host's load is in its time; even the graph check's quieter
    eager steps (a median of 20) spread 1.76x between families of near-equal counts (NMT 1x512
    tied/ce 40.4 ms, nmt/ce 22.9). The graphs steps repeat within 2% (the four of graphs-fp64/)."""
    reports, counts, fitted = fit.load()
    measured = fit.measurements(reports)
    eager = [m for m in measured if m.mode == "eager"]
    graphs = [m for m in measured if m.mode == "graphs"]
    # the check's 67 families, and the graph check's 30 targets among them
    assert (len(eager), len(graphs)) == (67 + 30, 30)
    assert fit.worst_ratio(fitted, graphs, counts) <= 1.3
    floor, a, b = fit.worst_ratio_floor(eager, counts)
    assert floor > 1.3, (a.label, b.label)
    assert floor <= fit.worst_ratio(fitted, eager, counts) <= WORST
    assert fitted.device == costmodel.H200 and set(fitted.fitted) == set(TERMS)
    # the same family measured in both runs, at the same counts but for 25 of 26 target positions
    check = {m.name: m.seconds for m in eager if m.source == "check"}
    again = {m.name: m.seconds for m in eager if m.source == "graph check"}
    assert max(check[name] / again[name] for name in again) > 1.3**2 * 26 / 25
    # the fitted terms are a host's and a GPU's (µs each), not a fit's artefacts
    assert all(1e-6 < getattr(fitted, name) < 30e-6 for name in TERMS if name != "achieved")
    assert 0.01 < fitted.achieved < 1
    assert fitted.host_recurrent_kernel > fitted.recurrent_kernel  # eager, cuDNN's host loop is the slower


def test_the_stored_counts_are_the_plans_counts_of_the_measured_steps():
    """docs/gpu_check/h200_2026-11-27_counts.json holds `fit.count_measured`'s counts of the families
    the check timed, every one of its 67 (the joint paper's sampled 64K and 128K families took 31
    minutes); resumed with all but one (LM 200x2 ce RE: the fastest to count), it counts that one
    again and gives the stored counts."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    check, counts = fit.read(fit.MEASURED[0]), fit.read_counts(fit.COUNTED)
    assert set(counts) == set(check["families"])
    name = "LM 200x2 V=10000 loss=ce RE dropout=0.3"
    written = []
    recounted = fit.count_measured(
        config,
        check,
        counted={k: c for k, c in counts.items() if k != name},
        on_counted=lambda so_far: written.append(dict(so_far)),
    )
    assert recounted == counts and len(written) == 1 and written[0] == counts
    translation = counts["NMT enc 2x512 dec 2x512 tied/ce V 32000->32000 batch 96 length 26"]
    assert (
        translation.recurrent_kernels > 0
        and translation.operators + translation.recurrent_kernels > translation.kernels
    )


def test_a_model_carried_to_the_h100_keeps_the_host_and_slows_the_memory():
    model = costmodel.CostModel(
        costmodel.H200,
        host_operator=10e-6,
        host_view=3e-6,
        kernel=2e-6,
        recurrent_kernel=12e-6,
        achieved=0.3,
        host_recurrent_kernel=4e-6,
    )
    carried = model.on(costmodel.H100)
    counts = plan.Counts(flops=1e12, kernels=1000, bytes=4.8e9, operators=900, views=500, recurrent_kernels=200)
    # eager, the host launches each fused LSTM kernel; replayed, none
    assert carried.host(counts) == model.host(counts) == pytest.approx(900 * 10e-6 + 500 * 3e-6 + 200 * 4e-6)
    assert model.host(counts, replays=1) == pytest.approx(
        (costmodel.REPLAY_OPERATORS + costmodel.BATCH_OPERATORS) * 10e-6
    )
    assert carried.latency_seconds(counts) == model.latency_seconds(counts) == pytest.approx(800 * 2e-6 + 200 * 12e-6)
    assert carried.flop_seconds(counts, "bf16") == model.flop_seconds(counts, "bf16")  # the same GH100
    assert carried.memory_seconds(counts) == pytest.approx(4.8e9 / 3.35e12) and model.memory_seconds(counts) == 1e-3
    assert costmodel.device_named("NVIDIA H200") is costmodel.H200
    assert costmodel.device_named("NVIDIA H100 80GB HBM3") is costmodel.H100


def test_graphs_leave_the_host_a_replay_and_the_gpu_the_padded_step():
    """As CUDA graphs a host-bound eager step becomes the GPU's: the host launches one replay and
    copies its batch; the GPU runs the kernels at the bucket-padded width."""
    model = costmodel.CostModel(
        costmodel.H100, host_operator=10e-6, host_view=3e-6, kernel=2.5e-6, recurrent_kernel=12e-6, achieved=0.3
    )
    counts = {
        "step": plan.Counts(2e11, 2000, 1e9, 0, operators=1800, views=2000, recurrent_kernels=250),
        "forward": plan.Counts(5e10, 700, 0, 0, operators=600, views=700, recurrent_kernels=50),
        "decode": plan.Counts(5e10, 3000, 0, 4, operators=3000, views=2000),
    }
    timing = plan.Timing(None, None, None, counts, width_ratio=30 / 26, decode_steps=26)
    eager, graphs = (timing.modelled("step", "bf16", model, mode) for mode in ("eager", "graphs"))
    assert eager == pytest.approx(1800 * 10e-6 + 2000 * 3e-6) and timing.launch_bound("step", "bf16", model)
    padded = model.busy(
        dataclasses.replace(
            counts["step"], flops=2e11 * 30 / 26, kernels=round(2000 * 30 / 26), recurrent_kernels=round(250 * 30 / 26)
        ),
        "bf16",
    )
    assert graphs == pytest.approx(padded) and not timing.launch_bound("step", "bf16", model, "graphs")
    assert timing.host_seconds("step", model, "graphs") == pytest.approx(
        (costmodel.REPLAY_OPERATORS + costmodel.BATCH_OPERATORS) * 10e-6
    )
    # a decode: a replay per target position, its finished checks kept
    assert timing.host_seconds("decode", model, "graphs") == pytest.approx(
        (26 * costmodel.REPLAY_OPERATORS + costmodel.BATCH_OPERATORS) * 10e-6
    )
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


# -- the fit to the H200's check of 2026-11-27: eager steps and steps replayed as CUDA graphs ----------------
TERMS = {
    "host_operator": 7e-6,
    "host_view": 12e-6,
    "host_recurrent_kernel": 9e-6,
    "kernel": 2.2e-6,
    "recurrent_kernel": 4e-6,
    "achieved": 0.08,
}
# name: (kind, operators, views, kernels, of them in fused LSTM layers, GFLOP); a language model-like pair at 11
# and 200 GFLOP, a cuDNN language model, two translation models with one and two fused encoder layers
CONSTRUCTED = {
    "LM small": ("lm", 2000, 1200, 2000, 0, 10),
    "LM large": ("lm", 2000, 1200, 2000, 0, 200),
    "LM fused": ("lm", 100, 50, 450, 400, 20),
    "NMT one": ("nmt", 1600, 2000, 1900, 260, 400),
    "NMT two": ("nmt", 1700, 2000, 2200, 520, 400),
}


def constructed_reports() -> tuple[list[dict], dict]:
    """A check and a graph check in the layout of 2026-11-27 whose times are those of TERMS, computed
    here from the cost model's equations (costmodel.py's docstring), and the counts behind them."""
    counts, families, compiled = {}, {}, []
    peak, hbm = costmodel.H200.peak_flops["bf16"], costmodel.H200.hbm_bytes_per_second
    t = TERMS
    for name, (kind, operators, views, kernels, recurrent, gigaflops) in CONSTRUCTED.items():
        counts[name] = plan.Counts(
            gigaflops * 1e9, kernels, 1e8, 0, operators=operators, views=views, recurrent_kernels=recurrent
        )
        length = 35 if kind == "lm" else 26
        width = 1 if kind == "lm" else 25 / 26  # the graph check times translation at 25 target positions

        def busy(w):
            return (
                gigaflops * 1e9 * w / (t["achieved"] * peak)
                + 1e8 / hbm
                + (round(kernels * w) - round(recurrent * w)) * t["kernel"]
                + round(recurrent * w) * t["recurrent_kernel"]
            )

        def eager(w):
            host = (
                operators * t["host_operator"]
                + views * t["host_view"]
                + round(recurrent * w) * t["host_recurrent_kernel"]
            )
            return max(host, busy(w))

        graphs = max((1 * costmodel.REPLAY_OPERATORS + costmodel.BATCH_OPERATORS) * t["host_operator"], busy(width))
        families[name] = {
            "kind": kind,
            "experiment": name.lower(),
            "speed": {
                "step_seconds": eager(1),
                "precision": "bf16",
                "length": length,
                "target_tokens_per_step": 64 * length,
            },
        }
        compiled.append(
            {
                "family": name,
                "mode": "graphs",
                "phases": {"graphs against eager": {"step_seconds": graphs, "eager_step_seconds": eager(width)}},
            }
        )
    environment = {"device_name": "NVIDIA H200", "date": "2026-11-27T15:38:32+00:00"}
    check = {"environment": environment, "precision": {"resolved": "bf16"}, "families": families, "compile": []}
    graph_check = {"environment": environment, "precision": {"resolved": "bf16"}, "families": {}, "compile": compiled}
    return [check, graph_check], counts


def test_the_gpu_terms_are_fitted_from_steps_replayed_as_graphs():
    """Times made from known terms give those terms back: the host's from the eager steps, the GPU's
    (per kernel, per fused LSTM kernel, the achieved share of the peak) from the graphs steps, which
    eager steps alone could not fix (each of these is host-bound)."""
    reports, counts = constructed_reports()
    fitted = fit.fit(reports, counts)
    assert set(fitted.fitted) == set(TERMS) and fitted.device == costmodel.H200
    for name, value in TERMS.items():
        assert getattr(fitted, name) == pytest.approx(value, rel=1e-3), name
    measured = fit.measurements(reports)
    assert fit.worst_ratio(fitted, measured, counts) == pytest.approx(1, abs=1e-6)
    # without the graphs steps the GPU's per-kernel terms are priors: eager steps do not fix them
    eager_only = fit.fit(reports[:1], counts)
    assert set(eager_only.fitted) == {"host_operator", "host_view", "recurrent_kernel"}
    assert (eager_only.kernel, eager_only.achieved) == (fit.PRIOR["kernel"], fit.PRIOR["achieved"])


def test_a_gpu_check_is_read_in_the_layout_it_writes():
    """Today's layout: device and date under `environment`; the check's eager step of every family,
    and the graph check's eager and replayed steps of its 30 targets (translation at 25 of the 26
    counted target positions); the 2026-11-26 record, device and date at its top level, still reads."""
    check, graphs = (fit.read(path) for path in fit.MEASURED[:2])
    measured = fit.measurements([check, graphs])
    eager = [m for m in measured if m.source == "check"]
    assert len(eager) == 67 == len(check["families"]) and {m.mode for m in eager} == {"eager"}
    replayed = [m for m in measured if m.source == "graph check"]
    assert len(replayed) == 2 * 30 and sum(m.mode == "graphs" for m in replayed) == 30
    entry = graphs["compile"][0]
    first = [m for m in replayed if m.name == entry["family"]]
    assert {m.mode: m.seconds for m in first} == {
        "eager": entry["phases"]["graphs against eager"]["eager_step_seconds"],
        "graphs": entry["phases"]["graphs against eager"]["step_seconds"],
    }
    assert {(m.kind, m.width_ratio) for m in replayed} == {("lm", 1.0), ("nmt", 25 / 26)}
    assert {m.precision for m in measured} == {"bf16"}
    assert fit.environment(check)["device_name"] == "NVIDIA H200" and fit.environment(check)["date"].startswith(
        "2026-11-27"
    )
    partial = fit.read(PARTIAL)
    assert fit.environment(partial)["device_name"] == "NVIDIA H200" and len(fit.measured_steps(partial)) == 13


def test_the_fit_is_the_same_whatever_the_blas_threads_and_wherever_its_searches_start():
    """Before 2026-11-28 the committed fit put the products at 4.7% of the peak with two BLAS threads
    and at 5.4% with one (a worse corner of the worst case: graphs within 1.29x, not 1.25x); from
    several starts (`fit.starts`) and with each measurement held within the bounds, both agree."""
    import json
    import os
    import subprocess
    import sys

    script = (
        "import json; from workflow_src.plan import fit; m = fit.load()[2]; "
        "print(json.dumps({name: getattr(m, name) for name in m.fitted}))"
    )

    def fitted(threads: int) -> dict:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "PYTHONPATH": str(REPO)}
        out = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    one, two = fitted(1), fitted(2)
    assert set(one) == set(TERMS) and all(abs(one[t] / two[t] - 1) < 0.01 for t in one), (one, two)
    assert 0.05 < one["achieved"] < 0.06
