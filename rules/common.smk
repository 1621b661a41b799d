import json
import re
import shlex

from workflow_src import layout, registry, render

# Every rule runs `python -m workflow_src.<tool>`; the package is found from the workflow
# directory whatever the working directory (--directory) is.
shell.prefix("set -euo pipefail; export PYTHONPATH=" + shlex.quote(workflow.basedir) + "${{PYTHONPATH:+:$PYTHONPATH}}; ")

PY = "python -m workflow_src"


wildcard_constraints:
    mirror=r"[^/]+",
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
def mirror_base(mirror):
    if mirror not in config["mirrors"]:
        raise ValueError(f"mirrors: no mirror named {mirror!r} (configured: {', '.join(config['mirrors'])})")
    return config["mirrors"][mirror].rstrip("/")


def is_local(base):
    return "://" not in base or base.startswith("file://")


def source_url(wildcards):
    return f"{mirror_base(wildcards.mirror)}/{wildcards.path}"


def local_mirror_file(wildcards):
    """A local mirror's file is an input, so a rule that makes the mirror (the demo) runs first."""
    base = mirror_base(wildcards.mirror)
    return [f"{base.removeprefix('file://')}/{wildcards.path}"] if is_local(base) else []


def resource(mirror, path):
    return f"resources/{mirror}/{path}"


def iwslt_archives(dataset, pair):
    """The archives one direction needs: its train/dev bundle, its test bundle, and the reverse
    direction's test bundle (which holds the test references)."""
    d = config["datasets"][dataset]
    src, tgt = pair.split("-")
    return [
        resource(d["mirror"], d["train_archive"].format(src=src, tgt=tgt)),
        resource(d["mirror"], d["test_archive"].format(src=src, tgt=tgt)),
        resource(d["mirror"], d["test_archive"].format(src=tgt, tgt=src)),
    ]


def monolingual_resource(lang):
    if lang not in config["monolingual"]:
        raise ValueError(f"monolingual: no corpus configured for {lang!r}, needed for its target embeddings")
    m = config["monolingual"][lang]
    return resource(m["mirror"], m["path"])


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


def all_targets():
    targets = []
    for paper, artefact_id in layout.configured_artefacts(config):
        outputs = artefact_outputs(paper, artefact_id)
        targets += outputs
        if paper == "vmf":  # the user's paper: results/table1.csv etc. name its artefacts too
            targets += [path.replace("results/vmf/", "results/") for path in outputs]
    if "vmf" in config["papers"]:
        targets += [f"results/benchmarks/vmf/{kind}.json" for kind in ("log-cm", "decoding")]
    return targets + ["results/data_statistics.csv"]
