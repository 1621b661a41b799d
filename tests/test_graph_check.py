"""workflow_src/train/graph_check.py, the GPU comparison of `train.compile: graphs` with eager,
run on the CPU where nothing is captured (the static step runs as it is): it finds a translation
model's and a language model's static steps in agreement with the eager ones, and times both;
it refuses to run its comparison without a GPU."""

import pytest
import torch

from tests import fixed_step
from tests.conftest import LM_SPEC, translation_spec
from workflow_src.train import graph_check, train_lm

CPU = torch.device("cpu")


def test_a_translation_family_agrees_and_is_timed_without_capture(monkeypatch):
    """A sampled joint layer: eager draws with CUDA's sampler here too (the CPU's draws other
    subsets, with the same law: tests/test_static_step.py), so the two runs draw the same V' (k = 100
    words hold the 3 x 32 targets, so that sampler never falls back to the CPU's)."""
    from workflow_src.model import joint

    monkeypatch.setattr(joint, "sample_vocabulary", joint.sample_vocabulary_topk)
    spec = translation_spec(
        {
            **fixed_step.BASE,
            **fixed_step.KINDS["joint_sampled"],
            "precision": "fp32",
            "train": {"lr": 0.01, "batch_size": 3, "clip": 1.0, "init_scale": 0.1, "loss_normalisation": "sentence"},
        }
    )
    result = graph_check.check("nmt", spec, {"src": 40, "tgt": 200, "dim": None}, CPU, steps=4, timed=1)
    assert result["passed"], result
    assert result["loss_max_relative"] < 1e-5 and result["update_cosine_min"] > 0.999
    assert result["eager_step_seconds"] > 0 and result["graphs_step_seconds"] > 0


def test_a_language_model_family_agrees_without_capture():
    spec = train_lm.resolve(
        {
            **LM_SPEC,
            "experiment": "t",
            "size": 8,
            "layers": 2,
            "dropout": 0.3,
            "reuse_embedding": True,
            "loss": "ce",
            "loss_params": {},
            "lr": 1.0,
            "lr_decay": 0.5,
            "decay_after": 1,
            "clip": 0.5,
            "bptt": 5,
            "batch_size": 3,
            "max_epochs": 1,
            "seed": 1,
            "device": "cpu",
            "precision": "fp32",
        }
    )
    result = graph_check.check("lm", spec, {"vocabulary": 30}, CPU, steps=3, timed=1)
    assert result["passed"] and result["update_cosine_min"] > 0.999, result


def test_without_a_gpu_the_command_says_so_in_one_line(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(
        SystemExit, match="graph_check: train.compile graphs captures CUDA graphs; torch sees no GPU here"
    ):
        graph_check.main([])


def test_eager_and_captured_steps_are_timed_in_turn_and_the_fastest_median_of_each_kept(monkeypatch):
    """A host-bound step's time varies between moments of a run (model/timing.py's ROUNDS): each
    side is built and timed ROUNDS times, alternating with the other, and its fastest median kept."""
    medians = {False: iter([0.050, 0.030]), True: iter([0.012, 0.015])}
    timed = []

    def runs(kind, spec, sizes, device, precision, dropout, graphs, count, measure, dtype=torch.float32):
        if not measure:  # the agreement runs: one loss, nothing moved
            return {"losses": [1.0], "before": [torch.ones(2)], "after": [torch.zeros(2)], "seconds": None}
        timed.append(graphs)
        return {"losses": [1.0], "before": [], "after": [], "seconds": next(medians[graphs])}

    monkeypatch.setattr(graph_check, "family_runs", runs)
    monkeypatch.setattr(graph_check, "ROUNDS", 2)
    result = graph_check.check("lm", train_lm.resolve({**LM_SPEC, "experiment": "t", "device": "cpu"}), {}, CPU)
    assert timed == [False, True, False, True]
    assert result["eager_step_seconds_rounds"] == [0.050, 0.030] and result["eager_step_seconds"] == 0.030
    assert result["graphs_step_seconds_rounds"] == [0.012, 0.015] and result["graphs_step_seconds"] == 0.012
    assert result["speedup"] == pytest.approx(2.5)
