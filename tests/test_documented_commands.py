"""Every `snakemake` command that the README and docs/ show works as typed: its targets stay
targets (`--resources` and `--configfile` take several values and swallow a target written after
them), and it dry-runs against the full config and the demo's."""

import re
import shlex
import shutil
import subprocess

import pytest
from snakemake.cli import get_argument_parser

from tests.conftest import REPO
from tests.test_workflow import SNAKEMAKE

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
TARGET = re.compile(r"^(all|vmf|synmargin|joint|tying|results/\S+)$")
CONFIGS = {"full": REPO / "config.yaml", "demo": REPO / "config.demo.yaml"}


def documented_commands() -> dict[str, str]:
    """{command: the page it is on} of every `snakemake` line in a fenced code block."""
    commands = {}
    for page in DOCS:
        for block in FENCE.findall(page.read_text()):
            for line in block.splitlines():
                line = line.strip().removeprefix("$ ")
                if line.startswith("snakemake "):
                    commands.setdefault(line, page.name)
    return commands


COMMANDS = documented_commands()


def test_the_docs_show_the_usage_users_need():
    assert len(COMMANDS) >= 10
    shown = " ".join(COMMANDS)
    for usage in ("snakemake all --cores", "--profile profiles/slurm", "snakemake results/table1.csv",
                  "--configfile config.demo.yaml", "snakemake tying", "--config papers="):
        assert usage in shown, usage


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_targets_stay_targets(command):
    words = shlex.split(command)[1:]
    args = get_argument_parser().parse_args(words)
    report = {str(args.report)} if args.report else set()
    assert set(args.targets) == {w for w in words if TARGET.match(w)} - report, f"{COMMANDS[command]}: {command}"


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("command", sorted(c for c in COMMANDS if "--report" not in c))
def test_documented_command_dry_runs(command, config, tmp_path):
    words = shlex.split(command)[1:]
    if "conda" in words and shutil.which("conda") is None:
        pytest.skip("conda is not installed here: --sdm conda cannot be dry-run")
    if "--configfile" in words:
        if config != "demo":
            pytest.skip("the command names its config")
    else:
        words += ["--configfile", str(CONFIGS[config])]
    # from the checkout, as a user types it (profiles/ and config.demo.yaml are relative to it),
    # writing nothing there
    result = subprocess.run([*SNAKEMAKE, *words, "-n", "--directory", str(tmp_path)], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 0, f"{COMMANDS[command]}: {command}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    assert "This was a dry-run" in result.stdout or "Nothing to be done" in result.stdout
