import json
import os
import re
import shlex

from workflow_src import layout, registry, render, sources

# Every rule runs `python -m workflow_src.<tool>`; the package is found from the workflow
# directory whatever the working directory (--directory) is.
shell.prefix("set -euo pipefail; export PYTHONPATH=" + shlex.quote(workflow.basedir) + "${{PYTHONPATH:+:$PYTHONPATH}}; ")

PY = "python -m workflow_src"


wildcard_constraints:
    dataset=r"[a-z0-9]+",
    src=r"[a-z]{2}",
    tgt=r"[a-z]{2}",
    lang=r"[a-z]{2}",
    split=r"train|dev|test",
    experiment=r"[A-Za-z0-9_.\-]+(@[a-z0-9_]+=[0-9.e\-]+)?",
    seed=r"\d+",
    kind=r"word2vec|fasttext",
    merges=r"\d+",
    search=r"greedy|beam\d+",
    corpus=r"[a-z0-9]+",


def limits(kind):
    """mem_mb and runtime of a kind of job (config job_resources), times the attempt on retries."""
    values = config["job_resources"][kind]
    return {name: (lambda wildcards, attempt, value=value: value * attempt) for name, value in values.items()}


# A training, decoding or benchmark job holds one of `--resources gpu=N` unless the config runs
# it on the CPU (the demo), where the slot would only serialise jobs that share no device.
GPU_SLOTS = 0 if config["train"]["device"] == "cpu" else 1
BENCHMARK_GPU_SLOTS = 0 if config["benchmarks"]["device"] == "cpu" else 1


# Light jobs run where Snakemake runs, also under a cluster executor (compute nodes often have no
# network, and a queue round trip costs more than these jobs).
localrules:
    download,
    demo_world,
    vmf_shortcut,
    word_counts,
    bpe_counts,
    target_table,
    render_table,
    render_figure,
    data_statistics,
    bleu,
    wordnet,
    lm_phrases,
    lm_partition,


# -- sources -----------------------------------------------------------------------------------
def source(key):
    """The `sources` entry of a downloaded file (its path under resources/)."""
    return sources.entry(config, key)


def source_urls(key):
    return sources.urls(config, key)


is_local = sources.is_local


def local_mirror_files(wildcards):
    """A source whose every URL is a local file (the demo world, a local mirror) takes one as its
    input, so that the rule which writes it runs first: the first that exists, else the first."""
    urls = source_urls(wildcards.source)
    if not all(map(is_local, urls)):
        return []
    files = [url.removeprefix("file://") for url in urls]
    return next(([f] for f in files if os.path.exists(f)), files[:1])


def resource(key):
    source(key)
    return f"resources/{key}"


def iwslt_archives(dataset, pair):
    """[(resource path, nested member or None)] one direction reads, in search order."""
    src, tgt = pair.split("-")
    return [(resource(a["source"].format(src=src, tgt=tgt)), a["member"].format(src=src, tgt=tgt) if "member" in a else None)
            for a in config["datasets"][dataset]["archives"]]


def pair(wildcards):
    return f"{wildcards.src}-{wildcards.tgt}"


# -- models ------------------------------------------------------------------------------------
def spec(wildcards):
    return layout.resolve_spec(config, wildcards.dataset, pair(wildcards), wildcards.experiment, int(wildcards.seed))


def experiment(wildcards):
    return registry.experiment(wildcards.experiment)


def side_files(wildcards, side):
    """Token files and vocabulary of the source or target side of a job, in its units."""
    e = experiment(wildcards)
    unit = e.source_unit if side == "src" else ("word" if e.target_unit == "emb" else e.target_unit)
    return layout.unit_files(wildcards.dataset, pair(wildcards), unit, side, config, e.bpe)


def target_table(wildcards):
    e = experiment(wildcards)
    if e.embeddings is None:
        return []
    return [f"{layout.data_dir(wildcards.dataset, pair(wildcards))}/emb/{e.embeddings}.vec"]


def train_inputs(wildcards):
    s, t = side_files(wildcards, "src"), side_files(wildcards, "tgt")
    data = layout.data_dir(wildcards.dataset, pair(wildcards))
    inputs = {
        "train_src": s["train"], "train_tgt": t["train"], "dev_src": s["dev"], "dev_tgt": t["dev"],
        "dev_src_words": f"{data}/tok/dev.{wildcards.src}", "dev_ref": f"{data}/raw/dev.{wildcards.tgt}",
        "src_vocab": s["vocab"],
    }
    table = target_table(wildcards)
    if table:  # continuous models, and softmax models over pretrained vectors: the table's words
        inputs["tgt_table"] = table[0]
    else:
        inputs["tgt_vocab"] = t["vocab"]
    return inputs


def cli_args(named_inputs):
    """`--name path` for each named input (underscores become dashes)."""
    return " ".join(f"--{name.replace('_', '-')} {shlex.quote(str(path))}" for name, path in named_inputs.items())


# -- targets ---------------------------------------------------------------------------------
def artefact_outputs(paper, artefact_id):
    kind = "table" if artefact_id.startswith("table") else "figure"
    extensions = ("csv", "md", "html") if kind == "table" else ("png", "pdf")
    return [f"results/{paper}/{artefact_id}.{ext}" for ext in extensions]


def paper_targets(paper):
    """Every configured artefact of one paper, and the extras it reports."""
    targets = []
    for name, artefact_id in layout.configured_artefacts(config):
        if name != paper:
            continue
        outputs = artefact_outputs(paper, artefact_id)
        targets += outputs
        if paper == "vmf":  # the user's paper: results/table1.csv etc. name its artefacts too
            targets += [path.replace("results/vmf/", "results/") for path in outputs]
    if paper == "vmf":
        targets += [f"results/benchmarks/vmf/{kind}.json" for kind in ("log-cm", "decoding")]
    return targets


def all_targets():
    return [target for paper in config["papers"] for target in paper_targets(paper)] + ["results/data_statistics.csv"]
