"""A config mistake is named on one line: the key, the value and what was expected."""

import copy

import pytest
import yaml

from tests.conftest import REPO
from tests.test_workflow import snakemake
from workflow_src.config_check import problems

SCHEMA = yaml.safe_load((REPO / "schemas/config.schema.yaml").read_text())
FULL = yaml.safe_load((REPO / "config.yaml").read_text())


@pytest.mark.parametrize("name", ["config.yaml", "config.demo.yaml"])
def test_shipped_configs_are_valid(name):
    assert problems(yaml.safe_load((REPO / name).read_text()), SCHEMA) == []


@pytest.mark.parametrize("change, message", [
    (lambda c: c["datasets"]["iwslt16"].update(mx_len=3), "datasets.iwslt16: unexpected key 'mx_len'; allowed: archives,"),
    (lambda c: c["train"].update(patience="three"), "train.patience: 'three': expected type 'integer'"),
    (lambda c: c["datasets"]["wmt17"].update(max_len_unit="pieces"),
     "datasets.wmt17.max_len_unit: 'pieces' is not one of 'word', 'piece'"),
    (lambda c: c["sources"]["wmt15/wiki-titles.tgz"].pop("md5"), "sources.wmt15/wiki-titles.tgz: needs exactly one of md5, no_md5_reason"),
    (lambda c: c.pop("papers"), "(top level): 'papers' is required"),
    (lambda c: c["train"].update(compile=False), "train.compile: False is not one of 'off', 'fuse', 'graphs'"),  # a bare off
])
def test_each_mistake_names_its_key(change, message):
    config = copy.deepcopy(FULL)
    change(config)
    found = problems(config, SCHEMA)
    assert found and found[0].startswith(message), found


def test_snakemake_prints_one_short_message(tmp_path):
    config = copy.deepcopy(FULL)
    config["train"]["patiense"] = 3
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml"), "-n", "all", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "config: train: unexpected key 'patiense'" in output
    assert len(output.splitlines()) < 15 and "$schema" not in output  # no schema dump
