"""The suite's own rules: no test module imports another (what they share is in conftest.py or a
helper module), and a unit test cannot start Snakemake (tests/conftest.py's tiers)."""

import ast
import subprocess
import sys

import pytest

from tests.conftest import REPO


def test_no_test_module_imports_another():
    imports = []
    for path in sorted((REPO / "tests").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, (ast.Import, ast.ImportFrom)) else []
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            if module.startswith("tests.test_") or any(
                name.startswith("tests.test_") or (module == "tests" and name.startswith("test_")) for name in names
            ):
                imports.append(f"{path.name}:{node.lineno}")
    assert not imports, f"test modules importing another test module: {imports}"


def test_a_unit_test_that_starts_snakemake_fails():
    with pytest.raises(AssertionError, match="a unit test started Snakemake"):
        subprocess.run([sys.executable, "-m", "snakemake", "--version"], capture_output=True)
    assert (
        subprocess.run([sys.executable, "-c", "print('snakemake')"], capture_output=True, text=True).stdout
        == "snakemake\n"
    )
