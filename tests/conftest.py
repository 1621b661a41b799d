"""What the test modules share: paths, Snakemake as the suite runs it, a tiny translation corpus
and its training command, archive packing, and the tiers (unit, workflow, e2e) each module is in."""

import csv
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from workflow_src.specs import LengthLimit, LMSpec, ModelShape, TrainSettings, TrainSpec, VocabSizes, document, load

REPO = Path(__file__).resolve().parents[1]
REAL_FIXTURES = REPO.parent / "shared" / "fixtures" / "real"
sys.path.insert(0, str(REPO))
# Every snakemake the suite starts loads the Slurm executor plugin, which runs `scontrol show
# config`: where Slurm's client is installed (tests/cluster/slurm.sh installs it) and no cluster is
# configured, that takes 9 s to give up. A configuration whose controller refuses at once ends it in
# milliseconds; the Slurm test passes its own cluster's SLURM_CONF, and slurm.sh sets its own.
os.environ.setdefault("SLURM_CONF", str(REPO / "tests" / "cluster" / "no_controller.conf"))
# On scripts/test.sh's two workers, two test processes (one of them the demo's Snakemake with its
# two one-thread jobs) share the cores: torch's default of one OpenMP thread per core would put
# spinning threads on cores already busy (the real-text learning tests took over 20 minutes, not 4).
# One thread each, set before torch is first imported here and inherited by every subprocess; a test
# that needs another count sets its own (torch.set_num_threads, --threads).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


# Tiers ------------------------------------------------------------------------------------------
# unit: no Snakemake, no demo, no model trained to a learning criterion (`bash scripts/test.sh -m unit`,
# minutes); workflow: dry runs, small DAGs run for real, the Slurm cluster; e2e: the embedded demo,
# and models trained on real text until they learn. A module's tests are in its tier
# below (unit unless named); a test can name its own with @pytest.mark.workflow. A unit test that
# starts Snakemake fails (`SnakemakeRefusedInUnitTests`), so the tier cannot drift.
TIERS = {
    "unit": "no Snakemake, no demo, no model trained until it learns",
    "workflow": "Snakemake dry runs, small DAGs, the Slurm cluster",
    "e2e": "the embedded demo end to end, and models trained on real text until they learn",
}
MODULE_TIERS = {
    "e2e": {"test_demo", "test_real_text_learning"},
    "workflow": {
        "test_cluster",
        "test_config_check",
        "test_documented_commands",
        "test_lint",
        "test_readme_counts",
        "test_real_data",
        "test_tying",
        "test_workflow",
    },
}


def pytest_configure(config):
    for tier, meaning in TIERS.items():
        config.addinivalue_line("markers", f"{tier}: {meaning} (tests/conftest.py)")


def tier_of(item) -> str:
    named = [mark.name for mark in item.iter_markers() if mark.name in TIERS]
    if named:
        return named[0]
    module = item.module.__name__.rsplit(".", 1)[-1]
    return next((tier for tier, modules in MODULE_TIERS.items() if module in modules), "unit")


def pytest_collection_modifyitems(config, items):
    """Each test gets its tier's marker. The e2e tests come first, then the workflow tier's: with
    `-n 2 --dist loadfile --no-loadscope-reorder` (scripts/test.sh: a module's tests on one worker,
    so its fixtures are built once), the demo's half-hour run starts at once beside everything else
    and the short unit modules fill the ends."""
    order = list(TIERS)[::-1]
    for item in items:
        item.add_marker(tier_of(item))
    items.sort(key=lambda item: order.index(tier_of(item)))


RUNNING_TIER = {"tier": None}  # the tier of the test being set up, run or torn down


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    RUNNING_TIER["tier"] = tier_of(item)
    try:
        return (yield)
    finally:
        RUNNING_TIER["tier"] = None


class SnakemakeRefusedInUnitTests(subprocess.Popen):
    """subprocess.Popen that refuses to start Snakemake while a unit test (or a fixture it sets up)
    runs: such a test belongs to the workflow tier."""

    def __init__(self, args, *rest, **kwargs):
        words = str(args).split() if isinstance(args, (str, bytes, os.PathLike)) else [str(word) for word in args]
        if RUNNING_TIER["tier"] == "unit" and any(word == "snakemake" or word.endswith("/snakemake") for word in words):
            raise AssertionError(
                f"a unit test started Snakemake ({' '.join(words)[:200]}): mark it "
                "@pytest.mark.workflow or list its module in MODULE_TIERS (tests/conftest.py)"
            )
        super().__init__(args, *rest, **kwargs)


subprocess.Popen = SnakemakeRefusedInUnitTests


def real_fixture(*parts: str) -> Path:
    """A file of ../shared/fixtures/real, or a skip with the reason when it is absent."""
    path = REAL_FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real-data sample {path} is absent (it lives beside the project, not in it)")
    return path


@pytest.fixture(scope="session")
def full_config_outputs(tmp_path_factory) -> frozenset[str]:
    """Every output file `snakemake --summary all` plans for config.yaml in an empty directory: one
    dry run for the tests that read that DAG (tests/test_workflow.py, tests/test_plan.py)."""
    return frozenset(planned_outputs(tmp_path_factory.mktemp("full_config_summary"), REPO / "config.yaml"))


def kill_in_second_epoch(command: list[str], out_dir: Path, env: dict) -> None:
    """Start a training command and SIGKILL it shortly after its first checkpoint, before it ends."""
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (out_dir / "checkpoint.pt").exists() and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # into the second epoch
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (out_dir / "model.pt").exists(), "the run finished before it could be interrupted"


def unpinned(config: dict) -> dict:
    """The config with every source's md5 replaced by a reason: for tests whose archives are
    generated in the real layouts rather than the real files."""
    config["sources"] = {
        key: {"urls": entry["urls"], "no_md5_reason": "generated by the test, not the real file"}
        for key, entry in config["sources"].items()
    }
    return config


def random_corpus_arguments(root: Path, pairs: dict[str, int], longest: int, words: int, seed: int = 0):
    """Random word sentences (the same on both sides, 1 to `longest` words from `words` words)
    for splits {"train": n, "dev": n} under `root`, word counts for both sides, and the arguments
    train.train takes for them (a namespace, as its command line gives): for in-process runs."""
    import random
    import types

    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(words)]
    for split, n in pairs.items():
        lines = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, longest))) for _ in range(n)]
        for lang in ("fr", "en"):
            (root / f"{split}.{lang}").write_text("\n".join(lines) + "\n")
    for lang in ("fr", "en"):
        (root / f"{lang}.tsv").write_text("".join(f"{w}\t5\n" for w in vocabulary))
    files = {
        name: root / f"{split}.{lang}"
        for name, split, lang in (
            ("train_src", "train", "fr"),
            ("train_tgt", "train", "en"),
            ("dev_src", "dev", "fr"),
            ("dev_tgt", "dev", "en"),
            ("dev_src_words", "dev", "fr"),
            ("dev_ref", "dev", "en"),
        )
    }
    return types.SimpleNamespace(
        out_dir=root / "model", src_vocab=root / "fr.tsv", tgt_vocab=root / "en.tsv", tgt_table=None, threads=1, **files
    )


# Snakemake as the suite runs it ------------------------------------------------------------------

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]


def snakemake(workdir: Path, *args: str, check=True, as_typed=False) -> subprocess.CompletedProcess:
    """Snakemake on `workdir` (--directory); `as_typed`: started in `workdir` instead, as a user
    types it, so that a config's `workdir` applies (--directory overrides it)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    where = [] if as_typed else ["--directory", str(workdir)]
    result = subprocess.run([*SNAKEMAKE, *where, *args], capture_output=True, text=True, env=env, cwd=workdir)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def planned_outputs(workdir: Path, configfile: Path, target: str = "all") -> set[str]:
    """Every output file of the jobs a dry run plans, from Snakemake's summary."""
    result = snakemake(workdir, "--configfile", str(configfile), "--cores", "8", "--summary", target)
    return {line.split("\t")[0] for line in result.stdout.splitlines()[1:] if line.strip()}


def read_csv(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def pack_tgz(path: Path, members: dict[str, bytes]) -> None:
    """A .tgz at `path` holding `members` (name -> bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def processes_in_group(group: int, command_part: str) -> list[int]:
    """The ids of the processes in process group `group` (a Popen started with start_new_session,
    whose id it is) whose command line contains `command_part`: what a test may end, and no other."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        if int(stat.rsplit(")", 1)[1].split()[2]) == group and command_part in command:
            found.append(int(entry.name))
    return found


# A tiny translation corpus and its training command (tests/test_train.py and its neighbours) ----

TRANSLATION_SPEC = document(
    TrainSpec(  # a tiny translation model: train.train's spec, as its JSON document
        experiment="tiny",
        source_unit="word",
        target_unit="word",
        output_layer="softmax",
        loss="ce",
        tgt_lang="en",
        device="cpu",
        model=ModelShape(
            encoder_layers=1,
            encoder_bidirectional=True,
            decoder_layers=2,
            hidden=32,
            src_embedding=16,
            tgt_embedding=16,
            dropout=0.2,
            input_feed=True,
        ),
        vocab=VocabSizes(src_size=300, tgt_size=300),
        data=LengthLimit(max_len=50, max_len_unit="word"),
        train=TrainSettings(
            seed=7, lr=0.005, batch_size=4, max_epochs=3, patience=5, selection="bleu", clip=5.0, init_scale=0.1
        ),
    )
)


def translation_spec(entries: dict) -> TrainSpec:
    """The TrainSpec of `entries`, a spec document in part: what it leaves out, at the top or in a
    nested part (model, vocab, data, train), is TRANSLATION_SPEC's."""
    nested = ("model", "vocab", "data", "train")
    merged = {
        **TRANSLATION_SPEC,
        **entries,
        **{part: {**TRANSLATION_SPEC[part], **entries.get(part, {})} for part in nested},
    }
    return load(TrainSpec, merged, "a test's translation spec")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A tiny demo-world fr-en corpus (400 training pairs), its word counts and a target table."""
    import numpy as np

    from workflow_src.data.demo_language import World, WorldSize
    from workflow_src.data.embeddings import normalise, target_table, write_vec
    from workflow_src.data.vocab import count_words

    root = tmp_path_factory.mktemp("data")
    world = World(
        ["fr", "en"], WorldSize(nouns=40, verbs=10, adjectives=5, names=5, two_clause_rate=0, pp_rate=0), seed=5
    )
    for split, n in (("train", 400), ("dev", 30)):
        sentences = world.parallel(["fr", "en"], n, split)
        for lang in ("fr", "en"):
            (root / f"{split}.{lang}").write_text("".join(s[lang].rstrip(".") + " .\n" for s in sentences))
    for lang in ("fr", "en"):
        counts = count_words((root / f"train.{lang}").read_text().splitlines())
        (root / f"{lang}.tsv").write_text("".join(f"{w}\t{c}\n" for w, c in counts))
    counts = count_words((root / "train.en").read_text().splitlines())
    words = ["</s>"] + [w for w, _ in counts] + ["extra"]
    vectors = np.random.default_rng(0).standard_normal((len(words), 12))
    table_words, table, _ = target_table(words, normalise(vectors), counts, 300, seed=0)
    write_vec(root / "table.vec", table_words, table)
    return root


def training_command(data: Path, out: Path, spec: dict) -> list[str]:
    """The `train.train` command line for `spec` on the `data` fixture's files."""
    args = [
        sys.executable,
        "-m",
        "workflow_src.train.train",
        "--spec",
        json.dumps(spec),
        "--out-dir",
        str(out),
        "--train-src",
        str(data / "train.fr"),
        "--train-tgt",
        str(data / "train.en"),
        "--dev-src",
        str(data / "dev.fr"),
        "--dev-tgt",
        str(data / "dev.en"),
        "--dev-src-words",
        str(data / "dev.fr"),
        "--dev-ref",
        str(data / "dev.en"),
        "--src-vocab",
        str(data / "fr.tsv"),
    ]
    table = spec["output_layer"] == "continuous" or spec["tied"]
    return args + (["--tgt-table", str(data / "table.vec")] if table else ["--tgt-vocab", str(data / "en.tsv")])


def run_training(data, out, spec, **kwargs):
    """`train.train` on the `data` fixture's files, as a subprocess."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(training_command(data, out, spec), env=env, capture_output=True, text=True, **kwargs)


def training_metrics(out: Path) -> list[dict]:
    """metrics.jsonl of a model folder, its timing fields left out."""
    from workflow_src.train.train import TIMING_FIELDS

    return [
        {k: v for k, v in json.loads(line).items() if k not in TIMING_FIELDS}
        for line in (out / "metrics.jsonl").read_text().splitlines()
    ]


def assert_same_weights(a: Path, b: Path) -> None:
    """The two model folders' model.pt hold equal tensors under the same names."""
    import torch

    sa, sb = (torch.load(p / "model.pt", weights_only=False)["state_dict"] for p in (a, b))
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key


LM_SPEC = document(
    LMSpec(  # a tiny language model: train_lm's spec, as its JSON document
        experiment="tiny",
        size=12,
        layers=2,
        dropout=0.3,
        reuse_embedding=False,
        loss="augmented",
        loss_params={"gamma": 0.5, "tau": 20.0},
        lr=1.0,
        lr_decay=0.9,
        decay_after=2,
        clip=5.0,
        bptt=10,
        batch_size=8,
        max_epochs=4,
        seed=3,
        device="cpu",
    )
)


# Small builders other modules share -------------------------------------------------------------


def hand_set_model(weights: list[float], biases: list[float]):
    """One unit, every weight zero but layer 2's g and o biases (1 and 0.5) and the output layer
    (weights and biases per word), in float64."""
    import torch

    from workflow_src.model.lm import LSTMLanguageModel

    model = LSTMLanguageModel(vocab_size=len(weights), size=1).double()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.rnn.bias_ih_l1[2] = 1.0  # g
        model.rnn.bias_hh_l1[3] = 0.5  # o
        model.decoder.weight[:, 0] = torch.tensor(weights, dtype=torch.float64)
        model.decoder.bias[:] = torch.tensor(biases, dtype=torch.float64)
    return model


BUNDLE_MEMBER = "2016-01/texts/{src}/{tgt}/{src}-{tgt}.tgz"  # an IWSLT16 pair's archive inside the bundle


def iwslt_spec(root, pairs, dev_sets, test_sets):
    """The demo's `--iwslt` JSON for a mirror under root."""
    return {
        "pairs": pairs,
        "dev_sets": dev_sets,
        "test_sets": test_sets,
        "bundle": str(root / "2016-01.tgz"),
        "bundle_member": BUNDLE_MEMBER,
        "trnted": str(root / "2017-01-trnted/texts/{src}/{tgt}/{src}-{tgt}.tgz"),
        "ted_test": str(root / "2017-01-ted-test/texts/{src}/{tgt}/{src}-{tgt}.tgz"),
    }
