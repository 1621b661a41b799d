"""The deviations ledger: every entry names a real setting or code path, cites real artefacts,
renders, and is cited by the footers of the tables it affects."""

import csv
import importlib
import re

import pytest
import yaml

from tests.conftest import REPO
from workflow_src import paper_records, registry
from workflow_src.report import deviations

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
SCHEMA = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
ENTRIES = [(paper, d) for paper in registry.PAPERS for d in deviations.ledger(paper)]


def schema_node(node: dict, key: str) -> dict | None:
    """The schema of `key` under an object schema `node` ($ref, properties, patterns, additional, *Of)."""
    while "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
    for branch in node.get("oneOf", []) + node.get("anyOf", []) + node.get("allOf", []):
        found = schema_node(branch, key)
        if found is not None:
            return found
    if key in node.get("properties", {}):
        return node["properties"][key]
    for pattern, child in node.get("patternProperties", {}).items():
        if re.search(pattern, key):
            return child
    additional = node.get("additionalProperties")
    return additional if isinstance(additional, dict) else None


def config_key_problem(dotted: str) -> str:
    """'' when `dotted` is a key of config.yaml or of the schema, else what is missing."""
    missing = object()
    value, node = CONFIG, SCHEMA
    for depth, key in enumerate(dotted.split(".")):
        value = value.get(key, missing) if isinstance(value, dict) else missing
        node = schema_node(node, key) if node is not None else None
        if value is missing and node is None:
            return f"config key {dotted}: no {'.'.join(dotted.split('.')[: depth + 1])} in config.yaml or the schema"
    return ""


def code_path_problem(path: str) -> str:
    """'' when `workflow_src/<path>.py:<attribute>` exists, else what is missing."""
    file, _, attribute = path.partition(":")
    if not (REPO / file).is_file():
        return f"code path {path}: no file {file}"
    module = importlib.import_module(file.removesuffix(".py").replace("/", "."))
    target = module
    for part in attribute.split(".") if attribute else []:
        if not hasattr(target, part):
            return f"code path {path}: {file} has no {attribute}"
        target = getattr(target, part)
    return ""


def setting_problem(setting: str) -> str:
    return code_path_problem(setting) if setting.startswith("workflow_src/") else config_key_problem(setting)


@pytest.mark.parametrize("paper, entry", ENTRIES, ids=[f"{p}-{d.id}-{d.setting}" for p, d in ENTRIES])
def test_every_entry_names_a_real_setting_or_code_path(paper, entry):
    problem = setting_problem(entry.setting)
    assert not problem, f"workflow_src/papers/{paper}.py DEVIATIONS {entry.id} ({entry.topic}): {problem}"


def test_the_setting_check_catches_what_does_not_exist():
    assert setting_problem("train.lr.joint") == "" and setting_problem("datasets.wmt17.max_ratio") == ""
    assert setting_problem("papers.vmf.figure2.seeds") == ""  # in the schema (the artefact's seeds), not config.yaml
    assert setting_problem("workflow_src/model/lm_losses.py:augmented_loss") == ""
    assert setting_problem("scoring.meteor_jar") == ""  # null in config.yaml is still a key
    assert "train.no_such_key" in setting_problem("train.no_such_key")
    assert "no_such_function" in setting_problem("workflow_src/score/score.py:no_such_function")
    assert "no file" in setting_problem("workflow_src/nothing.py:x")


@pytest.mark.parametrize("paper", registry.PAPERS)
def test_ledger_entries_are_numbered_and_cite_the_papers_artefacts(paper):
    entries = deviations.ledger(paper)
    assert [d.id for d in entries] == [f"D{i}" for i in range(1, len(entries) + 1)]
    artefacts = registry.paper_module(paper).ARTEFACTS
    for d in entries:
        assert set(d.artefacts) <= set(artefacts), f"{paper} {d.id} cites {set(d.artefacts) - set(artefacts)}"
        assert all((d.topic, d.paper, d.ours, d.why, d.effect)), f"{paper} {d.id} leaves a field empty"
        assert not any("|" in text for text in (d.topic, d.paper, d.ours, d.why, d.effect)), (
            f"{paper} {d.id}: a '|' splits the Markdown cell"
        )


def test_the_ledgers_name_the_settings_of_known_deviations():
    settings = {paper: {d.setting for d in deviations.ledger(paper)} for paper in registry.PAPERS}
    assert {
        "model.encoder_bidirectional",
        "train.lr_decay",
        "train.loss_normalisation",
        "datasets.wmt17.max_ratio",
        "architectures.joint",
    } <= settings["joint"]
    assert {
        "workflow_src/model/lm_losses.py:augmented_loss",
        "papers.tying.table1.tune",
        "workflow_src/decode/lm_predict.py:read_context",
        "lm.convergence",
    } <= settings["tying"]
    assert {
        "workflow_src/report/analysis.py:time_to_convergence",
        "papers.vmf.figure2.seeds",
        "datasets.iwslt16.archives",
    } <= settings["vmf"]
    assert "workflow_src/score/neighbours.py:neighbour_statistics" in settings["synmargin"]


def test_footers_cite_the_entries_of_their_table():
    cited = deviations.footer("joint", "table4")
    expected = [d.id for d in deviations.ledger("joint") if "table4" in d.artefacts]
    assert expected and cited == [f"Deviations: see deviations.md, entries {', '.join(expected)}."]
    assert "D1" not in cited[0].split("entries ")[1].split(", ")  # the encoder does not touch the benchmark
    assert deviations.footer("tying", "no_such_table") == []


def test_the_ledger_renders(tmp_path):
    deviations.main(["--paper", "joint", "--data-note", "demo", "--out-prefix", str(tmp_path / "deviations")])
    with (tmp_path / "deviations.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == [d.id for d in deviations.ledger("joint")]
    assert rows[0]["setting"] == "model.encoder_bidirectional" and rows[0]["data"] == "demo"
    markdown = (tmp_path / "deviations.md").read_text()
    assert "| D11 |" in markdown and (tmp_path / "deviations.html").exists()


def test_a_bad_ledger_fails_with_its_entry():
    with pytest.raises(ValueError, match="D3.*state"):
        paper_records.Deviation("D3", "t", "p", "o", "w", "e", "train.clip", state="fixed")


@pytest.mark.parametrize("paper", registry.PAPERS)
def test_the_papers_docs_list_their_ledger_and_claims(paper):
    from workflow_src.report import claims

    page = (REPO / "docs" / f"{paper}.md").read_text()
    for d in deviations.ledger(paper):
        assert f"- {d.id} {d.topic} ({d.state}): `{d.setting}`" in page, f"docs/{paper}.md does not list {d.id}"
    for c in claims.paper_claims(paper):
        assert f"- {c.id} {c.statement}" in page, f"docs/{paper}.md does not list claim {c.id}"
