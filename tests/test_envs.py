"""The conda environments of --sdm conda: every rule that runs a tool names one, pinned as the
requirements are."""

import re
from pathlib import Path

import yaml

from tests.conftest import REPO

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
    for path in (REPO / "rules").glob("*.smk"):
        text = path.read_text()
        for rule, body in re.findall(r"(?:^|\n)[ \t]*rule (\w+):\n(.*?)(?=\n[ \t]*rule \w+:|\Z)", text, re.DOTALL):
            if "{PY}" not in body:
                continue  # no workflow_src tool: nothing to install
            env = re.search(r'conda:\s*\n\s*"([^"]+)"', body)
            assert env, f"{path.name}: rule {rule} runs a tool but names no conda environment"
            assert (path.parent / env.group(1)).resolve().is_file(), f"{path.name}: rule {rule}: {env.group(1)} is missing"
