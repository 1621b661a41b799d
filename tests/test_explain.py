"""From a number to its code: experiment names written out in the paper modules, and
`python -m workflow_src.registry explain` (docs/architecture.md, "Find a number's code")."""

import ast
from pathlib import Path

import pytest

from workflow_src import registry

ROOT = Path(__file__).resolve().parent.parent


def string_literals(path: Path) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


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
