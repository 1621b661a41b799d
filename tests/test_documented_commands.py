"""Every `snakemake` command that the README and docs/ show works as typed: its targets stay
targets (`--resources` and `--configfile` take several values and swallow a target written after
them), and it dry-runs against the full config and the demo's."""

import re
import shlex
import shutil
import subprocess

import pytest
from snakemake.cli import get_argument_parser

from tests.conftest import REPO, SNAKEMAKE

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
    for usage in (
        "snakemake all --cores",
        "--profile profiles/slurm",
        "snakemake results/table1.csv",
        "--configfile config.demo.yaml",
        "snakemake tying",
        "--config papers=",
    ):
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
    result = subprocess.run(
        [*SNAKEMAKE, *words, "-n", "--directory", str(tmp_path)], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, f"{COMMANDS[command]}: {command}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    assert "This was a dry-run" in result.stdout or "Nothing to be done" in result.stdout


def test_a_swallowed_target_fails_as_the_readme_shows(tmp_path):
    """The README's warning shows the first and last lines of what the design card's literal
    command prints, so that a user recognises it."""
    readme = (REPO / "README.md").read_text()
    command = re.search(r"`(snakemake [^`]*--resources gpu=1 all)` fails", readme).group(1)
    shown = re.search(r"```text\n(Traceback.*?)```", readme, re.DOTALL).group(1).strip().splitlines()
    result = subprocess.run([*SNAKEMAKE, *shlex.split(command)[1:]], cwd=tmp_path, capture_output=True, text=True)
    lines = (result.stdout + result.stderr).splitlines()
    printed = [line for line in lines if line.strip()]
    assert result.returncode != 0
    assert printed[0] == shown[0] and printed[-1] == shown[-1], printed[:3] + printed[-2:]
    assert len(lines) == int(re.search(r"fails in\s+Snakemake 9 with a (\d+)-line traceback", readme).group(1))


def test_report_after_a_partial_run_names_its_targets(tmp_path):
    """docs/demo.md: `--report` alone reports `all` and fails on a file a partial run did not
    build; naming the run's targets reports what it built (one cheap target here)."""
    demo = (REPO / "docs" / "demo.md").read_text()
    assert "marked for report but does not exist" in demo
    command = next(c for c in COMMANDS if "--report" in c and COMMANDS[c] == "demo.md" and TARGET.match(c.split()[1]))
    words = shlex.split(command)[1:]
    words[0] = "results/vmf/deviations.csv"  # the documented form, with a target that builds in seconds
    where = ["--directory", str(tmp_path), "--cores", "1"]
    run = subprocess.run(
        [*SNAKEMAKE, words[0], "--configfile", str(CONFIGS["demo"]), *where], cwd=REPO, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = words.index("--report") + 1
    words[report] = str(tmp_path / "report.html")
    result = subprocess.run([*SNAKEMAKE, *words, *where], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "deviations.html" in (tmp_path / "report.html").read_text()


def test_a_demo_target_is_named_without_demo(tmp_path):
    """docs/demo.md: the demo's workdir makes its targets relative to demo/, so a target that
    starts with demo/ names no rule's output."""
    assert "`demo/results/table1.csv` raises `MissingRuleException`" in (REPO / "docs" / "demo.md").read_text()
    result = subprocess.run(
        [
            *SNAKEMAKE,
            "demo/results/table1.csv",
            "--configfile",
            str(CONFIGS["demo"]),
            "-n",
            "--directory",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and "MissingRuleException" in result.stdout + result.stderr
