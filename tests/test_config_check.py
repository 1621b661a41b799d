"""A config mistake is named on one line: where it came from (the config file or --config), the
key, the value and what was expected; every mistake is listed. `--config` strings are read as the
schema's types first."""

import copy

import pytest
import yaml
from snakemake.utils import update_config

from tests.conftest import REPO, snakemake
from workflow_src.config_check import ConfigError, coerce, problems, validate

SCHEMA = yaml.safe_load((REPO / "schemas/config.schema.yaml").read_text())
FULL = yaml.safe_load((REPO / "config.yaml").read_text())


@pytest.mark.parametrize("name", ["config.yaml", "config.demo.yaml"])
def test_shipped_configs_are_valid(name):
    assert problems(yaml.safe_load((REPO / name).read_text()), SCHEMA) == []


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda c: c["datasets"]["iwslt16"].update(mx_len=3),
            "datasets.iwslt16: unexpected key 'mx_len'; allowed: archives,",
        ),
        (lambda c: c["train"].update(patience="three"), "train.patience: 'three': expected type 'integer'"),
        (
            lambda c: c["datasets"]["wmt17"].update(max_len_unit="pieces"),
            "datasets.wmt17.max_len_unit: 'pieces' is not one of 'word', 'piece'",
        ),
        (
            lambda c: c["sources"]["wmt15/wiki-titles.tgz"].pop("md5"),
            "sources.wmt15/wiki-titles.tgz: needs exactly one of md5, no_md5_reason",
        ),
        (lambda c: c.pop("papers"), "(top level): 'papers' is required"),
        (
            lambda c: c["train"].update(compile=False),
            "train.compile: False is not one of 'off', 'fuse', 'graphs'",
        ),  # a bare off
        (lambda c: c["train"].update(length_buckets=[0, 8]), "train.length_buckets.0: 0: expected minimum 1"),
        (
            lambda c: c["train"]["batch_size_by_group"].update(jont=96),
            "train.batch_size_by_group: unexpected key 'jont'; allowed: continuous, joint, softmax, softmax_pretrained",
        ),
    ],
)
def test_each_mistake_names_its_key(change, message):
    config = copy.deepcopy(FULL)
    change(config)
    found = problems(config, SCHEMA)
    assert found and found[0].startswith(message), found


def test_a_misspelt_training_group_is_one_line():
    config = copy.deepcopy(FULL)
    config["train"]["batch_size_by_group"] = {"jont": 96}
    assert problems(config, SCHEMA) == [
        "train.batch_size_by_group: unexpected key 'jont'; allowed: continuous, joint, softmax, softmax_pretrained"
    ]


def test_command_line_strings_take_the_schema_types():
    """What Snakemake hands over for `--config 'train={patience: 5, seeds: [1, 2], ...}'
    artefacts=...` (nested values as strings): numbers, booleans, nulls and lists are read as the
    schema's types, at every depth; strings the schema wants stay strings; a value that is not a
    clean literal of its type is left for the check to name."""
    config = copy.deepcopy(FULL)
    overrides = {
        "train": {
            "patience": "5",
            "seeds": ["1", "2"],
            "init_scale": "0.05",
            "device": "cpu",
            "lr": {"softmax": "1e-3"},
            "max_epochs": "1.5",
        },
        "gpu": {"jobs_per_device": "2"},
        "papers": {"vmf": {"table1": {"rows": "[word2word-ce]", "seeds": "[3]"}}},
        "datasets": {"iwslt16": {"max_ratio": "null", "pairs": "[fr-en]"}},
    }
    update_config(config, copy.deepcopy(overrides))  # as Snakemake merges them
    config["papers"] = overrides["papers"]
    coerce(config, overrides, SCHEMA)
    train = config["train"]
    assert (train["patience"], train["seeds"], train["init_scale"], train["device"]) == (5, [1, 2], 0.05, "cpu")
    assert train["lr"]["softmax"] == 1e-3 and config["gpu"]["jobs_per_device"] == 2
    assert config["papers"]["vmf"]["table1"] == {"rows": ["word2word-ce"], "seeds": [3]}
    assert config["datasets"]["iwslt16"]["max_ratio"] is None and config["datasets"]["iwslt16"]["pairs"] == ["fr-en"]
    assert train["max_epochs"] == "1.5"  # not an integer: left as given ...
    assert problems(config, SCHEMA) == ["train.max_epochs: '1.5': expected type 'integer'"]  # ... and named


def test_only_command_line_values_are_coerced():
    config = copy.deepcopy(FULL)
    config["train"]["patience"] = "5"  # written so in a config file: a mistake there
    coerce(config, {"train": {"seeds": ["1"]}}, SCHEMA)
    assert config["train"]["patience"] == "5"


def test_every_mistake_is_listed_with_its_file_or_the_command_line(tmp_path):
    configfile = tmp_path / "config.yaml"
    config = copy.deepcopy(FULL)
    config["train"]["patiense"] = 3
    configfile.write_text(yaml.safe_dump(config))
    config["train"]["max_epochs"] = "many"
    config["papers"] = "tying"
    with pytest.raises(ConfigError) as raised:
        validate(config, SCHEMA, [configfile], {"train": {"max_epochs": "many"}, "papers": "tying"})
    assert sorted(str(raised.value).splitlines()) == [
        "--config: papers: 'tying': expected type 'object'; to run some papers, give a list: --config papers=[tying]",
        "--config: train.max_epochs: 'many': expected type 'integer'",
        f"{configfile}: train: unexpected key 'patiense'; allowed: "
        + ", ".join(sorted(SCHEMA["properties"]["train"]["properties"])),
    ]


def test_snakemake_prints_every_problem_briefly(tmp_path):
    """A real dry run: the file's misspelt key and a bad --config value, one line each, with no
    traceback; the --config numbers and lists beside them pass."""
    config = copy.deepcopy(FULL)
    config["train"]["patiense"] = 3
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(
        tmp_path,
        "-n",
        "all",
        "--configfile",
        str(tmp_path / "config.yaml"),
        "--config",
        "train={patience: 5, seeds: [1, 2], max_epochs: many}",
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"{tmp_path}/config.yaml: train: unexpected key 'patiense'" in output
    assert "--config: train.max_epochs: 'many': expected type 'integer'" in output
    assert "patience" not in output.replace("allowed:", "").split("unexpected key")[0] and "seeds: " not in output
    assert "more)" not in output and 'File "' not in output and "Traceback" not in output
    assert len(output.splitlines()) < 10 and "$schema" not in output  # no schema dump


def command_line(overrides: dict, configfile) -> ConfigError:
    """The error of config.yaml with `--config` overrides merged as Snakemake merges them."""
    config = copy.deepcopy(FULL)
    update_config(config, copy.deepcopy(overrides))
    with pytest.raises(ConfigError) as raised:
        validate(config, SCHEMA, [configfile], overrides)
    return raised.value


def test_a_nested_command_line_mistake_names_only_its_key_and_blames_the_command_line():
    """`--config 'papers={tying: {seedz: [1]}}'`: the misspelt key alone (the paper's tables and
    figures are keys its schema allows by pattern), from --config, not the config file."""
    assert str(command_line({"papers": {"tying": {"seedz": ["1"]}}}, REPO / "config.yaml")).splitlines() == [
        "--config: papers.tying: unexpected key 'seedz'; allowed: a key matching ^(table|figure)[0-9]+$"
    ]


@pytest.mark.parametrize(
    "overrides, line",
    [
        (
            {"papers": {"tying": {"table9": {}}}},
            "--config: papers.tying.table9: tying has no table9; it has figure1, table1, table2, table3, figure2, "
            "table4",
        ),
        (
            {"papers": {"tying": {"table1": {"rows": ["lm-nonesuch"]}}}},
            "--config: papers.tying.table1.rows: lm-nonesuch not rows",
        ),
        (
            {"align": {"fast_align": "/nowhere/fast_align"}},
            "--config: align.fast_align: '/nowhere/fast_align' is neither an executable file nor a command on the "
            "PATH; "
            "expected a fast_align binary, or null for eflomal",
        ),
        (
            {"scoring": {"meteor_jar": "/nowhere/meteor-1.5.jar"}},
            "--config: scoring.meteor_jar: '/nowhere/meteor-1.5.jar' is not a file; expected meteor-1.5.jar and java",
        ),
        (
            {"download": {"local_copies": ["/nowhere/copies"]}},
            "--config: download.local_copies: '/nowhere/copies' is not a directory here",
        ),
    ],
)
def test_what_the_schema_cannot_check_is_one_line_naming_the_key(overrides, line):
    """An artefact or row its paper does not have, an external tool that is not there: one line at
    DAG time, naming the key (a KeyError's traceback, or a job failing hours later, before)."""
    found = str(command_line(overrides, REPO / "config.yaml")).splitlines()
    assert len(found) == 1 and found[0].startswith(line), found


def test_an_external_tool_that_is_there_passes(tmp_path):
    config = copy.deepcopy(FULL)
    tool = tmp_path / "fast_align"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    config["align"]["fast_align"] = str(tool)
    validate(config, SCHEMA)
    tool.chmod(0o644)
    with pytest.raises(ConfigError, match="align.fast_align: .* is neither an executable file"):
        validate(config, SCHEMA)


def refused_by(command: list[str]) -> str:
    """What a `python -m workflow_src...` command, run in this process, ends with."""
    from workflow_src.gpu_check.__main__ import main as gpu_check
    from workflow_src.plan.cost import main as plan
    from workflow_src.report.explain import main as explain

    tool, *args = command
    with pytest.raises(SystemExit) as ended:
        {"plan": plan, "explain": explain, "gpu_check": gpu_check}[tool](args)
    return str(ended.value)


@pytest.mark.parametrize(
    "command",
    [
        ["plan", "plan", "--config", "{config}", "--out-prefix", "{tmp}/plan", "--model-only"],
        ["plan", "count-measured", "--config", "{config}", "--out", "{tmp}/counts.json"],
        ["explain", "explain", "--config", "{config}", "bpe32k-joint512"],
        ["gpu_check", "--config", "{config}", "--out", "{tmp}/check"],
        ["gpu_check", "export-config", "{config}", "{tmp}/config.json"],
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_every_command_taking_a_config_refuses_what_the_workflow_refuses(command, tmp_path):
    """A misspelt optional key (which would silently train the joint paper at 64, not 96) ends each
    command that reads a config with the Snakefile's line naming the file and key, writing nothing."""
    config = copy.deepcopy(FULL)
    config["train"]["batch_size_by_grup"] = config["train"].pop("batch_size_by_group")
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(config))
    message = refused_by([part.format(config=path, tmp=tmp_path) for part in command])
    assert message.startswith("config error:\n") and f"{path}: train: unexpected key 'batch_size_by_grup'" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["typo.yaml"]


def test_a_list_of_papers_in_a_config_file_is_one_line_naming_the_file(tmp_path):
    (tmp_path / "listed.yaml").write_text(yaml.safe_dump({**FULL, "papers": ["vmf"]}))
    result = snakemake(tmp_path, "-n", "all", "--configfile", str(tmp_path / "listed.yaml"), check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in output and 'File "' not in output
    needs = "papers: a list of paper names needs a config file whose `papers` block sets them"
    assert f"{needs} (read: {tmp_path}/listed.yaml)" in output
