"""`snakemake --lint` finds nothing to say about the workflow, with either config."""

import pytest

from tests.conftest import REPO, snakemake


@pytest.mark.parametrize("config", ["config.yaml", "config.demo.yaml"])
def test_lint_is_clean(config, tmp_path):
    result = snakemake(tmp_path, "--lint", "--configfile", str(REPO / config), check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Lints for" not in output, output[-3000:]
