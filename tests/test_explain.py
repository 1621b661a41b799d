"""From a number to its code: experiment names written out in the paper modules, and
`python -m workflow_src.registry explain` (docs/architecture.md, "Find a number's code")."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.markdown_tables import rendered_tables
from workflow_src import artefact_cells, artefacts, layout, registry
from workflow_src.report import explain
from workflow_src.tables import to_markdown

ROOT = Path(__file__).resolve().parent.parent


def string_literals(path: Path) -> set[str]:
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


@pytest.mark.parametrize("paper", registry.PAPERS)
def test_every_experiment_name_is_a_literal_in_its_paper_module(paper):
    """grep finds where each experiment a table names is defined: its name is a string literal in
    the module of every paper that declares it, not built by an f-string."""
    module = registry.paper_module(paper)
    names = {*getattr(module, "EXPERIMENTS", {}), *getattr(module, "LANGUAGE_MODELS", {})}
    assert names
    missing = sorted(names - string_literals(Path(module.__file__)))
    assert not missing, f"{paper}: not written out in {Path(module.__file__).name}: {', '.join(missing)}"


def test_a_name_its_settings_contradict_is_refused():
    from workflow_src.papers import continuous_setup

    with pytest.raises(ValueError, match="word2emb-fasttext-maxmargin"):
        continuous_setup.continuous("word2emb-fasttext-tied-maxmargin", "maxmargin", "fasttext", tied=False)


CONFIGS = ("config.yaml", "config.demo.yaml")
POINTER = re.compile(r"((?:workflow_src|rules)/[\w/]+\.(?:py|smk)):(\d+)")
NAMES = (*registry.all_experiments(), *registry.language_models())


@pytest.fixture(scope="module", params=CONFIGS)
def config(request):
    return request.param, yaml.safe_load((ROOT / request.param).read_text())


def pointed_lines(text: str) -> list[str]:
    return [(ROOT / path).read_text().splitlines()[int(line) - 1] for path, line in POINTER.findall(text)]


def rule_output(rule: str, rules_file: str) -> str:
    """The `model=` output template of a rule, read from its rules file: its expression evaluated
    with the path patterns of rules/common.smk (its `-- paths` block, plain Python over layout)."""
    common = (ROOT / "rules" / "common.smk").read_text()
    patterns = {"layout": layout, "artefacts": artefacts}
    exec(common[common.index("# -- paths") : common.index("# -- sources")], patterns)
    text = (ROOT / rules_file).read_text()
    return eval(re.search(r"model=(.+),\n", text[text.index(f"rule {rule}:") :]).group(1), patterns)


def test_every_cell_of_every_artefact_is_found_by_the_texts_that_name_it():
    """Every table cell, analysis system and figure line of the four papers, both configs'
    rendered tables among them: the texts a reader sees pick it out, and every cell they pick
    out has its experiment."""
    cells = artefact_cells.all_cells()
    assert len(cells) > 200
    for cell in cells:
        found = artefact_cells.matching_cells(cell.paper, cell.artefact, sorted(cell.keys))
        assert cell in found and {c.experiment for c in found} == {cell.experiment}, cell
        label_only = artefact_cells.matching_cells(cell.paper, cell.artefact, sorted(cell.keys - {cell.experiment}))
        assert cell in label_only, cell


def test_every_experiment_is_explained_down_to_its_code_under_both_configs(config):
    """For every experiment and language model: its definition, its uses, its code, its rule and
    the models that rule writes, each `file:line` pointing at what it names; the spec shown is
    that of a job the config's artefacts read."""
    config_name, settings = config
    for name in NAMES:
        text = explain.explain(settings, config_name, name)
        kind = explain.kind_of(name)
        assert text.startswith(f"{kind} {name}\n")
        lines = pointed_lines(text)
        papers = len(explain.definitions(name))  # the paper modules that define it: the name written out
        assert papers and all(f'"{name}"' in line for line in lines[:papers]), (name, lines)
        assert all(re.match(r'\s*(def |class |rule |"\w+": \()', line) for line in lines[papers:]), (name, lines)
        assert len(lines) >= 4 and any(line.startswith("rule ") for line in lines)
        for cell in artefact_cells.uses(name):
            assert f"  {cell.describe()}\n" in text
        jobs = explain.configured_jobs(settings, name)
        rule, rules_file = explain.TRAINING_RULES[kind]
        template = rule_output(rule, rules_file)
        for job in jobs:
            src_tgt = dict(zip(("src", "tgt"), job.pair.split("-"))) if job.pair != "lm" else {}
            path = template.format(dataset=job.dataset, experiment=job.experiment, seed=job.seed, **src_tgt)
            assert f"  {path}\n" in text
        if jobs:
            spec = json.loads(text[text.index("\n{\n") + 1 :])
            assert spec == explain.spec_of(settings, jobs[0]) and spec["experiment"] == jobs[0].experiment
        else:
            assert "none: no artefact" in text


def test_a_rendered_cell_shows_the_spec_of_its_own_pair(config):
    """`explain PAPER ARTEFACT TEXT...` shows the spec of a job on the cell's data set and pair, for
    every model behind a cell of every table the config renders."""
    config_name, settings = config
    tables = [
        (p, a)
        for p, a in layout.configured_artefacts(settings)
        if not isinstance(registry.artefact(p, a), artefacts.Figure)
    ]
    assert {p for p, _ in tables} == set(registry.PAPERS)
    shown = set()
    for paper, artefact_id in tables:
        ctx = layout.context(settings, paper, artefact_id)
        cells = artefact_cells.artefact_cells(registry.artefact(paper, artefact_id), paper, artefact_id)
        for cell in {(c.experiment, c.dataset, c.pair): c for c in cells}.values():  # one per model
            jobs = [
                j
                for j in explain.configured_jobs(settings, cell.experiment)
                if (j.dataset, j.pair) == (cell.dataset, cell.pair)
            ]
            if ctx.rows is not None and cell.experiment not in ctx.rows or not jobs:
                continue
            text = explain.explain(settings, config_name, cell.experiment, [cell])
            assert f"spec of {explain.model_path(jobs[0])} under {config_name}" in text
            shown.add(paper)
    assert shown == set(registry.PAPERS)


def test_explain_on_the_command_line():
    command = ["explain", "vmf", "table1", "fasttext", "yes", "NLLvMF reg1+reg2", "fr-en"]
    result = subprocess.run(
        [sys.executable, "-m", "workflow_src.registry", *command], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("translation word2emb-fasttext-tied-nllvmf_reg1reg2\n")
    model = "results/models/iwslt16/fr-en/word2emb-fasttext-tied-nllvmf_reg1reg2/seed1/model.pt"
    assert f"spec of {model} under config.yaml:" in result.stdout
    assert any(line.startswith("def nll_vmf(") for line in pointed_lines(result.stdout))


def test_an_ambiguous_cell_lists_its_candidates_and_an_unknown_one_names_the_texts():
    cells = artefact_cells.matching_cells("vmf", "table1", ["NLLvMF reg1+reg2", "fr-en"])
    assert {c.experiment for c in cells} == {
        f"word2emb-{e}-{t}nllvmf_reg1reg2" for e in ("word2vec", "fasttext") for t in ("", "tied-")
    }
    with pytest.raises(KeyError, match="fasttext"):
        artefact_cells.matching_cells("vmf", "table1", ["no such row"])


@pytest.mark.parametrize(
    "paper, artefact_id, rows, expected",
    [
        ("vmf", "table1", [{"experiment": "word2word-ce"}, {"experiment": "bpe2bpe-ce"}], "word2word-ce, bpe2bpe-ce."),
        ("tying", "table3", [{"experiment": ""}, {"experiment": "lm-large-real"}], "-, lm-large-real."),
        (
            "vmf",
            "table3",
            [{"pair": "fr-en"}],
            "Emb w/ NLL-vMF: word2emb-fasttext-tied-nllvmf_reg1reg2 / bpe2emb-fasttext-tied-nllvmf_reg1reg2.",
        ),
    ],
)
def test_the_rendered_table_names_the_experiment_of_each_row(paper, artefact_id, rows, expected):
    """The Markdown leaves the CSV's experiment column out; its footer names each row's (or each
    system's) experiment, and the page's table stays the same valid table."""
    footer = artefact_cells.experiments_footer(registry.artefact(paper, artefact_id), paper, artefact_id, rows)
    page = to_markdown("t", "data", ["experiment", "a"], [{**row, "a": 1.0} for row in rows], footer)
    assert page.count(expected) == 1 and "explain NAME" in page
    assert rendered_tables(page) == [[["a"], *[["1.00"]] * len(rows)]]


def test_a_table_with_rows_left_out_names_them_and_the_setting():
    """A config's `papers.<paper>.<artefact>.rows` shortens a table: its footer names the paper's rows
    not run, in the paper's order, and the key that left them out; a table with every row says nothing."""
    table = registry.artefact("synmargin", "table1")
    selecting = lambda rows: artefacts.Context(seeds=(1,), pairs={}, rows=rows)  # noqa: E731
    (line,) = artefact_cells.left_out_footer(
        table, selecting(tuple(table.row_experiments()[2:])), "synmargin", "table1"
    )
    assert line.endswith(
        "(config papers.synmargin.table1.rows leaves them out): word2word-fasttext-ce, word2word-fasttext-tied-ce."
    )
    assert artefact_cells.left_out_footer(table, selecting(None), "synmargin", "table1") == []
    assert artefact_cells.left_out_footer(table, selecting(tuple(table.row_experiments())), "synmargin", "table1") == []
    assert (
        artefact_cells.left_out_footer(
            registry.artefact("vmf", "table3"), selecting(("word2word-ce",)), "vmf", "table3"
        )
        == []
    )
