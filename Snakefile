"""Reproduce four papers on escaping the softmax bottleneck, from raw data to tables.

    snakemake all --cores 8                                     # the papers' setup (config.yaml), one GPU
    snakemake all --configfile config.demo.yaml --cores 2       # the embedded demo, on CPU, under demo/
    snakemake results/table1.csv --cores 8                      # one table and what it needs
    snakemake tying --cores 8                                   # one paper (vmf, synmargin, joint, tying)

Targets go first: --resources and --configfile take several values and swallow a target after them.
"""

import os

from snakemake.utils import min_version

from workflow_src.config_check import ConfigError, check as check_config, select_papers

min_version("9.0")

# config.yaml unless --configfile names another: the two are never merged, so the demo cannot
# inherit a full-scale setting it forgot to set. `--config key=value` still applies on top.
if not workflow.config_settings.configfiles:

    configfile: "config.yaml"


# `--config papers=[tying,joint]`: only those papers, with the settings the config file gives them.
if isinstance(config.get("papers"), list):
    try:
        config["papers"] = select_papers(config["papers"], workflow.configfiles)
    except ConfigError as err:
        raise SystemExit(f"config error:\n{err}") from None


# The demo (and any config that sets `workdir`) writes its own tree: toy outputs never sit at the
# paths of the full run, however .snakemake/ is cleaned or results/ copied. --directory overrides
# it. A cluster job reads this file again where it was submitted from, without --directory: it
# follows the main process to the tree that process settled on (envvars passes the variable on).
if workflow.is_main_process:
    if "workdir" in config and workflow.overwrite_workdir is None:

        workdir: config["workdir"]

    os.environ["SOFTMAX_REPRO_WORKDIR"] = os.getcwd()
else:

    workdir: os.environ["SOFTMAX_REPRO_WORKDIR"]


envvars:
    "SOFTMAX_REPRO_WORKDIR",


# One line naming the key, the value and what was expected (Snakemake's validate dumps the schema).
check_config(config, workflow.source_path("schemas/config.schema.yaml"))


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


# Light jobs run where Snakemake runs, also under a cluster executor (compute nodes often have no
# network, and a queue round trip costs more than these jobs).
localrules:
    download,
    resolved_config,
    training_spec,
    lm_training_spec,
    vmf_shortcut,
    word_counts,
    bpe_counts,
    target_table,
    render_table,
    render_figure,
    deviations,
    claims,
    data_statistics,
    bleu,
    wordnet,
    lm_phrases,
    lm_partition,
    plan_vs_actual,
    training_diagnostics,


# the demo's world exists only under a demo config (rules/demo.smk): naming it otherwise warns
if "demo" in config:

    localrules:
        demo_world,


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/embeddings.smk"
include: "rules/align.smk"
include: "rules/bpe.smk"
include: "rules/gpu_check.smk"
include: "rules/train.smk"
include: "rules/lm.smk"
include: "rules/decode.smk"
include: "rules/score.smk"
include: "rules/benchmark.smk"
include: "rules/plan.smk"
include: "rules/report.smk"
include: "rules/demo.smk"


rule all:
    input:
        "results/gpu_check.md",  # the first job: the GPU check (rules/gpu_check.smk)
        all_targets(),


# `snakemake vmf`, `snakemake tying`, ...: one paper's artefacts and what they need.
for _paper in config["papers"]:

    rule:
        name:
            _paper
        input:
            paper_targets(_paper),
