import functools
import hashlib
import json
import os
import re
import shlex

from workflow_src import artefacts, layout, lm_specs, registry, step_mode
from workflow_src.atomic import write_text
from workflow_src.data import sources
from workflow_src.data.embeddings import monolingual_sources
from workflow_src.report import code_version as report_code_version, render
from workflow_src.score import evidence

# A GPU has `gpu.jobs_per_device` slots (workflow_src/model/gpu.py; `--resources gpu=` counts slots),
# but for a cluster executor (Snakemake's `nodes`: Slurm), which gives each `gpu` slot a GPU of its
# own: one there, whatever the config says.
JOBS_PER_DEVICE = 1 if workflow.nodes is not None else int(config.get("gpu", {}).get("jobs_per_device", 1))

# Every rule runs `python -m workflow_src.<stage>.<tool>`; the package is found from the workflow
# directory whatever the working directory (--directory) is.
shell.prefix("set -euo pipefail; export PYTHONPATH=" + shlex.quote(workflow.basedir) + "${{PYTHONPATH:+:$PYTHONPATH}}; "
             f"export REPRO_GPU_JOBS_PER_DEVICE={JOBS_PER_DEVICE}; ")


def limits(kind):
    """mem_mb and runtime (minutes) of a kind of job (config job_resources). A retry asks for
    attempt x the memory (a job killed for memory needs more) but the same runtime: partitions
    refuse a limit above their MaxTime, and a training killed at its limit resumes from its
    checkpoint (profiles/slurm sets a rule's runtime where a partition allows less)."""
    values = config["job_resources"][kind]
    return {"mem_mb": lambda wildcards, attempt, mem_mb=values["mem_mb"]: mem_mb * attempt, "runtime": values["runtime"]}


# A training, decoding or benchmark job holds one of `--resources gpu=N` unless the config runs
# it on the CPU (the demo), where the slot would only serialise jobs that share no device.
# A job whose wall-clock time an artefact reports takes all of one device's `JOBS_PER_DEVICE` slots,
# so that it runs alone there: the benchmarks (vMF Tables 3-4 and Figure 1, joint Table 4, syn-margin
# Figure 2) and the trainings timed by a convergence table (vMF Table 3).
GPU_SLOTS = 0 if config["train"]["device"] == "cpu" else 1
BENCHMARK_GPU_SLOTS = 0 if config["benchmarks"]["device"] == "cpu" else JOBS_PER_DEVICE
PLAN_GPU_SLOTS = GPU_SLOTS and JOBS_PER_DEVICE  # the plan times steps on the training device, alone

# The local GPU limit: one device's slots unless `--resources gpu=N` (or a profile) says otherwise,
# so that `snakemake all --cores 8` is safe on a one-GPU box. It lives here and not in
# profiles/default: Snakemake reads that workflow profile under `--profile profiles/slurm` too, lets
# its keys win over the named profile's, and keeps global limits for cluster jobs, so a `gpu=1`
# there ran every GPU job of a cluster run one after another. A cluster run (`--jobs` for an
# executor: Snakemake's `nodes`) gets no default; profiles/slurm sets its own limit (SITE).
if workflow.nodes is None and "gpu" not in workflow.global_resources:
    workflow.register_resource("gpu", JOBS_PER_DEVICE)


@functools.cache
def timed_training_jobs():
    """The training jobs whose training time a configured artefact reports (convergence tables)."""
    return layout.timed_training_jobs(config)


def training_gpu_slots(wildcards):
    """A training job's `gpu` slots: one, or the whole device when its time is reported."""
    job = artefacts.Job(wildcards.dataset, pair(wildcards), wildcards.experiment, int(wildcards.seed))
    return GPU_SLOTS and (JOBS_PER_DEVICE if job in timed_training_jobs() else 1)


# -- paths -------------------------------------------------------------------------------------
# workflow_src/layout.py's paths as the rules' patterns: its functions given wildcards, so that each
# path is spelled once, in layout (tests/test_architecture.py checks that the rules spell none).
MODEL_WILDCARDS = ("{dataset}", "{src}-{tgt}", "{experiment}", "{seed}")  # a translation model
MODEL_JOB = artefacts.Job(*MODEL_WILDCARDS)
LM_JOB = artefacts.Job("{dataset}", "", "{experiment}", "{seed}")  # a language model: no pair
DATA_DIR = layout.data_dir("{dataset}", "{src}-{tgt}")
LM_DATA_DIR = layout.lm_data_dir("{dataset}")
MODEL_DIR = layout.model_dir(*MODEL_WILDCARDS)
LM_DIR = layout.lm_dir(LM_JOB)
HYPOTHESIS = layout.hypothesis_path(*MODEL_WILDCARDS, "{search}")  # detokenized
HYPOTHESIS_TOK = layout.hypothesis_path(*MODEL_WILDCARDS, "{search}", tokenized=True)


# -- sources -----------------------------------------------------------------------------------
def source(key):
    """The `sources` entry of a downloaded file (its path under resources/)."""
    return sources.entry(config, key)


def source_urls(key):
    return sources.urls(config, key)


is_local = sources.is_local


def local_mirror_files(wildcards):
    """A source whose every URL is a local file (the demo world, a local mirror) takes one as its
    input, so that the job writing it runs first (the first that exists, else the first)."""
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
        targets += [layout.benchmark_path("vmf", kind) for kind in ("log-cm", "decoding")]
    targets += [f"results/{paper}/deviations.{ext}" for ext in ("csv", "md", "html")]
    return targets


def all_targets():
    # the cost plan; in the demo also its prediction against the training time (at full scale the
    # plan predicts from the papers' sizes before the data exist: `snakemake results/plan_vs_actual.csv`)
    plan = ["results/plan.csv"] + (["results/plan_vs_actual.csv"] if "demo" in config else [])
    # the training diagnostics where a translation model is trained (language models record none)
    pages = ["claims"] + (["training_diagnostics"] if translation_metrics() else [])
    return ([target for paper in config["papers"] for target in paper_targets(paper)] + ["results/data_statistics.csv"]
            + [f"results/{page}.{ext}" for page in pages for ext in ("csv", "md", "html")] + plan)


def claims_evidence():
    """The evidence files (tables' .evidence.json, figures' .csv) of this run that the configured
    papers' claims decide by."""
    from workflow_src.report.claims import evidence_paths

    return evidence_paths(layout.configured_artefacts(config))


# -- helpers of rules/benchmark.smk -----------------------------------------------------------------
def benchmark_experiments(paper, artefact_id):
    a = registry.artefact(paper, artefact_id)
    if isinstance(a, (artefacts.ParameterTable, artefacts.SamplingTable)):
        return [row.experiment for row in a.rows]
    return [s.experiment for panel in a.panels if isinstance(panel, artefacts.Throughput) for s in panel.systems]


def benchmark_settings(**extra):
    """`workflow_src.plan.benchmark`'s --settings: config `benchmarks`, and from config `train` the
    precision and (only when on, so eager benchmarks keep their params) the compile setting a
    training job of this config runs with."""
    return json.dumps({**config["benchmarks"], **extra, **step_mode.compile_spec_entry(config["train"]),
                       "precision": config["train"].get("precision", "auto")})


def benchmark_kind(paper, artefact_id):
    a = registry.artefact(paper, artefact_id)
    return {artefacts.ParameterTable: "output-layers", artefacts.SamplingTable: "sampling"}.get(type(a), "throughput")


def data_benchmark_lines():
    if "data_lines" not in config["benchmarks"]:
        raise ValueError("config benchmarks.data_lines: missing (the generated corpus's lines for "
                         "results/benchmarks/data.json; config.yaml has the full size)")
    return config["benchmarks"]["data_lines"]


# -- helpers of rules/data.smk -----------------------------------------------------------------
SPLITS = ["train", "dev", "test"]
LM_SPLITS = ["train", "valid", "test"]  # a language-modelling corpus's


def extraction(wildcards, splits):
    """(archives, the extraction tool and its arguments) of some splits of one pair of one data set."""
    d = config["datasets"][wildcards.dataset]
    p = pair(wildcards)
    if d["kind"] == "iwslt":
        archives = iwslt_archives(wildcards.dataset, p)
        specs = " ".join(shlex.quote(f"{path}::{member}" if member else path) for path, member in archives)
        command = (f"iwslt --pair {p} --archives {specs} --dev-sets {' '.join(d['dev_sets'])} "
                   f"--test-sets {' '.join(d['test_sets'])} --splits {' '.join(splits)}")
        return sorted({path for path, _ in archives}), command
    if p not in d["sources"]:
        raise ValueError(f"datasets.{wildcards.dataset}.sources: no entry for the pair {p}")
    local = {split: [{**e, "archive": resource(e["archive"])} for e in d["sources"][p][split]] for split in splits}
    archives = sorted({e["archive"] for entries in local.values() for e in entries})
    return archives, f"wmt --pair {p} --sources {shlex.quote(json.dumps(local))} --splits {' '.join(splits)}"


def training_files(wildcards, unit, side):
    """A pair's training-side file of one unit ('word' or 'bpe') and side, where its corpus keeps it."""
    return layout.unit_files(wildcards.dataset, pair(wildcards), unit, side, config)


def datasets_of_kind(kind):
    return [name for name, d in config["datasets"].items() if d["kind"] == kind]


@functools.cache
def statistics_corpora():
    """[kind, corpus, pair or language, stats.json] of every corpus the configured papers use
    (`all --config papers=[tying]` downloads only the tying paper's data)."""
    from workflow_src.data.statistics import corpora

    return corpora(config)


# -- helpers of rules/demo.smk -----------------------------------------------------------------
def demo_file(key):
    """Where the demo world writes the file of a source: its one local URL."""
    urls = source_urls(key)
    if len(urls) != 1 or not is_local(urls[0]):
        raise ValueError(f"sources.{key}: a demo source has exactly one URL, a local path (found {urls})")
    return urls[0].removeprefix("file://")


def demo_iwslt():
    """The IWSLT layout the demo world writes: the 2016-01 bundle with its nested per-direction
    archives, and the IWSLT 2017 archives (local path templates with {src} and {tgt}); None
    without an iwslt data set."""
    d = next((d for d in config["datasets"].values() if d["kind"] == "iwslt"), None)
    if d is None:
        return None
    bundle, trnted, ted_test = d["archives"][:3]
    root = config["mirrors"]["demo"].rstrip("/")
    return {"pairs": d["pairs"], "dev_sets": d["dev_sets"], "test_sets": d["test_sets"],
            "bundle": demo_file(bundle["source"]), "bundle_member": bundle["member"],
            "trnted": f"{root}/{trnted['source']}", "ted_test": f"{root}/{ted_test['source']}"}


def demo_mirror_files():
    """Every file the demo world writes for the configured data sets and corpora."""
    from workflow_src.data.demo_world import iwslt_mirror_paths

    iwslt = demo_iwslt()
    files = [str(path) for path in iwslt_mirror_paths(iwslt)] if iwslt else []
    files += [e["archive"] for d in demo_wmt().values() for splits in d["sources"].values()
              for entries in splits.values() for e in entries]
    files += [corpus["archive"] for corpus in demo_lm().values()]
    files += [demo_file(key) for lang in config["monolingual"] for key in monolingual_sources(config, lang)]
    return sorted(set(files))


def demo_wmt():
    """{data set: {sources: {pair: {split: [member entries with local archive paths]}}, train_sentences}}
    of the WMT data sets; a data set's training sentences are `demo.wmt_train_sentences[name]`,
    else `demo.train_sentences`."""
    sizes = config["demo"].get("wmt_train_sentences", {})
    return {name: {"train_sentences": sizes.get(name, config["demo"]["train_sentences"]),
                   "sources": {p: {split: [{**e, "archive": demo_file(e["archive"])} for e in entries]
                                   for split, entries in splits.items()}
                               for p, splits in d["sources"].items()}}
            for name, d in config["datasets"].items() if d["kind"] == "wmt"}


def demo_lm():
    """{name: {format, archive (local path), members}} of the language-modelling data sets;
    the format (ptb or wikitext) by the data set's name."""
    return {name: {"format": "wikitext" if name.startswith("wikitext") else "ptb",
                   "archive": demo_file(d["archive"]), "members": d["members"]}
            for name, d in config["datasets"].items() if d["kind"] == "lm"}


# -- helpers of rules/embeddings.smk -----------------------------------------------------------------
def monolingual_inputs(lang):
    """(resource files, `PATH` or `PATH::MEMBER` arguments) of the corpus `monolingual.<lang>.use` names."""
    from workflow_src.data.embeddings import monolingual_sources

    specs = [spec.partition("::") for spec in monolingual_sources(config, lang)]
    files = [resource(key) for key, _, _ in specs]
    return files, " ".join(shlex.quote(path + (f"::{member}" if member else "")) for path, (_, _, member) in zip(files, specs))


def truecaser_text(lang):
    """What the truecaser of `lang` learns from: its tokenized monolingual corpus when
    `monolingual.<lang>` is configured, else the tokenized training side of every parallel
    corpus in that language (each corpus once, whichever its direction)."""
    if lang in config["monolingual"]:
        return [f"results/embeddings/{lang}/tokenized.txt"]
    files = []
    for name, d in config["datasets"].items():
        for p in d.get("pairs", []) if d["kind"] != "lm" else []:
            path = f"{layout.data_dir(name, layout.training_pair(config, name, p))}/tokenized/train.{lang}"
            if lang in p.split("-") and path not in files:
                files.append(path)
    if not files:
        raise ValueError(f"no text to learn the truecaser of {lang!r} from: neither monolingual.{lang} "
                         f"nor a parallel data set in that language is configured")
    return files


# -- helpers of rules/lm.smk -----------------------------------------------------------------
def lm_corpus(wildcards):
    """The text files a language model trains on; a partition keeps its corpus's vocabulary."""
    data = layout.lm_data_dir(wildcards.dataset)
    files = {split: f"{data}/{split}.txt" for split in LM_SPLITS}
    base = artefacts.Corpus(wildcards.dataset, "").base
    if base != wildcards.dataset:
        files["vocabulary_text"] = f"{layout.lm_data_dir(base)}/train.txt"
    return files


# -- helpers of rules/report.smk -----------------------------------------------------------------
def data_note(paper, artefact_id):
    """Where an artefact's numbers come from, printed with it (today: every configured corpus)."""
    if "demo" in config:
        return (f"synthetic demo world (config.demo.yaml, seed {config['demo']['seed']}), not the paper's data: "
                "the paper's numbers are shown for the layout only, and differences are not comparable")
    return "; ".join(f"{name}: {d['note']}" if "note" in d else f"{name} from {', '.join(sorted(dataset_hosts(d)))}"
                     for name, d in config["datasets"].items())


def dataset_sources(d):
    """The `sources` keys a data set reads (every direction)."""
    if d["kind"] == "lm":
        return {d["archive"]}
    if d["kind"] == "iwslt":
        return {a["source"].format(src=s, tgt=t) for a in d["archives"] for p in d["pairs"] for s, t in [p.split("-")]}
    return {e["archive"] for splits in d["sources"].values() for es in splits.values() for e in es}


def dataset_hosts(d):
    """Where a data set's files come from: the host (or local directory) of each source's first URL."""
    from urllib.parse import urlparse

    return {urlparse(url).netloc or url.rsplit("/", 1)[0]
            for key in dataset_sources(d) for url in source_urls(key)[:1]}


def artefact_inputs(wildcards):
    a = registry.artefact(wildcards.paper, wildcards.artefact)
    return layout.inputs(a, layout.context(config, wildcards.paper, wildcards.artefact), wildcards.paper, wildcards.artefact)


# A training's spec (params.text) as its file, whole or not at all. A shell command, not a `run:`
# block, which Snakemake runs in a process of its own that reads the whole workflow again (seconds).
WRITE_PARAM = "{{ printf '%s\\n' {params.text:q} > {output:q}.tmp && mv {output:q}.tmp {output:q}; }} 2> {log:q}"

# The report rules' `code` param: a new version of the pipeline's code renders the tables, figures and
# claims again (workflow_src/report/__init__.py:code_version)
REPORT_CODE = report_code_version()

RENDER = (
    "python -m workflow_src.report.render --paper {wildcards.paper} --artefact {wildcards.artefact} --context {params.context:q} "
    "--data-note {params.data:q} --out-prefix results/{wildcards.paper}/{wildcards.artefact} > {log:q} 2>&1"
)


# -- helpers of rules/score.smk -----------------------------------------------------------------
def meteor_bins_panel(w):
    """The panel of an artefact that scores METEOR by frequency bin on this job's pair."""
    panels = [p for p in registry.artefact(w.paper, w.artefact).panels
              if isinstance(p, artefacts.MeteorByFrequency) and p.column.dataset == w.dataset and p.column.pair == pair(w)]
    if not panels or w.tgt not in panels[0].parameters:
        raise ValueError(f"{w.paper} {w.artefact}: no METEOR parameters for {w.dataset} {pair(w)}")
    return panels[0]


# -- helpers of rules/plan.smk -----------------------------------------------------------------
# The resolved config (the config file, `--config` on top) as JSON, named by its content: rule
# resolved_config writes it, and the jobs that read the whole config take it as input and name it
# on their command line instead of 23 KB of JSON; a changed config is a new input (they rerun).
RESOLVED_CONFIG_TEXT = json.dumps(config, indent=1) + "\n"
RESOLVED_CONFIG = f"results/config/{hashlib.sha256(RESOLVED_CONFIG_TEXT.encode()).hexdigest()[:16]}.json"


def plan_statistics():
    """What the cost plan waits for: in the demo, its data's statistics (seconds to make), so that
    it plans with the real sizes; at full scale nothing, so that it runs before any download,
    from the sizes the papers state (and from prepared statistics wherever they already exist)."""
    if "demo" not in config:
        return []
    return [p for kind, _, _, path in statistics_corpora() if kind in ("parallel", "lm")
            for p in (path if kind == "parallel" else [path])]


def planned_metrics():
    """The metrics.jsonl of every training job the plan predicts."""
    from workflow_src import plan

    return [plan.metrics_file(job) for job in plan.planned_jobs(config)]


def translation_metrics():
    """The metrics.jsonl of every configured translation model (language models record none of
    the training diagnostics)."""
    return [layout.metrics_path(job) for job in layout.translation_models(config)]
