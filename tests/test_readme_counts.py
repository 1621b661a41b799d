"""The README's job counts and modelled days come from the code: three dry runs of config.yaml
(`all`, `tying`, `all --config papers=[tying]`) and docs/plan_modelled.md, as do docs/cluster.md's;
each time the docs give (the demo's, the plan's) is said once, or the same wherever said. The same dry runs show
that one paper through `all` builds only that paper's data, that a full-config command warns of no
missing local rule, and that the plan's shell command names a config file, not the config."""

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, SNAKEMAKE
from workflow_src.data import statistics
from workflow_src.plan import jobs as planned
from workflow_src.config_check import read_checked

README = (REPO / "README.md").read_text()
CLUSTER = (REPO / "docs" / "cluster.md").read_text()
MODELLED = (REPO / "docs" / "plan_modelled.md").read_text()
FULL = REPO / "config.yaml"
DEMO = REPO / "config.demo.yaml"
RUNS = {"all": ["all"], "tying": ["tying"], "all tying": ["all", "--config", "papers=[tying]"]}


def number(text: str) -> float:
    return float(text.replace(",", ""))


def found(pattern: str, text: str, where: str) -> tuple[str, ...]:
    match = re.search(pattern, text, re.DOTALL)
    assert match, f"{where} no longer says what this test reads (pattern {pattern!r}): update one of the two"
    return match.groups()


def job_stats(output: str) -> dict[str, int]:
    """{rule: jobs} of a dry run's first "Job stats" table."""
    table = output[output.index("Job stats") :]
    counts = {}
    for line in table.splitlines()[3:]:
        words = line.split()
        if len(words) != 2 or not words[1].isdigit():
            break
        counts[words[0]] = int(words[1])
    return counts


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """The three dry runs of config.yaml, each in an empty directory, shell commands printed."""
    runs = {}
    for name, args in RUNS.items():
        workdir = tmp_path_factory.mktemp(name.replace(" ", "_"))
        result = subprocess.run(
            [*SNAKEMAKE, *args, "--configfile", str(FULL), "-n", "-p", "--directory", str(workdir)],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, f"{name}:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        runs[name] = result
    return runs


def test_readme_full_run_job_counts_are_a_dry_runs(dry_runs):
    stats = job_stats(dry_runs["all"].stdout)
    total, translation, lm = found(
        r"`snakemake all -n` lists every job: ([\d,]+) today, ([\d,]+) translation and "
        r"([\d,]+) language-model trainings",
        README,
        "README's timings table",
    )
    assert (number(total), number(translation), number(lm)) == (stats["total"], stats["train"], stats["train_lm"])
    (modelled_jobs,) = found(r"(\d+) training jobs", MODELLED, "docs/plan_modelled.md")
    assert int(modelled_jobs) == stats["train"] + stats["train_lm"], "docs/plan_modelled.md: regenerate it"
    (decodes,) = found(r"decoded one job per model and search \((\d+) decodes\)", CLUSTER, "docs/cluster.md")
    assert int(decodes) == stats["decode"]


def test_readme_one_paper_counts_are_dry_runs(dry_runs):
    """`snakemake tying` and `all --config papers=[tying]` as the README counts them; and `all` for
    one paper downloads that paper's data only."""
    stats = {name: job_stats(run.stdout) for name, run in dry_runs.items()}
    tying, tying_downloads, all_tying, all_jobs, all_downloads = found(
        r"`snakemake tying` builds .*?: ([\d,]+) jobs in a dry\s+run, (\d+) downloads .*?"
        r"`all --config papers=\[tying\]` .*?: ([\d,]+) jobs, the same \d+ downloads \(`snakemake all`: ([\d,]+) jobs,"
        r"\s+(\d+) downloads\)",
        README,
        "README's 'Less than everything'",
    )
    assert (number(tying), number(tying_downloads)) == (stats["tying"]["total"], stats["tying"]["download"])
    assert (number(all_jobs), number(all_downloads)) == (stats["all"]["total"], stats["all"]["download"])
    assert number(all_tying) == stats["all tying"]["total"]
    # the same downloads and trainings; beyond the paper's own jobs only what `all` adds
    assert stats["all tying"]["download"] == stats["tying"]["download"]
    extra = {
        rule: n - stats["tying"].get(rule, 0)
        for rule, n in stats["all tying"].items()
        if n != stats["tying"].get(rule, 0) and rule != "total"
    }
    assert extra == {"plan": 1, "claims": 1, "data_statistics": 1, "all": 1}, extra


def modelled() -> dict[str, str]:
    """docs/plan_modelled.md's facts, as the docs quote them (days to 0.1, hours to 1), eager and as
    CUDA graphs (`train.compile: graphs`)."""
    where = "docs/plan_modelled.md"
    number = r"([\d.]+(?:e[+-]\d+)?)"
    one = found(rf"\| every job one at a time \| {number} \| {number} \|", MODELLED, where)
    recommended = found(
        rf"\| \*\*recommended\*\* `gpu.jobs_per_device` \| \*\*(\d+)\*\* \({number} days\) "
        rf"\| \*\*(\d+)\*\* \({number} days\) \|",
        MODELLED,
        where,
    )
    (floor,) = found(r"\*\*Floor: ([\d.]+) days\*\*", MODELLED, where)
    (busy,) = found(
        r"CUDA graphs \(`train.compile: graphs`\): At \d+ job\(s\) per device.*?busy time bounds them "
        r"\(([\d.]+) hours",
        MODELLED,
        where,
    )
    (joint_busy,) = found(
        r"CUDA graphs \(`train.compile: graphs`\): .*?The joint paper's \d+ models are ([\d.]+) hours", MODELLED, where
    )
    (without_joint,) = found(
        r"CUDA graphs \(`train.compile: graphs`\): .*?without them the other papers' jobs would take ([\d.]+) days",
        MODELLED,
        where,
    )
    (at_floor_share,) = found(
        r"CUDA graphs \(`train.compile: graphs`\): .*?at the floor's 40% of the peak they would be [\d.]+, and the "
        r"whole run ([\d.]+) days",
        MODELLED,
        where,
    )
    (graphs_flops,) = found(
        r"CUDA graphs \(`train.compile: graphs`\): .*?busy time bounds them \([\d.]+ hours: ([\d.]+) of FLOPs",
        MODELLED,
        where,
    )
    beyond_timed = found(
        r"CUDA graphs \(`train.compile: graphs`\): .*?: ([\d.]+) hours of FLOPs at the fitted share; at the floor's "
        r"40% of the peak they would be ([\d.]+),",
        MODELLED,
        where,
    )
    (minutes,) = found(r"<!-- Generated by .*?counting took (\d+) minutes on 2 CPU cores", MODELLED, where)
    (trainings,) = found(r"(\d+) training jobs", MODELLED, where)
    lines = [line for line in MODELLED.splitlines() if line.startswith("| level |")]
    assert lines, f"{where}: no table of hours per level"
    table = MODELLED[MODELLED.index(lines[0]) :].split("\n\n")[0].splitlines()
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    rows = {
        (row["level"], row["paper"]): row
        for row in (dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")))) for line in table[2:])
    }
    days = lambda hours: f"{float(hours) / 24:.1f}"  # noqa: E731
    total = rows["total", ""]
    return {
        "eager one": f"{float(one[0]):.1f}",
        "graphs one": f"{float(one[1]):.1f}",
        "eager recommended": recommended[0],
        "eager shared": f"{float(recommended[1]):.1f}",
        "graphs recommended": recommended[2],
        "graphs shared": f"{float(recommended[3]):.1f}",
        "floor": f"{float(floor):.1f}",
        "eager gpu8": days(total["h100_wall_hours_gpu8"]),
        "graphs gpu8": days(total["h100_graphs_wall_hours_gpu8"]),
        "busy": f"{float(busy):.0f}",
        "minutes": minutes,
        "trainings": trainings,
        "joint jobs": rows["paper", "joint"]["jobs"],
        "joint busy": f"{float(joint_busy):.0f}",
        "graphs without joint": f"{float(without_joint):.1f}",
        "graphs at floor share": f"{float(at_floor_share):.1f}",
        "graphs flops": f"{float(graphs_flops):.0f}",
        "beyond timed flops": f"{float(beyond_timed[0]):.0f}",
        "beyond timed at floor share": f"{float(beyond_timed[1]):.0f}",
    }


def test_readme_modelled_days_are_docs_plan_modelled():
    """The README's full-run line: every modelled number is docs/plan_modelled.md's."""
    facts = modelled()
    (line,) = found(r"(\| full run \(`snakemake all`\) \|[^\n]*)", README, "README's timings table")
    said = found(
        r"counts it in (\d+) minutes on 2 CPU cores[^)]*\): eager ([\d.]+) days on one H100 one job at a time, "
        r"([\d.]+) days with `gpu.jobs_per_device: (\d+)`.*?, ([\d.]+) days on 8; with `train.compile: graphs` "
        r"([\d.]+) days one job at a time, ([\d.]+) days with `gpu.jobs_per_device: (\d+)`, ([\d.]+) days on 8;"
        r".*?40% of the peak, ([\d.]+) days as graphs; without the joint paper, ([\d.]+)\); the floor is ([\d.]+) days",
        line,
        "README's full-run line",
    )
    assert said == tuple(
        facts[k]
        for k in (
            "minutes",
            "eager one",
            "eager shared",
            "eager recommended",
            "eager gpu8",
            "graphs one",
            "graphs shared",
            "graphs recommended",
            "graphs gpu8",
            "graphs at floor share",
            "graphs without joint",
            "floor",
        )
    ), said


def test_cluster_docs_give_the_modelled_numbers_of_docs_plan_modelled():
    """docs/cluster.md's paragraph on the modelled cost: every number is docs/plan_modelled.md's."""
    facts = modelled()
    said = found(
        r"For `config.yaml` on [\d-]+ \(`docs/plan_modelled.md`\): (\d+) trainings, [\d.]+ EFLOP;\s+"
        r"eager \*\*([\d.]+) H100-days one job at a time, ([\d.]+) at `gpu.jobs_per_device: (\d+)`\*\*.*?"
        r"as CUDA graphs \*\*([\d.]+) days\*\* \((\d+) job per device.*?on 8 H100s \*\*([\d.]+) days eager, "
        r"([\d.]+) as graphs\*\*; \*\*floor ([\d.]+) days\*\*.*?as graphs it is (\d+) hours.*?"
        r"The\s+joint paper's (\d+) WMT17 models are (\d+) of the (\d+) hours.*?"
        r"hold (\d+) of the (\d+) FLOP hours; at 40%\s+of the peak they would hold (\d+), and the run\s+"
        r"would take ([\d.]+) days as graphs\..*?without the joint paper the other three\s+papers take ([\d.]+) days",
        CLUSTER,
        "docs/cluster.md's modelled cost",
    )
    assert said == tuple(
        facts[k]
        for k in (
            "trainings",
            "eager one",
            "eager shared",
            "eager recommended",
            "graphs one",
            "graphs recommended",
            "eager gpu8",
            "graphs gpu8",
            "floor",
            "busy",
            "joint jobs",
            "joint busy",
            "busy",
            "beyond timed flops",
            "graphs flops",
            "beyond timed at floor share",
            "graphs at floor share",
            "graphs without joint",
        )
    ), said


def test_each_time_the_docs_give_is_said_once_or_the_same_everywhere():
    """The demo's time: README and docs/demo.md quote the same measurement, its minutes its seconds;
    the plan's own time (docs/plan_modelled.md's header) is given once, in the README: no other
    page's paragraph on plan_modelled names minutes of its own."""
    quoted = {
        page: found(r"(\d+) minutes on 2 CPU cores \(([\d,]+) s on (\d{4}-\d\d-\d\d)", text, page)
        for page, text in (("README", README), ("docs/demo.md", (REPO / "docs" / "demo.md").read_text()))
    }
    ((minutes, seconds, _),) = set(quoted.values())
    assert round(number(seconds) / 60) == int(minutes), quoted
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        if page.name == "plan_modelled.md":
            continue
        blocks = [block for block in re.split(r"\n\s*\n|\n- |\n\|", page.read_text()) if "plan_modelled" in block]
        stated = [m for block in blocks for m in re.findall(r"([\d.]+) minutes", block)]
        assert stated == ([modelled()["minutes"]] if page.name == "README.md" else []), (page.name, stated)


def test_readme_puts_the_gpu_check_first_and_shows_the_recommended_jobs_per_device():
    first_gpu_step = README.index("snakemake results/gpu_check.md")
    assert first_gpu_step < min(
        README.index(step) for step in ("snakemake all --cores", "snakemake results/plan.csv", "--resources gpu=")
    )
    (shown,) = found(r"```yaml\ngpu:\n  jobs_per_device: (\d+)", README, "README's jobs per device")
    assert shown == modelled()["eager recommended"]  # config.yaml's train.compile: off


def test_readme_demo_training_counts_are_the_demos_jobs():
    """The demo's trained models as the README and docs/demo.md count them (the planned training
    jobs: tests/test_plan.py checks that they are the DAG's)."""
    jobs = planned.planned_jobs(yaml.safe_load(DEMO.read_text()))
    counts = (sum(j.kind == "nmt" for j in jobs), sum(j.kind == "lm" for j in jobs))
    for page in (README, (REPO / "docs" / "demo.md").read_text()):
        said = found(r"(\d+) small\s+translation models and (\d+) small language models", page, "the demo's count")
        assert tuple(map(int, said)) == counts


def test_statistics_of_one_paper_are_its_own_data():
    config = yaml.safe_load(FULL.read_text())
    everything = statistics.corpora(config)  # every data set, and the monolingual corpora of the vectors
    assert {corpus for kind, corpus, *_ in everything if kind != "monolingual"} == set(config["datasets"])
    assert {language for kind, _, language, _ in everything if kind == "monolingual"} == set(config["monolingual"])
    only = {**config, "papers": {"tying": config["papers"]["tying"]}}
    assert {corpus for _, corpus, *_ in statistics.corpora(only)} == {"ptb", "wikitext2"}
    assert statistics.corpora({**config, "papers": {}}) == everything  # data preparation alone: every corpus
    joint = {**config, "papers": {"joint": config["papers"]["joint"]}}
    assert {kind for kind, *_ in statistics.corpora(joint)} == {"parallel", "bpe32000", "bpe64000", "bpe128000"}


def test_no_localrules_warning_and_the_plan_names_a_config_file(dry_runs):
    for name, run in dry_runs.items():
        assert "localrules directive specifies rules that are not present" not in run.stdout + run.stderr, name
    commands = [line for line in dry_runs["all"].stdout.splitlines() if "python -m workflow_src.plan plan" in line]
    assert len(commands) == 1 and len(commands[0]) < 400, commands
    (path,) = found(r"--config (results/config/[0-9a-f]+\.json) ", commands[0], "the plan's shell command")
    # the output of a job of the run (tests/test_workflow.py checks what it holds), not written by the dry run
    assert re.search(rf"rule resolved_config:\n\s+output: {re.escape(path)}\n", dry_runs["all"].stdout)
    workdir = dry_runs["all"].args[dry_runs["all"].args.index("--directory") + 1]
    assert not (Path(workdir) / path).exists()


def test_plan_reads_its_config_from_a_file_or_an_object(tmp_path):
    config = yaml.safe_load(FULL.read_text())
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert read_checked(str(tmp_path / "config.json")) == config == read_checked(json.dumps(config))
