"""The conda environments of --sdm conda: every rule that runs a tool names one, pinned as the
requirements are."""

import re
from pathlib import Path

import yaml

from tests.conftest import REPO

RULE = re.compile(r"(?:^|\n)[ \t]*rule (\w+):\n(.*?)(?=\n[ \t]*rule \w+:|\Z)", re.DOTALL)


def rules() -> list[tuple[Path, str, str]]:
    """(file, rule name, rule body) of every rule of the workflow."""
    return [
        (path, rule, body) for path in (REPO / "rules").glob("*.smk") for rule, body in RULE.findall(path.read_text())
    ]


PINS = dict(re.findall(r"^([A-Za-z0-9_.\-]+)==([^\s#]+)", (REPO / "requirements.txt").read_text(), re.MULTILINE))


def test_environments_pin_the_requirements_versions():
    for path in (REPO / "envs").glob("*.yaml"):
        env = yaml.safe_load(path.read_text())
        pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
        assert "python=3.11" in env["dependencies"]
        for requirement in pip:
            name, _, version = requirement.partition("==")
            assert version, f"{path.name}: {requirement} is not pinned"
            assert PINS.get(name) == version, f"{path.name}: {name} {version} differs from requirements.txt"


def test_every_tool_rule_names_an_existing_environment():
    for path, rule, body in rules():
        if "python -m workflow_src." not in body:
            continue  # no workflow_src tool: nothing to install
        env = re.search(r'conda:\s*\n\s*"([^"]+)"', body)
        assert env, f"{path.name}: rule {rule} runs a tool but names no conda environment"
        assert (path.parent / env.group(1)).resolve().is_file(), f"{path.name}: rule {rule}: {env.group(1)} is missing"


def test_every_gpu_rule_goes_to_the_gpu_partition_on_slurm():
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    gpu_rules = [
        rule
        for _, rule, body in rules()
        if re.search(
            r"^\s*gpu=(1|GPU_SLOTS|BENCHMARK_GPU_SLOTS|PLAN_GPU_SLOTS|training_gpu_slots),", body, re.MULTILINE
        )
    ]
    assert {"train", "decode", "train_lm", "benchmark_artefact", "plan", "gpu_check"} <= set(gpu_rules)
    for rule in gpu_rules:
        assert profile["set-resources"].get(rule, {}).get("slurm_partition") == "gpu", rule
