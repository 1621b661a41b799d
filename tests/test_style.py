"""The Python code's style: ruff's formatter and linter (ruff.toml: line length 120, pycodestyle
and pyflakes) find nothing to change. Run `ruff format .` and `ruff check .` before a commit."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.parametrize("command", [["format", "--check", "--diff"], ["check", "--output-format", "concise"]])
def test_ruff_finds_nothing_to_change(command):
    result = subprocess.run([sys.executable, "-m", "ruff", *command, "."], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, f"ruff {' '.join(command)}:\n{result.stdout[-4000:]}{result.stderr[-2000:]}"
