"""The GPU check (workflow_src/gpu_check) on the CPU: every family of the demo passes; a failed
check exits 1 with one line naming the setting that avoids it; it runs where only a bare GPU
machine's packages are; the device script's training on real pairs; and its Snakemake wiring
never makes a finished model out of date."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from conftest import REPO, real_fixture
from workflow_src import gpu_check
from workflow_src.gpu_check.__main__ import main

DEMO = REPO / "config.demo.yaml"
# Absent on a bare GPU machine (torch, numpy, scipy, pandas, sentencepiece, sacrebleu only)
ABSENT_THERE = ("snakemake", "gensim", "fasttext", "eflomal", "yaml", "tqdm", "sacremoses", "nltk", "matplotlib",
                "jsonschema")
# The families the issue names, as gpu_check names them
NAMED = ("softmax nmt", "softmax tied", "softmax joint sampled", "softmax pretrained vectors tied", "continuous nllvmf",
         "continuous l2", "continuous cosine", "continuous margin (most_informative negative)", "LM ce", "LM ce RE",
         "LM augmented")


@pytest.fixture(scope="module")
def demo_config() -> dict:
    return yaml.safe_load(DEMO.read_text())


@pytest.fixture(scope="module")
def json_config(tmp_path_factory) -> Path:
    """config.demo.yaml as JSON (export-config), for runs without PyYAML."""
    path = tmp_path_factory.mktemp("config") / "config.json"
    assert main(["export-config", str(DEMO), str(path)]) == 0
    return path


def run_bare(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """`python -m workflow_src.gpu_check ARGS` with the packages a bare GPU machine lacks unimportable."""
    code = (f"import sys, runpy\nfor name in {ABSENT_THERE!r}:\n    sys.modules[name] = None\n"
            f"sys.argv = ['gpu_check', *{args!r}]\nrunpy.run_module('workflow_src.gpu_check', run_name='__main__')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "REPRO_GPU_LOCK_DIR": str(tmp_path / "locks")}
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_every_demo_family_passes_without_the_workflows_packages(json_config, demo_config, tmp_path):
    result = run_bare(["--config", str(json_config), "--out", str(tmp_path / "out"), "--compile", "cuda",
                       "--threads", "1"], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert report["passed"] and report["failures"] == []
    expected = {f.name for f in gpu_check.families(demo_config)}
    assert set(report["families"]) == expected and set(NAMED) <= expected
    assert set(report["step_seconds"]) == expected and all(s > 0 for s in report["step_seconds"].values())
    assert report["tolerances"]["fp32"] == gpu_check.TOLERANCES["fp32"]
    for name, entry in report["families"].items():
        assert list(entry["correctness"]) == ["fp32"]  # the demo's precision; tf32 is CUDA's
        assert entry["correctness"]["fp32"]["passed"] and entry["dtypes"]["fp32"]["passed"], name
        assert entry["syncs_per_step"] == "not applicable (CPU)"
    assert report["compile"].startswith("skipped") and report["jobs_per_device"] == "not applicable (CPU)"
    assert "**passed**" in (tmp_path / "out" / "gpu_check.md").read_text()


def test_yaml_config_without_pyyaml_names_the_json_export(tmp_path):
    result = run_bare(["--config", str(DEMO), "--out", str(tmp_path)], tmp_path)
    assert result.returncode != 0 and "export-config" in result.stderr


def test_a_failed_tolerance_exits_1_with_one_line_and_the_setting(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(gpu_check.TOLERANCES, "fp32", {**gpu_check.TOLERANCES["fp32"], "gradient_cosine": 1.5})
    assert main(["--config", str(DEMO), "--out", str(tmp_path), "--families", "softmax nmt", "--compile", "never"]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("GPU CHECK FAILED")]
    assert len(lines) == 1 and lines[0].startswith("GPU CHECK FAILED: correctness in fp32 of softmax nmt: gradient "
                                                   "cosine 1.000000 < 1.5 (parameter group ")
    assert lines[0].endswith("; avoided by " + gpu_check.AVOID["fp32"])
    report = json.loads((tmp_path / "gpu_check.json").read_text())  # written before the exit
    assert report["passed"] is False and report["failures"] == lines


def test_dtype_rules():
    seen = {"encoder.rnn (LSTM)": ("recurrent", {torch.bfloat16}), "output (JointOutput)": ("module", {torch.bfloat16})}
    assert gpu_check.dtype_problems(seen, "bf16", torch.float32) == [
        "recurrent encoder.rnn (LSTM) outputs torch.bfloat16, not fp32"]
    assert "encoder.rnn (LSTM) outputs bfloat16 in fp32" in gpu_check.dtype_problems(seen, "fp32", torch.float32)
    assert gpu_check.dtype_problems({"x (Linear)": ("module", {torch.float16})}, "bf16", torch.float32)[0] == \
        "x (Linear) outputs float16"
    assert "autocast is not in effect" in gpu_check.dtype_problems(
        {"x (Linear)": ("module", {torch.float32})}, "bf16", torch.float32)[0]
    assert gpu_check.dtype_problems({}, "fp32", torch.bfloat16) == ["the loss is torch.bfloat16, not fp32 or wider"]


def test_an_injected_bf16_output_fails_the_dtypes_check(monkeypatch, tmp_path, capsys):
    build = gpu_check.build

    def with_bf16_output(family, seed=0):  # the output layer's loss "hides" bf16 although fp32 is asked for
        model = build(family, seed)
        loss = model.output.loss

        def bf16_loss(*args):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return loss(*args)
        model.output.loss = bf16_loss
        return model
    monkeypatch.setattr(gpu_check, "build", with_bf16_output)
    assert main(["--config", str(DEMO), "--out", str(tmp_path), "--families", "softmax nmt", "--compile", "never"]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("GPU CHECK FAILED")]
    assert lines and all(line.startswith("GPU CHECK FAILED: dtypes in fp32 of softmax nmt: operators (") for line in lines)
    assert all(line.endswith("outputs bfloat16 in fp32; avoided by " + gpu_check.AVOID["dtypes"]) for line in lines)


def test_every_lm_objective_of_the_demo_is_a_family(demo_config):
    from workflow_src.model.lm_losses import OBJECTIVES

    assert {f.spec["loss"] for f in gpu_check.families(demo_config) if f.kind == "lm"} == set(OBJECTIVES)


def test_device_script_trains_on_real_pairs(tmp_path):
    pairs = tmp_path / "gpu_pairs"
    pairs.mkdir()
    for name in ("src-train.txt", "tgt-train.txt"):
        lines = real_fixture("wmt-toy-ende", name).read_text(encoding="utf-8").splitlines()[:200]
        (pairs / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHON": sys.executable, "CONFIG": str(DEMO), "SECONDS_PER_MODEL": "1",
           "GPU_CHECK_ARGS": "--families nllvmf_appendix --threads 1", "REPRO_GPU_LOCK_DIR": str(tmp_path / "locks")}
    result = subprocess.run([str(REPO / "scripts" / "gpu_check_on_device.sh"), str(tmp_path / "out"), str(pairs)],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "pairs_training.json").read_text())
    assert [r["experiment"] for r in report["runs"]] == ["word2word-ce", "word2emb-fasttext-tied-nllvmf_reg1reg2"]
    for run in report["runs"]:
        assert run["target_tokens_per_second"] > 0 and run["loss_curve"] and run["steps"] >= 1
    assert report["runs"][0]["target_embeddings"] is None
    assert "stand-in" in report["runs"][1]["target_embeddings"]
    assert "stand-in" in (tmp_path / "out" / "pairs_training.md").read_text()
    assert json.loads((tmp_path / "out" / "gpu_check.json").read_text())["passed"]


def test_rerunning_the_check_outdates_no_model(tmp_path):
    """Dry runs of the demo: a finished model does not wait for, or retrain after, the check."""
    model = "results/models/iwslt16/fr-en/word2word-ce/seed1/model.pt"
    snakemake = [sys.executable, "-m", "snakemake", "--configfile", str(DEMO), "--directory", str(tmp_path),
                 "--cores", "1", "-n", "-s", str(REPO / "Snakefile")]

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
