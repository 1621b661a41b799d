"""Beyond one machine: a real single-node Slurm, and jobs that survive being killed.

A small slice of the demo (IWSLT fr-en, the word->word model of vMF Table 1) runs locally as the
reference. The same slice then runs (1) through profiles/slurm on a Slurm cluster this test
starts on localhost (tests/cluster/slurm.sh; skipped with the reason when it cannot be started),
(2) with its training process killed mid-epoch and Snakemake retrying it, (3) with Snakemake
itself interrupted and restarted. Every run must end with the reference's model and metrics.
On the same cluster two GPU jobs run side by side (no local GPU limit reaches a cluster run), and
the profile's settings (GPU limit, memory and time of every rule sent to Slurm) are read as
Snakemake reads them.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, SNAKEMAKE, assert_same_weights, processes_in_group, training_metrics
from workflow_src import layout

MODEL = layout.model_dir("iwslt16", "fr-en", "word2word-ce", 1)
SECOND = layout.model_dir("iwslt16", "fr-en", "word2bpe-ce", 1)


def slice_config(rows: list[str]) -> dict:
    config = yaml.safe_load((REPO / "config.demo.yaml").read_text())
    config["demo"]["train_sentences"] = 3000
    config["demo"]["monolingual_sentences"] = (
        3000  # the truecaser's text; the demo's 30000 feed embeddings no row here uses
    )
    config["datasets"] = {"iwslt16": {**config["datasets"]["iwslt16"], "pairs": ["fr-en"]}}
    config["monolingual"] = {"en": config["monolingual"]["en"]}
    config["train"] |= {
        "max_epochs": 2,
        "max_epochs_by_group": {},
        "overrides": {},
    }  # the demo trains its compared rows to 20
    config["train"]["device"] = "auto"  # a GPU slot when there is one; here, the CPU (the logs say which)
    config["papers"] = {"vmf": {"table1": {"rows": rows}}}
    return config


def environment(**extra) -> dict:
    """The jobs hold GPU slots (train.device: auto) on a machine declared to have no GPU
    (REPRO_GPUS=0, workflow_src/model/gpu.py): they train on the CPU instead of refusing to."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "REPRO_GPUS": "0", **extra}


def start(workdir: Path, config: dict, *args: str, env=None) -> subprocess.Popen:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    # Ctrl-C must reach Snakemake however the tests were launched: a shell starts background jobs
    # with SIGINT ignored, and an ignored signal stays ignored across exec.
    return subprocess.Popen(
        [*SNAKEMAKE, "--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env or environment(),
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def run(workdir: Path, config: dict, *args: str, env=None) -> str:
    process = start(workdir, config, *args, env=env)
    out, _ = process.communicate(timeout=1800)
    assert process.returncode == 0, out[-4000:]
    return out


def assert_same_model(a: Path, b: Path) -> None:
    assert training_metrics(a) == training_metrics(b)
    assert_same_weights(a, b)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("reference")
    run(workdir, slice_config(["word2word-ce"]), "--cores", "2", "results/table1.csv")
    return workdir


def wait_for(path: Path, process: subprocess.Popen, seconds: float = 600, poll: float = 0.2) -> None:
    deadline = time.time() + seconds
    while not path.exists():
        assert process.poll() is None, f"snakemake ended before {path} appeared:\n{process.stdout.read()[-3000:]}"
        assert time.time() < deadline, f"{path} did not appear"
        time.sleep(poll)


def test_a_killed_training_job_is_retried_and_resumes_to_the_same_model(reference, tmp_path):
    process = start(tmp_path, slice_config(["word2word-ce"]), "--cores", "2", "--retries", "1", "results/table1.csv")
    # Kill the moment epoch 1's checkpoint appears: epoch 2 then has about 1.5 s to go here, and
    # a fixed sleep first raced it on a faster machine (the first run finished before the kill).
    wait_for(tmp_path / MODEL / "checkpoint.pt", process, poll=0.02)
    training = processes_in_group(process.pid, "workflow_src.train.train")  # this run's, no other
    for pid in training:
        os.kill(pid, signal.SIGKILL)
    killed = bool(training)
    out, _ = process.communicate(timeout=1800)
    assert process.returncode == 0, out[-4000:]
    assert (
        killed
        and "resuming after epoch 1" in (tmp_path / "logs/train/iwslt16/fr-en/word2word-ce/seed1.log").read_text()
    )
    assert_same_model(tmp_path / MODEL, reference / MODEL)


def one_finished_one_half_way(models: list[Path], process: subprocess.Popen, seconds: float = 600) -> tuple[Path, Path]:
    """(finished, half way): with one core the models train one after the other, in the order
    Snakemake picks; wait until one has its model and the other a checkpoint but no model."""
    deadline = time.time() + seconds
    while True:
        for done, running in (models, models[::-1]):
            if (
                (done / "model.pt").exists()
                and (running / "checkpoint.pt").exists()
                and not (running / "model.pt").exists()
            ):
                return done, running
        assert process.poll() is None, f"snakemake ended first:\n{process.stdout.read()[-3000:]}"
        assert time.time() < deadline, "no model finished while the other was half way"
        time.sleep(0.1)


def test_an_interrupted_run_does_not_retrain_finished_models(reference, tmp_path):
    config = slice_config(["word2word-ce", "word2bpe-ce"])
    process = start(tmp_path, config, "--cores", "1", "results/table1.csv")
    finished, half_way = one_finished_one_half_way([tmp_path / MODEL, tmp_path / SECOND], process)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C
    process.communicate(timeout=300)
    finished_at = (finished / "model.pt").stat().st_mtime
    out = run(tmp_path, config, "--cores", "1", "results/table1.csv")
    retrained = re.findall(r"rule train:\n(?:[^\n]*\n)*?\s+wildcards: ([^\n]*)", out)
    assert retrained and not any(f"experiment={finished.parent.name}," in w for w in retrained)
    assert (finished / "model.pt").stat().st_mtime == finished_at
    assert (
        "resuming after epoch" in (tmp_path / f"logs/train/iwslt16/fr-en/{half_way.parent.name}/seed1.log").read_text()
    )
    assert_same_model(tmp_path / MODEL, reference / MODEL)


@pytest.fixture(scope="module")
def slurm():
    script = REPO / "tests" / "cluster" / "slurm.sh"
    result = subprocess.run(["bash", str(script), "up"], capture_output=True, text=True)
    if result.returncode != 0:
        subprocess.run(["bash", str(script), "down"], capture_output=True)
        pytest.skip(f"no local Slurm cluster could be started: {(result.stderr or result.stdout).strip()[-300:]}")
    conf = result.stdout.strip().splitlines()[-1].split("=", 1)[1]
    try:
        yield conf
    finally:
        subprocess.run(["bash", str(script), "down"], capture_output=True)


# The test cluster has no account and no accounting database: job states come from squeue (its
# MinJobAge is an hour), where the profile leaves the plugin's default, sacct.
ON_TEST_SLURM = (
    "--profile",
    str(REPO / "profiles" / "slurm"),
    "--slurm-no-account",
    "--slurm-keep-successful-logs",
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--jobs",
    "4",
    "--seconds-between-status-checks",
    "2",
)


def test_the_slurm_profile_runs_the_workflow_on_a_real_slurm(reference, slurm, tmp_path):
    out = run(
        tmp_path,
        slice_config(["word2word-ce"]),
        *ON_TEST_SLURM,
        "results/table1.csv",
        env=environment(SLURM_CONF=slurm),
    )
    assert_same_model(tmp_path / MODEL, reference / MODEL)
    assert (tmp_path / "results/table1.csv").read_text().splitlines()[0] == (
        reference / "results/table1.csv"
    ).read_text().splitlines()[0]
    submitted = {p.name for p in (tmp_path / ".snakemake" / "slurm_logs").iterdir()}
    assert {"rule_train", "rule_decode", "rule_preprocess_parallel"} <= submitted, out[-3000:]
    assert not {"rule_download", "rule_render_table"} & submitted  # local rules stay on the submitting host
    train_log = (tmp_path / "logs/train/iwslt16/fr-en/word2word-ce/seed1.log").read_text()
    assert "CUDA_VISIBLE_DEVICES=" in train_log and "was set for this job" in train_log  # Slurm chose the GPU


def run_interval(job_id: str, slurm_conf: str) -> tuple[datetime, datetime, str]:
    """(start, end, scontrol's line) of a finished Slurm job: the cluster keeps it for MinJobAge."""
    line = subprocess.run(
        ["scontrol", "-o", "show", "job", job_id],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "SLURM_CONF": slurm_conf},
    ).stdout.strip()
    fields = dict(re.findall(r"(\w+)=(\S*)", line))
    return datetime.fromisoformat(fields["StartTime"]), datetime.fromisoformat(fields["EndTime"]), line


def test_two_gpu_jobs_run_at_once_through_the_slurm_profile(reference, slurm, tmp_path):
    """Two trainings that each ask for a GPU (train.device: auto) run at the same time on the test
    cluster's two stand-in GPUs. A local GPU limit that reached a cluster run (profiles/default's
    `gpu=1` once did: Snakemake reads that workflow profile under --profile too) would submit the
    second only after the first had ended."""
    shutil.copytree(
        reference, tmp_path, symlinks=True, dirs_exist_ok=True
    )  # the data ready: only the trainings go to Slurm
    seeds = (2, 3)
    models = [layout.model_dir("iwslt16", "fr-en", "word2word-ce", seed) for seed in seeds]
    out = run(
        tmp_path,
        slice_config(["word2word-ce"]),
        *ON_TEST_SLURM,
        *(f"{model}/model.pt" for model in models),
        env=environment(SLURM_CONF=slurm),
    )
    job_logs = sorted(
        (tmp_path / ".snakemake" / "slurm_logs" / "rule_train").rglob("*.log"), key=lambda log: int(log.stem)
    )
    assert len(job_logs) == 2, out[-3000:]
    intervals = [run_interval(log.stem, slurm) for log in job_logs]
    evidence = "\n".join(
        f"job {log.stem}: {start.time()} to {end.time()}" for log, (start, end, _) in zip(job_logs, intervals)
    )
    print(f"\nthe two training jobs on Slurm:\n{evidence}")
    assert max(start for start, _, _ in intervals) < min(end for _, end, _ in intervals), (
        f"the GPU jobs ran one after the other:\n{evidence}\n" + "\n".join(line for _, _, line in intervals)
    )
    assert all("TresPerJob=gres:gpu:1" in line for _, _, line in intervals)
    devices = {
        re.search(
            r"CUDA_VISIBLE_DEVICES=(\S+) was set",
            (tmp_path / "logs" / "train" / "iwslt16" / "fr-en" / "word2word-ce" / f"seed{seed}.log").read_text(),
        ).group(1)
        for seed in seeds
    }
    assert len(devices) == 2, devices  # each on a stand-in GPU of its own, as Slurm chose
    for model in models:
        assert (tmp_path / model / "model.pt").exists()


PROBE = """
import json, sys
from pathlib import Path

from snakemake.api import SnakemakeApi
from snakemake.cli import parse_args
from snakemake.io import is_flagged
from snakemake.iocontainers import Wildcards
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

argv, configfile, workdir = json.loads(sys.argv[1])
_, args = parse_args(argv)  # the command line with its profiles, merged as snakemake merges them
remote = args.executor not in (None, "local")
with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
    workflow = api.workflow(  # no default_resources: what the rules and the profiles' set-resources ask for
        resource_settings=ResourceSettings(cores=args.cores or 1, nodes=args.jobs if remote else None,
                                           resources=args.resources, overwrite_resources=args.set_resources),
        config_settings=ConfigSettings(configfiles=[Path(configfile)]), snakefile=Path("Snakefile").resolve(),
        workdir=Path(workdir))._workflow

    def attempts(resource):
        return [resource.evaluate(Wildcards(), input=[], attempt=attempt, threads=1).value for attempt in (1, 2, 3)]

    gpu = workflow.global_resources.get("gpu")
    print(json.dumps({"gpu": gpu and gpu.value, "rules": {
        rule.name: {"slurm": not (rule.name in workflow._localrules or rule.norun),
                    "updated": [str(f) for f in rule.output if is_flagged(f, "update")],
                    **{name: attempts(rule.resources[name]) for name in ("mem_mb", "runtime")
                       if name in rule.resources}}
        for rule in workflow.rules}}))
"""


def workflow_as_run(tmp_path: Path, *argv: str, configfile: Path = REPO / "config.yaml") -> dict:
    """The global `gpu` limit and each rule's mem_mb and runtime at attempts 1-3 (and whether it
    goes to the executor, and its outputs flagged update()), for `snakemake <argv>` typed in the checkout:
    the workflow loaded the way Snakemake loads it (profiles/default read too), without building its DAG."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([list(argv), str(configfile), str(tmp_path)])],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=environment(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def under_slurm_profile(tmp_path_factory) -> dict:
    return workflow_as_run(tmp_path_factory.mktemp("slurm_profile"), "all", "--profile", "profiles/slurm")


def test_a_cluster_run_keeps_no_local_gpu_limit_and_a_local_run_keeps_one_gpu(under_slurm_profile, tmp_path):
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert under_slurm_profile["gpu"] == profile["jobs"]  # the profile's SITE value, as many as `jobs`
    one_device = yaml.safe_load((REPO / "config.yaml").read_text())["gpu"]["jobs_per_device"]
    assert workflow_as_run(tmp_path, "all", "--cores", "8")["gpu"] == one_device  # safe on a one-GPU box: its slots
    assert workflow_as_run(tmp_path, "all", "--cores", "8", "--resources", "gpu=4")["gpu"] == 4


def test_every_rule_sent_to_slurm_asks_for_memory_and_a_runtime_that_a_retry_keeps(under_slurm_profile):
    """Under the full config, a job that goes to Slurm asks for mem_mb and runtime (none goes
    with Snakemake's guess from its input size and no time limit); a retry asks for more memory
    but the same runtime (a partition refuses a limit above its MaxTime; training resumes)."""
    rules = under_slurm_profile["rules"]
    remote = {name: r for name, r in rules.items() if r["slurm"]}
    assert {
        "train",
        "decode",
        "bpe_encode",
        "bleu_tokenized",
        "meteor",
        "meteor_by_frequency",
        "representations",
        "lm_next_words",
    } <= set(remote)
    assert not {"download", "bleu", "render_table", "all"} & set(remote)
    missing = {name for name, r in remote.items() if not ("mem_mb" in r and "runtime" in r)}
    assert not missing, f"rules sent to Slurm without mem_mb or runtime: {sorted(missing)}"
    for name, r in remote.items():
        assert all(isinstance(v, int) and v > 0 for v in r["mem_mb"] + r["runtime"]), (name, r)
        assert r["runtime"] == [r["runtime"][0]] * 3, f"{name}: runtime grows with the attempt: {r['runtime']}"
        assert r["mem_mb"][0] <= r["mem_mb"][1] <= r["mem_mb"][2], (name, r)


def test_a_failed_rerun_of_a_training_cannot_delete_its_history(under_slurm_profile):
    """Snakemake deletes a job's outputs before it runs and after it fails, except those flagged
    update(), which it restores on failure: every training's metrics.jsonl is one, and the
    training replaces it only once it has ended (tests/test_train.py, tests/test_train_lm.py)."""
    rules = under_slurm_profile["rules"]
    updated = {
        name: [path.rpartition("/")[2] for path in rule["updated"]] for name, rule in rules.items() if rule["updated"]
    }
    assert updated == {"train": ["metrics.jsonl"], "train_lm": ["metrics.jsonl"]}


def test_the_gpu_check_and_the_plan_ask_slurm_for_minutes_not_a_trainings_days(under_slurm_profile):
    """The first jobs of `all` ask for job_resources.check, far below a training's time and memory:
    a partition with a shorter MaxTime than a training's takes them."""
    rules, resources = under_slurm_profile["rules"], yaml.safe_load((REPO / "config.yaml").read_text())["job_resources"]
    for name in ("gpu_check", "plan", "plan_modelled"):
        assert (rules[name]["runtime"][0], rules[name]["mem_mb"][0]) == (
            resources["check"]["runtime"],
            resources["check"]["mem_mb"],
        )
        assert (
            rules[name]["runtime"][0] * 10 <= rules["train"]["runtime"][0]
            and rules[name]["mem_mb"][0] < rules["train"]["mem_mb"][0]
        )


def test_the_slurm_docs_name_every_local_rule():
    """docs/cluster.md's Slurm table lists exactly the Snakefile's `localrules` (and the demo's own)."""
    block = re.search(r"^localrules:\n((?:    \w+,\n)+)", (REPO / "Snakefile").read_text(), re.MULTILINE)
    local = set(re.findall(r"(\w+),", block.group(1)))
    row = next(
        line for line in (REPO / "docs" / "cluster.md").read_text().splitlines() if line.startswith("| local rules |")
    )
    named = row.split("run on the submitting host:", 1)[1].split("(and `demo_world`", 1)[0]
    assert set(re.findall(r"`(\w+)`", named)) == local
